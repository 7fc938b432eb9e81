"""The scheduler simulation on hand-checkable step times, and the model's monotonic properties."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.fit.architecture import Architecture
from vllm_recipes.fit.memory import ProcessShape, fit_process
from vllm_recipes.perf.architecture import ComputeFacts
from vllm_recipes.perf.estimate import estimate_process, replica
from vllm_recipes.perf.gpus import spec_for_profile
from vllm_recipes.perf.model import Params, StepTime, step_time
from vllm_recipes.perf.scheduler import Limits, Workload, simulate

TEN_MS = StepTime(0.010, 0.0, 0.010, 0.0, 0.0)


def const(decodes: int, ctx: float, prefills: tuple[tuple[int, int], ...]) -> StepTime:
    return TEN_MS


def lim(seqs: int = 256, mbt: int = 8192, kv_tokens: float = 1e12) -> Limits:
    return Limits(seqs, mbt, kv_tokens)


def test_one_request_at_a_time() -> None:
    res = simulate(const, Workload(100, 11, concurrency=1, num_prompts=3), lim())
    assert res.ttft == pytest.approx([0.010] * 3)  # one prefill step each
    assert res.tpot == pytest.approx([0.010] * 3)  # then one token per step
    assert res.duration == pytest.approx(3 * 11 * 0.010) and res.output_tokens == 33


def test_chunked_prefill_takes_several_steps() -> None:
    res = simulate(const, Workload(10_000, 2, concurrency=1, num_prompts=1), lim(mbt=4096))
    assert res.ttft == pytest.approx([0.030])  # 4096 + 4096 + 1808


def test_one_partial_prefill_per_step() -> None:
    # two prompts of 3000 with a budget of 4096: the first whole, the second partial (1096), then the rest
    res = simulate(const, Workload(3000, 2, concurrency=2, num_prompts=2), lim(mbt=4096))
    assert sorted(res.ttft) == pytest.approx([0.010, 0.020])


def test_the_running_batch_is_capped_by_kv_and_max_num_seqs() -> None:
    res = simulate(const, Workload(100, 100, concurrency=8, num_prompts=16), lim(seqs=3))
    assert res.peak_running == 3 and res.preemptions == 0
    # 450 tokens of KV: four prompts of 100 fit, then the growing contexts push the newest out
    res = simulate(const, Workload(100, 100, concurrency=8, num_prompts=16), lim(kv_tokens=450))
    assert res.peak_running == 4 and res.preemptions > 0
    assert res.peak_kv_tokens <= 450
    assert len(res.ttft) == 16 and res.output_tokens == 1600  # every request still finishes


def test_preemption_recomputes_but_keeps_the_first_token() -> None:
    # two requests of 100 + 100 in 300 tokens: the second is preempted once the two outgrow the cache
    res = simulate(const, Workload(100, 100, concurrency=2, num_prompts=2), lim(kv_tokens=300))
    assert res.preemptions >= 1 and len(res.ttft) == 2
    assert min(res.tpot) == pytest.approx(0.010)  # the survivor decodes undisturbed
    assert max(res.tpot) > 0.010  # the victim waited and recomputed


def test_a_request_that_never_fits_is_reported() -> None:
    res = simulate(const, Workload(1000, 100, concurrency=1, num_prompts=1), lim(kv_tokens=10))
    assert res.blocked


def test_poisson_arrivals_finish_every_request() -> None:
    res = simulate(const, Workload(100, 20, rate=5.0, num_prompts=40), lim())
    assert len(res.ttft) == 40 and res.output_tokens == 800
    assert res.duration > 40 / 5.0 * 0.5  # arrivals span about 8 s


# --- properties on the real model ----------------------------------------------------------

DENSE = Architecture(num_layers=32, num_attention_heads=32, num_kv_heads=8, head_dim=128, hidden_size=4096,
                     vocab_size=128256, max_position_embeddings=32768)
FACTS = ComputeFacts(num_layers=32, hidden_size=4096, dense_params=6.98e9, expert_params=0.0,
                     embedding_params=5.25e8, lm_head_params=5.25e8, attention_heads=32, qk_dim=128, v_dim=128)
PARAMS = Params(bw_eff=0.7, flops_eff=0.5, layer_us=15.0, comm_us=8.0, step_ms=1.5, request_ms=20.0)
H100 = spec_for_profile("h100")


def _fit(tp: int, seqs: int | None = None):  # type: ignore[no-untyped-def]
    return fit_process(DENSE, 14.96, 80.0, ProcessShape(tp=tp, max_model_len=32768, max_num_seqs=seqs), levers=False)


@settings(max_examples=40, deadline=None)
@given(tp=st.sampled_from([1, 2, 4]), batch=st.integers(1, 64), ctx=st.integers(16, 8192))
def test_more_gpus_never_lower_the_throughput_of_a_memory_bound_decode_step(tp: int, batch: int, ctx: int) -> None:
    assert H100 is not None
    times = []
    for t in (tp, 2 * tp):
        r = replica(FACTS, DENSE, _fit(t), H100, "bf16", 8)
        s = step_time(r, PARAMS, batch, float(batch * ctx))
        times.append(s)
    small, big = times
    if small.memory >= small.compute:  # a memory-bound step
        # the roofline part of a replica's step shrinks with its GPUs; only the collectives grow
        assert big.total - big.comm <= small.total - small.comm + 1e-12


@settings(max_examples=15, deadline=None)
@given(c=st.integers(1, 48), more=st.integers(1, 48), isl=st.integers(16, 2048), osl=st.integers(2, 128))
def test_more_concurrency_never_lowers_tpot(c: int, more: int, isl: int, osl: int) -> None:
    assert H100 is not None
    fit = _fit(1)
    tpots = [estimate_process(FACTS, DENSE, fit, H100, "bf16", PARAMS,
                              Workload(isl, osl, concurrency=n, num_prompts=3 * n)).tpot_ms for n in (c, c + more)]
    assert tpots[1] >= tpots[0] * (1 - 1e-9)


def test_dp_replicas_multiply_the_throughput() -> None:
    assert H100 is not None
    one = estimate_process(FACTS, DENSE, _fit(1), H100, "bf16", PARAMS, Workload(512, 64, concurrency=8))
    dp2 = fit_process(DENSE, 14.96, 80.0, ProcessShape(tp=1, dp=2, max_model_len=32768), levers=False)
    two = estimate_process(FACTS, DENSE, dp2, H100, "bf16", PARAMS, Workload(512, 64, concurrency=16))
    assert two.gpus == 2 and two.replicas == 2
    assert two.output_tok_s_total == pytest.approx(2 * one.output_tok_s_total, rel=0.02)
    assert math.isclose(two.tpot_ms, one.tpot_ms, rel_tol=0.02)


def test_the_running_batch_never_exceeds_what_fits() -> None:
    assert H100 is not None
    fit = _fit(1, seqs=4)
    e = estimate_process(FACTS, DENSE, fit, H100, "bf16", PARAMS, Workload(256, 32, concurrency=32))
    assert e.running_peak <= 4 and e.running_cap == 4
    per_token = 2 * 32 * 8 * 128 * 2  # bytes of one token: 32 layers of K and V, 8 heads of 128, bf16
    fit = replace(_fit(1), kv_budget=3 * per_token * 260.0)  # room for three prompts of 256
    e = estimate_process(FACTS, DENSE, fit, H100, "bf16", PARAMS, Workload(256, 288, concurrency=32))
    assert e.running_peak <= 3 and e.running_cap == 3


def test_a_decode_pool_never_prefills_its_prompts() -> None:
    """A disaggregated decode pool receives each prompt's KV computed: its replicas do no prefill work,
    so its time to first token is below a pool that computes the same prompts itself."""
    assert H100 is not None
    fit = _fit(1)
    w = Workload(4096, 64, concurrency=16)
    computes = estimate_process(FACTS, DENSE, fit, H100, "bf16", PARAMS, w)
    receives = estimate_process(FACTS, DENSE, fit, H100, "bf16", PARAMS, replace(w, prefilled=True))
    assert receives.ttft_ms < computes.ttft_ms / 2
    dp2 = fit_process(DENSE, 14.96, 80.0, ProcessShape(tp=1, dp=2, max_model_len=32768), levers=False)
    two = estimate_process(FACTS, DENSE, dp2, H100, "bf16", PARAMS, replace(w, concurrency=32, prefilled=True))
    assert two.ttft_ms < computes.ttft_ms / 2
