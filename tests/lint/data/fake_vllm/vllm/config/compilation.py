from dataclasses import field

from vllm.config.utils import config


@config
class PassConfig:
    fuse_norm_quant: bool = False
    sp_min_token_num: int | None = None


@config
class CompilationConfig:
    mode: int | None = None
    pass_config: PassConfig = field(default_factory=PassConfig)
    cudagraph_capture_sizes: list[int] | None = None
