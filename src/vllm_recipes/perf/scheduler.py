"""A small simulation of vLLM's V1 scheduler on one replica (docs/decisions-perf-model.md §3).

Chunked prefill under ``max_num_batched_tokens``, admission under ``max_num_seqs`` and the planner's KV
capacity, recompute preemption when the cache is full; closed-loop users or Poisson arrivals behind a
front-end delay. Decode-only steps are taken in spans up to the next event, and a long closed loop is
simulated for its first, one steady and its last wave (the rest by Little's law): a few steps per request.
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
#: requests of the steady wave at least (small loops: a wave of 4 requests says little)
STEADY_MIN = 64


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
        """Requests to run: ``num_prompts``, else about 10 per user (the calibration benchmarks' count)."""
        if self.num_prompts:
            return self.num_prompts
        if not self.concurrency:
            return 200
        return max(50, min(10 * self.concurrency, 1000 + 2 * self.concurrency))


def simulated_prompts(w: Workload) -> int:
    """Requests actually simulated: three waves of a closed loop; all of an open loop (it may not settle)."""
    n = w.prompts()
    if w.rate or not w.concurrency:
        return n
    return min(n, 2 * w.concurrency + max(w.concurrency, STEADY_MIN))


@dataclass(frozen=True, slots=True)
class Limits:
    max_num_seqs: int
    max_num_batched_tokens: int
    #: KV capacity in tokens (the planner's budget over the bytes a token of this workload costs)
    kv_tokens: float


@dataclass(frozen=True, slots=True)
class Frontend:
    """Time between a client sending a request and the engine seeing it (HTTP, tokenization), seconds."""

    request_s: float = 0.0
    token_s: float = 0.0

    def delay(self, isl: int) -> float:
        return self.request_s + self.token_s * isl


@dataclass(slots=True, eq=False)
class _Req:
    index: int
    sent: float
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
    #: per simulated request, in completion order (first tokens / finishes)
    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)
    #: means over every request of the workload (the unsimulated steady ones included)
    ttft_mean: float = math.nan
    tpot_mean: float = math.nan
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


@dataclass(slots=True)
class _Steady:
    """What the steady wave (requests ``lo <= index < hi``) measured, to stand for the unsimulated ones."""

    lo: int
    hi: int
    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    #: (time, busy area) when the wave's first request and the first one after it were sent
    marks: list[tuple[float, float]] = field(default_factory=list)

    def has(self, r: _Req) -> bool:
        return self.lo <= r.index < self.hi


class _Sim:
    """The scheduler's state and its named steps (:meth:`run` is the loop)."""

    def __init__(self, step: StepFn, w: Workload, lim: Limits, frontend: Frontend) -> None:
        self.step, self.w, self.lim, self.frontend = step, w, lim, frontend
        self.n_total = simulated_prompts(w)
        c = w.concurrency or 0
        self.steady = _Steady(c, self.n_total - c) if self.n_total < w.prompts() else _Steady(0, 0)
        self.rng = random.Random(w.seed)
        self.res = SimResult()
        self.pending: list[tuple[float, int, _Req]] = []  # sent, not yet at the engine: (arrival, index, request)
        self.waiting: deque[_Req] = deque()
        self.prefilling: list[_Req] = []
        self.decoding: dict[_Req, None] = {}  # admission order (the newest is preempted first); O(1) removal
        self.finish_heap: list[tuple[int, int, int, _Req]] = []  # (finish step, index, epoch, request)
        self.issued = 0
        self.next_send = 0.0 if w.rate else math.inf
        self.g = 0  # decode steps so far
        self.ctx_sum = 0.0  # cached tokens of decoding requests
        self.held_prefill = 0.0  # tokens reserved by requests being prefilled
        self.t = 0.0
        self.done = 0
        self.busy_area = 0.0

    # --- arrivals ------------------------------------------------------------------------

    def send(self, t: float) -> None:
        """A client sends request number ``issued`` at ``t``; the engine sees it after the front-end delay."""
        if self.issued == self.steady.lo or self.issued == self.steady.hi:
            self.steady.marks.append((t, self.busy_area))
        isl, osl = _lengths(self.w, self.issued)
        r = _Req(self.issued, t, t + self.frontend.delay(isl), isl, osl, prompt=isl)
        self.issued += 1
        heapq.heappush(self.pending, (r.arrival, r.index, r))

    def arrive(self) -> None:
        while self.w.rate and self.next_send <= self.t and self.issued < self.n_total:
            self.send(self.next_send)
            self.next_send += self.rng.expovariate(self.w.rate)
        if self.issued >= self.n_total:
            self.next_send = math.inf
        while self.pending and self.pending[0][0] <= self.t:
            self.waiting.append(heapq.heappop(self.pending)[2])

    def next_arrival(self) -> float:
        return min(self.next_send, self.pending[0][0] if self.pending else math.inf)

    # --- scheduling ----------------------------------------------------------------------

    def drop_decoding(self, r: _Req) -> None:
        del self.decoding[r]
        self.ctx_sum -= r.prompt + 1 + (self.g - r.start_step)
        r.epoch += 1  # its heap entry is stale now

    def preempt(self) -> None:
        """Free the newest decodes while the next decode step would overflow the cache."""
        while (self.decoding and self.ctx_sum + self.held_prefill + len(self.decoding) > self.lim.kv_tokens
               and len(self.decoding) + len(self.prefilling) > 1):
            victim = next(reversed(self.decoding))
            victim.generated += self.g - victim.start_step
            self.drop_decoding(victim)
            victim.prompt, victim.done_prefill = victim.isl + victim.generated, 0
            self.waiting.appendleft(victim)
            self.res.preemptions += 1

    def admissible(self, decodes: int) -> bool:
        r = self.waiting[0]
        return (decodes + len(self.prefilling) < self.lim.max_num_seqs
                and self.ctx_sum + self.held_prefill + r.prompt + decodes <= self.lim.kv_tokens)

    def schedule(self) -> list[tuple[_Req, int]]:
        """This step's prefill chunks: the partial ones first, then new requests, at most one left partial."""
        decodes = len(self.decoding)
        budget = self.lim.max_num_batched_tokens - decodes
        chunks: list[tuple[_Req, int]] = []
        for r in self.prefilling:
            if budget <= 0:
                break
            n = min(r.prompt - r.done_prefill, budget)
            chunks.append((r, n))
            budget -= n
        partial = any(n < r.prompt - r.done_prefill for r, n in chunks)
        while self.waiting and budget > 0 and not partial and self.admissible(decodes):
            r = self.waiting.popleft()
            self.prefilling.append(r)
            self.held_prefill += r.prompt
            if self.w.prefilled and r.first < 0:  # its KV arrives with it: no prefill work
                r.done_prefill = r.prompt
                chunks.append((r, 0))
                continue
            n = min(r.prompt, budget)
            chunks.append((r, n))
            budget -= n
            partial = n < r.prompt
        return chunks

    def blocked(self) -> bool:
        """Nothing runs and the first waiting request can never fit."""
        return bool(self.waiting and not self.decoding and not self.prefilling
                    and self.waiting[0].prompt + 1 > self.lim.kv_tokens)

    # --- time ----------------------------------------------------------------------------

    def decode_span(self, decodes: int) -> tuple[StepTime, int]:
        """Decode-only steps up to the next finish, arrival or full cache, timed at the span's middle."""
        heap = self.finish_heap
        while heap and heap[0][2] != heap[0][3].epoch:
            heapq.heappop(heap)
        span = heap[0][0] - self.g if heap else 1
        if decodes:
            room = int((self.lim.kv_tokens - self.ctx_sum - self.held_prefill) // decodes)
            span = max(1, min(span, room))
        arr = self.next_arrival()
        if decodes and arr < math.inf:
            one = self.step(decodes, self.ctx_sum, ())
            span = max(1, min(span, math.ceil((arr - self.t) / one.total)))
        return self.step(max(1, decodes), self.ctx_sum + decodes * (span - 1) / 2, ()), span

    def advance(self, chunks: list[tuple[_Req, int]]) -> None:
        """Run one step with prefill work, or a span of decode-only steps."""
        decodes = len(self.decoding)
        work = tuple((n, r.done_prefill) for r, n in chunks if n)
        if work:
            st, span = self.step(decodes, self.ctx_sum, work), 1
            bound = self.res.prefill_bound
            self.res.prefill_time += st.total
        else:
            st, span = self.decode_span(decodes)
            bound = self.res.decode_bound
        dt = st.total * span
        kind = st.bound
        bound[kind] = bound.get(kind, 0.0) + dt
        running = decodes + len(self.prefilling)
        self.busy_area += running * dt
        self.res.peak_running = max(self.res.peak_running, running)
        self.t += dt
        if decodes:
            self.g += span
            self.ctx_sum += decodes * span
        self.res.peak_kv_tokens = max(self.res.peak_kv_tokens, self.ctx_sum + self.held_prefill)

    def finish_prefills(self, chunks: list[tuple[_Req, int]]) -> None:
        """Requests whose prompt is done sample their first token and start decoding."""
        for r, n in chunks:
            r.done_prefill += n
            if r.done_prefill < r.prompt or r not in self.prefilling:
                continue
            self.prefilling.remove(r)
            self.held_prefill -= r.prompt
            r.generated += 1  # the prefill step samples a token
            if r.first < 0:
                r.first = self.t
                self.res.ttft.append(self.t - r.sent)
                if self.steady.has(r):
                    self.steady.ttft.append(self.t - r.sent)
            r.start_step = self.g
            self.decoding[r] = None
            self.ctx_sum += r.prompt + 1
            heapq.heappush(self.finish_heap, (self.g + r.osl - r.generated, r.index, r.epoch, r))

    def retire(self) -> None:
        """Finished requests leave; a closed-loop client sends its next one."""
        heap = self.finish_heap
        while heap and (heap[0][0] <= self.g or heap[0][2] != heap[0][3].epoch):
            _, _, epoch, r = heapq.heappop(heap)
            if epoch != r.epoch:
                continue
            self.drop_decoding(r)
            self.done += 1
            self.res.output_tokens += r.osl
            if r.osl > 1:
                self.res.tpot.append((self.t - r.first) / (r.osl - 1))
            if self.steady.has(r):
                self.steady.latency.append(self.t - r.sent)
                if r.osl > 1:
                    self.steady.tpot.append((self.t - r.first) / (r.osl - 1))
            if not self.w.rate and self.issued < self.n_total:
                self.send(self.t)

    # --- the loop ------------------------------------------------------------------------

    def run(self) -> SimResult:
        if not self.w.rate:
            for _ in range(min(self.w.concurrency or 1, self.n_total)):
                self.send(0.0)
        while self.done < self.n_total:
            self.arrive()
            self.preempt()
            chunks = self.schedule()
            if self.blocked():
                self.res.blocked = True
                break
            if not chunks and not self.decoding:
                nxt = self.next_arrival()
                if nxt == math.inf:
                    break
                self.t = max(self.t, nxt)
                continue
            self.advance(chunks)
            self.finish_prefills(chunks)
            self.retire()
        return self.result()

    def result(self) -> SimResult:
        res, s = self.res, self.steady
        res.duration = self.t
        res.mean_running = self.busy_area / self.t if self.t > 0 else 0.0
        n_ttft, n_tpot = len(res.ttft), len(res.tpot)
        sum_ttft, sum_tpot = sum(res.ttft), sum(res.tpot)
        extra = self.w.prompts() - self.n_total
        if extra > 0 and s.ttft and s.latency and len(s.marks) == 2 and not res.blocked:
            (t0, a0), (t1, a1) = s.marks
            more_t = extra * (sum(s.latency) / len(s.latency)) / (self.w.concurrency or 1)  # Little's law
            running = (a1 - a0) / (t1 - t0) if t1 > t0 else res.mean_running
            res.mean_running = (self.busy_area + running * more_t) / (self.t + more_t)
            res.duration += more_t
            res.output_tokens += sum(_lengths(self.w, i)[1] for i in range(self.n_total, self.w.prompts()))
            sum_ttft += extra * sum(s.ttft) / len(s.ttft)
            n_ttft += extra
            if s.tpot:
                sum_tpot += extra * sum(s.tpot) / len(s.tpot)
                n_tpot += extra
        res.ttft_mean = sum_ttft / n_ttft if n_ttft else math.nan
        res.tpot_mean = sum_tpot / n_tpot if n_tpot else math.nan
        return res


def simulate(step: StepFn, w: Workload, lim: Limits, frontend: Frontend = Frontend()) -> SimResult:
    """Run ``w`` through the scheduler; times in seconds."""
    return _Sim(step, w, lim, frontend).run()
