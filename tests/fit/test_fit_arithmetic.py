"""KV bytes per token, capacity and concurrency for real model configs, each worked by hand.

Budgets are pinned with ``--kv-cache-memory-bytes`` (the shape's
``kv_cache_memory_bytes``) so the arithmetic is tested apart from the overhead model.
"""

from __future__ import annotations

import pytest

from vllm_recipes.fit.architecture import Architecture, HostTable
from vllm_recipes.fit.memory import (
    GIB,
    ProcessShape,
    fit_process,
    kv_bytes_per_token,
    overheads,
    request_bytes,
    weights_per_gpu,
)

TEN_GIB = 10 * GIB


def test_llama3_8b_gqa(arch: dict[str, Architecture]) -> None:
    """Llama-3-8B: 32 layers, 8 KV heads of 128, bf16.

    bytes/token = 2 (K,V) x 32 x 8 x 128 x 2 B = 131,072; at TP4 each GPU holds 2 KV heads: 32,768.
    10 GiB = 10,737,418,240 B / (131,072 x 16) = 5,120 blocks = 81,920 tokens.
    One 8,192-token request = 8,192 x 131,072 = 1 GiB, so 10 fit.
    """
    a = arch["llama3_8b"]
    assert a.attention == "gqa" and a.num_kv_heads == 8 and a.head_dim == 128
    assert kv_bytes_per_token(a, ProcessShape()) == 131_072
    assert kv_bytes_per_token(a, ProcessShape(tp=4)) == 32_768
    f = fit_process(a, 15, 80, ProcessShape(kv_cache_memory_bytes=TEN_GIB), 8192)
    assert f.kv_tokens == 81_920
    assert f.concurrency == 10 and f.starts  # max-model-len 8,192 (the model's) fits


def test_deepseek_v3_mla_not_split_by_tp(arch: dict[str, Architecture]) -> None:
    """DeepSeek-V3: MLA, 61 layers, latent 512 + rope 64.

    bf16: 61 x 576 x 2 B = 70,272 bytes/token on every TP rank (one latent per token, not split).
    fp8 (vLLM's layout: 512 fp8 + 4 fp32 scales + 64 bf16 rope = 656 B/layer): 61 x 656 = 40,016.
    50 GiB at fp8, block 64: 53,687,091,200 / (40,016 x 64) = 20,963 blocks = 1,341,632 tokens;
    one 131,072-token request = 131,072 x 40,016 B = 4.88 GiB, so 10 fit.
    """
    a = arch["deepseek_v3"]
    assert a.attention == "mla"
    assert kv_bytes_per_token(a, ProcessShape()) == kv_bytes_per_token(a, ProcessShape(tp=8)) == 70_272
    shape = ProcessShape(tp=8, kv_cache_dtype="fp8", block_size=64, kv_cache_memory_bytes=50 * GIB)
    assert kv_bytes_per_token(a, shape) == 40_016
    f = fit_process(a, 640, 141, shape, 131_072)
    assert f.kv_tokens == 1_341_632
    assert f.concurrency == 10


def test_gpt_oss_sliding_window_hybrid(arch: dict[str, Architecture]) -> None:
    """gpt-oss-120b: 36 layers alternating sliding (window 128) / full, 8 KV heads of 64, bf16.

    Capacity counts every layer: 2 x 36 x 8 x 64 x 2 B = 73,728 bytes/token.
    A request of L tokens holds L in the 18 full layers but only ceil(127/16)+1 = 9 blocks
    (144 tokens) in the 18 sliding ones: 8,192 tokens -> 36,864 x (8,192 + 144) = 307,298,304 B.
    10 GiB / 307,298,304 B = 34 concurrent requests (all-full accounting would give 17).
    """
    a = arch["gpt_oss_120b"]
    assert (a.sliding_window, a.sliding_window_layers, a.full_layers) == (128, 18, 18)
    shape = ProcessShape(kv_cache_memory_bytes=TEN_GIB)
    assert kv_bytes_per_token(a, shape) == 73_728
    assert request_bytes(a, shape, 8192, 16) == 307_298_304
    assert fit_process(a, 61, 80, shape, 8192).concurrency == 34


def test_gpt_oss_120b_published_startup_figure(arch: dict[str, Architecture]) -> None:
    """vLLM logs 78,384 KV tokens for gpt-oss-120b on one 80 GB GPU with a 5.38 GiB KV budget.

    5.38 GiB = 5,776,731,013 B / (73,728 B x 16) = 4,896 blocks = 78,336 tokens: within 0.1%.
    """
    a = arch["gpt_oss_120b"]
    f = fit_process(a, 61, 80, ProcessShape(kv_cache_memory_bytes=int(5.38 * GIB)))
    assert f.kv_bytes_per_token == 73_728
    assert f.kv_tokens == pytest.approx(78_384, rel=0.02)


def test_nemotron_h_mamba_hybrid_state_per_sequence(arch: dict[str, Architecture]) -> None:
    """Nemotron-H-8B-class: 4 attention layers (8 KV heads of 128) and 23 Mamba-2 layers.

    KV per token: 2 x 4 x 8 x 128 x 2 B = 16,384 -> 10 GiB holds 655,360 tokens.
    Mamba-2 state per layer per sequence (d_inner = 128 heads x 64 = 8,192, 8 groups of state 128, conv 4):
    conv (4-1) x (8,192 + 2 x 8 x 128) = 30,720 + SSM 128 x 64 x 128 = 1,048,576 -> x 2 B = 2,158,592 B;
    23 layers = 49,647,616 B per sequence, whatever its length.
    8,192 tokens: 8,192 x 16,384 + 49,647,616 = 183,865,344 B -> 58 requests in 10 GiB.
    """
    a = arch["nemotron_h_8b"]
    assert (a.attention_layers, a.linear_layers, a.linear_state_bytes) == (4, 23, 2_158_592)
    shape = ProcessShape(kv_cache_memory_bytes=TEN_GIB)
    assert kv_bytes_per_token(a, shape) == 16_384
    assert request_bytes(a, shape, 8192, 16) == 183_865_344
    f = fit_process(a, 15, 80, shape, 8192)
    assert (f.kv_tokens, f.concurrency) == (655_360, 58)


def test_weights_split_by_tp_pp_and_ep() -> None:
    """100 GiB, 90% routed experts: TP2 x DP4 with EP puts 10/2 + 90/8 = 16.25 GiB on a GPU;
    without EP the experts split by TP only: 10/2 + 90/2 = 50; PP2 halves it again."""
    a = Architecture(num_layers=4, num_kv_heads=1, head_dim=64, expert_fraction=0.9)
    assert weights_per_gpu(a, 100, ProcessShape(tp=2, dp=4, expert_parallel=True)) == 16.25 * GIB
    assert weights_per_gpu(a, 100, ProcessShape(tp=2, dp=4)) == 50 * GIB
    assert weights_per_gpu(a, 100, ProcessShape(tp=2, pp=2)) == 25 * GIB
    assert weights_per_gpu(a, 100, ProcessShape(tp=2, cpu_offload_gib=20)) == 30 * GIB


def test_host_tables_leave_the_gpu_only_when_offloaded() -> None:
    """DeepSeek-V4.1-style Engram tables: 188.8 GiB split by TP unless their flag says cpu_offload."""
    a = Architecture(num_layers=4, num_kv_heads=1, head_dim=64,
                     host_tables=(HostTable(188.8, "--engram-config", '"cpu_offload":true'),))
    resident = weights_per_gpu(a, 478.8, ProcessShape(tp=4))
    off = weights_per_gpu(a, 478.8, ProcessShape(tp=4, table_flags=(("--engram-config", '{"cpu_offload":true}'),)))
    assert resident / GIB == pytest.approx(478.8 / 4)
    assert off / GIB == pytest.approx(290 / 4)


def test_budget_is_memory_times_utilization_minus_the_overhead_model(arch: dict[str, Architecture]) -> None:
    """Llama-3-8B (14.96 GiB) on one 80 GB GPU at vLLM's default 0.9: 72 GiB - weights - activation
    (8,192 x 4,096 x 2 B x 12 + 1,024 x 128,256 x 4 B = 1,330,642,944 B) - 0.5 GiB context - 0.5 GiB graphs."""
    a = arch["llama3_8b"]
    act, non_torch, graphs = overheads(a, ProcessShape(), 80)
    assert (act, non_torch, graphs) == (1_330_642_944, 0.5 * GIB, 0.5 * GIB)
    f = fit_process(a, 14.96, 80, ProcessShape())
    assert f.kv_budget == pytest.approx(72 * GIB - 14.96 * GIB - act - GIB)
    assert overheads(a, ProcessShape(tp=2, enforce_eager=True), 80)[1:] == (GIB, 0.0)


def test_verdict_and_quantified_levers(arch: dict[str, Architecture]) -> None:
    """Llama-3-8B at its 8,192 context needs 1 GiB of KV; a 0.5 GiB budget does not start.
    Levers: fp8 KV (halves the request: starts), the longest fitting context (0.5 GiB / 131,072 B
    = 4,096 tokens), CPU offload of the 1 GiB deficit (rounded up: 1 GiB)."""
    a = arch["llama3_8b"]
    f = fit_process(a, 15, 80, ProcessShape(kv_cache_memory_bytes=GIB // 2))
    assert not f.starts
    levers = {lv.kind: lv for lv in f.levers}
    assert levers["fp8_kv"].starts and levers["fp8_kv"].tokens == 2 * f.kv_tokens
    assert levers["max_model_len"].change == "--max-model-len 4096"
    assert levers["cpu_offload"].change == "--cpu-offload-gb 1"
    assert "tensor_parallel" in levers


def test_max_num_seqs_caps_concurrency(arch: dict[str, Architecture]) -> None:
    a = arch["llama3_8b"]
    f = fit_process(a, 15, 80, ProcessShape(kv_cache_memory_bytes=TEN_GIB, max_num_seqs=4), 8192)
    assert (f.concurrency, f.concurrency_uncapped) == (4, 10)


def test_compressed_sparse_reports_estimate_and_bound() -> None:
    """DeepSeek-V4-Flash facts: 3,513.6 elements/token estimate, 35,136 bound, fp8 KV.
    10 GiB, block 256: estimate floor(10,737,418,240 / (3,513.6 x 256)) x 256 = 3,055,872 tokens;
    bound floor(10,737,418,240 / (35,136 x 256)) x 256 = 305,408 tokens."""
    a = Architecture(num_layers=0, attention="compressed_sparse", kv_elements_per_token=3513.6,
                     kv_elements_per_token_max=35136)
    f = fit_process(a, 155.5, 141, ProcessShape(kv_cache_dtype="fp8", block_size=256, kv_cache_memory_bytes=TEN_GIB))
    assert not f.exact
    assert (f.kv_tokens, f.kv_tokens_bound) == (3_055_872, 305_408)
    assert any("not modelled exactly" in n for n in f.notes)
