"""Architecture facts a memory plan needs, from a recipe block or a Hugging Face ``config.json``.

Pure: both readers take already-parsed mappings (the recipe's frozen YAML, a
``json.load``-ed config) and return an :class:`Architecture`. Reading files and
the Hugging Face cache happens at the edge (:mod:`vllm_recipes.fit.sources`).

Attention kinds and what one token costs in the KV cache (per layer):

* ``mha`` / ``gqa`` / ``mqa``: a K and a V vector per KV head, KV heads split by
  tensor parallelism (replicated when TP exceeds them);
* ``mla``: one compressed latent (``kv_lora_rank``) plus the rotary key part
  (``qk_rope_head_dim``), *not* split by TP;
* ``compressed_sparse`` (DeepSeek-V4 family): compressed, sparse KV the planner
  cannot model exactly; the recipe gives an estimate of the elements per token
  and, where the guide allows one, an upper bound - the planner reports both;
* sliding-window layers hold at most ``sliding_window`` tokens per sequence;
  linear-attention / Mamba layers hold a fixed state per *sequence*.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla", "compressed_sparse")

#: bytes per parameter of a checkpoint precision (block scales included), for the
#: weight estimate when no checkpoint size is known
PRECISION_BYTES = {
    "bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "fp8": 1.0, "int8": 1.0, "w8a8": 1.0, "mxfp8": 1.03125,
    "nvfp4": 0.5625, "mxfp4": 0.53125, "fp4": 0.5625, "int4": 0.5625, "awq": 0.5625, "gptq": 0.5625,
}

#: ``--kv-cache-dtype`` -> bytes per element (``auto`` follows the model dtype)
KV_DTYPE_BYTES = {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1, "int8": 1,
                  "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "float32": 4, "float": 4}

_TORCH_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8_e4m3fn": 1}


class ArchitectureError(ValueError):
    """An architecture description that cannot be used (a readable message, never a traceback)."""


@dataclass(frozen=True, slots=True)
class HostTable:
    """Weights a flag can move to host memory (e.g. DeepSeek-V4.1's Engram tables)."""

    gib: float
    flag: str
    #: substring of the flag's value that means "offloaded"
    marker: str


@dataclass(frozen=True, slots=True)
class Architecture:
    """What the planner knows about a model (``source`` says where it came from)."""

    num_layers: int
    attention: str = "gqa"
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    linear_layers: int = 0
    #: state bytes per sequence of one linear-attention / Mamba layer (whole layer, before TP)
    linear_state_bytes: int = 0
    #: compressed_sparse: estimated KV elements per token, all layers together
    kv_elements_per_token: float | None = None
    #: compressed_sparse: an upper bound on the same (``None``: no bound can be derived)
    kv_elements_per_token_max: float | None = None
    hidden_size: int | None = None
    vocab_size: int | None = None
    max_position_embeddings: int | None = None
    #: bytes per element of the model dtype (``--kv-cache-dtype auto``)
    dtype_bytes: int = 2
    #: checkpoint size per variant key ("*" = any variant), GiB, as ``(key, GiB)`` pairs (hashable)
    checkpoint_gib: tuple[tuple[str, float], ...] = ()
    #: fraction of the checkpoint that is routed experts (split by EP, not replicated by DP)
    expert_fraction: float = 0.0
    host_tables: tuple[HostTable, ...] = ()
    #: bytes per (batched token x context token) of a start-up logits buffer (DeepSeek sparse-attention indexer)
    indexer_logits_bytes: int = 0
    source: str = ""

    @property
    def exact(self) -> bool:
        return self.attention != "compressed_sparse"

    @property
    def attention_layers(self) -> int:
        return max(0, self.num_layers - self.linear_layers)

    @property
    def full_layers(self) -> int:
        return max(0, self.attention_layers - self.sliding_window_layers)

    def checkpoint_for(self, variant_key: str) -> float | None:
        sizes = dict(self.checkpoint_gib)
        got = sizes.get(variant_key)
        return got if got is not None else sizes.get("*")


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def kind_for_heads(heads: int | None, kv_heads: int | None) -> str:
    if kv_heads is None or heads is None or kv_heads == heads:
        return "mha"
    return "mqa" if kv_heads == 1 else "gqa"


def check_architecture(arch: Architecture) -> Architecture:
    """The fields each attention kind needs are present and positive (else :class:`ArchitectureError`)."""
    need: tuple[str, ...]
    if arch.attention == "mla":
        need = ("kv_lora_rank", "qk_rope_head_dim")
    elif arch.attention == "compressed_sparse":
        need = ("kv_elements_per_token",)
    else:
        need = ("num_kv_heads", "head_dim")
    missing = [n for n in need if getattr(arch, n) is None]
    if missing:
        raise ArchitectureError(f"{arch.attention} attention needs {', '.join(missing)}"
                                + (f" ({arch.source})" if arch.source else ""))
    if arch.num_layers <= 0 and arch.attention != "compressed_sparse":
        raise ArchitectureError("num_layers must be positive")
    if arch.sliding_window_layers > arch.attention_layers:
        raise ArchitectureError("sliding_window_layers exceeds the attention layers")
    if arch.sliding_window_layers and not arch.sliding_window:
        raise ArchitectureError("sliding_window_layers needs sliding_window")
    return arch


# --------------------------------------------------------------------------------------------
# the recipe block (model.architecture_facts)
# --------------------------------------------------------------------------------------------

def _param_billions(v: Any) -> float | None:
    """``"284B"`` / ``"8-16B"`` / ``"70M"`` / 7e9 -> billions (the largest figure of a range)."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v) / 1e9 if v > 1e6 else float(v)
    if not isinstance(v, str):
        return None
    m = re.fullmatch(r"\s*(?:[\d.]+\s*-\s*)?([\d.]+)\s*([BbMmTt]?)\s*", v)
    if not m:
        return None
    scale = {"b": 1.0, "m": 1e-3, "t": 1e3, "": 1.0}[m.group(2).lower()]
    try:
        return float(m.group(1)) * scale
    except ValueError:
        return None


def architecture_from_block(block: Mapping[str, Any], model: Mapping[str, Any] | None = None) -> Architecture:
    """A validated ``model.architecture_facts`` block (see docs/decisions-fit.md for the keys)."""
    model = model or {}
    heads = _int(block.get("num_attention_heads"))
    kv_heads = _int(block.get("num_kv_heads"))
    attention = block.get("attention") if isinstance(block.get("attention"), str) else kind_for_heads(heads, kv_heads)
    if attention not in ATTENTION_KINDS:
        raise ArchitectureError(f"unknown attention kind {attention!r}; expected one of {', '.join(ATTENTION_KINDS)}")
    if kv_heads is None and attention == "mqa":
        kv_heads = 1
    if kv_heads is None and attention == "mha":
        kv_heads = heads
    ck = block.get("checkpoint_gib")
    checkpoint: dict[str, float] = {}
    if isinstance(ck, Mapping):
        checkpoint = {str(k): float(v) for k, v in ck.items() if _num(v) is not None}
    elif _num(ck) is not None:
        checkpoint = {"*": float(ck)}
    tables = tuple(HostTable(float(t["gib"]), str(t["flag"]), str(t.get("marker") or ""))
                   for t in block.get("host_tables") or () if isinstance(t, Mapping) and _num(t.get("gib")) is not None
                   and isinstance(t.get("flag"), str))
    ctx = _int(block.get("max_position_embeddings")) or _int(model.get("context_length"))
    return check_architecture(Architecture(
        num_layers=_int(block.get("num_layers")) or 0, attention=attention, num_attention_heads=heads,
        num_kv_heads=kv_heads, head_dim=_int(block.get("head_dim")), kv_lora_rank=_int(block.get("kv_lora_rank")),
        qk_rope_head_dim=_int(block.get("qk_rope_head_dim")), sliding_window=_int(block.get("sliding_window")),
        sliding_window_layers=_int(block.get("sliding_window_layers")) or 0,
        linear_layers=_int(block.get("linear_layers")) or 0,
        linear_state_bytes=_int(block.get("linear_state_bytes")) or 0,
        kv_elements_per_token=_num(block.get("kv_elements_per_token")),
        kv_elements_per_token_max=_num(block.get("kv_elements_per_token_max")),
        hidden_size=_int(block.get("hidden_size")), vocab_size=_int(block.get("vocab_size")),
        max_position_embeddings=ctx, dtype_bytes=_int(block.get("dtype_bytes")) or 2,
        checkpoint_gib=tuple(checkpoint.items()), expert_fraction=_num(block.get("expert_fraction")) or 0.0,
        host_tables=tables, indexer_logits_bytes=_int(block.get("indexer_logits_bytes")) or 0,
        source=str(block.get("source") or "recipe model.architecture_facts"),
    ))


# --------------------------------------------------------------------------------------------
# Hugging Face config.json
# --------------------------------------------------------------------------------------------

def _mamba_state_bytes(cfg: Mapping[str, Any], dtype_bytes: int) -> int:
    """Mamba-2 state of one layer: conv state + SSM state (vLLM's Mamba-2 cache layout)."""
    d_state = _int(cfg.get("ssm_state_size")) or _int(cfg.get("mamba_d_state")) or _int(cfg.get("state_size"))
    n_heads = _int(cfg.get("mamba_num_heads")) or _int(cfg.get("mamba_n_heads"))
    head_dim = _int(cfg.get("mamba_head_dim")) or _int(cfg.get("mamba_d_head"))
    groups = _int(cfg.get("n_groups")) or _int(cfg.get("mamba_n_groups")) or 1
    d_conv = _int(cfg.get("conv_kernel")) or _int(cfg.get("mamba_d_conv")) or 4
    hidden = _int(cfg.get("hidden_size")) or 0
    expand = _num(cfg.get("mamba_expand")) or _num(cfg.get("expand")) or 2
    if not d_state:
        return 0
    if n_heads and head_dim:
        d_inner = n_heads * head_dim
    else:
        d_inner = int(expand * hidden)
        n_heads = n_heads or max(1, d_inner // (head_dim or 64))
        head_dim = head_dim or d_inner // n_heads
    conv = (d_conv - 1) * (d_inner + 2 * groups * d_state)
    ssm = n_heads * head_dim * d_state
    return (conv + ssm) * dtype_bytes


def _gated_delta_state_bytes(cfg: Mapping[str, Any], dtype_bytes: int) -> int:
    """Gated-DeltaNet linear attention (Qwen3-Next style): conv state + recurrent state."""
    kh, vh = _int(cfg.get("linear_num_key_heads")), _int(cfg.get("linear_num_value_heads"))
    kd, vd = _int(cfg.get("linear_key_head_dim")), _int(cfg.get("linear_value_head_dim"))
    if not (kh and vh and kd and vd):
        return 0
    d_conv = _int(cfg.get("linear_conv_kernel_dim")) or 4
    conv = (d_conv - 1) * (2 * kh * kd + vh * vd)
    return (conv + vh * kd * vd) * dtype_bytes


def architecture_from_hf_config(config: Mapping[str, Any], source: str = "config.json") -> Architecture:
    """An :class:`Architecture` from a parsed Hugging Face ``config.json`` (multimodal: its ``text_config``)."""
    if not isinstance(config, Mapping):
        raise ArchitectureError(f"{source}: expected a JSON object")
    cfg: Mapping[str, Any] = config
    text = config.get("text_config") or config.get("llm_config")
    if isinstance(text, Mapping) and _int(text.get("num_hidden_layers")):
        cfg = {**config, **text}
    layers = _int(cfg.get("num_hidden_layers")) or _int(cfg.get("n_layer")) or _int(cfg.get("num_layers"))
    if not layers:
        raise ArchitectureError(f"{source}: no num_hidden_layers")
    dtype_bytes = _TORCH_DTYPE_BYTES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"), 2)
    heads = _int(cfg.get("num_attention_heads")) or _int(cfg.get("n_head"))
    kv_heads = _int(cfg.get("num_key_value_heads"))
    if kv_heads is None and cfg.get("multi_query") is True:
        kv_heads = 1
    kv_heads = kv_heads or heads
    hidden = _int(cfg.get("hidden_size")) or _int(cfg.get("n_embd"))
    head_dim = _int(cfg.get("head_dim")) or (hidden // heads if hidden and heads else None)
    kv_lora = _int(cfg.get("kv_lora_rank"))
    attention = "mla" if kv_lora else kind_for_heads(heads, kv_heads)

    # layer pattern: sliding / full / linear
    window = _int(cfg.get("sliding_window")) if cfg.get("use_sliding_window", True) is not False else None
    sliding = linear = 0
    state_bytes = 0
    types = cfg.get("layer_types")
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(types, list | tuple) and types:
        sliding = sum(1 for t in types if isinstance(t, str) and "sliding" in t)
        linear = sum(1 for t in types if isinstance(t, str) and ("linear" in t or "mamba" in t))
    elif isinstance(pattern, str) and pattern:
        # Nemotron-H style: M = Mamba, * = attention, - = MLP only (holds no cache, so not counted)
        linear = pattern.count("M")
        layers = linear + pattern.count("*")
    elif window and _int(cfg.get("sliding_window_pattern")):
        every = _int(cfg.get("sliding_window_pattern")) or 1  # Gemma 3: every Nth layer is global
        sliding = layers - layers // every
    elif _int(cfg.get("attn_layer_period")):  # Jamba: attention every period, Mamba otherwise
        period = _int(cfg.get("attn_layer_period")) or 1
        offset = _int(cfg.get("attn_layer_offset")) or 0
        linear = layers - sum(1 for i in range(layers) if i % period == offset)
    elif window and _int(cfg.get("max_window_layers")) is not None and cfg.get("use_sliding_window") is True:
        sliding = max(0, layers - (_int(cfg.get("max_window_layers")) or 0))
    elif window:
        sliding = layers  # every layer windowed (Mistral-7B-v0.1 style)
    if linear:
        state_bytes = _gated_delta_state_bytes(cfg, dtype_bytes) or _mamba_state_bytes(cfg, dtype_bytes)
    if sliding and not window:
        sliding = 0
    experts = _int(cfg.get("num_local_experts")) or _int(cfg.get("n_routed_experts")) or _int(cfg.get("num_experts"))
    return check_architecture(Architecture(
        num_layers=layers, attention=attention, num_attention_heads=heads, num_kv_heads=kv_heads,
        head_dim=head_dim, kv_lora_rank=kv_lora, qk_rope_head_dim=_int(cfg.get("qk_rope_head_dim")) or (0 if kv_lora else None),
        sliding_window=window if sliding else None, sliding_window_layers=sliding, linear_layers=linear,
        linear_state_bytes=state_bytes, hidden_size=hidden, vocab_size=_int(cfg.get("vocab_size")),
        max_position_embeddings=_int(cfg.get("max_position_embeddings")), dtype_bytes=dtype_bytes,
        expert_fraction=0.9 if experts and experts > 1 else 0.0, source=source,
    ))


def parameters_billions(value: Any) -> float | None:
    return _param_billions(value)


def estimated_checkpoint_gib(parameter_count: Any, precision: Any) -> float | None:
    """Weights estimate from the parameter count and the variant's precision (flagged as an estimate)."""
    b = _param_billions(parameter_count)
    per = PRECISION_BYTES.get(str(precision or "bf16").lower())
    if b is None or per is None:
        return None
    return b * 1e9 * per / 2**30


def ceil_div(a: int, b: int) -> int:
    return -(-a // b) if b > 0 else a


def round_up(x: float, to: int) -> int:
    return int(math.ceil(x / to) * to) if to > 0 else int(x)
