"""A small simulation of vLLM's V1 scheduler on one replica.

Each step every running decode gets one token; the token budget
(``max_num_batched_tokens``) left after them goes to prefill - first the request
whose prompt is part-way through, then waiting requests in arrival order, at most
one of them left partial (chunked prefill). A waiting request is admitted while
fewer than ``max_num_seqs`` run and its prompt fits the free KV cache; the KV
then grows by one token per decode step, and when the cache is full the most
recently admitted request is preempted (its KV freed, recomputed later from its
prompt and the tokens it already generated) - vLLM's recompute preemption. The
tokens held never exceed the memory planner's KV capacity.

Clients are closed-loop (``concurrency`` users, each sending its next request
when the last finishes, as ``vllm bench serve --max-concurrency``) or open-loop
Poisson arrivals at ``rate``. Steps that only decode are taken in spans up to the
next event (a finish, an arrival, a full cache), the step time evaluated at the
span's middle context - the simulation costs a few steps per request, not one per
token.
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
        """Requests to run: ``num_prompts``, else 10 x concurrency (the calibration benchmarks' count), at
        least 50 and, beyond 100 users, 1000 + 2 x concurrency (a few waves of a large closed loop say as
        much as ten and keep an estimate fast); 200 Poisson arrivals."""
        if self.num_prompts:
            return self.num_prompts
        if not self.concurrency:
            return 200
        return max(50, min(10 * self.concurrency, 1000 + 2 * self.concurrency))


@dataclass(frozen=True, slots=True)
class Limits:
    max_num_seqs: int
    max_num_batched_tokens: int
    #: KV capacity in tokens (the planner's budget over the bytes a token of this workload costs)
    kv_tokens: float


@dataclass(slots=True, eq=False)
class _Req:
    arrival: float
    isl: int
    osl: int
    #: tokens to (re)compute before decoding: the prompt, after a preemption also the generated tokens
    prompt: int = 0
    done_prefill: int = 0
    generated: int = 0
    first: float = -1.0
    start_step: int = 0
    epoch: int = 0


@dataclass
class SimResult:
    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)
    output_tokens: int = 0
    duration: float = 0.0
    #: time-weighted mean of running sequences and its peak
    mean_running: float = 0.0
    peak_running: int = 0
    peak_kv_tokens: float = 0.0
    preemptions: int = 0
    decode_bound: dict[str, float] = field(default_factory=dict)
    prefill_bound: dict[str, float] = field(default_factory=dict)
    prefill_time: float = 0.0
    #: a request that can never be admitted (its prompt exceeds the KV capacity)
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

    def make(t: float) -> _Req:
        nonlocal issued
        isl, osl = _lengths(w, issued)
        issued += 1
        return _Req(t, isl, osl, prompt=isl)

    next_arrival = math.inf
    if w.rate:
        next_arrival = 0.0
    else:
        for _ in range(min(w.concurrency or 1, n_total)):
            waiting.append(make(0.0))

    prefilling: list[_Req] = []
    decoding: dict[_Req, None] = {}  # admission order (the newest is preempted first); O(1) removal
    finish_heap: list[tuple[int, int, int, _Req]] = []  # (finish step, order, epoch, request); stale epochs skipped
    pushes = 0
    g = 0  # decode steps so far
    ctx_sum = 0.0  # cached tokens of decoding requests
    held_prefill = 0.0  # tokens reserved by requests being prefilled
    t = 0.0
    done = 0
    busy_area = 0.0
    cap = lim.kv_tokens

    def ctx_of(r: _Req) -> int:
        return r.prompt + 1 + (g - r.start_step)

    def drop_decoding(r: _Req) -> None:
        nonlocal ctx_sum
        del decoding[r]
        ctx_sum -= ctx_of(r)
        r.epoch += 1  # its heap entry is stale now

    while done < n_total:
        while w.rate and next_arrival <= t and issued < n_total:
            waiting.append(make(next_arrival))
            next_arrival += rng.expovariate(w.rate)
        if issued >= n_total:
            next_arrival = math.inf
        # preempt (newest first) while the next decode step would overflow the cache
        while decoding and ctx_sum + held_prefill + len(decoding) > cap and len(decoding) + len(prefilling) > 1:
            victim = next(reversed(decoding))
            victim.generated += g - victim.start_step
            drop_decoding(victim)
            victim.prompt, victim.done_prefill = victim.isl + victim.generated, 0
            waiting.appendleft(victim)
            res.preemptions += 1
        decodes = len(decoding)
        budget = lim.max_num_batched_tokens - decodes
        chunks: list[tuple[_Req, int]] = []
        for r in prefilling:
            if budget <= 0:
                break
            n = min(r.prompt - r.done_prefill, budget)
            chunks.append((r, n))
            budget -= n
        partial = any(n < r.prompt - r.done_prefill for r, n in chunks)
        while (waiting and budget > 0 and not partial and waiting[0].arrival <= t
               and decodes + len(prefilling) < lim.max_num_seqs
               and ctx_sum + held_prefill + waiting[0].prompt + decodes <= cap):
            r = waiting.popleft()
            prefilling.append(r)
            held_prefill += r.prompt
            if w.prefilled and r.first < 0:  # its KV arrives with it: no prefill work
                r.done_prefill = r.prompt
                chunks.append((r, 0))
                continue
            n = min(r.prompt, budget)
            chunks.append((r, n))
            budget -= n
            partial = n < r.prompt
        if waiting and not decoding and not prefilling and waiting[0].arrival <= t \
                and waiting[0].prompt + 1 > cap:
            res.blocked = True
            break
        if not chunks and not decodes:
            if not waiting and next_arrival == math.inf:
                break
            t = max(t, min(next_arrival, waiting[0].arrival if waiting else math.inf))
            continue
        work = tuple((n, r.done_prefill) for r, n in chunks if n)
        if work:
            st = step(decodes, ctx_sum, work)
            span, bound = 1, res.prefill_bound
            res.prefill_time += st.total
        else:
            while finish_heap and finish_heap[0][2] != finish_heap[0][3].epoch:
                heapq.heappop(finish_heap)
            span = finish_heap[0][0] - g if finish_heap else 1
            if decodes:
                room = int((cap - ctx_sum - held_prefill) // decodes)
                span = max(1, min(span, room))
            arr = min(next_arrival, waiting[0].arrival if waiting and waiting[0].arrival > t else math.inf)
            if decodes and arr < math.inf:
                one = step(decodes, ctx_sum, ())
                span = max(1, min(span, math.ceil((arr - t) / one.total)))
            st = step(max(1, decodes), ctx_sum + decodes * (span - 1) / 2, ())
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
        res.peak_kv_tokens = max(res.peak_kv_tokens, ctx_sum + held_prefill)
        for r, n in chunks:
            r.done_prefill += n
            if r.done_prefill >= r.prompt and r in prefilling:
                prefilling.remove(r)
                held_prefill -= r.prompt
                r.generated += 1  # the prefill step samples a token
                if r.first < 0:
                    r.first = t
                    res.ttft.append(t - r.arrival)
                r.start_step = g
                decoding[r] = None
                ctx_sum += r.prompt + 1
                pushes += 1
                heapq.heappush(finish_heap, (g + r.osl - r.generated, pushes, r.epoch, r))
        while finish_heap and (finish_heap[0][0] <= g or finish_heap[0][2] != finish_heap[0][3].epoch):
            _, _, epoch, r = heapq.heappop(finish_heap)
            if epoch != r.epoch:
                continue
            drop_decoding(r)
            done += 1
            res.output_tokens += r.osl
            if r.osl > 1:
                res.tpot.append((t - r.first) / (r.osl - 1))
            if not w.rate and issued < n_total:
                waiting.append(make(t))
    res.duration = t
    res.mean_running = busy_area / t if t > 0 else 0.0
    return res
