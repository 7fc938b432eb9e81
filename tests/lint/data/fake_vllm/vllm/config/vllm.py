from pydantic import Field

from vllm.config.compilation import CompilationConfig
from vllm.config.utils import config


@config
class VllmConfig:
    compilation_config: CompilationConfig = Field(default_factory=CompilationConfig)
