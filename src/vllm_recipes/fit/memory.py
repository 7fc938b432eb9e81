"""The memory arithmetic of one vLLM process: weights, KV budget, KV pool, concurrency, verdict.

Pure functions over small frozen values. vLLM's own start-up arithmetic, release by release
(:mod:`.vllm_rules`); the profiling peak is an estimate. Sources: docs/decisions-fit.md §3.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, replace
from functools import lru_cache

from .architecture import GIB, KV_DTYPE_BYTES, Architecture, ceil_div
from .shape import ProcessShape
from .vllm_rules import MemoryRules, batch_defaults, rules_for

#: vLLM's default ``--gpu-memory-utilization``
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
#: vLLM's default block size on GPUs
DEFAULT_BLOCK_SIZE = 16
#: memory PyTorch does not track that appears after vLLM's first snapshot (cuBLAS workspaces, ...), one GPU
NON_TORCH_GIB = 0.15
#: NCCL / custom all-reduce buffers when a process talks to other GPUs
COMM_GIB = 0.6
#: the CUDA graph estimate vLLM subtracts from 0.20 on: a pool plus a share per layer on the GPU
CUDA_GRAPH_BASE_GIB = 0.2
CUDA_GRAPH_PER_LAYER_GIB = 0.012
#: forward activations per batched token that live through a whole decoder layer (the residual and the
#: layer's normed input: ``LlamaDecoderLayer.forward``, ``model_executor/models/llama.py``)
FORWARD_LIVE_HIDDEN = 2
#: activation peak when the hidden size is unknown
ACTIVATION_FALLBACK_GIB = 1.0


@dataclass(frozen=True, slots=True)
class Lever:
    """A change that would alter the outcome, and what it would give."""

    kind: str
    change: str
    tokens: int
    starts: bool
    detail: str


@dataclass(frozen=True, slots=True)
class KvPool:
    """How vLLM lays out the KV cache of one GPU: groups of layers sharing one pool of blocks."""

    #: bytes of one block of one layer (every group's page is this size: vLLM requires it)
    page_bytes: int
    block_size: int
    #: layers per group (the smallest attention type's layer count) and (kind, groups) per type
    group_size: int
    groups: tuple[tuple[str, int], ...]
    #: layers of each kind on this GPU (kind: full / sliding / linear)
    layers: tuple[tuple[str, int], ...]
    window: int = 0


@dataclass(frozen=True, slots=True)
class ProcessFit:
    """The plan for one process (one DP rank of one pool, its most loaded GPU); sizes in bytes."""

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
    #: "GPU KV cache size" as the release logs it
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
    max_num_batched_tokens: int = 0
    release: str = ""
    #: parts of ``activation``: the forward pass of the profiling run and the sampler warm-up
    forward: float = 0.0
    sampler: float = 0.0
    #: the fused-MoE workspace of the profiling forward (part of ``activation``; see ``startup_peak``)
    moe_workspace: float = 0.0
    num_blocks: int = 0
    kv_groups: int = 1
    #: tokens of one group when blocks are split evenly (what releases before 0.25 log for hybrid models)
    kv_tokens_per_group: int = 0
    #: "Maximum concurrency for max_model_len tokens per request" as vLLM logs it
    concurrency_at_max_len: float = 0.0
    #: KV memory one request of --max-model-len needs (vLLM's start-up check)
    kv_needed: float = 0.0
    #: why it does not start: "weights", "no_kv_memory", "max_model_len" ("" when it starts)
    failure: str = ""


def kv_dtype_bytes(arch: Architecture, kv_cache_dtype: str) -> int:
    """Bytes per KV element (``auto``, or a dtype the table does not know: the model dtype)."""
    return KV_DTYPE_BYTES.get(kv_cache_dtype.lower(), arch.dtype_bytes)


def _layer_bytes(arch: Architecture, shape: ProcessShape) -> int:
    """KV bytes of one token in one attention layer on one GPU (``page_size_bytes`` of one token)."""
    b = kv_dtype_bytes(arch, shape.kv_cache_dtype)
    if arch.attention == "mla":
        latent, rope = arch.kv_lora_rank or 0, arch.qk_rope_head_dim or 0
        if b == 1 and arch.sparse_mla:  # fp8_ds_mla (sparse MLA backends): fp8 latent, fp32 scales, bf16 rope
            return latent + latent // 128 * 4 + rope * 2 + arch.indexer_bytes
        return (latent + rope) * b + arch.indexer_bytes  # dense MLA: 576 B at fp8
    heads = max(1, ceil_div(arch.num_kv_heads or 1, shape.tp))
    return 2 * heads * (arch.head_dim or 0) * b


def stage_layers(n: int, pp: int) -> int:
    """Layers on the most loaded pipeline stage: vLLM splits unevenly when ``pp`` does not divide ``n``."""
    return ceil_div(n, pp)


def _draft_layers(arch: Architecture, shape: ProcessShape) -> int:
    if shape.draft_layers:
        return shape.draft_layers
    m = shape.spec_method.lower()
    if m == "mtp" or m.endswith("_mtp"):
        return arch.mtp_layers or 1
    if m.startswith("eagle"):
        return 1
    return 0


def kv_pool(arch: Architecture, shape: ProcessShape) -> KvPool:
    """The KV-cache groups of the most loaded GPU (``kv_cache_utils._get_kv_cache_groups_uniform_page_size``)."""
    block = shape.block_size or DEFAULT_BLOCK_SIZE
    if arch.attention == "compressed_sparse":
        return KvPool(page_bytes=0, block_size=block, group_size=1, groups=(("full", 1),), layers=(("full", 1),))
    per_layer = _layer_bytes(arch, shape)
    full = stage_layers(arch.full_layers, shape.pp) + _draft_layers(arch, shape)
    sliding = stage_layers(arch.sliding_window_layers, shape.pp)
    linear = stage_layers(arch.linear_layers, shape.pp)
    if not shape.hybrid_kv and not linear:  # sliding layers are stored in full
        full, sliding = full + sliding, 0
    kinds = tuple((k, n) for k, n in (("full", full), ("sliding", sliding), ("linear", linear)) if n > 0)
    if linear and full + sliding and shape.block_size is None:
        # HybridAttentionMambaModelConfig: the attention block grows until its page holds the mamba state
        state = ceil_div(arch.linear_state_bytes, shape.tp)
        block = max(block, 16 * ceil_div(state, 16 * per_layer)) if per_layer else block
    page = per_layer * block if full + sliding else ceil_div(arch.linear_state_bytes, shape.tp)
    if not kinds:
        return KvPool(page_bytes=0, block_size=block, group_size=1, groups=(), layers=())
    size = min(n for _, n in kinds)
    groups = tuple((k, ceil_div(n, size)) for k, n in kinds)
    return KvPool(page_bytes=page, block_size=block, group_size=size, groups=groups, layers=kinds,
                  window=arch.sliding_window or 0)


def _blocks_for(pool: KvPool, kind: str, length: int, batched: int, dcp: int) -> int:
    """Blocks one request of ``length`` tokens takes in one layer of ``kind`` (``max_memory_usage_bytes``)."""
    b = pool.block_size
    if kind == "linear":
        return 1
    if kind == "sliding":
        return ceil_div(min(pool.window - 1 + batched, length), b) + 1
    return ceil_div(ceil_div(length, dcp), b)


def blocks_per_request(pool: KvPool, length: int, batched: int, dcp: int = 1) -> int:
    """Blocks of the shared pool one request holds (``get_max_concurrency_for_kv_cache_config``)."""
    return sum(n * _blocks_for(pool, k, length, batched, dcp) for k, n in pool.groups)


def kv_needed(pool: KvPool, length: int, batched: int, dcp: int = 1) -> int:
    """Bytes vLLM's start-up check wants for one request of ``length`` (every layer, ``check_enough_kv_cache_memory``)."""
    return sum(n * _blocks_for(pool, k, length, batched, dcp) for k, n in pool.layers) * pool.page_bytes


def kv_bytes_per_token(arch: Architecture, shape: ProcessShape, elements: float | None = None) -> float:
    """Bytes one token costs on one GPU, every attention layer counted (the pool's bytes per logged token)."""
    if arch.attention == "compressed_sparse":  # the estimate covers all layers; PP splits them
        return (elements if elements is not None else arch.kv_elements_per_token or 0) \
            * kv_dtype_bytes(arch, shape.kv_cache_dtype) / shape.pp / max(1, shape.dcp)
    layers = stage_layers(arch.attention_layers, shape.pp) + _draft_layers(arch, shape)
    return _layer_bytes(arch, shape) * layers / max(1, shape.dcp)


def request_bytes(arch: Architecture, shape: ProcessShape, length: int, block: int) -> float:
    """KV memory one request of ``length`` tokens holds on one GPU (pool blocks x page x group size)."""
    if arch.attention == "compressed_sparse":
        return kv_bytes_per_token(arch, shape) * math.ceil(length / block) * block
    pool = kv_pool(arch, shape)
    return blocks_per_request(pool, length, shape.max_num_batched_tokens or 2048,
                              max(1, shape.dcp)) * pool.page_bytes * pool.group_size


def weights_per_gpu(arch: Architecture, checkpoint_gib: float, shape: ProcessShape) -> float:
    """Checkpoint bytes of the most loaded GPU: dense / TP (replicated layers whole), experts / EP,
    tables / TP, times the most loaded PP stage's ``ceil(layers / pp)`` share."""
    values = dict(shape.table_flags)
    tables = sum(t.gib for t in arch.host_tables)
    resident_tables = sum(t.gib for t in arch.host_tables if t.marker not in values.get(t.flag, "\0"))
    core = max(0.0, checkpoint_gib - tables)
    experts = core * arch.expert_fraction
    dense = core - experts
    replicated = min(dense, arch.replicated_params * arch.dtype_bytes / GIB)  # whole on every TP rank
    ep = shape.expert_ranks
    stage = stage_layers(arch.num_layers, shape.pp) / arch.num_layers if shape.pp > 1 and arch.num_layers else 1.0
    per = ((dense - replicated) / shape.tp + replicated + experts / ep + resident_tables / shape.tp) * stage
    return max(0.0, per - shape.cpu_offload_gib) * GIB


def profile_peak(arch: Architecture, shape: ProcessShape, batched: int, seqs: int, max_len: int,
                 rules: MemoryRules) -> tuple[float, float]:
    """(forward, sampler warm-up) peaks of vLLM's profiling run (``gpu_model_runner.profile_run``), bytes,
    without the fused-MoE workspace; the sampler samples ``min(max-num-seqs, batched)`` rows."""
    if not arch.hidden_size:
        return ACTIVATION_FALLBACK_GIB * GIB, 0.0
    forward = batched * arch.dtype_bytes * forward_elements_per_token(arch, shape)
    if shape.indexer_dense_logits:
        forward += batched * max_len * arch.indexer_logits_bytes
    return float(forward), float(min(seqs, batched) * (arch.vocab_size or 0) * rules.sampler_bytes_per_logit)


def forward_elements_per_token(arch: Architecture, shape: ProcessShape) -> float:
    """Activation elements one token holds at the eager decoder layer's peak (``models/llama.py``): the
    residual and layer input, plus the larger of attention's and the dense MLP's live outputs (an upper
    bound: compiled graphs free buffers earlier)."""
    h = arch.hidden_size or 0
    heads = ceil_div(arch.num_attention_heads or 0, shape.tp)
    kv = ceil_div(arch.num_kv_heads or arch.num_attention_heads or 0, shape.tp)
    attention = (2 * heads + 2 * kv) * (arch.head_dim or 0) + h
    moe = arch.num_experts and arch.experts_per_token and arch.moe_intermediate_size
    mlp = float(h) if moe else 3 * (arch.intermediate_size or 4 * h) / shape.tp
    return FORWARD_LIVE_HIDDEN * h + max(attention, mlp)


def moe_workspace(arch: Architecture, shape: ProcessShape, batched: int) -> float:
    """The fused-MoE intermediate caches of a forward of ``batched`` tokens, bytes
    (``TritonExperts.workspace_shapes``; 0 for dense models)."""
    if not (arch.num_experts and arch.experts_per_token and arch.moe_intermediate_size and arch.hidden_size):
        return 0.0
    width = arch.moe_intermediate_size if shape.expert_parallel else ceil_div(arch.moe_intermediate_size, shape.tp)
    h = arch.hidden_size
    return float(batched * arch.experts_per_token * (max(width, h) + max(2 * width, h)) * arch.dtype_bytes)


def startup_peak(forward: float, sampler: float, workspace: float, rules: MemoryRules) -> float:
    """The profiling run's peak: forward and sampler run one after the other; the MoE workspace stays
    allocated from 0.14 on, so it adds to whichever is larger (before, to the forward only)."""
    if rules.moe_workspace_persistent:
        return workspace + max(forward, sampler)
    return max(forward + workspace, sampler)


def longest_fitting(arch: Architecture, shape: ProcessShape, budget: float, block: int, limit: int,
                    batched: int = 0) -> int:
    """The longest request (a multiple of ``block``, at most ``limit``) whose KV fits ``budget``
    (``estimate_max_model_len``)."""
    def fits(n: int) -> bool:
        if arch.attention == "compressed_sparse":
            return request_bytes(arch, shape, n, block) <= budget
        return kv_needed(kv_pool(arch, shape), n, batched or 2048, max(1, shape.dcp)) <= budget

    if budget <= 0 or not fits(block):
        return 0
    # Binary search, as estimate_max_model_len does: relies on ``fits`` turning from True to False as
    # the length grows. The first failing index counts the block multiples that fit; max(1, ...)
    # covers limit < block (an empty range), where min() below then returns limit.
    blocks = bisect.bisect_left(range(1, limit // block + 1), True, key=lambda m: not fits(m * block))
    return min(limit, max(1, blocks) * block)


@dataclass(frozen=True, slots=True)
class _Budget:
    """Everything before the KV pool: batch sizes, the start-up peak and what is left for KV."""

    batched: int
    seqs: int
    model_max: int
    util: float
    weights: float
    forward: float
    sampler: float
    workspace: float
    peak: float
    non_torch: float
    graphs: float
    requested: float
    kv: float


def _budget(arch: Architecture, checkpoint_gib: float, gpu_gib: float, shape: ProcessShape, model_len: int | None,
            rules: MemoryRules, gpu_name: str, draft_gib: float) -> _Budget:
    """Requested memory - weights - the profiling peak - non-torch - CUDA graphs (or --kv-cache-memory-bytes)."""
    defaults = batch_defaults(gpu_gib, gpu_name, rules)
    batched = shape.max_num_batched_tokens or defaults.max_num_batched_tokens
    seqs = shape.max_num_seqs or defaults.max_num_seqs
    model_max = arch.max_position_embeddings or model_len or 0
    asked = model_max if shape.max_model_len_auto else (shape.max_model_len or model_max)
    util = shape.gpu_memory_utilization if shape.gpu_memory_utilization is not None \
        else DEFAULT_GPU_MEMORY_UTILIZATION
    weights = weights_per_gpu(arch, checkpoint_gib, shape) + draft_gib * GIB
    fwd, smp = profile_peak(arch, shape, batched, seqs, asked, rules)
    workspace = moe_workspace(arch, shape, batched)
    act = startup_peak(fwd, smp, workspace, rules)  # with PP the planned GPU is the most loaded stage
    non_torch = (NON_TORCH_GIB + (COMM_GIB if shape.gpus > 1 else 0.0)) * GIB
    graphs = 0.0
    if rules.cudagraph_estimate_subtracted and not shape.enforce_eager:
        graphs = (CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_PER_LAYER_GIB * stage_layers(arch.num_layers, shape.pp)) * GIB
    requested = gpu_gib * GIB * util
    kv = (float(shape.kv_cache_memory_bytes) if shape.kv_cache_memory_bytes is not None
          else requested - weights - act - non_torch - graphs)
    return _Budget(batched, seqs, model_max, util, weights, fwd, smp, workspace, act, non_torch, graphs, requested, kv)


@dataclass(frozen=True, slots=True)
class _Pool:
    """The KV pool a budget buys: blocks, groups, tokens ("GPU KV cache size" before the release's rewrite)."""

    pool: KvPool | None  # None: compressed sparse KV (no layer plan)
    block: int
    per_token: float
    num_blocks: int
    groups: int
    per_group: int
    kv_tokens: int
    notes: tuple[str, ...]


def _pool(arch: Architecture, shape: ProcessShape, budget: float) -> _Pool:
    if arch.attention == "compressed_sparse":  # blocks of the estimated bytes per token, no layer plan
        block = shape.block_size or DEFAULT_BLOCK_SIZE
        per_token = kv_bytes_per_token(arch, shape)
        num_blocks = int(budget // (per_token * block)) if budget > 0 and per_token > 0 else 0
        return _Pool(None, block, per_token, num_blocks, 1, num_blocks * block, num_blocks * block, ())
    pool = kv_pool(arch, shape)
    block = pool.block_size
    unit = pool.page_bytes * pool.group_size
    num_blocks = int(budget // unit) if budget > 0 and unit > 0 else 0
    groups = max(1, sum(n for _, n in pool.groups))
    per_group = num_blocks // groups * block
    notes = []
    if len(pool.groups) > 1:
        notes.append(f"Hybrid KV cache: {groups} groups of {pool.group_size} layers "
                     f"({', '.join(f'{n} {k}' for k, n in pool.layers)}) share {num_blocks:,} blocks "
                     f"of {block} tokens.")
    if block != (shape.block_size or DEFAULT_BLOCK_SIZE):
        notes.append(f"vLLM raises the attention block size to {block} tokens so a page holds the "
                     "linear-attention state.")
    return _Pool(pool, block, kv_bytes_per_token(arch, shape), num_blocks, groups, per_group,
                 per_group * max(1, shape.dcp), tuple(notes))


def _failure(b: _Budget, shape: ProcessShape, max_len: int, needed: float) -> str:
    """Why vLLM refuses to start ("" when it starts)."""
    if b.weights > b.requested and shape.kv_cache_memory_bytes is None:
        return "weights"
    if b.kv <= 0:
        return "no_kv_memory"
    if not max_len or needed > b.kv:
        return "max_model_len"
    return ""


def _estimate_notes(arch: Architecture, shape: ProcessShape, budget: float, block: int) -> tuple[int | None, list[str]]:
    """Compressed sparse KV: the estimate said, and the token count of the upper bound when there is one."""
    if arch.exact:
        return None, []
    notes = ["Compressed sparse KV is not modelled exactly: tokens use the recipe's estimate of KV "
             "elements per token."]
    if not arch.kv_elements_per_token_max:
        return None, [*notes, "No upper bound on KV per token can be derived from the recipe's facts."]
    per = kv_bytes_per_token(arch, shape, arch.kv_elements_per_token_max)
    bound = int(budget // (per * block)) * block if budget > 0 and per > 0 else 0  # whole blocks
    return bound, [*notes, f"Upper bound on KV per token gives at least {bound:,} tokens."]


@lru_cache(maxsize=8192)
def fit_process(arch: Architecture, checkpoint_gib: float, gpu_gib: float, shape: ProcessShape,
                context: int | None = None, *, model_len: int | None = None, levers: bool = True,
                release: str | None = None, gpu_name: str = "", gpus_available: int | None = None,
                draft_gib: float = 0.0) -> ProcessFit:
    """Plan one process on a GPU of ``gpu_gib`` GiB (as CUDA reports it); ``context``: the length
    concurrency is asked for; ``gpus_available``: GPUs the machine has (levers never ask for more).
    Memoized: the search and the web panel ask for the same shapes again and again."""
    rules = rules_for(release)
    b = _budget(arch, checkpoint_gib, gpu_gib, shape, model_len, rules, gpu_name, draft_gib)
    p = _pool(arch, shape, b.kv)
    notes = list(p.notes)
    dcp, pool, block = max(1, shape.dcp), p.pool, p.block
    if shape.max_model_len_auto:
        max_len = longest_fitting(arch, shape, b.kv, block, b.model_max or p.kv_tokens, b.batched)
        notes.append(f"--max-model-len auto: vLLM picks the longest context that fits ({max_len:,} tokens).")
    else:
        max_len = shape.max_model_len or b.model_max or p.kv_tokens
    ctx_len = context or max_len

    def per_request(n: int) -> int:
        return ceil_div(n, block) if pool is None else blocks_per_request(pool, n, b.batched, dcp)

    need_blocks = per_request(max_len) if max_len else 0
    at_max = p.num_blocks / need_blocks if need_blocks else 0.0
    kv_tokens = int(at_max * max_len) if pool is not None and rules.capacity_is_concurrency and max_len \
        else p.kv_tokens
    ctx_blocks = per_request(ctx_len) if ctx_len else 0
    uncapped = p.num_blocks // ctx_blocks if ctx_blocks else 0
    needed = (kv_needed(pool, max_len, b.batched, dcp) if pool is not None
              else request_bytes(arch, shape, max_len, block)) if max_len else 0.0
    failure = _failure(b, shape, max_len, needed)
    bound, more = _estimate_notes(arch, shape, b.kv, block)
    fit = ProcessFit(
        role=shape.role, shape=shape, gpu_memory=gpu_gib * GIB, utilization=b.util, weights=b.weights,
        activation=b.peak, non_torch=b.non_torch, cuda_graphs=b.graphs, kv_budget=b.kv,
        kv_bytes_per_token=p.per_token, block_size=block, kv_tokens=kv_tokens, max_model_len=max_len,
        context=ctx_len, concurrency=min(b.seqs, uncapped), concurrency_uncapped=uncapped, max_num_seqs=b.seqs,
        starts=not failure, exact=arch.exact, kv_tokens_bound=bound, notes=tuple(notes + more),
        max_num_batched_tokens=b.batched, release=rules.release, forward=b.forward, sampler=b.sampler,
        moe_workspace=b.workspace, num_blocks=p.num_blocks, kv_groups=p.groups, kv_tokens_per_group=p.per_group,
        concurrency_at_max_len=at_max, kv_needed=float(needed), failure=failure)
    if levers:
        fit = replace(fit, levers=_levers(arch, checkpoint_gib, gpu_gib, fit, model_len, release, gpu_name,
                                          gpus_available, draft_gib))
    return fit


def _levers(arch: Architecture, checkpoint_gib: float, gpu_gib: float, fit: ProcessFit, model_len: int | None,
            release: str | None, gpu_name: str, gpus_available: int | None, draft_gib: float) -> tuple[Lever, ...]:
    """The changes that would alter the outcome, each re-planned (never more GPUs than the machine has)."""
    shape = fit.shape
    out: list[Lever] = []

    def again(s: ProcessShape) -> ProcessFit:
        return fit_process(arch, checkpoint_gib, gpu_gib, s, fit.context, model_len=model_len, levers=False,
                           release=release, gpu_name=gpu_name, gpus_available=gpus_available, draft_gib=draft_gib)

    if kv_dtype_bytes(arch, shape.kv_cache_dtype) > 1:
        f = again(replace(shape, kv_cache_dtype="fp8"))
        ratio = f"x{f.kv_tokens / fit.kv_tokens:.2f}" if fit.kv_tokens else "none"
        out.append(Lever("fp8_kv", "--kv-cache-dtype fp8", f.kv_tokens, f.starts,
                         f"{f.kv_tokens:,} tokens ({ratio} today)"))
    tp2 = shape.tp * 2
    heads_ok = not arch.num_attention_heads or arch.num_attention_heads % tp2 == 0
    if heads_ok and (gpus_available is None or tp2 * shape.pp * shape.dp <= gpus_available):
        f = again(replace(shape, tp=tp2))
        out.append(Lever("tensor_parallel", f"--tensor-parallel-size {tp2}", f.kv_tokens, f.starts,
                         f"{tp2 * shape.pp} GPUs per replica: weights {f.weights / GIB:.1f} GiB/GPU, "
                         f"{f.kv_tokens:,} tokens"))
    ranks = gpus_available // (shape.tp * shape.pp) if gpus_available else 0
    if fit.starts and ranks > shape.dp:
        out.append(Lever("data_parallel", f"--data-parallel-size {ranks}", fit.kv_tokens, True,
                         f"{ranks} replicas of TP {shape.tp} x PP {shape.pp} use all {gpus_available} GPUs: "
                         f"{fit.concurrency * ranks:,} requests of {fit.context:,} tokens at once"))
    if not fit.starts and fit.sampler > fit.forward and fit.max_num_seqs > 256:
        f = again(replace(shape, max_num_seqs=256))
        out.append(Lever("max_num_seqs", "--max-num-seqs 256", f.kv_tokens, f.starts,
                         f"the sampler warm-up over {fit.max_num_seqs:,} sequences takes "
                         f"{fit.sampler / GIB:.1f} GiB at start-up; 256 leave {f.kv_budget / GIB:.2f} GiB of KV"))
    if not fit.starts:
        longest = longest_fitting(arch, shape, fit.kv_budget, fit.block_size, fit.max_model_len,
                                  fit.max_num_batched_tokens)
        out.append(Lever("max_model_len", f"--max-model-len {longest}" if longest else "--max-model-len (none fits)",
                         fit.kv_tokens, longest > 0,
                         f"the longest request that fits is {longest:,} tokens" if longest
                         else "not even one block fits: free memory first"))
        gib = max(0, math.ceil((max(fit.kv_needed, 1.0) - fit.kv_budget) / GIB))  # the KV deficit
        can = shape.cpu_offload_gib + gib <= weights_per_gpu(arch, checkpoint_gib, replace(shape, cpu_offload_gib=0)) / GIB
        f = again(replace(shape, cpu_offload_gib=shape.cpu_offload_gib + gib))
        out.append(Lever("cpu_offload", f"--cpu-offload-gb {shape.cpu_offload_gib + gib:g}", f.kv_tokens,
                         f.starts and can, f"moves {gib} GiB of weights per GPU to host memory (slower decode)"
                         + ("" if can else "; more than the weights on the GPU")))
    return tuple(out)

