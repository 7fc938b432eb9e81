"""The memory arithmetic of one vLLM process: weights, KV budget, tokens, concurrency, verdict.

Pure functions over small frozen values; no catalog, no I/O. The overhead model
(what vLLM's start-up profiling subtracts besides the weights) is documented,
with its sources, in ``docs/decisions-fit.md``:

    KV budget = GPU memory x --gpu-memory-utilization
                - weights per GPU - activation peak - non-torch memory - CUDA graphs

vLLM then rounds the budget down to whole blocks of ``--block-size`` tokens and
logs the capacity as ``GPU KV cache size: N tokens``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from .architecture import KV_DTYPE_BYTES, Architecture, ceil_div

GIB = 2**30

#: vLLM's default ``--gpu-memory-utilization``
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
#: vLLM's default block size on GPUs
DEFAULT_BLOCK_SIZE = 16
#: CUDA context, allocator and other memory PyTorch does not track (per GPU)
NON_TORCH_GIB = 0.5
#: NCCL / custom all-reduce buffers when a process talks to other GPUs
COMM_GIB = 0.5
#: CUDA graph pool at vLLM's default capture sizes (0 with --enforce-eager)
CUDA_GRAPH_GIB = 0.5
#: activation peak of the profiling run per batched token and hidden unit (bytes / dtype byte)
ACTIVATION_FACTOR = 12
#: activation peak when the hidden size is unknown
ACTIVATION_FALLBACK_GIB = 1.0
#: vLLM picks larger batch defaults on GPUs with at least this much memory
LARGE_GPU_GIB = 70


@dataclass(frozen=True, slots=True)
class ProcessShape:
    """What the final flags of one ``vllm serve`` process say about memory."""

    role: str = "serve"
    tp: int = 1
    pp: int = 1
    dp: int = 1
    dcp: int = 1
    expert_parallel: bool = False
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    max_model_len: int | None = None
    max_model_len_auto: bool = False
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    cpu_offload_gib: float = 0.0
    enforce_eager: bool = False
    #: flag -> value for flags the architecture's host tables look at
    table_flags: tuple[tuple[str, str], ...] = ()

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp


@dataclass(frozen=True, slots=True)
class Lever:
    """A change that would alter the outcome, and what it would give."""

    kind: str
    change: str
    tokens: int
    starts: bool
    detail: str


@dataclass(frozen=True, slots=True)
class ProcessFit:
    """The plan for one process (one DP rank of one pool); all sizes in bytes."""

    role: str
    shape: ProcessShape
    gpu_memory: float
    utilization: float
    weights: float
    activation: float
    non_torch: float
    cuda_graphs: float
    kv_budget: float
    kv_bytes_per_token: float
    block_size: int
    kv_tokens: int
    max_model_len: int
    context: int
    concurrency: int
    concurrency_uncapped: int
    max_num_seqs: int
    starts: bool
    exact: bool
    #: compressed attention: capacity under the upper bound of KV bytes per token
    kv_tokens_bound: int | None = None
    levers: tuple[Lever, ...] = ()
    notes: tuple[str, ...] = ()


def kv_dtype_bytes(arch: Architecture, kv_cache_dtype: str) -> int:
    return KV_DTYPE_BYTES.get(kv_cache_dtype.lower(), arch.dtype_bytes) if kv_cache_dtype != "auto" \
        else arch.dtype_bytes


def _layer_bytes(arch: Architecture, shape: ProcessShape) -> float:
    """KV bytes of one token in one attention layer on one GPU."""
    b = kv_dtype_bytes(arch, shape.kv_cache_dtype)
    if arch.attention == "mla":
        latent, rope = arch.kv_lora_rank or 0, arch.qk_rope_head_dim or 0
        if b == 1:  # vLLM's fp8 MLA layout: fp8 latent, one fp32 scale per 128 values, bf16 rope part
            return latent + latent // 128 * 4 + rope * 2
        return (latent + rope) * b
    heads = max(1, ceil_div(arch.num_kv_heads or 1, shape.tp))
    return 2 * heads * (arch.head_dim or 0) * b


def _layers_on_gpu(n: int, pp: int) -> int:
    return ceil_div(n, pp) if n else 0


def kv_bytes_per_token(arch: Architecture, shape: ProcessShape, elements: float | None = None) -> float:
    """Bytes one token costs on one GPU, every attention layer counted (what vLLM logs capacity by)."""
    if arch.attention == "compressed_sparse":  # the estimate covers all layers; PP splits them
        return (elements if elements is not None else arch.kv_elements_per_token or 0) \
            * kv_dtype_bytes(arch, shape.kv_cache_dtype) / shape.pp / max(1, shape.dcp)
    return _layer_bytes(arch, shape) * _layers_on_gpu(arch.attention_layers, shape.pp) / max(1, shape.dcp)


def request_bytes(arch: Architecture, shape: ProcessShape, length: int, block: int,
                  elements: float | None = None) -> float:
    """KV memory one request of ``length`` tokens holds on one GPU (sliding layers capped at their window)."""
    tokens = math.ceil(length / block) * block
    if arch.attention == "compressed_sparse":
        return kv_bytes_per_token(arch, shape, elements) * tokens
    per_layer = _layer_bytes(arch, shape) / max(1, shape.dcp)
    full = _layers_on_gpu(arch.full_layers, shape.pp)
    sliding = _layers_on_gpu(arch.sliding_window_layers, shape.pp)
    window = arch.sliding_window or 0
    window_tokens = min(tokens, (ceil_div(max(0, window - 1), block) + 1) * block) if sliding else 0
    state = _layers_on_gpu(arch.linear_layers, shape.pp) * arch.linear_state_bytes / shape.tp
    return per_layer * (full * tokens + sliding * window_tokens) + state


def weights_per_gpu(arch: Architecture, checkpoint_gib: float, shape: ProcessShape) -> float:
    """Checkpoint bytes one GPU holds: dense part split by TP x PP, experts by EP x PP, tables by TP x PP."""
    values = dict(shape.table_flags)
    tables = sum(t.gib for t in arch.host_tables)
    resident_tables = sum(t.gib for t in arch.host_tables if t.marker not in values.get(t.flag, "\0"))
    core = max(0.0, checkpoint_gib - tables)
    experts = core * arch.expert_fraction
    dense = core - experts
    ep = shape.tp * shape.dp if shape.expert_parallel else shape.tp
    per = dense / (shape.tp * shape.pp) + experts / (ep * shape.pp) + resident_tables / (shape.tp * shape.pp)
    return max(0.0, per - shape.cpu_offload_gib) * GIB


def overheads(arch: Architecture, shape: ProcessShape, gpu_gib: float,
              max_len: int = 0) -> tuple[float, float, float]:
    """(activation peak, non-torch memory, CUDA graphs) in bytes for one GPU."""
    batched = shape.max_num_batched_tokens or (8192 if gpu_gib >= LARGE_GPU_GIB else 2048)
    seqs = shape.max_num_seqs or (1024 if gpu_gib >= LARGE_GPU_GIB else 256)
    if arch.hidden_size:
        act = batched * arch.hidden_size * arch.dtype_bytes * ACTIVATION_FACTOR / shape.tp
        act += min(seqs, batched) * (arch.vocab_size or 0) * 4
    else:
        act = ACTIVATION_FALLBACK_GIB * GIB
    act += batched * max_len * arch.indexer_logits_bytes
    comm = COMM_GIB if shape.tp * shape.pp * shape.dp > 1 else 0.0
    graphs = 0.0 if shape.enforce_eager else CUDA_GRAPH_GIB
    return act, (NON_TORCH_GIB + comm) * GIB, graphs * GIB


def _budget(arch: Architecture, shape: ProcessShape, gpu_gib: float, checkpoint_gib: float,
            max_len: int) -> tuple[float, float, float, float, float, float]:
    util = shape.gpu_memory_utilization if shape.gpu_memory_utilization is not None \
        else DEFAULT_GPU_MEMORY_UTILIZATION
    weights = weights_per_gpu(arch, checkpoint_gib, shape)
    act, non_torch, graphs = overheads(arch, shape, gpu_gib, max_len)
    if shape.kv_cache_memory_bytes is not None:
        budget = float(shape.kv_cache_memory_bytes)
    else:
        budget = gpu_gib * GIB * util - weights - act - non_torch - graphs
    return util, weights, act, non_torch, graphs, budget


def tokens_for_budget(budget: float, per_token: float, block: int) -> int:
    """Capacity as vLLM logs it: whole blocks that fit the budget, in tokens (never negative)."""
    if budget <= 0 or per_token <= 0:
        return 0
    return int(budget // (per_token * block)) * block


def longest_fitting(arch: Architecture, shape: ProcessShape, budget: float, block: int, limit: int) -> int:
    """The longest request (a multiple of ``block``, at most ``limit``) whose KV fits ``budget``."""
    if budget <= 0 or request_bytes(arch, shape, block, block) > budget:
        return 0
    lo, hi = 1, max(1, limit // block)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if request_bytes(arch, shape, mid * block, block) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return min(limit, lo * block)


def fit_process(arch: Architecture, checkpoint_gib: float, gpu_gib: float, shape: ProcessShape,
                context: int | None = None, *, model_len: int | None = None, levers: bool = True) -> ProcessFit:
    """Plan one process on a GPU of ``gpu_gib`` GiB; ``context``: the length concurrency is asked for.

    Pure and memoized (every argument is an immutable value): the search and the
    web panel ask for the same shapes again and again.
    """
    return _fit_cached(arch, checkpoint_gib, gpu_gib, shape, context, model_len, levers)


@lru_cache(maxsize=8192)
def _fit_cached(arch: Architecture, checkpoint_gib: float, gpu_gib: float, shape: ProcessShape,
                context: int | None, model_len: int | None, levers: bool) -> ProcessFit:
    model_max = arch.max_position_embeddings or model_len or 0
    asked = model_max if shape.max_model_len_auto else (shape.max_model_len or model_max)
    util, weights, act, non_torch, graphs, budget = _budget(arch, shape, gpu_gib, checkpoint_gib, asked)
    block = shape.block_size or DEFAULT_BLOCK_SIZE
    per_token = kv_bytes_per_token(arch, shape)
    tokens = tokens_for_budget(budget, per_token, block)
    notes: list[str] = []
    if shape.max_model_len_auto:
        max_len = longest_fitting(arch, shape, budget, block, model_max or tokens)
        notes.append(f"--max-model-len auto: vLLM picks the longest context that fits ({max_len:,} tokens).")
    else:
        max_len = shape.max_model_len or model_max or tokens
    ctx_len = context or max_len
    seqs = shape.max_num_seqs or (1024 if gpu_gib >= LARGE_GPU_GIB else 256)
    need = request_bytes(arch, shape, ctx_len, block) if ctx_len else 0.0
    uncapped = int(budget // need) if need > 0 and budget > 0 else 0
    starts = budget > 0 and max_len > 0 and request_bytes(arch, shape, max_len, block) <= budget
    bound = None
    if not arch.exact:
        notes.append("Compressed sparse KV is not modelled exactly: tokens use the recipe's estimate of KV "
                     "elements per token.")
        if arch.kv_elements_per_token_max:
            per_max = kv_bytes_per_token(arch, shape, arch.kv_elements_per_token_max)
            bound = tokens_for_budget(budget, per_max, block)
            notes.append(f"Upper bound on KV per token gives at least {bound:,} tokens.")
        else:
            notes.append("No upper bound on KV per token can be derived from the recipe's facts.")
    fit = ProcessFit(
        role=shape.role, shape=shape, gpu_memory=gpu_gib * GIB, utilization=util, weights=weights, activation=act,
        non_torch=non_torch, cuda_graphs=graphs, kv_budget=budget, kv_bytes_per_token=per_token, block_size=block,
        kv_tokens=tokens, max_model_len=max_len, context=ctx_len, concurrency=min(seqs, uncapped),
        concurrency_uncapped=uncapped, max_num_seqs=seqs, starts=starts, exact=arch.exact, kv_tokens_bound=bound,
        notes=tuple(notes))
    if levers:
        fit = replace(fit, levers=_levers(arch, checkpoint_gib, gpu_gib, fit, model_len))
    return fit


def _levers(arch: Architecture, checkpoint_gib: float, gpu_gib: float, fit: ProcessFit,
            model_len: int | None) -> tuple[Lever, ...]:
    """fp8 KV, twice the TP, a shorter --max-model-len, CPU offload - each with its result."""
    shape = fit.shape
    out: list[Lever] = []

    def again(s: ProcessShape) -> ProcessFit:
        return fit_process(arch, checkpoint_gib, gpu_gib, s, fit.context, model_len=model_len, levers=False)

    if kv_dtype_bytes(arch, shape.kv_cache_dtype) > 1:
        f = again(replace(shape, kv_cache_dtype="fp8"))
        out.append(Lever("fp8_kv", "--kv-cache-dtype fp8", f.kv_tokens, f.starts,
                         f"{f.kv_tokens:,} tokens ({_ratio(f.kv_tokens, fit.kv_tokens)} today)"))
    f = again(replace(shape, tp=shape.tp * 2))
    out.append(Lever("tensor_parallel", f"--tensor-parallel-size {shape.tp * 2}", f.kv_tokens, f.starts,
                     f"{shape.tp * 2 * shape.pp} GPUs per replica: weights {f.weights / GIB:.1f} GiB/GPU, "
                     f"{f.kv_tokens:,} tokens"))
    if not fit.starts:
        longest = longest_fitting(arch, shape, fit.kv_budget, fit.block_size, fit.max_model_len)
        out.append(Lever("max_model_len", f"--max-model-len {longest}" if longest else "--max-model-len (none fits)",
                         fit.kv_tokens, longest > 0,
                         f"the longest request that fits is {longest:,} tokens" if longest
                         else "not even one block fits: free memory first"))
        deficit = request_bytes(arch, shape, fit.max_model_len, fit.block_size) - fit.kv_budget
        gib = math.ceil(deficit / GIB) if deficit > 0 else 0
        can = shape.cpu_offload_gib + gib <= weights_per_gpu(arch, checkpoint_gib, replace(shape, cpu_offload_gib=0)) / GIB
        f = again(replace(shape, cpu_offload_gib=shape.cpu_offload_gib + gib))
        out.append(Lever("cpu_offload", f"--cpu-offload-gb {shape.cpu_offload_gib + gib:g}", f.kv_tokens,
                         f.starts and can, f"moves {gib} GiB of weights per GPU to host memory (slower decode)"
                         + ("" if can else "; more than the weights on the GPU")))
    return tuple(out)


def _ratio(a: int, b: int) -> str:
    return f"x{a / b:.2f}" if b else "none"


def table_flags(flags: Mapping[str, str], arch: Architecture) -> tuple[tuple[str, str], ...]:
    return tuple((t.flag, flags[t.flag]) for t in arch.host_tables if t.flag in flags)
