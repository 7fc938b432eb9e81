"""Typed model of ``model.architecture_facts``: the facts the memory planner (``fit``) reads.

Kept apart from :mod:`.models` so the planner's schema lives in one place; the
``model`` section refers to it with one field. Strict like every recipe model:
``"8"`` is not a number and ``true`` is not ``1``.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
def _number_kind(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    return "int" if isinstance(value, int) else "float" if isinstance(value, float) else None


#: numbers kept as the YAML wrote them (int or float), one clean error otherwise (written out, not built by a
#: function, so that type checkers see type aliases)
PosNum = Annotated[
    Union[Annotated[int, Field(gt=0), Tag("int")], Annotated[float, Field(gt=0), Tag("float")]],  # noqa: UP007
    Discriminator(_number_kind, custom_error_type="wrong_type", custom_error_message="expected a positive number"),
]
Fraction = Annotated[
    Union[Annotated[int, Field(ge=0, le=1), Tag("int")], Annotated[float, Field(ge=0, le=1), Tag("float")]],  # noqa: UP007
    Discriminator(_number_kind, custom_error_type="wrong_type",
                  custom_error_message="expected a number from 0 to 1"),
]


def _number_or_map(value: object) -> str | None:
    if isinstance(value, dict):
        return "map"
    return "num" if isinstance(value, int | float) and not isinstance(value, bool) else None


#: one size for every variant, or ``{variant key: GiB}``
CheckpointGib = Annotated[
    Union[Annotated[PosNum, Tag("num")], Annotated[dict[str, PosNum], Tag("map")]],  # noqa: UP007
    Discriminator(_number_or_map, custom_error_type="wrong_type",
                  custom_error_message="expected a number of GiB or a map of variant -> GiB"),
]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="allow", protected_namespaces=(), defer_build=True)
    #: unknown keys are reported by the validator, like every recipe model's
    open_keys: ClassVar[bool] = False


class HostTableFacts(_Strict):
    """Weights a flag can move to host memory (``marker``: substring of the flag's value meaning "offloaded")."""

    gib: PosNum
    flag: str
    marker: str = ""


class ArchitectureFacts(_Strict):
    """``model.architecture_facts`` (documented in docs/decisions-fit.md)."""

    source: str | None = None
    attention: Literal["mha", "gqa", "mqa", "mla", "compressed_sparse"] | None = None
    num_layers: PosInt | None = None
    num_attention_heads: PosInt | None = None
    num_kv_heads: PosInt | None = None
    head_dim: PosInt | None = None
    kv_lora_rank: PosInt | None = None
    qk_rope_head_dim: NonNegInt | None = None
    sliding_window: PosInt | None = None
    sliding_window_layers: NonNegInt | None = None
    linear_layers: NonNegInt | None = None
    linear_state_bytes: NonNegInt | None = None
    kv_elements_per_token: PosNum | None = None
    kv_elements_per_token_max: PosNum | None = None
    hidden_size: PosInt | None = None
    vocab_size: PosInt | None = None
    max_position_embeddings: PosInt | None = None
    dtype_bytes: Literal[1, 2, 4] | None = None
    checkpoint_gib: CheckpointGib | None = None
    expert_fraction: Fraction | None = None
    indexer_logits_bytes: NonNegInt | None = None
    host_tables: tuple[HostTableFacts, ...] | None = None

    @model_validator(mode="after")
    def _complete(self) -> ArchitectureFacts:
        kind = self.attention
        if kind == "mla" and (self.kv_lora_rank is None or self.qk_rope_head_dim is None):
            raise ValueError("mla attention needs kv_lora_rank and qk_rope_head_dim")
        if kind == "compressed_sparse" and self.kv_elements_per_token is None:
            raise ValueError("compressed_sparse attention needs kv_elements_per_token (an estimate)")
        if kind in (None, "mha", "gqa", "mqa"):
            if self.num_layers is None:
                raise ValueError("num_layers is required")
            if self.head_dim is None or (self.num_kv_heads is None and self.num_attention_heads is None):
                raise ValueError(f"{kind or 'dense'} attention needs head_dim and num_kv_heads "
                                 "(or num_attention_heads)")
        if self.sliding_window_layers and self.sliding_window is None:
            raise ValueError("sliding_window_layers needs sliding_window")
        if (self.kv_elements_per_token_max is not None and self.kv_elements_per_token is not None
                and self.kv_elements_per_token_max < self.kv_elements_per_token):
            raise ValueError("kv_elements_per_token_max is below kv_elements_per_token")
        return self
