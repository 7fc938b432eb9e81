from vllm.config.compilation import CompilationConfig, PassConfig
from vllm.config.model import ModelConfig
from vllm.config.utils import config
from vllm.config.vllm import VllmConfig

__all__ = ["CompilationConfig", "ModelConfig", "PassConfig", "VllmConfig", "config"]
