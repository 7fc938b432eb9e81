"""From a resolved :class:`Plan` to the memory-relevant shape of each ``vllm serve`` process.

Reads the *final* flags (after the same dedupe the rendered command gets), so the
fit describes exactly the command the user copies - never a second synthesis.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from vllm_recipes.render import shell
from vllm_recipes.synth.plan import Invocation, KvStorePlan, MultiNodePlan, PdPlan, Plan

from .architecture import Architecture

_ALIASES = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size",
            "-dcp": "--decode-context-parallel-size"}


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
    #: vLLM's hybrid KV-cache manager (off with --disable-hybrid-kv-cache-manager, KV events, some connectors)
    hybrid_kv: bool = True
    #: speculative decoding: method (``eagle``, ``eagle3``, ``mtp``, ``ngram``, ...) and draft layers in the KV pool
    spec_method: str = ""
    draft_layers: int = 0
    #: the sparse-attention indexer keeps a dense [batched tokens x max-model-len] logits buffer
    #: (off with ``--attention-config '{"indexer_sparse_logits": true}'``)
    indexer_dense_logits: bool = True
    #: flag -> value for flags the architecture's host tables look at
    table_flags: tuple[tuple[str, str], ...] = ()

    @property
    def gpus(self) -> int:
        """GPUs of the whole TP x PP x DP world."""
        return self.tp * self.pp * self.dp

    @property
    def expert_ranks(self) -> int:
        """GPUs the routed experts are split over: TP, and every DP rank with expert parallelism."""
        return self.tp * self.dp if self.expert_parallel else self.tp


def invocations(plan: Plan) -> list[tuple[str, Invocation]]:
    """The serve processes of a plan by role (a multi-node head stands for the whole TP/PP world)."""
    if isinstance(plan, PdPlan):
        return [("prefill", plan.prefill.serve), ("decode", plan.decode.serve)]
    if isinstance(plan, MultiNodePlan):
        return [("serve", plan.head)]
    return [("serve", plan.vllm if isinstance(plan, KvStorePlan) else plan.serve)]


def final_flags(inv: Invocation) -> dict[str, str]:
    """Flag -> value (``""`` for a bare switch) of the command as rendered: the render stage's dedupe
    (:func:`~vllm_recipes.render.shell.kept_values`), then a flag takes the next token unless it is a flag."""
    out: dict[str, str] = {}
    values = shell.kept_values(inv)
    for i, t in enumerate(values):
        if t.startswith("-"):
            val = values[i + 1] if i + 1 < len(values) and not values[i + 1].startswith("-") else ""
            name, eq, inline = t.partition("=")
            out[_ALIASES.get(name, name)] = inline if eq and not val else val
    return out


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v else None
    except ValueError:
        return None


def _float(v: str | None) -> float | None:
    try:
        return float(v) if v else None
    except ValueError:
        return None


#: KV connectors that keep vLLM's hybrid KV-cache manager on (``SupportsHMA``, vLLM 0.22+); any other
#: connector - and, before 0.22, every connector and KV events - turns it off
HMA_CONNECTORS = frozenset({"MultiConnector", "MooncakeConnector", "MooncakeStoreConnector", "MoRIIOConnector",
                            "SimpleCPUOffloadConnector", "OffloadingConnector", "NixlConnector",
                            "DecodeBenchConnector", "ExampleHiddenStatesConnector"})


def _json_obj(v: str | None) -> dict[str, object]:
    try:
        got = json.loads(v) if v else {}
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def hybrid_kv_on(flags: Mapping[str, str], release: tuple[int, int] | None = None) -> bool:
    """Whether vLLM keeps the hybrid KV-cache manager (``VllmConfig.__post_init__``, per release)."""
    if "--disable-hybrid-kv-cache-manager" in flags:
        return False
    if "--enable-hybrid-kv-cache-manager" in flags:
        return True
    old = release is not None and release < (0, 22)
    if "--kv-events-config" in flags and old:
        return False
    if "--kv-transfer-config" in flags:
        connector = str(_json_obj(flags["--kv-transfer-config"]).get("kv_connector") or "")
        return not old and connector in HMA_CONNECTORS
    return True


def speculative(flags: Mapping[str, str]) -> tuple[str, int]:
    """(method, draft layers in the KV pool; 0: the architecture decides) of ``--speculative-config``."""
    cfg = _json_obj(flags.get("--speculative-config"))
    method = str(cfg.get("method") or "")
    if not method and cfg.get("model"):
        method = "eagle" if "eagle" in str(cfg["model"]).lower() else "draft_model"
    if method == "ngram" or method == "suffix":
        return method, 0
    layers = cfg.get("num_speculative_layers") if method.endswith("mtp") else None
    return method, layers if isinstance(layers, int) and layers > 0 else 0


def shape_from_flags(role: str, flags: Mapping[str, str], arch: Architecture | None = None,
                     release: tuple[int, int] | None = None) -> ProcessShape:
    mml = flags.get("--max-model-len")
    method, draft = speculative(flags)
    auto = mml is not None and mml.strip().lower() in ("auto", "-1")
    return ProcessShape(
        role=role,
        tp=max(1, _int(flags.get("--tensor-parallel-size")) or 1),
        pp=max(1, _int(flags.get("--pipeline-parallel-size")) or 1),
        dp=max(1, _int(flags.get("--data-parallel-size")) or 1),
        dcp=max(1, _int(flags.get("--decode-context-parallel-size")) or 1),
        expert_parallel="--enable-expert-parallel" in flags or "-ep" in flags,
        gpu_memory_utilization=_float(flags.get("--gpu-memory-utilization")),
        kv_cache_memory_bytes=_int(flags.get("--kv-cache-memory-bytes")),
        max_model_len=None if auto else _int(_human(mml)),
        max_model_len_auto=auto,
        max_num_seqs=_int(flags.get("--max-num-seqs")),
        max_num_batched_tokens=_int(flags.get("--max-num-batched-tokens")),
        kv_cache_dtype=(flags.get("--kv-cache-dtype") or "auto").lower(),
        block_size=_int(flags.get("--block-size")),
        cpu_offload_gib=_float(flags.get("--cpu-offload-gb")) or 0.0,
        enforce_eager="--enforce-eager" in flags,
        hybrid_kv=hybrid_kv_on(flags, release),
        indexer_dense_logits=_json_obj(flags.get("--attention-config")).get("indexer_sparse_logits") is not True,
        spec_method=method,
        draft_layers=draft,
        table_flags=tuple((t.flag, flags[t.flag]) for t in arch.host_tables if t.flag in flags)
        if arch is not None else (),
    )


def _human(v: str | None) -> str | None:
    """vLLM accepts ``128k`` / ``1m`` for --max-model-len (k = 1000, K = 1024)."""
    if not v:
        return v
    units = {"k": 1000, "m": 1_000_000, "K": 1024, "M": 1024**2}
    if v[-1] in units and v[:-1].replace(".", "", 1).isdigit():
        return str(int(float(v[:-1]) * units[v[-1]]))
    return v


def plan_shapes(plan: Plan, arch: Architecture | None = None,
                release: tuple[int, int] | None = None) -> list[ProcessShape]:
    return [shape_from_flags(role, final_flags(inv), arch, release) for role, inv in invocations(plan)]
