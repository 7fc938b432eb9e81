"""Invariants of the arithmetic (hypothesis, bounded examples)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.fit.architecture import Architecture
from vllm_recipes.fit.memory import GIB, ProcessShape, fit_process

dense = st.builds(
    Architecture,
    num_layers=st.integers(1, 128),
    attention=st.just("gqa"),
    num_kv_heads=st.sampled_from([1, 2, 4, 8, 16, 32]),
    head_dim=st.sampled_from([64, 96, 128, 256]),
    hidden_size=st.sampled_from([None, 2048, 4096, 8192]),
    vocab_size=st.sampled_from([None, 32000, 151936]),
    sliding_window=st.just(None),
)
mla = st.builds(Architecture, num_layers=st.integers(1, 96), attention=st.just("mla"),
                kv_lora_rank=st.sampled_from([256, 512]), qk_rope_head_dim=st.sampled_from([0, 64]))
archs = st.one_of(dense, mla)
shapes = st.builds(ProcessShape, tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2]),
                   kv_cache_dtype=st.sampled_from(["auto", "fp8"]), block_size=st.sampled_from([None, 16, 64, 256]),
                   gpu_memory_utilization=st.sampled_from([None, 0.5, 0.85, 0.95]),
                   max_model_len=st.sampled_from([None, 4096, 131072]))
ckpt = st.floats(0, 2000, allow_nan=False)
mem = st.floats(1, 300, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(archs, ckpt, mem, shapes, st.integers(1, 1 << 20))
def test_capacity_never_negative(a: Architecture, c: float, m: float, s: ProcessShape, ctx: int) -> None:
    f = fit_process(a, c, m, s, ctx)
    assert f.kv_tokens >= 0 and f.concurrency >= 0 and f.kv_tokens % f.block_size == 0
    if f.starts:
        assert f.kv_budget > 0 and f.max_model_len > 0


@settings(max_examples=60, deadline=None)
@given(archs, ckpt, mem, st.floats(0, 100, allow_nan=False), shapes)
def test_monotone_in_gpu_memory(a: Architecture, c: float, m: float, extra: float, s: ProcessShape) -> None:
    """At fixed batch sizes: vLLM's defaults grow with the GPU (8,192 / 1,024 from 70 GiB), and a larger
    sampler warm-up can legitimately leave a 70 GiB GPU less KV than a 69 GiB one."""
    s = replace(s, max_num_batched_tokens=2048, max_num_seqs=256)
    assert fit_process(a, c, m + extra, s).kv_tokens >= fit_process(a, c, m, s).kv_tokens


@settings(max_examples=60, deadline=None)
@given(archs, ckpt, mem, shapes)
def test_monotone_in_tensor_parallelism(a: Architecture, c: float, m: float, s: ProcessShape) -> None:
    """Doubling TP never lowers capacity once communication buffers exist (TP >= 2; going from
    1 to 2 GPUs adds them, a constant the model documents)."""
    s = replace(s, tp=max(2, s.tp))
    assert fit_process(a, c, m, replace(s, tp=s.tp * 2)).kv_tokens >= fit_process(a, c, m, s).kv_tokens


@settings(max_examples=60, deadline=None)
@given(dense, st.integers(1, 512), shapes)
def test_doubling_kv_bytes_halves_capacity(a: Architecture, gib: int, s: ProcessShape) -> None:
    """Twice the head dim is twice the KV bytes per token: capacity halves, within one block each side."""
    s = replace(s, kv_cache_memory_bytes=gib * GIB)
    one = fit_process(a, 0, 80, s)
    two = fit_process(replace(a, head_dim=(a.head_dim or 0) * 2), 0, 80, s)
    assert two.kv_bytes_per_token == 2 * one.kv_bytes_per_token
    assert one.kv_tokens - 2 * one.block_size <= 2 * two.kv_tokens <= one.kv_tokens
