"""What a forward pass computes and reads: parameter counts, experts, attention widths.

Exact from a Hugging Face ``config.json``; coarse (flagged) from a recipe's ``parameter_count`` /
``active_parameters`` and the memory planner's architecture.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_recipes.fit.architecture import (
    GIB,
    LAYERS_KEYS,
    PRECISION_BYTES,
    Architecture,
    architecture_from_hf_config,
    first_int,
    layer_pattern,
    parameters,
    parameters_billions,
    text_config,
)
from vllm_recipes.jsvalues import as_map

#: the tensor-core dtype a weight format's matrix multiplies run in where the GPU has it; MXFP4 is absent
#: on purpose: vLLM multiplies it with 16-bit activations (docs/decisions-perf-model.md §2)
GEMM_DTYPE = {"fp8": "fp8", "w8a8": "fp8", "int8": "fp8", "mxfp8": "fp8", "nvfp4": "fp4", "fp4": "fp4"}
#: routed share k/E assumed when a recipe gives neither a config nor experts (said in the notes)
DEFAULT_ROUTED_SHARE = 1 / 32


@dataclass(frozen=True, slots=True)
class ComputeFacts:
    """Parameter counts of one model (all of them, not per GPU)."""

    num_layers: int
    hidden_size: int
    #: weights multiplied by every token besides the routed experts (attention, dense MLPs, shared experts)
    dense_params: float
    #: all routed experts of all MoE layers
    expert_params: float
    #: embedding table (looked up, not multiplied; 0 when tied to the output head)
    embedding_params: float
    #: output head (multiplied once per sampled token)
    lm_head_params: float = 0.0
    experts: int = 0
    experts_per_token: int = 0
    moe_layers: int = 0
    attention_heads: int = 0
    #: per head, per (query, key) pair: widths of the QK product and the PV product
    qk_dim: int = 0
    v_dim: int = 0
    #: the dense part stays 16-bit while experts are quantized (gpt-oss MXFP4)
    experts_only_quantized: bool = False
    #: a layer is one block (Nemotron-H's pattern: a Mamba mixer, attention, an MLP or experts), not an
    #: attention and an MLP: one TP all-reduce, not two
    one_block_layers: bool = False
    #: k/E when the expert counts are unknown (derived from total and active parameters)
    share: float = 0.0
    exact: bool = True
    source: str = ""

    @property
    def routed_share(self) -> float:
        """k/E: the share of a layer's experts one token uses."""
        if self.experts and self.experts_per_token:
            return self.experts_per_token / self.experts
        if not self.expert_params:
            return 0.0
        return self.share or DEFAULT_ROUTED_SHARE

    def weight_bytes(self, precision: str) -> tuple[float, float]:
        """Bytes per (dense, routed-expert) parameter at a precision: MXFP4 checkpoints keep the dense part
        16-bit."""
        q = PRECISION_BYTES.get(precision.lower(), 2.0)
        return (2.0 if self.experts_only_quantized else q), q

    @property
    def active_params(self) -> float:
        """Weights one token multiplies in the layers (the output head is counted per sampled token)."""
        return self.dense_params + self.expert_params * self.routed_share


def facts_from_hf_config(config: Mapping[str, Any], source: str = "config.json",
                         arch: Architecture | None = None) -> ComputeFacts:
    """Exact counts from a ``config.json`` (Llama/Qwen/Mistral dense, Mixtral/Qwen-MoE/gpt-oss/Llama 4, DeepSeek
    MLA, Nemotron-H, Jamba): the planner's :func:`~vllm_recipes.fit.architecture.parameters`, and layers, heads,
    widths and experts as it reads them (``arch``: its reading, if made)."""
    cfg = text_config(config)
    a = arch or architecture_from_hf_config(config, source)
    layers, h, heads = a.num_layers, a.hidden_size or 0, a.num_attention_heads or 0
    p = parameters(cfg)
    qk_dim, v_dim = decode_widths(a)
    pattern = layer_pattern(cfg)
    if pattern is not None:  # Nemotron-H: a layer is one block of its kind
        layers = first_int(cfg, LAYERS_KEYS) or layers
    experts = a.num_experts
    k = a.experts_per_token if experts else 0
    quant = as_map(cfg.get("quantization_config"))
    return ComputeFacts(
        num_layers=layers, hidden_size=h, dense_params=float(p.other),
        expert_params=float(p.routed), embedding_params=float(p.embedding),
        lm_head_params=float(p.lm_head), experts=experts,
        experts_per_token=k, moe_layers=a.moe_layers, attention_heads=heads, qk_dim=qk_dim, v_dim=v_dim,
        experts_only_quantized=str(quant.get("quant_method") or "") == "mxfp4", one_block_layers=pattern is not None,
        source=source)


def _split_params(arch: Architecture, total: float, active: float, embed: float) -> tuple[float, float]:
    """(dense, routed-expert) parameters of ``total`` (the embedding and the head taken off): all dense when
    every parameter is active, else the experts by the recipe's expert fraction or by total - active."""
    body = total - 2 * embed
    if active >= total * 0.999:
        return body, 0.0
    x = total * arch.expert_fraction if arch.expert_fraction else (total - active) / (1 - DEFAULT_ROUTED_SHARE)
    experts = min(x, body)
    return max(0.0, body - experts), experts


def decode_widths(arch: Architecture) -> tuple[int, int]:
    """(QK, V) widths per head that decode reads: MLA (DeepSeek-V2/V3 style) runs the absorbed form over the
    latent (+ the rotary part), other attention over ``head_dim``."""
    if arch.attention == "mla":
        latent = arch.kv_lora_rank or 0
        return latent + (arch.qk_rope_head_dim or 0), latent
    return arch.head_dim or 0, arch.head_dim or 0


def facts_from_recipe(arch: Architecture, model: Mapping[str, Any]) -> ComputeFacts | None:
    """Coarse facts from the recipe's parameter counts and the planner's architecture (``None``: too little known)."""
    total = parameters_billions(model.get("parameter_count"))
    active = parameters_billions(model.get("active_parameters")) or total
    if not total or not arch.hidden_size or not arch.num_layers:
        return None
    total, active = total * 1e9, min(total, active or total) * 1e9
    embed = float((arch.vocab_size or 0) * arch.hidden_size)
    dense, experts = _split_params(arch, total, active, embed)
    qk, v = decode_widths(arch)
    said = f"recipe parameter_count {model.get('parameter_count')}"
    if model.get("active_parameters"):
        said += f", active_parameters {model.get('active_parameters')}"
    return ComputeFacts(
        num_layers=arch.num_layers, hidden_size=arch.hidden_size, dense_params=dense, expert_params=experts,
        embedding_params=embed, lm_head_params=embed, attention_heads=arch.num_attention_heads or 0, qk_dim=qk,
        v_dim=v, moe_layers=arch.num_layers if experts else 0, exact=False,
        share=min(1.0, max(1 / 512, (active - dense - embed) / experts)) if experts else 0.0, source=said)


def checkpoint_gib(facts: ComputeFacts, precision: str) -> float:
    """Weights on disk at a precision (embeddings and, for MXFP4 checkpoints, the dense part stay 16-bit)."""
    dense_b, q = facts.weight_bytes(precision)
    return ((facts.embedding_params + facts.lm_head_params) * 2 + facts.dense_params * dense_b
            + facts.expert_params * q) / GIB
