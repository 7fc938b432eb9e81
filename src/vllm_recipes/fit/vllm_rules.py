"""What each vLLM release does with GPU memory at start-up, as data (sources: docs/decisions-fit.md §3).

Read in the released wheels; a release between two rows takes the rules of the older row.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the newest release whose sources were read; ``--vllm`` later than this plans with its rules
NEWEST = (0, 33)


@dataclass(frozen=True, slots=True)
class MemoryRules:
    """The start-up memory accounting of one vLLM release."""

    release: str
    #: ``gpu_worker.determine_available_memory`` subtracts ``profile_cudagraph_memory()`` from the KV budget
    #: (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``: added in 0.18 default "0", default "1" from 0.20)
    cudagraph_estimate_subtracted: bool
    #: ``EngineArgs._set_default_args``: GPUs of >= 160 GiB get 16,384 batched tokens for the server (0.28)
    xl_batch_tier: bool
    #: the same: GB10 (compute capability 12.1) stays on the small tier despite its memory (between 0.28 and 0.33)
    gb10_small_tier: bool
    #: ``kv_cache_utils.get_kv_cache_capacity``: "GPU KV cache size" = concurrency x max_model_len (0.25);
    #: before: ``num_blocks // len(groups) * block_size`` (``get_kv_cache_config_from_groups``)
    capacity_is_concurrency: bool
    #: sampler warm-up bytes per (row x vocabulary entry) with top-k and top-p set: 14, or 28 from 0.12 to
    #: 0.16 where ``apply_top_k_top_p`` sorts the vocabulary in PyTorch (docs/decisions-fit.md §3)
    sampler_bytes_per_logit: int
    #: the fused-MoE caches live in the process-wide workspace (``v1/worker/workspace.py``, 0.14), so they are
    #: still allocated while the sampler warm-up runs
    moe_workspace_persistent: bool


def parse_release(text: str | None) -> tuple[int, int] | None:
    """``"0.11"`` / ``"0.11.2"`` / ``"v0.20.1"`` -> (0, 11); ``None`` when unreadable."""
    if not text:
        return None
    parts = text.strip().lstrip("vV").split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


def rules_for(release: str | None) -> MemoryRules:
    """The rules of ``release`` (``None`` or unreadable: the newest read)."""
    v = parse_release(release) or NEWEST
    return MemoryRules(
        release=f"{v[0]}.{v[1]}",
        cudagraph_estimate_subtracted=v >= (0, 20),
        xl_batch_tier=v >= (0, 28),
        gb10_small_tier=v >= (0, 29),
        capacity_is_concurrency=v >= (0, 25),
        sampler_bytes_per_logit=28 if (0, 12) <= v < (0, 17) else 14,
        moe_workspace_persistent=v >= (0, 14),
    )


#: the memory tiers of ``EngineArgs._set_default_args`` (GiB of total GPU memory)
LARGE_GPU_GIB = 70
XL_GPU_GIB = 160


@dataclass(frozen=True, slots=True)
class BatchDefaults:
    """vLLM's ``--max-num-seqs`` / ``--max-num-batched-tokens`` defaults for ``vllm serve`` on one GPU."""

    max_num_seqs: int
    max_num_batched_tokens: int


def batch_defaults(gpu_gib: float, gpu_name: str = "", rules: MemoryRules | None = None) -> BatchDefaults:
    """``EngineArgs._set_default_args`` for the API server; ``gpu_name`` is matched like vLLM's
    ``"a100" in device_name``."""
    r = rules or rules_for(None)
    name = gpu_name.lower()
    gb10 = r.gb10_small_tier and "gb10" in name.replace(" ", "")
    if r.xl_batch_tier and gpu_gib >= XL_GPU_GIB and not gb10:
        return BatchDefaults(1024, 16384)
    if gpu_gib >= LARGE_GPU_GIB and "a100" not in name and not gb10:
        return BatchDefaults(1024, 8192)
    return BatchDefaults(256, 2048)
