"""The time of one engine step of one replica: the roofline terms plus fixed and communication costs.

time = max(FLOPs / (peak x flops_eff), bytes / (HBM x bw_eff)) + per-layer, collective, per-step and
per-sequence costs; the terms are spelled out in docs/decisions-perf-model.md §2.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_recipes.fit.memory import stage_layers

ACT_BYTES = 2  # activations travel in 16 bits
#: tokens of the largest step vLLM replays as a CUDA graph (0.10-0.18: min(2 x max_num_seqs, 512)); a larger
#: step - a prefill chunk of more than 512 tokens - launches every kernel from Python
CUDA_GRAPH_TOKENS = 512


@dataclass(frozen=True, slots=True)
class Params:
    """The calibrated constants of one GPU family (``params.json``)."""

    #: achieved fraction of peak HBM bandwidth when streaming weights and KV
    bw_eff: float
    #: achieved fraction of the dtype's peak tensor FLOP/s
    flops_eff: float
    #: fixed cost of one layer in one step (kernel launches, norms, small ops), microseconds
    layer_us: float
    #: latency of one collective (all-reduce, all-to-all, pipeline hop), microseconds
    comm_us: float
    #: fixed cost of one engine step (scheduling, sampling, output processing), milliseconds
    step_ms: float
    #: fixed latency of a request outside the engine's steps (HTTP, tokenization, first output), milliseconds
    request_ms: float = 0.0
    #: rows (tokens) at which a matrix multiply reaches half its large-batch efficiency; routed experts see
    #: only ``T x k/E`` of a step's tokens each, so MoE layers run far below the dense rate
    gemm_half_rows: float = 0.0
    #: cost of one running sequence in one step outside the kernels (scheduling, input preparation, sampling,
    #: output processing), microseconds
    seq_us: float = 0.0
    #: front-end time per prompt token before the engine sees a request (tokenization, transfer), microseconds
    prompt_us: float = 0.0
    #: extra cost of one layer in a step too large for a CUDA graph (kernels launched one by one), microseconds
    eager_layer_us: float = 0.0


@dataclass(frozen=True, slots=True)
class Replica:
    """What one GPU of one replica (TP x PP group) holds and computes; sizes in bytes, rates in 1/s."""

    tp: int
    pp: int
    #: GPUs the experts are split over (``tp`` without EP; ``tp x dp`` with it)
    ep: int
    #: data-parallel ranks whose tokens meet in the MoE layers (1 without EP)
    ep_ranks: int
    layers: int
    hidden: int
    dense_bytes: float
    expert_bytes: float
    routed_share: float
    moe_layers: int
    experts_per_token: int
    kv_layer_bytes: float
    full_layers: int
    sliding_layers: int
    window: int
    state_bytes: float
    gemm_flops_per_token: float
    #: the routed experts' share of ``gemm_flops_per_token``
    expert_flops_per_token: float
    head_flops_per_sample: float
    attn_flops_per_pair: float
    #: peak FLOP/s of the dense matrix multiplies, of the routed experts' and of attention (16-bit)
    gemm_rate: float
    expert_rate: float
    attn_rate: float
    hbm: float
    link: float
    #: a layer is one block (Nemotron-H's pattern: a Mamba mixer, attention, an MLP or experts), not an
    #: attention and an MLP
    one_block_layers: bool = False

    @property
    def layers_per_gpu(self) -> int:
        return stage_layers(self.layers, self.pp)

    @property
    def all_reduces_per_layer(self) -> float:
        """TP all-reduces of a layer: after the attention and after the MLP, the MoE's replaced by an
        all-to-all with expert parallelism; a one-block layer has one, an MoE block under EP none (for
        one-block layers the result is the average over the layers)."""
        experts_all_to_all = self.ep > self.tp
        if not self.one_block_layers:
            return 1 if experts_all_to_all else 2
        return 1 - (self.moe_layers / self.layers if experts_all_to_all and self.layers else 0)


@dataclass(frozen=True, slots=True)
class StepTime:
    """One step's time and its parts (seconds)."""

    total: float
    compute: float
    memory: float
    comm: float
    fixed: float

    @property
    def bound(self) -> str:
        parts = {"compute": self.compute if self.compute >= self.memory else 0.0,
                 "memory bandwidth": self.memory if self.memory > self.compute else 0.0,
                 "communication": self.comm, "fixed per-step costs": self.fixed}
        return max(parts, key=lambda k: parts[k])


def row_efficiency(rows: float, half: float) -> float:
    """Share of a matrix multiply's large-batch rate reached with ``rows`` rows: rows / (rows + half)."""
    return rows / (rows + half) if half > 0 and rows > 0 else 1.0


def touched(share: float, tokens: float) -> float:
    """Expected share of a layer's experts at least one of ``tokens`` tokens is routed to: 1-(1-k/E)^T."""
    if share <= 0:
        return 0.0
    if share >= 1:
        return 1.0
    return 1.0 - (1.0 - share) ** max(0.0, tokens)


def causal_pairs(n: float, prefix: float) -> float:
    """(query, key) pairs of a chunk of ``n`` tokens after ``prefix`` cached ones (causal mask)."""
    return n * prefix + n * (n + 1) / 2


def window_pairs(n: float, prefix: float, window: int) -> float:
    """The same under a sliding window of ``window`` tokens (each query sees at most the window)."""
    return n * min(prefix + (n + 1) / 2, window) if window else causal_pairs(n, prefix)


def step_time(r: Replica, p: Params, decodes: int, context_sum: float,
              prefills: tuple[tuple[int, int], ...] = ()) -> StepTime:
    """One engine step: ``decodes`` sequences with ``context_sum`` cached tokens in all, and prefill
    chunks ``(tokens, prefix)``; the whole replica (every PP stage), seconds."""
    seqs = decodes + len(prefills)
    m = max(1, min(r.pp, seqs))  # micro-batches in flight
    avg = context_sum / decodes if decodes else 0.0
    window = r.window
    chunk_tokens = 0
    full_kv = full_pairs = context_sum
    slide_kv = slide_pairs = decodes * min(avg, window)
    for n, pre in prefills:  # one pass: this runs for every simulated prefill step
        chunk_tokens += n
        full_kv += n + pre
        slide_kv += min(n + pre, window)
        full_pairs += causal_pairs(n, pre)
        slide_pairs += window_pairs(n, pre, window)
    tokens = (decodes + chunk_tokens) / m
    samples = seqs / m
    full_l = stage_layers(r.full_layers, r.pp)
    slide_l = stage_layers(r.sliding_layers, r.pp)

    weights = r.dense_bytes + r.expert_bytes * touched(r.routed_share, tokens * r.ep_ranks)
    kv = (r.kv_layer_bytes * (full_l * full_kv + slide_l * slide_kv) + r.state_bytes * decodes) / m
    memory = (weights + kv) / (r.hbm * p.bw_eff)
    dense = (r.gemm_flops_per_token - r.expert_flops_per_token) * tokens + r.head_flops_per_sample * samples
    expert = r.expert_flops_per_token * tokens
    per_expert_rows = tokens * r.ep_ranks * r.routed_share
    attn = r.attn_flops_per_pair * (full_l * full_pairs + slide_l * slide_pairs) / m
    compute = (dense / row_efficiency(tokens, p.gemm_half_rows) / r.gemm_rate
               + expert / row_efficiency(per_expert_rows, p.gemm_half_rows) / r.expert_rate
               + attn / r.attn_rate) / p.flops_eff

    lat = p.comm_us * 1e-6
    comm = 0.0
    payload = tokens * r.hidden * ACT_BYTES
    if r.tp > 1:
        comm += r.layers_per_gpu * r.all_reduces_per_layer * (lat + 2 * (r.tp - 1) / r.tp * payload / r.link)
    if r.ep > r.tp and r.moe_layers:
        moe_l = stage_layers(r.moe_layers, r.pp)
        comm += moe_l * 2 * (lat + payload * r.experts_per_token * (r.ep - 1) / r.ep / r.link)
    hops = (r.pp - 1) * (lat + payload / r.link) if r.pp > 1 else 0.0
    eager = p.eager_layer_us if decodes + chunk_tokens > CUDA_GRAPH_TOKENS else 0.0
    fixed = r.layers_per_gpu * (p.layer_us + eager) * 1e-6
    stage = max(compute, memory) + fixed + comm
    host = p.step_ms * 1e-3 + p.seq_us * 1e-6 * seqs
    return StepTime(r.pp * stage + hops + host, compute * r.pp, memory * r.pp, comm * r.pp + hops,
                    fixed * r.pp + host)
