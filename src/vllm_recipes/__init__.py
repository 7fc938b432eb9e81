"""vllm-recipes: declarative serving recipes -> exact vLLM deployment commands."""

__version__ = "0.1.0"
