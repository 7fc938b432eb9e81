"""Architecture facts a memory plan needs, from a recipe block or a Hugging Face ``config.json``.

Pure: both readers take already-parsed mappings; files and the Hub are read at the edge
(:mod:`.sources`). What each attention kind costs per token: docs/decisions-fit.md §2-3.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vllm_recipes.catalog.architecture_facts import HostTable, checkpoint_for, checkpoint_sizes, host_tables
from vllm_recipes.jsvalues import as_list

if TYPE_CHECKING:
    from vllm_recipes.catalog import Recipe

GIB = 2**30

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla", "compressed_sparse")

#: bytes per parameter of a checkpoint precision, block scales included (MXFP4: 4 bits + an 8-bit scale
#: per 32 values)
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
    #: dense MLP width (activation estimate)
    intermediate_size: int | None = None
    #: routed experts: count, experts per token, width of one expert, MoE layers
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int | None = None
    moe_layers: int = 0
    #: sparse MLA (DeepSeek-V3.2 style): fp8 pages use vLLM's 656-byte ``fp8_ds_mla`` layout, plus an
    #: indexer cache of ``indexer_bytes`` per token per layer (128 fp8 values + a fp32 scale = 132)
    sparse_mla: bool = False
    indexer_bytes: int = 0
    #: multi-token-prediction layers shipped in the checkpoint (``num_nextn_predict_layers``)
    mtp_layers: int = 0
    #: parameters every TP rank holds in full (MLA's down-projections, MoE routers, a sparse indexer's
    #: projections: ``ReplicatedLinear`` / ``disable_tp=True`` in vLLM's ``deepseek_v2.py``)
    replicated_params: int = 0
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
        return checkpoint_for(self.checkpoint_gib, variant_key)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def kind_for_heads(heads: int | None, kv_heads: int | None) -> str:
    if kv_heads is None or heads is None or kv_heads == heads:
        return "mha"
    return "mqa" if kv_heads == 1 else "gqa"


#: the fields an attention kind needs (any other kind: KV heads and head dim)
_NEEDED_FIELDS = {"mla": ("kv_lora_rank", "qk_rope_head_dim"),
                  "compressed_sparse": ("kv_elements_per_token",)}


def check_architecture(arch: Architecture) -> Architecture:
    """The fields each attention kind needs are present and positive (else :class:`ArchitectureError`)."""
    need = _NEEDED_FIELDS.get(arch.attention, ("num_kv_heads", "head_dim"))
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


# --- the recipe block (model.architecture_facts) ----------------------------------------------

def parameters_billions(v: Any) -> float | None:
    """``"284B"`` / ``"8-16B"`` / ``"70M"`` / 7e9 -> billions (the largest figure of a range)."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v) / 1e9 if v > 1e6 else float(v)
    if not isinstance(v, str):
        return None
    m = re.fullmatch(r"\s*(?:[\d.]+\s*-\s*)?(\d+\.?\d*|\.\d+)\s*([BbMmTt]?)\s*", v)
    if not m:
        return None
    scale = {"b": 1.0, "m": 1e-3, "t": 1e3, "": 1.0}[m.group(2).lower()]
    return float(m.group(1)) * scale


#: ``architecture_facts`` keys read as they are into the :class:`Architecture` field of the same name:
#: key -> (reader, value when absent or zero; ``None``: kept as read)
_BLOCK_FIELDS: dict[str, tuple[Any, Any]] = {
    "num_layers": (_int, 0), "head_dim": (_int, None), "kv_lora_rank": (_int, None),
    "qk_rope_head_dim": (_int, None), "sliding_window": (_int, None), "sliding_window_layers": (_int, 0),
    "linear_layers": (_int, 0), "linear_state_bytes": (_int, 0), "kv_elements_per_token": (_num, None),
    "kv_elements_per_token_max": (_num, None), "hidden_size": (_int, None), "vocab_size": (_int, None),
    "dtype_bytes": (_int, 2), "expert_fraction": (_num, 0.0), "indexer_logits_bytes": (_int, 0),
}


def _block_attention(block: Mapping[str, Any], heads: int | None, kv_heads: int | None) -> tuple[str, int | None]:
    """The attention kind (given, else from the head counts) and the KV heads it implies (MQA 1, MHA all)."""
    given = block.get("attention")
    attention = given if isinstance(given, str) else kind_for_heads(heads, kv_heads)
    if attention not in ATTENTION_KINDS:
        raise ArchitectureError(f"unknown attention kind {attention!r}; expected one of {', '.join(ATTENTION_KINDS)}")
    if kv_heads is None:
        kv_heads = {"mqa": 1, "mha": heads}.get(attention)
    return attention, kv_heads


def architecture_from_block(block: Mapping[str, Any], model: Mapping[str, Any]) -> Architecture:
    """A validated ``model.architecture_facts`` block (see docs/decisions-fit.md for the keys)."""
    heads = _int(block.get("num_attention_heads"))
    attention, kv_heads = _block_attention(block, heads, _int(block.get("num_kv_heads")))
    fields = {}
    for key, (read, absent) in _BLOCK_FIELDS.items():
        value = read(block.get(key))
        fields[key] = value if absent is None else value or absent
    return check_architecture(Architecture(
        **fields, attention=attention, num_attention_heads=heads, num_kv_heads=kv_heads,
        max_position_embeddings=_int(block.get("max_position_embeddings")) or _int(model.get("context_length")),
        checkpoint_gib=checkpoint_sizes(block.get("checkpoint_gib")),
        host_tables=host_tables(block.get("host_tables")),
        source=str(block.get("source") or "recipe model.architecture_facts"),
    ))


def recipe_architecture(recipe: Recipe) -> Architecture | None:
    """The recipe's ``model.architecture_facts`` (``None`` when absent or invalid)."""
    block = recipe.model.get("architecture_facts")
    if not isinstance(block, Mapping):
        return None
    try:
        return architecture_from_block(block, recipe.model)
    except (ArchitectureError, TypeError, ValueError, KeyError):
        return None


# --- Hugging Face config.json -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Mamba2:
    """A Mamba-2 mixer's widths (vLLM's ``MambaMixer2``)."""

    inner: int
    heads: int
    head_dim: int
    groups: int
    state: int
    conv: int

    @property
    def conv_dim(self) -> int:
        """Channels of the causal convolution: x, B and C."""
        return self.inner + 2 * self.groups * self.state


def mamba2_shape(cfg: Mapping[str, Any]) -> Mamba2 | None:
    """The config's Mamba-2 widths (``None``: no SSM state size)."""
    d_state = _int(cfg.get("ssm_state_size")) or _int(cfg.get("mamba_d_state")) or _int(cfg.get("state_size"))
    n_heads = _int(cfg.get("mamba_num_heads")) or _int(cfg.get("mamba_n_heads"))
    head_dim = _int(cfg.get("mamba_head_dim")) or _int(cfg.get("mamba_d_head"))
    groups = _int(cfg.get("n_groups")) or _int(cfg.get("mamba_n_groups")) or 1
    d_conv = _int(cfg.get("conv_kernel")) or _int(cfg.get("mamba_d_conv")) or 4
    hidden = _int(cfg.get("hidden_size")) or 0
    expand = _num(cfg.get("mamba_expand")) or _num(cfg.get("expand")) or 2
    if not d_state:
        return None
    if n_heads and head_dim:
        d_inner = n_heads * head_dim
    else:
        d_inner = int(expand * hidden)
        n_heads = n_heads or max(1, d_inner // (head_dim or 64))
        head_dim = head_dim or d_inner // n_heads
    return Mamba2(d_inner, n_heads, head_dim, groups, d_state, d_conv)


def _mamba_state_bytes(cfg: Mapping[str, Any], dtype_bytes: int) -> int:
    """Mamba-2 state of one layer: conv state + SSM state (vLLM's Mamba-2 cache layout)."""
    m = mamba2_shape(cfg)
    if m is None:
        return 0
    conv = (m.conv - 1) * m.conv_dim
    ssm = m.heads * m.head_dim * m.state
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


def _kda_state_bytes(lc: Mapping[str, Any], dtype_bytes: int) -> int:
    """Kimi Delta Attention: short-conv states of q, k, v plus a head_dim x head_dim state per head."""
    heads, dim = _int(lc.get("num_heads")), _int(lc.get("head_dim"))
    if not (heads and dim):
        return 0
    kernel = _int(lc.get("short_conv_kernel_size")) or 4
    return (3 * (kernel - 1) * heads * dim + heads * dim * dim) * dtype_bytes


#: config.json spellings of one fact across model families, the first non-zero one wins
LAYERS_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
HEADS_KEYS = ("num_attention_heads", "n_head")
HIDDEN_KEYS = ("hidden_size", "n_embd")
EXPERTS_KEYS = ("num_local_experts", "n_routed_experts", "num_experts")
EXPERTS_PER_TOKEN_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_topk")
EXPERT_WIDTH_KEYS = ("moe_intermediate_size", "intermediate_size")


def first_int(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    """The first key with a non-zero int (like ``a or b or c``: the last one read when none is)."""
    value = None
    for key in keys:
        value = _int(cfg.get(key))
        if value:
            return value
    return value


def count_of(cfg: Mapping[str, Any], key: str) -> int:
    """A key's int as a count: 0 when absent, not an int (bools and floats included) or negative."""
    return max(0, _int(cfg.get(key)) or 0)


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """A multimodal config's language model (``text_config`` / ``llm_config``) over its top level."""
    text = config.get("text_config") or config.get("llm_config")
    if isinstance(text, Mapping) and _int(text.get("num_hidden_layers")):
        return {**config, **text}
    return config


@dataclass(frozen=True, slots=True)
class LayerPattern:
    """Nemotron-H's ``hybrid_override_pattern``, one character per layer, as vLLM's ``nemotron_h.py`` reads
    it: ``M`` a Mamba-2 mixer, ``*`` attention, ``-`` an MLP, ``E`` routed experts (MoE)."""

    mamba: int
    attention: int
    mlp: int
    moe: int


def layer_pattern(cfg: Mapping[str, Any]) -> LayerPattern | None:
    """The layers of each kind by the config's pattern (``None``: no pattern)."""
    pattern = cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern:
        return None
    return LayerPattern(mamba=pattern.count("M"), attention=pattern.count("*"), mlp=pattern.count("-"),
                        moe=pattern.count("E"))


def mamba2_params(cfg: Mapping[str, Any], hidden: int) -> int:
    """One Mamba-2 mixer's parameters (vLLM's ``MambaMixer2``)."""
    m = mamba2_shape(cfg)
    if m is None:
        return 0
    in_proj = hidden * (m.inner + m.conv_dim + m.heads)  # to z, to x, B and C, and to dt
    conv1d = m.conv_dim * (m.conv + 1)  # over x, B and C, with a bias
    per_head = 3 * m.heads  # A, D and dt's bias
    norm = m.inner  # the gated RMS norm
    out_proj = m.inner * hidden
    return in_proj + conv1d + per_head + norm + out_proj


def pattern_params(cfg: Mapping[str, Any], pattern: LayerPattern, hidden: int, attention: int, experts: int,
                   moe_layers: int) -> tuple[int, int]:
    """Nemotron-H's (routed-expert, other) layer parameters, each layer one block of its kind (vLLM's
    ``nemotron_h.py``): a Mamba-2 mixer, ``attention`` (one attention layer's parameters), an MLP, or routed
    experts beside the shared ones and the router; MLPs and experts are up + down (squared ReLU). The
    embeddings and the head are not counted; ``moe_layers``: the pattern's ``E`` layers when it has experts."""
    routed = moe_layers * experts * 2 * hidden * (first_int(cfg, EXPERT_WIDTH_KEYS) or 0)
    mlp = 2 * hidden * (_int(cfg.get("intermediate_size")) or 0)
    shared = 2 * hidden * count_of(cfg, "moe_shared_expert_intermediate_size") * count_of(cfg, "n_shared_experts")
    other = (pattern.mamba * mamba2_params(cfg, hidden) + pattern.attention * attention + pattern.mlp * mlp
             + moe_layers * (shared + hidden * experts))
    return routed, other


def jamba_attention_layers(cfg: Mapping[str, Any], layers: int, period: int) -> int:
    """Jamba's attention layers: ``i % attn_layer_period == attn_layer_offset`` (4 when absent, as HF's
    ``JambaConfig``); Mamba mixers elsewhere."""
    offset = _int(cfg.get("attn_layer_offset"))
    offset = 4 if offset is None else offset
    return sum(1 for i in range(layers) if i % period == offset)


def mamba1_params(cfg: Mapping[str, Any], hidden: int) -> int:
    """One Jamba Mamba-1 mixer's parameters (vLLM's ``MambaMixer``; its three small norms left out)."""
    state = count_of(cfg, "mamba_d_state")
    kernel = _int(cfg.get("mamba_d_conv")) or 4
    inner = int((_num(cfg.get("mamba_expand")) or 2) * hidden)
    dt_rank = _int(cfg.get("mamba_dt_rank")) or ceil_div(hidden, 16)
    in_proj = hidden * 2 * inner  # to x and z
    conv1d = inner * (kernel + 1)  # with a bias
    x_proj = inner * (dt_rank + 2 * state)  # to dt, B and C
    dt_proj = (dt_rank + 1) * inner  # with a bias
    a_log, d = inner * state, inner
    out_proj = inner * hidden
    return in_proj + conv1d + x_proj + dt_proj + a_log + d + out_proj


#: (layers, sliding-window layers, linear / Mamba layers, state bytes per sequence of one linear layer)
_Mix = tuple[int, int, int, int]


def _named_mix(cfg: Mapping[str, Any], layers: int, dtype_bytes: int) -> _Mix | None:
    """The conventions that name each layer's kind, most specific first (``None``: none applies)."""
    lc, pattern = cfg.get("linear_attn_config"), layer_pattern(cfg)
    types = cfg.get("layer_types") if isinstance(cfg.get("layer_types"), list | tuple) else ()
    every = _int(cfg.get("full_attention_interval"))
    if isinstance(lc, Mapping) and isinstance(lc.get("full_attn_layers"), list | tuple):
        # Kimi-Linear: the listed layers are full (MLA) attention, the others KDA linear attention
        return layers, 0, layers - len(lc["full_attn_layers"]), _kda_state_bytes(lc, dtype_bytes)
    if every and not types:  # Qwen3-Next / Qwen3.5: every Nth layer full, the rest Gated-DeltaNet
        return layers, 0, layers - layers // every, 0
    if types:
        named = [t for t in types if isinstance(t, str)]
        return (layers, sum(1 for t in named if "sliding" in t),
                sum(1 for t in named if "linear" in t or "mamba" in t), 0)
    if pattern is not None:  # the layers with a cache: Mamba and attention (MLP and MoE layers have none)
        return pattern.mamba + pattern.attention, 0, pattern.mamba, 0
    return None


def _layer_mix(cfg: Mapping[str, Any], layers: int, window: int | None, dtype_bytes: int) -> _Mix:
    """Sliding / full / linear layers by the layer-pattern conventions, most specific first, and a linear
    layer's state (Gated-DeltaNet, else Mamba-2)."""
    mix = _named_mix(cfg, layers, dtype_bytes)
    if mix is None:
        gemma, period = _int(cfg.get("sliding_window_pattern")), _int(cfg.get("attn_layer_period"))
        max_window = _int(cfg.get("max_window_layers"))
        sliding = linear = 0
        if window and gemma:
            sliding = layers - layers // gemma  # Gemma 3: every Nth layer is global, the others windowed
        elif period:  # Jamba: attention every ``attn_layer_period`` layers (at the offset), Mamba otherwise
            linear = layers - jamba_attention_layers(cfg, layers, period)
        elif window and max_window is not None and cfg.get("use_sliding_window") is True:
            sliding = max(0, layers - max_window)  # Qwen2: layers from max_window_layers on are windowed
        elif window:
            sliding = layers  # every layer windowed (Mistral-7B-v0.1 style)
        mix = layers, sliding, linear, 0
    layers, sliding, linear, state = mix
    if linear and not state:
        state = _gated_delta_state_bytes(cfg, dtype_bytes) or _mamba_state_bytes(cfg, dtype_bytes)
    return layers, sliding if window else 0, linear, state


def attention_shape(cfg: Mapping[str, Any]) -> tuple[int | None, int | None, int | None, int | None]:
    """Query heads, KV heads (MQA: 1; default: the query heads), hidden size, head dim."""
    heads = first_int(cfg, HEADS_KEYS)
    kv_heads = _int(cfg.get("num_key_value_heads"))
    if kv_heads is None and cfg.get("multi_query") is True:
        kv_heads = 1
    hidden = first_int(cfg, HIDDEN_KEYS)
    head_dim = _int(cfg.get("head_dim")) or (hidden // heads if hidden and heads else None)
    return heads, kv_heads or heads, hidden, head_dim


def _moe_fields(cfg: Mapping[str, Any]) -> dict[str, Any]:
    experts = first_int(cfg, EXPERTS_KEYS)
    return {"expert_fraction": expert_fraction_from_config(cfg) if experts and experts > 1 else 0.0,
            "num_experts": experts or 0, "experts_per_token": first_int(cfg, EXPERTS_PER_TOKEN_KEYS) or 0,
            "moe_intermediate_size": first_int(cfg, EXPERT_WIDTH_KEYS),
            "moe_layers": moe_layer_count(cfg, first_int(cfg, LAYERS_KEYS) or 0) if experts else 0}


def _mla_fields(cfg: Mapping[str, Any], kv_lora: int | None) -> dict[str, Any]:
    """MLA's rope part, and a DeepSeek-V3.2-style sparse indexer (``index_head_dim`` + ``index_topk``):
    its cache holds ``index_head_dim`` fp8 values + a fp32 scale per 128 per token per layer."""
    index_dim = _int(cfg.get("index_head_dim"))
    sparse = bool(kv_lora and index_dim and _int(cfg.get("index_topk")))
    return {"qk_rope_head_dim": _int(cfg.get("qk_rope_head_dim")) or (0 if kv_lora else None), "sparse_mla": sparse,
            "indexer_bytes": (index_dim + 4 * max(1, index_dim // 128)) if sparse and index_dim else 0}


def architecture_from_hf_config(config: Mapping[str, Any], source: str = "config.json") -> Architecture:
    """An :class:`Architecture` from a parsed Hugging Face ``config.json`` (multimodal: its ``text_config``)."""
    if not isinstance(config, Mapping):
        raise ArchitectureError(f"{source}: expected a JSON object")
    cfg = text_config(config)
    layers = first_int(cfg, LAYERS_KEYS)
    if not layers:
        raise ArchitectureError(f"{source}: no num_hidden_layers")
    dtype_bytes = _TORCH_DTYPE_BYTES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"), 2)
    heads, kv_heads, hidden, head_dim = attention_shape(cfg)
    kv_lora = _int(cfg.get("kv_lora_rank"))
    window = _int(cfg.get("sliding_window")) if cfg.get("use_sliding_window", True) is not False else None
    layers, sliding, linear, state_bytes = _layer_mix(cfg, layers, window, dtype_bytes)
    return check_architecture(Architecture(
        num_layers=layers, attention="mla" if kv_lora else kind_for_heads(heads, kv_heads),
        num_attention_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, kv_lora_rank=kv_lora,
        sliding_window=window if sliding else None, sliding_window_layers=sliding, linear_layers=linear,
        linear_state_bytes=state_bytes, hidden_size=hidden, vocab_size=_int(cfg.get("vocab_size")),
        max_position_embeddings=_int(cfg.get("max_position_embeddings")), dtype_bytes=dtype_bytes,
        intermediate_size=_int(cfg.get("intermediate_size")), **_moe_fields(cfg), **_mla_fields(cfg, kv_lora),
        mtp_layers=_int(cfg.get("num_nextn_predict_layers")) or 0, replicated_params=replicated_params(cfg),
        source=source,
    ))


def replicated_params(cfg: Mapping[str, Any]) -> int:
    """Parameters vLLM keeps whole on every TP rank: MLA's fused down-projections, the MoE router, and a
    sparse-attention indexer's projections."""
    hidden = first_int(cfg, HIDDEN_KEYS) or 0
    layers = first_int(cfg, LAYERS_KEYS) or 0
    kv_lora, q_lora = _int(cfg.get("kv_lora_rank")) or 0, _int(cfg.get("q_lora_rank")) or 0
    out = layers * hidden * (q_lora + kv_lora + (_int(cfg.get("qk_rope_head_dim")) or 0)) if kv_lora else 0
    experts = first_int(cfg, EXPERTS_KEYS)
    if experts:
        out += moe_layer_count(cfg, layers) * experts * hidden
    index_dim, index_heads = _int(cfg.get("index_head_dim")), _int(cfg.get("index_n_heads"))
    if kv_lora and index_dim and index_heads:
        out += layers * (q_lora * index_heads * index_dim + hidden * index_dim + hidden * index_heads)
    return out


def moe_layer_count(cfg: Mapping[str, Any], layers: int) -> int:
    """Layers with routed experts, as vLLM's model classes place them: from ``first_k_dense_replace`` on,
    every ``moe_layer_freq``-th counted from 0 (``deepseek_v2.py``), every ``decoder_sparse_step``-th counted
    from 1 (``qwen2_moe.py``), none of ``mlp_only_layers``; a Nemotron-H pattern's ``E`` layers; Llama 4's
    every ``interleave_moe_layer_step``-th counted from 1, none when it is not positive (``llama4.py``); Jamba's
    layers ``i`` with ``i % expert_layer_period == expert_layer_offset`` (``jamba.py``, through the config's
    ``layers_num_experts``; the offset defaults to 1 as there)."""
    pattern = layer_pattern(cfg)
    if pattern is not None:
        return pattern.moe
    if "interleave_moe_layer_step" in cfg:
        every = _int(cfg.get("interleave_moe_layer_step")) or 0
        return layers // every if every > 0 else 0
    period = _int(cfg.get("expert_layer_period"))
    if period and period > 0:
        offset = _int(cfg.get("expert_layer_offset"))
        return sum(1 for i in range(layers) if i % period == (1 if offset is None else offset))
    first_dense = _int(cfg.get("first_k_dense_replace")) or 0
    freq = max(1, _int(cfg.get("moe_layer_freq")) or 1)
    step = max(1, _int(cfg.get("decoder_sparse_step")) or 1)
    # vLLM tests ``layer_idx not in mlp_only_layers`` (so ``True`` is layer 1, ``2.0`` layer 2); a list or
    # dict item is unhashable and matches no layer
    dense = {i for i in as_list(cfg.get("mlp_only_layers")) if not isinstance(i, list | dict)}
    return sum(1 for i in range(first_dense, layers) if i % freq == 0 and (i + 1) % step == 0 and i not in dense)


def qkvo_params(hidden: int, heads: int, kv: int, head_dim: int) -> int:
    """One attention layer's Q, K, V and O projections (no biases): Q and O ``hidden x heads*head_dim``,
    K and V ``hidden x kv*head_dim``."""
    return hidden * head_dim * (2 * heads + 2 * kv)


def attention_params(cfg: Mapping[str, Any], hidden: int) -> int:
    """One attention layer's projections: MLA's (vLLM's ``deepseek_v2.py``: Q through ``q_lora_rank`` when set,
    the fused KV down-projection with the rotary key, the KV up-projection, the output), else Q, K, V and O.
    Unknown query heads count as one head of the hidden width (an MHA layer's 4 x hidden^2)."""
    heads, kv, _, head_dim = attention_shape(cfg)
    heads = heads or 1
    kv_lora = _int(cfg.get("kv_lora_rank"))
    if kv_lora:
        q_lora, rope = count_of(cfg, "q_lora_rank"), _int(cfg.get("qk_rope_head_dim")) or 0
        nope, v = count_of(cfg, "qk_nope_head_dim"), count_of(cfg, "v_head_dim")
        q = hidden * q_lora + q_lora * heads * (nope + rope) if q_lora else hidden * heads * (nope + rope)
        return q + hidden * (kv_lora + rope) + kv_lora * heads * (nope + v) + heads * v * hidden
    return qkvo_params(hidden, heads, kv or heads, head_dim or hidden // heads)


def mlp_widths(cfg: Mapping[str, Any]) -> tuple[int, int]:
    """(a dense layer's MLP width, a MoE layer's shared-expert width): Llama 4 (vLLM's ``llama4.py``) gives its
    dense layers ``intermediate_size_mlp`` and each MoE layer one shared expert of ``intermediate_size``; the
    others ``n_shared_experts`` experts of the routed width (``deepseek_v2.py``) or one
    ``shared_expert_intermediate_size`` expert (``qwen2_moe.py``)."""
    inter = _int(cfg.get("intermediate_size")) or 0
    if "interleave_moe_layer_step" in cfg:
        return count_of(cfg, "intermediate_size_mlp"), inter
    routed = first_int(cfg, EXPERT_WIDTH_KEYS) or 0
    return inter, count_of(cfg, "n_shared_experts") * routed + count_of(cfg, "shared_expert_intermediate_size")


@dataclass(frozen=True, slots=True)
class Parameters:
    """A model's weights by role, as vLLM's model classes hold them (all ranks together; multi-token-prediction
    layers and a vision encoder are not counted)."""

    #: the routed experts of every MoE layer
    routed: int
    #: the rest of the layers: attention, dense MLPs, shared experts, routers (Nemotron-H: Mamba mixers)
    other: int
    #: the input embedding (0: tied to the output head)
    embedding: int
    #: the output head (``vocab x hidden``)
    lm_head: int

    @property
    def total(self) -> int:
        return self.routed + self.other + self.embedding + self.lm_head


def parameters(cfg: Mapping[str, Any]) -> Parameters:
    """The weights of a ``config.json``'s language model (``cfg``: its :func:`text_config`), one count for the
    planner's expert share and perf's compute: gated MLPs and experts are 3 matrices, a router ``hidden x
    experts``; biases and norms are left out. Jamba's Mamba layers hold a Mamba-1 mixer, not attention."""
    hidden = first_int(cfg, HIDDEN_KEYS) or 0
    layers = first_int(cfg, LAYERS_KEYS) or 0
    experts = first_int(cfg, EXPERTS_KEYS) or 0
    head = hidden * (_int(cfg.get("vocab_size")) or 0)
    embedding = 0 if cfg.get("tie_word_embeddings") is True else head
    attention = attention_params(cfg, hidden)
    moe_layers = moe_layer_count(cfg, layers) if experts else 0
    pattern = layer_pattern(cfg)
    if pattern is not None:  # Nemotron-H: a layer is one block of its kind
        routed, other = pattern_params(cfg, pattern, hidden, attention, experts, moe_layers)
        return Parameters(routed, other, embedding, head)
    dense, shared = mlp_widths(cfg)
    period = _int(cfg.get("attn_layer_period"))  # Jamba (as the KV-cache layer mix reads it)
    mamba = layers - jamba_attention_layers(cfg, layers, period) if period else 0
    routed = moe_layers * experts * 3 * hidden * (first_int(cfg, EXPERT_WIDTH_KEYS) or 0)
    mixers = (layers - mamba) * attention + mamba * mamba1_params(cfg, hidden)
    shared_and_routers = moe_layers * (3 * hidden * shared + hidden * experts)
    dense_mlps = (layers - moe_layers) * 3 * hidden * dense
    return Parameters(routed, mixers + shared_and_routers + dense_mlps, embedding, head)


def expert_fraction_from_config(cfg: Mapping[str, Any]) -> float:
    """Share of the parameters that are routed experts, from the config's shapes: an estimate, used only
    when the checkpoint's own tensor names are unknown (:mod:`.checkpoints`)."""
    experts = first_int(cfg, EXPERTS_KEYS)
    hidden = first_int(cfg, HIDDEN_KEYS) or 0
    width = first_int(cfg, EXPERT_WIDTH_KEYS) or 0
    layers = first_int(cfg, LAYERS_KEYS) or 0
    if not (experts and hidden and width and layers):
        return 0.0
    p = parameters(cfg)
    return p.routed / p.total if p.total else 0.0


def estimated_checkpoint_gib(parameter_count: Any, precision: Any, arch: Architecture | None = None) -> float | None:
    """Weights estimate from the parameter count and the variant's precision (the last resort): quantized
    checkpoints keep the embeddings and the LM head in bf16."""
    b = parameters_billions(parameter_count)
    per = PRECISION_BYTES.get(str(precision or "bf16").lower())
    if b is None or per is None:
        return None
    params = b * 1e9
    embed = min(float(2 * arch.vocab_size * arch.hidden_size) if arch and arch.vocab_size and arch.hidden_size
                else 0.0, params)
    return ((params - embed) * per + embed * max(per, 2.0)) / GIB


def ceil_div(a: int, b: int) -> int:
    return -(-a // b) if b > 0 else a

