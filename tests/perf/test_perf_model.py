"""Each term of the step-time model against hand-computed values."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from vllm_recipes.perf.architecture import checkpoint_gib, facts_from_hf_config
from vllm_recipes.perf.gpus import spec_for_name, spec_for_profile
from vllm_recipes.perf.model import (
    Params,
    Replica,
    causal_pairs,
    row_efficiency,
    step_time,
    touched,
    window_pairs,
)

DATA = Path(__file__).parent / "data"
P = Params(bw_eff=0.5, flops_eff=0.5, layer_us=10.0, comm_us=5.0, step_ms=1.0)
NO_FIXED = replace(P, layer_us=0.0, comm_us=0.0, step_ms=0.0)

# one GPU, 10 layers, 1 GB of dense weights, 1 TB/s, 100 TFLOP/s
BASE = Replica(tp=1, pp=1, ep=1, ep_ranks=1, layers=10, hidden=1000, dense_bytes=1e9, expert_bytes=0.0,
               routed_share=0.0, moe_layers=0, experts_per_token=1, kv_layer_bytes=100.0, full_layers=10,
               sliding_layers=0, window=0, state_bytes=0.0, gemm_flops_per_token=1e9, expert_flops_per_token=0.0,
               head_flops_per_sample=0.0,
               attn_flops_per_pair=0.0, gemm_rate=100e12, expert_rate=100e12, attn_rate=100e12, hbm=1e12, link=100e9)


def test_touched_experts() -> None:
    assert touched(4 / 128, 1) == pytest.approx(4 / 128)
    assert touched(4 / 128, 2) == pytest.approx(1 - (124 / 128) ** 2)
    assert touched(4 / 128, 10_000) == pytest.approx(1.0)
    assert touched(0.0, 50) == 0.0 and touched(1.0, 1) == 1.0


def test_attention_pairs() -> None:
    assert causal_pairs(4, 0) == 10  # 1 + 2 + 3 + 4
    assert causal_pairs(2, 10) == 2 * 10 + 3
    assert window_pairs(4, 100, 8) == 4 * 8
    assert window_pairs(4, 0, 0) == causal_pairs(4, 0)


def test_memory_bound_decode_step() -> None:
    # 1 GB weights + 8 seqs x 1000 cached tokens x 10 layers x 100 B = 8 MB, at 0.5 TB/s
    st = step_time(BASE, NO_FIXED, 8, 8000.0)
    assert st.memory == pytest.approx((1e9 + 8e6) / 0.5e12)
    assert st.compute == pytest.approx(8 * 1e9 / 50e12)
    assert st.total == pytest.approx(st.memory) and st.bound == "memory bandwidth"


def test_compute_bound_prefill_and_fixed_costs() -> None:
    st = step_time(BASE, P, 0, 0.0, ((8192, 0),))
    assert st.compute == pytest.approx(8192 * 1e9 / 50e12)
    assert st.fixed == pytest.approx(10 * 10e-6 + 1e-3)
    assert st.total == pytest.approx(st.compute + st.fixed) and st.bound == "compute"


def test_attention_flops_are_quadratic_in_the_chunk() -> None:
    r = replace(BASE, gemm_flops_per_token=0.0, attn_flops_per_pair=1e6)
    one = step_time(r, NO_FIXED, 0, 0.0, ((1000, 0),)).compute
    two = step_time(r, NO_FIXED, 0, 0.0, ((2000, 0),)).compute
    assert one == pytest.approx(10 * 1e6 * causal_pairs(1000, 0) / 50e12)
    assert two / one == pytest.approx(causal_pairs(2000, 0) / causal_pairs(1000, 0))


def test_moe_weights_read_grow_with_the_tokens() -> None:
    r = replace(BASE, dense_bytes=1e8, expert_bytes=1e9, routed_share=4 / 128, moe_layers=10)
    one = step_time(r, NO_FIXED, 1, 100.0).memory
    assert one == pytest.approx((1e8 + 1e9 * 4 / 128 + 1000 * 100) / 0.5e12)
    many = step_time(r, NO_FIXED, 256, 25600.0).memory
    assert many == pytest.approx((1e8 + 1e9 * touched(4 / 128, 256) + 256 * 100 * 1000) / 0.5e12)


def test_small_matrix_multiplies_and_routed_experts_run_below_peak() -> None:
    half = replace(NO_FIXED, gemm_half_rows=64.0)
    assert row_efficiency(64, 64) == 0.5 and row_efficiency(10, 0) == 1.0
    # 1024 tokens: dense rows at 1024 / 1088 of the rate
    st = step_time(BASE, half, 0, 0.0, ((1024, 0),))
    assert st.compute == pytest.approx(1024 * 1e9 / (50e12 * 1024 / 1088))
    # MoE: all FLOPs in experts with k/E = 1/32: each expert sees 32 of the 1024 rows
    moe = replace(BASE, expert_flops_per_token=1e9, routed_share=1 / 32, expert_bytes=1.0)
    st = step_time(moe, half, 0, 0.0, ((1024, 0),))
    assert st.compute == pytest.approx(1024 * 1e9 / (50e12 * 32 / 96))


def test_tensor_parallel_all_reduce() -> None:
    r = replace(BASE, tp=4)
    st = step_time(r, replace(NO_FIXED, comm_us=5.0), 10, 1000.0)
    payload = 10 * 1000 * 2
    assert st.comm == pytest.approx(10 * 2 * (5e-6 + 2 * 3 / 4 * payload / 100e9))


def test_a_one_block_layer_has_one_all_reduce() -> None:
    """Nemotron-H: each layer is a Mamba mixer, attention, an MLP or experts, with one all-reduce; under EP
    the 4 MoE layers' all-reduces are all-to-alls instead."""
    r = replace(BASE, tp=4, moe_layers=4, one_block_layers=True)
    st = step_time(r, replace(NO_FIXED, comm_us=5.0), 10, 1000.0)
    payload = 10 * 1000 * 2
    assert st.comm == pytest.approx(10 * 1 * (5e-6 + 2 * 3 / 4 * payload / 100e9))
    assert replace(r, ep=8).all_reduces_per_layer == pytest.approx(0.6)


def test_expert_parallel_all_to_all() -> None:
    r = replace(BASE, tp=1, ep=8, ep_ranks=8, moe_layers=10, experts_per_token=4, routed_share=0.5, expert_bytes=1.0)
    st = step_time(r, replace(NO_FIXED, comm_us=5.0), 10, 1000.0)
    assert st.comm == pytest.approx(10 * 2 * (5e-6 + 10 * 1000 * 2 * 4 * 7 / 8 / 100e9))


def test_pipeline_bubble_and_hops() -> None:
    r = replace(BASE, pp=2, layers=10)
    one_seq = step_time(r, NO_FIXED, 1, 100.0)  # one sequence: the second stage idles while the first runs
    assert one_seq.memory == pytest.approx(2 * (1e9 + 100 * 5 * 100) / 0.5e12, rel=1e-6)
    hop = 1000 * 2 / 100e9
    assert one_seq.total == pytest.approx(one_seq.memory + hop)


def test_sliding_window_caps_kv_reads() -> None:
    r = replace(BASE, full_layers=0, sliding_layers=10, window=128, dense_bytes=0.0)
    st = step_time(r, NO_FIXED, 2, 20000.0)
    assert st.memory == pytest.approx(10 * 2 * 128 * 100 / 0.5e12)


def test_native_and_emulated_dtypes() -> None:
    h100 = spec_for_profile("h100")
    b200 = spec_for_profile("b200")
    assert h100 is not None and b200 is not None
    assert h100.peak_flops("fp8") == (1979e12, "fp8")
    assert h100.peak_flops("fp4") == (989e12, "bf16")  # no FP4 unit on Hopper: W4A16 kernels, 16-bit math
    assert b200.peak_flops("fp4") == (9000e12, "fp4")
    assert spec_for_profile("rtx_pro_6000_2x") == spec_for_profile("rtx_pro_6000")
    assert spec_for_name("NVIDIA H200") == spec_for_profile("h200")
    assert spec_for_profile("xeon6") is None  # no GPU facts: the estimate says unknown


def test_parameter_counts_of_an_moe_config() -> None:
    f = facts_from_hf_config(json.loads((DATA / "moe_config.json").read_text()))
    h, layers = 2880, 36
    attn = h * 64 * 64 + 2 * h * 8 * 64 + 64 * 64 * h
    assert f.expert_params == layers * 128 * 3 * h * 2880
    assert f.dense_params == layers * (attn + h * 128)  # attention + router
    assert f.routed_share == 4 / 128 and f.experts_only_quantized
    assert f.active_params == pytest.approx(f.dense_params + f.expert_params * 4 / 128)
    # MXFP4 experts (0.53125 B), 16-bit attention, embeddings and head
    expect = (2 * 201088 * h * 2 + f.dense_params * 2 + f.expert_params * 0.53125) / 2**30
    assert checkpoint_gib(f, "mxfp4") == pytest.approx(expect)
    total = f.dense_params + f.expert_params + f.embedding_params + f.lm_head_params
    assert math.isclose(total / 1e9, 116.8, rel_tol=0.01)  # published: 117B


def test_per_sequence_host_cost_and_steps_too_large_for_a_cuda_graph() -> None:
    p = replace(NO_FIXED, seq_us=10.0, eager_layer_us=100.0)
    graphed = step_time(BASE, p, 8, 8000.0)  # 8 tokens: replayed as a CUDA graph
    assert graphed.fixed == pytest.approx(8 * 10e-6)
    eager = step_time(BASE, p, 3, 300.0, ((1024, 0),))  # 1027 tokens > 512: every kernel launched
    assert eager.fixed == pytest.approx(4 * 10e-6 + 10 * 100e-6)
    assert eager.total == pytest.approx(max(eager.compute, eager.memory) + eager.fixed)
