"""One estimate: a planned process (the memory planner's output) + GPU facts + calibrated constants -> metrics.

Pure: :func:`replica` is the per-GPU view of one replica; :func:`estimate_process` simulates it and
scales by the data-parallel ranks.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from functools import cache, partial
from importlib.resources import files
from typing import Any

from vllm_recipes.fit.architecture import Architecture
from vllm_recipes.fit.memory import ProcessFit, request_bytes, stage_layers

from .architecture import GEMM_DTYPE, ComputeFacts
from .gpus import GpuSpec
from .model import Params, Replica, step_time
from .scheduler import Frontend, Limits, Workload, simulate


@dataclass(frozen=True, slots=True)
class Calibration:
    """Fitted constants per GPU family, and the leave-one-model-out errors that say how far to trust them."""

    families: tuple[tuple[str, Params], ...]
    default: Params
    #: metric -> (median |error|, p90 |error|), leave-one-model-out
    expected_error: tuple[tuple[str, tuple[float, float]], ...]

    def params_for(self, family: str) -> tuple[Params, bool]:
        """The family's constants and whether they were calibrated on it (else: the median family)."""
        got = dict(self.families).get(family)
        return (got, True) if got is not None else (self.default, False)


@cache
def calibration() -> Calibration:
    """The package's ``params.json`` (written by ``tools/calibrate_perf.py``)."""
    d = json.loads(files("vllm_recipes.perf").joinpath("params.json").read_text("utf-8"))
    return Calibration(tuple((k, Params(**v)) for k, v in d["families"].items()), Params(**d["default"]),
                       tuple((k, (float(v["median"]), float(v["p90"]))) for k, v in d["expected_error"].items()))


def replica(facts: ComputeFacts, arch: Architecture, fit: ProcessFit, gpu: GpuSpec, precision: str,
            gpus_per_node: int) -> Replica:
    """The per-GPU view of one replica; weights scaled to the planner's weights per GPU."""
    s = fit.shape
    tp, pp = s.tp, s.pp
    ep = s.expert_ranks if facts.expert_params else tp
    dense_b, q = facts.weight_bytes(precision)
    dense = (facts.dense_params * dense_b + facts.lm_head_params * 2) / (tp * pp)
    experts = facts.expert_params * q / (ep * pp)
    embed = facts.embedding_params * 2 / (tp * pp)
    scale = fit.weights / (dense + experts + embed) if fit.weights > 0 and dense + experts + embed > 0 else 1.0
    att = max(1, arch.attention_layers if arch.exact else 1)
    kv_layer = fit.kv_bytes_per_token / stage_layers(att, pp)
    full = arch.full_layers if arch.exact else pp  # compressed: the per-token figure covers every layer
    sliding = arch.sliding_window_layers if arch.exact else 0
    expert_rate, _ = gpu.peak_flops(GEMM_DTYPE.get(precision.lower(), "bf16"))
    attn_rate, _ = gpu.peak_flops("bf16")
    gemm_rate = attn_rate if facts.experts_only_quantized else expert_rate  # gpt-oss: 16-bit attention weights
    span_nodes = tp * pp > gpus_per_node or ep > gpus_per_node
    link = (gpu.scale_out_gb_s if span_nodes or gpu.link_gb_s <= 0 else gpu.link_gb_s) * 1e9
    heads = facts.attention_heads
    return Replica(
        tp=tp, pp=pp, ep=ep, ep_ranks=s.dp if ep > tp else 1, layers=facts.num_layers, hidden=facts.hidden_size,
        dense_bytes=dense * scale, expert_bytes=experts * scale, routed_share=facts.routed_share,
        moe_layers=facts.moe_layers, experts_per_token=facts.experts_per_token or 1, kv_layer_bytes=kv_layer,
        full_layers=full, sliding_layers=sliding, window=arch.sliding_window or 0,
        state_bytes=arch.linear_state_bytes * stage_layers(arch.linear_layers, pp) / tp,
        gemm_flops_per_token=2 * facts.active_params / (tp * pp),
        expert_flops_per_token=2 * facts.expert_params * facts.routed_share / (tp * pp),
        head_flops_per_sample=2 * facts.lm_head_params / tp,
        attn_flops_per_pair=2 * heads * (facts.qk_dim + facts.v_dim) / max(1, min(tp, heads or 1)),
        gemm_rate=gemm_rate, expert_rate=expert_rate, attn_rate=attn_rate, hbm=gpu.hbm_gb_s * 1e9, link=max(link, 1e9),
        one_block_layers=facts.one_block_layers)


@dataclass(frozen=True, slots=True)
class Estimate:
    """The metrics of one deployment at one workload point (times in ms)."""

    ttft_ms: float
    tpot_ms: float
    output_tok_s_total: float
    output_tok_s_per_gpu: float
    gpus: int
    replicas: int
    running_mean: float
    running_peak: int
    running_cap: int
    decode_bound: str
    prefill_bound: str
    queueing: bool
    blocked: bool

    @property
    def tok_s_per_user(self) -> float:
        return 1000.0 / self.tpot_ms if self.tpot_ms > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"ttft_ms": round(self.ttft_ms, 1), "tpot_ms": round(self.tpot_ms, 2),
                "tok_s_per_user": round(self.tok_s_per_user, 1),
                "output_tok_s_per_gpu": round(self.output_tok_s_per_gpu, 1),
                "output_tok_s_total": round(self.output_tok_s_total, 1), "gpus": self.gpus,
                "replicas": self.replicas,
                "running_batch": {"mean": round(self.running_mean, 1), "peak": self.running_peak,
                                  "cap": self.running_cap},
                "bounds": {"prefill": self.prefill_bound, "decode": self.decode_bound,
                           "ttft": "queueing" if self.queueing else self.prefill_bound},
                "blocked": self.blocked}


#: the share of the steady-state queueing time :func:`lower_bounds` claims
QUEUE_BOUND_SHARE = 0.5


def _limits(arch: Architecture, fit: ProcessFit, workload: Workload) -> Limits:
    """The scheduler's limits of a planned process: batch limits as rendered, KV tokens of this workload."""
    length = workload.isl + workload.osl
    per_token = request_bytes(arch, fit.shape, length, fit.block_size) / length  # windows and states averaged in
    return Limits(fit.max_num_seqs, fit.max_num_batched_tokens,
                  fit.kv_budget / per_token if per_token > 0 and fit.kv_budget > 0 else 0.0)


def frontend(params: Params) -> Frontend:
    return Frontend(params.request_ms * 1e-3, params.prompt_us * 1e-6)


def estimate_process(facts: ComputeFacts, arch: Architecture, fit: ProcessFit, gpu: GpuSpec, precision: str,
                     params: Params, workload: Workload, gpus_per_node: int = 8) -> Estimate:
    """Simulate one replica at the workload's share and scale to every data-parallel rank."""
    r = replica(facts, arch, fit, gpu, precision, gpus_per_node)
    dp = fit.shape.dp
    per = replace(workload, concurrency=math.ceil(workload.concurrency / dp) if workload.concurrency else None,
                  rate=workload.rate / dp if workload.rate else None, num_prompts=math.ceil(workload.prompts() / dp))
    lim = _limits(arch, fit, workload)
    sim = simulate(partial(step_time, r, params), per, lim, frontend(params))
    gpus = fit.shape.gpus
    ttft = sim.ttft_mean * 1e3 if sim.ttft else math.inf
    tpot = sim.tpot_mean * 1e3 if sim.tpot else 0.0
    total = sim.output_tokens / sim.duration * dp if sim.duration > 0 else 0.0
    prefill_step = sim.prefill_time / max(1, len(sim.ttft)) * 1e3
    cap = min(lim.max_num_seqs, int(lim.kv_tokens // (workload.isl + 1)))  # each running request holds its prompt

    def top(d: dict[str, float]) -> str:
        return max(d, key=lambda k: d[k]) if d else "none"

    return Estimate(ttft, tpot, total, total / gpus if gpus else 0.0, gpus, dp, sim.mean_running,
                    sim.peak_running, cap, top(sim.decode_bound), top(sim.prefill_bound),
                    ttft > 2 * prefill_step, sim.blocked)


def lower_bounds(facts: ComputeFacts, arch: Architecture, fit: ProcessFit, gpu: GpuSpec, precision: str,
                 params: Params, workload: Workload, gpus_per_node: int = 8) -> tuple[float, float]:
    """(TTFT, TPOT) in ms the simulation cannot beat (``recommend`` prunes with it): the prompt prefilled
    alone, one sequence decoding alone, and half the steady-state queue of users beyond the seats
    (Little's law: ``C`` users on ``m`` seats busy ``S`` each wait ``(C/m - 1) S``)."""
    r = replica(facts, arch, fit, gpu, precision, gpus_per_node)
    lim = _limits(arch, fit, workload)
    mbt = max(1, lim.max_num_batched_tokens)
    isl = max(1, round(workload.isl * workload.range_ratio))
    osl = max(1, round(workload.osl * workload.range_ratio))
    prefill = sum(step_time(r, params, 0, 0.0, ((min(mbt, isl - pre), pre),)).total for pre in range(0, isl, mbt))
    delay = frontend(params).delay(isl)
    tpot = step_time(r, params, 1, float(isl), ()).total
    users = math.ceil(workload.concurrency / fit.shape.dp) if workload.concurrency else 0
    seats = min(lim.max_num_seqs, int(lim.kv_tokens // isl)) if lim.max_num_seqs > 0 else int(lim.kv_tokens // isl)
    queue = 0.0
    if users > seats >= 1:  # users in the front end are not queued: their delay comes off
        queue = max(0.0, QUEUE_BOUND_SHARE * ((users / seats - 1) * (prefill + (osl - 1) * tpot) - delay))
    return (delay + prefill + queue) * 1e3, tpot * 1e3
