"""Parameter counts read from real-shaped ``config.json`` files (tests/perf/data/published, written from the
models' published dimensions) land within 3% of the publishers' totals, and the planner's expert share is
perf's count: one rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vllm_recipes.fit.architecture import (
    architecture_from_hf_config,
    attention_params,
    expert_fraction_from_config,
    jamba_attention_layers,
    moe_layer_count,
    qkvo_params,
    text_config,
)
from vllm_recipes.perf.architecture import ComputeFacts, facts_from_hf_config

DATA = Path(__file__).parent / "data" / "published"
TOLERANCE = 0.03

#: config -> (published total, published active, the active count includes the input embedding); the
#: totals of Llama 4 include its vision encoder (< 1B), which is not counted here; gpt-oss's model card counts
#: the unembedding but not the embedding among the active parameters
PUBLISHED = {
    "llama4-scout-17b-16e": (109e9, 17e9, True),
    "llama4-maverick-17b-128e": (400e9, 17e9, True),
    "deepseek-v3": (671e9, 37e9, True),
    "qwen3-30b-a3b": (30.5e9, 3.3e9, True),
    "gpt-oss-120b": (116.83e9, 5.13e9, False),
    "mixtral-8x7b": (46.7e9, 12.9e9, True),
    "qwen3-32b": (32.8e9, 32.8e9, True),
    "jamba-v0.1": (52e9, 12e9, True),
}


def _config(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def _total(f: ComputeFacts) -> float:
    return f.dense_params + f.expert_params + f.embedding_params + f.lm_head_params


@pytest.mark.parametrize("name", PUBLISHED)
def test_totals_and_active_counts_match_the_published_figures(name: str) -> None:
    total, active, with_embedding = PUBLISHED[name]
    f = facts_from_hf_config(_config(name))
    assert _total(f) == pytest.approx(total, rel=TOLERANCE)
    counted = f.active_params + f.lm_head_params + (f.embedding_params if with_embedding else 0.0)
    assert counted == pytest.approx(active, rel=TOLERANCE)


@pytest.mark.parametrize("name", PUBLISHED)
def test_the_planners_expert_share_is_perfs(name: str) -> None:
    cfg = _config(name)
    f, arch = facts_from_hf_config(cfg), architecture_from_hf_config(cfg)
    share = f.expert_params / _total(f)
    assert expert_fraction_from_config(text_config(cfg)) == pytest.approx(share, rel=1e-12)
    assert arch.expert_fraction == pytest.approx(share, rel=1e-12)
    assert arch.moe_layers == f.moe_layers


def test_llama4_places_experts_every_interleave_step_counted_from_one() -> None:
    # vLLM's llama4.py: a layer is MoE when (layer_idx + 1) % interleave_moe_layer_step == 0
    assert architecture_from_hf_config(_config("llama4-scout-17b-16e")).moe_layers == 48
    maverick = _config("llama4-maverick-17b-128e")
    assert architecture_from_hf_config(maverick).moe_layers == 24
    f = facts_from_hf_config(maverick)
    h, attention = 5120, qkvo_params(5120, 40, 8, 128)
    # 24 dense layers of intermediate_size_mlp; 24 MoE layers with one shared expert of intermediate_size and a router
    assert f.dense_params == 48 * attention + 24 * 3 * h * 16384 + 24 * (3 * h * 8192 + h * 128)
    assert f.expert_params == 24 * 128 * 3 * h * 8192
    assert moe_layer_count({"interleave_moe_layer_step": 0}, 48) == 0


def test_jamba_places_experts_at_the_expert_layer_offset() -> None:
    # HF's JambaConfig.layers_num_experts, read by vLLM's jamba.py: experts where i % period == offset
    cfg = _config("jamba-v0.1")
    assert moe_layer_count(cfg, 32) == architecture_from_hf_config(cfg).moe_layers == 16  # layers 1, 3, ..., 31
    assert facts_from_hf_config(cfg).expert_params == 16 * 16 * 3 * 4096 * 14336
    assert moe_layer_count({"expert_layer_period": 4, "expert_layer_offset": 2}, 8) == 2  # layers 2 and 6
    assert moe_layer_count({"expert_layer_period": 2}, 8) == 4  # the offset defaults to 1: layers 1, 3, 5, 7


def test_jamba_mamba_layers_hold_a_mamba1_mixer_not_attention() -> None:
    f = facts_from_hf_config(_config("jamba-v0.1"))
    h, inner, state, dt_rank = 4096, 8192, 16, 256
    mixer = (h * 2 * inner + inner * 5 + inner * (dt_rank + 2 * state) + (dt_rank + 1) * inner + inner * (state + 1)
             + inner * h)  # in_proj, conv1d + bias, x_proj, dt_proj + bias, A and D, out_proj
    attention = qkvo_params(h, 32, 8, 128)  # layers 4, 12, 20 and 28
    assert f.dense_params == 4 * attention + 28 * mixer + 16 * 3 * h * 14336 + 16 * h * 16


def test_jamba_attention_layers_sit_at_hfs_default_offset() -> None:
    """HF's JambaConfig puts attention at ``attn_layer_offset`` 4 when the config does not say (it was read
    as 0): on 12 layers of period 8, layer 4 only, not layers 0 and 8."""
    assert jamba_attention_layers({"attn_layer_period": 8}, 12, 8) == 1
    assert jamba_attention_layers({"attn_layer_period": 8, "attn_layer_offset": 0}, 12, 8) == 2


H = 64


def _moe(**extra: Any) -> dict[str, Any]:
    return {"num_hidden_layers": 4, "hidden_size": H, "num_attention_heads": 8, "vocab_size": 100,
            "intermediate_size": 128, "n_routed_experts": 8, "num_experts_per_tok": 2,
            "moe_intermediate_size": 32} | extra


@pytest.mark.parametrize("cfg", [
    _moe(kv_lora_rank=16, q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8),  # MLA's shape
    _moe(shared_expert_intermediate_size=48),  # Qwen2-MoE's shared expert
    _moe(n_shared_experts=-1),  # not a count: no shared expert
    _moe(num_attention_heads=None, num_key_value_heads=2, head_dim=16),  # no query heads: one
], ids=["mla", "shared-expert-width", "negative-shared-experts", "no-heads"])
def test_the_planner_and_perf_count_each_term_alike(cfg: dict[str, Any]) -> None:
    f = facts_from_hf_config(cfg)
    assert expert_fraction_from_config(cfg) == pytest.approx(f.expert_params / _total(f), rel=1e-12)


def test_unknown_query_heads_count_as_one_head() -> None:
    f = facts_from_hf_config(_moe(num_attention_heads=None, num_key_value_heads=2, head_dim=16))
    router, layers = H * 8, 4
    assert f.dense_params == layers * (qkvo_params(H, 1, 2, 16) + router)


def test_deepseek_v3_mla_attention_is_vllms_shape() -> None:
    """One MLA layer of DeepSeek-V3 (q_lora_rank 1536, kv_lora_rank 512, nope 128 + rope 64, v 128, 128 heads,
    hidden 7168): q_a + q_b + kv_a (with the rope part) + kv_b + o = 187,105,280, counted by hand; the 3%
    tolerance of the totals would not notice a projection left out."""
    assert attention_params(text_config(_config("deepseek-v3")), 7168) == 187_105_280
