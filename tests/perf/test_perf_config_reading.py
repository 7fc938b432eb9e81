"""perf reads a config.json as the memory planner does: one reading of each fact (hand-written configs)."""

from __future__ import annotations

from typing import Any

import pytest

from vllm_recipes.fit.architecture import (
    architecture_from_hf_config,
    expert_fraction_from_config,
    moe_layer_count,
)
from vllm_recipes.perf.architecture import facts_from_hf_config

H, HEADS, HD, VOCAB, INTER = 64, 8, 8, 100, 128
ATTN_MHA = H * HEADS * HD + 2 * H * HEADS * HD + HEADS * HD * H


def _dense(**extra: Any) -> dict[str, Any]:
    return {"num_hidden_layers": 2, "hidden_size": H, "num_attention_heads": HEADS, "vocab_size": VOCAB,
            "intermediate_size": INTER} | extra


def _moe(**extra: Any) -> dict[str, Any]:
    return _dense(num_hidden_layers=6, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=32) | extra


def test_multi_query_attention_has_one_kv_head() -> None:
    cfg = _dense(multi_query=True)
    facts, arch = facts_from_hf_config(cfg), architecture_from_hf_config(cfg)
    assert arch.num_kv_heads == 1
    attn = H * HEADS * HD + 2 * H * 1 * HD + HEADS * HD * H
    assert facts.dense_params == 2 * (attn + 3 * H * INTER)


def test_moe_layer_freq_counts_every_nth_layer_from_zero() -> None:
    cfg = _moe(first_k_dense_replace=1, moe_layer_freq=2)  # DeepSeek-V2 style: layers 2 and 4
    facts, arch = facts_from_hf_config(cfg), architecture_from_hf_config(cfg)
    assert facts.moe_layers == 2 and arch.moe_layers == 2
    assert facts.expert_params == 2 * 8 * 3 * H * 32


def test_decoder_sparse_step_counts_from_one_and_skips_mlp_only_layers() -> None:
    cfg = _moe(num_hidden_layers=5, decoder_sparse_step=2, mlp_only_layers=[3])  # Qwen-MoE style: layer 1 only
    # the planner's expert share counts the single MoE layer (it read layers 0, 2 and 4) and its router, as perf does
    experts = 8 * 3 * H * 32
    others = 5 * H * HD * (2 * HEADS + 2 * HEADS) + 4 * 3 * H * INTER + H * 8 + 2 * H * VOCAB
    assert expert_fraction_from_config(cfg) == pytest.approx(experts / (experts + others))
    facts, arch = facts_from_hf_config(cfg), architecture_from_hf_config(cfg)
    assert facts.moe_layers == 1 and arch.moe_layers == 1


def test_mlp_only_layers_has_vllms_membership_semantics() -> None:
    # vLLM tests `layer_idx not in mlp_only_layers`: True == 1 and 2.0 == 2 name layers, "0" names none;
    # an unhashable item is no layer (it raised TypeError)
    cfg = _moe(num_hidden_layers=4, mlp_only_layers=[[3], True, {"a": 1}, "0", 2.0])
    assert moe_layer_count(cfg, 4) == 2  # layers 0 and 3
    assert facts_from_hf_config(cfg).moe_layers == architecture_from_hf_config(cfg).moe_layers == 2


MAMBA = {"mamba_num_heads": 4, "mamba_head_dim": 16, "ssm_state_size": 16}  # inner 64, one group, kernel 4
# vLLM's MambaMixer2: in_proj to x, z (64 each), B, C (16 each) and dt (4 heads); the convolution over x, B, C
# (96 channels, 4 taps and a bias); A, D and dt's bias per head; the gated norm; out_proj
MAMBA_PARAMS = H * (2 * 64 + 2 * 16 + 4) + 96 * (4 + 1) + 3 * 4 + 64 + 64 * H


def test_a_nemotron_pattern_counts_each_layer_as_its_kind() -> None:
    # M = Mamba, * = attention, - = an MLP (up + down, squared ReLU): the planner counts the three with a cache
    cfg = _dense(num_hidden_layers=5, hybrid_override_pattern="M-M*-", **MAMBA)
    facts, arch = facts_from_hf_config(cfg), architecture_from_hf_config(cfg)
    assert arch.num_layers == 3 and arch.linear_layers == 2
    assert facts.num_layers == 5 and facts.one_block_layers
    assert facts.dense_params == 2 * MAMBA_PARAMS + ATTN_MHA + 2 * (2 * H * INTER)


def test_a_nemotron_pattern_puts_experts_on_its_e_layers() -> None:
    cfg = _dense(num_hidden_layers=5, hybrid_override_pattern="ME*E-", n_routed_experts=8, num_experts_per_tok=2,
                 moe_intermediate_size=32, n_shared_experts=1, moe_shared_expert_intermediate_size=48, **MAMBA)
    facts, arch = facts_from_hf_config(cfg), architecture_from_hf_config(cfg)
    assert moe_layer_count(cfg, 5) == arch.moe_layers == facts.moe_layers == 2
    assert arch.num_layers == 2  # the Mamba and the attention layer hold a cache
    assert facts.expert_params == 2 * 8 * (2 * H * 32)  # each expert up + down
    moe_block = 2 * H * 48 + H * 8  # the shared expert and the router
    assert facts.dense_params == MAMBA_PARAMS + ATTN_MHA + 2 * moe_block + 2 * H * INTER


def test_the_planners_expert_share_of_a_nemotron_moe_counts_each_layer_as_its_kind() -> None:
    # one count with perf: the experts (up + down) over the Mamba mixer, the attention layer, the MLP, the two
    # MoE blocks' shared expert and router, the embedding and the head (the generic rule gave 3 projections per
    # expert, attention on every layer and no Mamba mixer)
    cfg = _dense(num_hidden_layers=5, hybrid_override_pattern="ME*E-", n_routed_experts=8, num_experts_per_tok=2,
                 moe_intermediate_size=32, n_shared_experts=1, moe_shared_expert_intermediate_size=48, **MAMBA)
    experts = 2 * 8 * (2 * H * 32)  # 65,536
    mamba = H * (64 + 96 + 4) + 96 * 5 + 3 * 4 + 64 + 64 * H  # in_proj, conv1d, per head, norm, out_proj: 15,148
    others = mamba + ATTN_MHA + 2 * (2 * H * 48 + H * 8) + 2 * H * INTER + 2 * H * VOCAB  # 15,148 + 16,384 + ...
    # experts / (experts + others) = 65,536 / (65,536 + 15,148 + 16,384 + 13,312 + 16,384 + 12,800)
    assert expert_fraction_from_config(cfg) == pytest.approx(experts / (experts + others))
    assert architecture_from_hf_config(cfg).expert_fraction == pytest.approx(experts / (experts + others))
    facts = facts_from_hf_config(cfg)
    assert facts.expert_params / (facts.expert_params + facts.dense_params + 2 * H * VOCAB) == pytest.approx(
        experts / (experts + others))
