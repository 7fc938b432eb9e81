"""A small simulation of vLLM's V1 scheduler on one replica.

Each step: every running decode gets one token; the token budget
(``max_num_batched_tokens``) left after them goes to prefill - first the request
whose prompt is part-way through, then waiting requests in arrival order, at most
one of them left partial (chunked prefill). A request is admitted only while
fewer than ``max_num_seqs`` run and its KV fits what is left of the planner's KV
budget. vLLM allocates blocks as tokens arrive and preempts when the pool is
full; a request holds on average its prompt and half its output over its life,
which is what admission reserves - the running batch is what fits on average.

Clients are closed-loop (``concurrency`` users, each sending its next request
when the last finishes, as ``vllm bench serve --max-concurrency``) or open-loop
Poisson arrivals at ``rate``. Steps that only decode are taken in spans up to the
next event (a finish or an arrival), the step time evaluated at the span's
middle context - the simulation costs a few steps per request, not one per token.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .model import StepTime

StepFn = Callable[[int, float, tuple[tuple[int, int], ...]], StepTime]


@dataclass(frozen=True, slots=True)
class Workload:
    isl: int
    osl: int
    concurrency: int | None = None
    rate: float | None = None
    num_prompts: int = 0
    #: lengths uniform in [ratio x L, L] (``vllm bench serve --random-range-ratio`` style); 1.0 = fixed
    range_ratio: float = 1.0
    seed: int = 0
    #: the prompt's KV arrives computed (the decode pool of a disaggregated deployment)
    prefilled: bool = False

    def prompts(self) -> int:
        if self.num_prompts:
            return self.num_prompts
        return max(10 * (self.concurrency or 1), 50) if self.concurrency else 200


@dataclass(frozen=True, slots=True)
class Limits:
    max_num_seqs: int
    max_num_batched_tokens: int
    #: KV budget in bytes and what one request of L tokens holds
    kv_budget: float
    request_bytes: Callable[[int], float]


@dataclass(slots=True)
class _Req:
    arrival: float
    isl: int
    osl: int
    kv: float
    done_prefill: int = 0
    first: float = 0.0
    start_step: int = 0


@dataclass
class SimResult:
    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)
    output_tokens: int = 0
    duration: float = 0.0
    #: time-weighted mean of running sequences and its peak
    mean_running: float = 0.0
    peak_running: int = 0
    decode_bound: dict[str, float] = field(default_factory=dict)
    prefill_bound: dict[str, float] = field(default_factory=dict)
    prefill_time: float = 0.0
    #: a request that can never be admitted (its KV exceeds the budget)
    blocked: bool = False


def _lengths(w: Workload, i: int) -> tuple[int, int]:
    if w.range_ratio >= 1.0:
        return w.isl, w.osl
    a = (i * 0.6180339887498949) % 1.0  # low-discrepancy, deterministic
    b = (i * 0.7548776662466927) % 1.0
    lo = w.range_ratio
    return max(1, round(w.isl * (lo + (1 - lo) * a))), max(1, round(w.osl * (lo + (1 - lo) * b)))


def simulate(step: StepFn, w: Workload, lim: Limits) -> SimResult:
    """Run ``w`` through the scheduler; times in seconds."""
    n_total = w.prompts()
    rng = random.Random(w.seed)
    res = SimResult()
    waiting: deque[_Req] = deque()
    issued = 0

    sizes: dict[int, float] = {}

    def make(t: float) -> _Req:
        nonlocal issued
        isl, osl = _lengths(w, issued)
        issued += 1
        held = isl + (osl + 1) // 2
        kv = sizes.get(held)
        if kv is None:
            kv = sizes[held] = lim.request_bytes(held)
        return _Req(t, isl, osl, kv)

    next_arrival = math.inf
    if w.rate:
        next_arrival = 0.0
    else:
        for _ in range(min(w.concurrency or 1, n_total)):
            waiting.append(make(0.0))

    prefilling: list[_Req] = []
    finish_heap: list[tuple[int, int, _Req]] = []  # (finish step, tiebreak, request)
    g = 0  # decode steps so far
    ctx_sum = 0.0  # cached tokens of running decodes
    kv_used = 0.0
    t = 0.0
    done = 0
    busy_area = 0.0
    while done < n_total:
        while w.rate and next_arrival <= t and issued < n_total:
            waiting.append(make(next_arrival))
            next_arrival += rng.expovariate(w.rate)
        if issued >= n_total:
            next_arrival = math.inf
        decodes = len(finish_heap)
        budget = lim.max_num_batched_tokens - decodes
        chunks: list[tuple[_Req, int]] = []
        for r in prefilling:
            if budget <= 0:
                break
            n = min(r.isl - r.done_prefill, budget)
            chunks.append((r, n))
            budget -= n
        partial = any(n < r.isl - r.done_prefill for r, n in chunks)
        while (waiting and budget > 0 and not partial and waiting[0].arrival <= t
               and decodes + len(prefilling) < lim.max_num_seqs and kv_used + waiting[0].kv <= lim.kv_budget):
            r = waiting.popleft()
            prefilling.append(r)
            kv_used += r.kv
            if w.prefilled:
                chunks.append((r, 0))
                continue
            n = min(r.isl, budget)
            chunks.append((r, n))
            budget -= n
            partial = n < r.isl
        if waiting and not finish_heap and not prefilling and waiting[0].kv > lim.kv_budget:
            res.blocked = True
            break
        if not chunks and not decodes:
            if not waiting and next_arrival == math.inf:
                break
            t = max(t, min(next_arrival, waiting[0].arrival if waiting else math.inf))
            continue
        if w.prefilled and chunks:  # admitted with its KV: decodes from the next step
            for r, _ in chunks:
                r.done_prefill = r.isl
            chunks_now = [(r, 0) for r, _ in chunks]
            st = step(decodes, ctx_sum, ()) if decodes else step(1, 0.0, ())
            span, bound = 1, res.decode_bound
            chunks = chunks_now
        elif chunks:
            st = step(decodes, ctx_sum, tuple((n, r.done_prefill) for r, n in chunks))
            span = 1
            bound = res.prefill_bound
            res.prefill_time += st.total
        else:
            span = finish_heap[0][0] - g
            if next_arrival < math.inf or (waiting and waiting[0].arrival > t):
                arr = min(next_arrival, waiting[0].arrival if waiting else math.inf)
                one = step(decodes, ctx_sum, ())
                span = max(1, min(span, math.ceil((arr - t) / one.total)))
            st = step(decodes, ctx_sum + decodes * (span - 1) / 2, ())
            bound = res.decode_bound
        dt = st.total * span
        bound[st.bound] = bound.get(st.bound, 0.0) + dt
        running = decodes + len(prefilling)
        busy_area += running * dt
        res.peak_running = max(res.peak_running, running)
        t += dt
        if decodes:
            g += span
            ctx_sum += decodes * span
        for r, n in chunks:
            r.done_prefill += n
            if r.done_prefill >= r.isl and r in prefilling:
                prefilling.remove(r)
                r.first = t
                res.ttft.append(t - r.arrival)
                r.start_step = g
                heapq.heappush(finish_heap, (g + r.osl - 1, id(r), r))
                ctx_sum += r.isl + 1
        while finish_heap and finish_heap[0][0] <= g:
            _, _, r = heapq.heappop(finish_heap)
            ctx_sum -= r.isl + 1 + (g - r.start_step)
            kv_used -= r.kv
            done += 1
            res.output_tokens += r.osl
            if r.osl > 1:
                res.tpot.append((t - r.first) / (r.osl - 1))
            if not w.rate and issued < n_total:
                waiting.append(make(t))
    res.duration = t
    res.mean_running = busy_area / t if t > 0 else 0.0
    return res
