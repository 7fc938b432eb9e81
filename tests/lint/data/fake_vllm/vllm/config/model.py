from typing import Literal

from vllm.config.utils import config

TokenizerMode = Literal["auto", "hf", "slow"]
ModelDType = Literal["auto", "half", "bfloat16"]


@config
class ModelConfig:
    model: str = "facebook/opt-125m"
    """Name or path of the model."""
    tokenizer_mode: TokenizerMode | str = "auto"
    dtype: ModelDType = "auto"
    max_model_len: int | None = None
    enforce_eager: bool = False
    served_model_name: str | list[str] | None = None
    hf_overrides: dict[str, int] | None = None
    swap_space: float = 4
    """DEPRECATED: has no effect and will be removed in v10.0."""
