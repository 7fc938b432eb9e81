"""Publish stage: the ``vllm-recipes`` command line."""
