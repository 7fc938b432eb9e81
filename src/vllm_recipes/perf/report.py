"""How fast will this selection serve? The estimate of one builder state, from the plan its command renders.

Pure entry point for every publisher: :func:`perf_state` (catalog, recipe, state,
workload) -> :class:`PerfReport`. The memory planner (:func:`vllm_recipes.fit.report.fit_state`)
gives each process's weights per GPU, KV bytes per token, KV budget and batch
limits; this adds the compute facts, the GPU's facts and the calibrated constants.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import Architecture
from vllm_recipes.fit.hardware import GpuTarget
from vllm_recipes.fit.report import FitReport, fit_state, recipe_architecture
from vllm_recipes.select.state import PageState

from .architecture import ComputeFacts, facts_from_recipe
from .estimate import Estimate, calibration, estimate_process
from .gpus import GpuSpec, spec_for_name, spec_for_profile
from .scheduler import Workload

#: vLLM releases the calibration measurements ran (InferenceMAX images of Oct 2025, 0.12.0, 0.15.1, 0.18.0)
CALIBRATED_VLLM = ("0.10", "0.18")


@dataclass(frozen=True)
class PerfReport:
    hf_id: str
    variant: str
    strategy: str
    nodes: int
    hardware: str
    gpu: GpuSpec | None
    calibrated: bool
    workload: Workload
    estimate: Estimate | None = None
    #: PD: the prefill and the decode pool's own estimates
    pools: tuple[tuple[str, Estimate], ...] = ()
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    bench_command: str = ""
    fit: FitReport | None = None
    vllm: str | None = None

    @property
    def known(self) -> bool:
        return self.estimate is not None and not self.errors


def bench_command(model: str, w: Workload) -> str:
    """The ``vllm bench serve`` run that measures the same point (fixed lengths, every output token generated)."""
    args = ["vllm", "bench", "serve", "--model", model, "--dataset-name", "random",
            "--random-input-len", str(w.isl), "--random-output-len", str(w.osl), "--ignore-eos",
            "--num-prompts", str(w.prompts())]
    if w.rate:
        args += ["--request-rate", f"{w.rate:g}"]
    else:
        args += ["--max-concurrency", str(w.concurrency or 1)]
    return " ".join(shlex.quote(a) for a in args)


def gpu_for(catalog: Catalog, target: GpuTarget) -> GpuSpec | None:
    prof = catalog.hardware_profiles.get(target.profile_id or "")
    name = prof.get("display_name") if isinstance(prof, Mapping) else None
    if not target.custom:
        return spec_for_profile(target.profile_id, str(name) if name else None)
    return spec_for_name(target.label.split("(")[0].replace("Custom:", "")) or \
        spec_for_profile(target.profile_id, str(name) if name else None)


def _precision(recipe: Recipe, variant_key: str) -> str:
    v = recipe.variants.get(variant_key) or {}
    return str(v.get("precision") or "bf16").lower() if isinstance(v, Mapping) else "bf16"


def _release_note(vllm: str | None) -> tuple[str, ...]:
    if not vllm:
        return ()
    try:
        given = tuple(int(x) for x in vllm.split(".")[:2])
        lo, hi = (tuple(int(x) for x in v.split(".")) for v in CALIBRATED_VLLM)
    except ValueError:
        return (f"vLLM {vllm}: not a version number; the estimate does not depend on it",)
    if lo <= given <= hi:
        return (f"vLLM {vllm}: inside the calibrated releases ({CALIBRATED_VLLM[0]}-{CALIBRATED_VLLM[1]})",)
    return (f"vLLM {vllm}: outside the calibrated releases ({CALIBRATED_VLLM[0]}-{CALIBRATED_VLLM[1]}); "
            "kernels and scheduler defaults change between releases, expect a larger error",)


def perf_state(catalog: Catalog, recipe: Recipe, state: PageState, workload: Workload, *,
               target: GpuTarget | None = None, arch: Architecture | None = None, facts: ComputeFacts | None = None,
               strategy_given: bool = False, cached_checkpoint_gib: float | None = None,
               vllm: str | None = None) -> PerfReport:
    """Estimate a builder state at ``workload`` (pure; unknown facts give errors, never a guess)."""
    sel = state.selection
    arch = arch or recipe_architecture(catalog, recipe)
    fit = fit_state(catalog, recipe, state, target, arch, context=workload.isl + workload.osl,
                    strategy_given=strategy_given, cached_checkpoint_gib=cached_checkpoint_gib)
    tgt = fit.hardware
    gpu = gpu_for(catalog, tgt)
    cal = calibration()
    params, calibrated = cal.params_for(gpu.family if gpu else "")
    head = dict(hf_id=recipe.hf_id, variant=fit.variant, strategy=fit.strategy, nodes=fit.node_count,
                hardware=tgt.label, gpu=gpu, calibrated=calibrated, workload=workload, fit=fit, vllm=vllm,
                bench_command=bench_command(str(recipe.model.get("model_id") or recipe.hf_id), workload))
    errors = list(fit.errors)
    if arch is not None and facts is None:
        facts = facts_from_recipe(arch, recipe.model)
        if facts is None:
            errors.append(f"the compute facts of {recipe.hf_id} are unknown: the recipe needs parameter_count and "
                          "architecture_facts with num_layers and hidden_size, or pass --hf-config PATH")
    if gpu is None:
        errors.append(f"no GPU facts for {tgt.label} (peak FLOPs, memory bandwidth): performance unknown")
    if fit.processes and not all(p.starts for p in fit.processes):
        errors.append("the selection does not start (see fit): no performance to estimate")
    if errors or facts is None or arch is None or gpu is None:
        return PerfReport(**head, errors=tuple(dict.fromkeys(errors)), notes=_release_note(vllm))  # type: ignore[arg-type]
    notes = [*_release_note(vllm)]
    if not calibrated:
        notes.append(f"{gpu.key} ({gpu.family}) has no calibration measurements: constants of the median "
                     "calibrated family; expect a larger error")
    if not facts.exact:
        notes.append(f"compute facts are coarse ({facts.source}); a config.json (--hf-config) makes them exact")
    if not arch.exact:
        notes.append("compressed sparse attention: KV reads use the recipe's estimate of KV per token")
    precision = _precision(recipe, sel.variant_key)
    by_role = {p.role: p for p in fit.processes}
    gpn = tgt.gpus_per_node
    if "prefill" in by_role and "decode" in by_role:
        dec = estimate_process(facts, arch, by_role["decode"], gpu, precision, params,
                               dataclasses.replace(workload, prefilled=True), gpn)
        rate = workload.rate
        if rate is None:  # closed loop: the prefill pool sees the users' request rate, not a wall of them
            alone = estimate_process(facts, arch, by_role["prefill"], gpu, precision, params,
                                     Workload(workload.isl, 1, concurrency=1, num_prompts=3), gpn)
            cycle = (alone.ttft_ms + max(0, workload.osl - 1) * dec.tpot_ms) / 1e3
            rate = (workload.concurrency or 1) / cycle if cycle > 0 else None
        pre = estimate_process(facts, arch, by_role["prefill"], gpu, precision, params,
                               Workload(workload.isl, 1, rate=rate, num_prompts=workload.prompts(),
                                        seed=workload.seed), gpn)
        est = _combine(pre, dec, workload)
        notes.append("disaggregated: TTFT from the prefill pool, TPOT from the decode pool; KV transfer between "
                     "pools is not modelled")
        return PerfReport(**head, estimate=est, pools=(("prefill", pre), ("decode", dec)),  # type: ignore[arg-type]
                          notes=tuple(notes))
    proc = fit.processes[0]
    est = estimate_process(facts, arch, proc, gpu, precision, params, workload, gpn)
    if est.blocked:
        errors.append(f"one request of {workload.isl + workload.osl:,} tokens does not fit the KV cache")
    return PerfReport(**head, estimate=est, errors=tuple(errors), notes=tuple(notes))  # type: ignore[arg-type]


def _combine(pre: Estimate, dec: Estimate, w: Workload) -> Estimate:
    gpus = pre.gpus + dec.gpus
    if w.rate:
        total = min(w.rate * w.osl, dec.output_tok_s_total)
    else:
        c = w.concurrency or 1
        total = c * w.osl / ((pre.ttft_ms + max(0, w.osl - 1) * dec.tpot_ms) / 1e3)
    return dataclasses.replace(dec, ttft_ms=pre.ttft_ms, output_tok_s_total=total, output_tok_s_per_gpu=total / gpus,
                               gpus=gpus, prefill_bound=pre.prefill_bound, queueing=pre.queueing)


def expected_error() -> dict[str, dict[str, float]]:
    return {k: {"median": m, "p90": p} for k, (m, p) in calibration().expected_error}


def report_dict(r: PerfReport) -> dict[str, Any]:
    w = r.workload
    return {
        "model": r.hf_id, "variant": r.variant, "strategy": r.strategy, "nodes": r.nodes, "hardware": r.hardware,
        "gpu": None if r.gpu is None else {"key": r.gpu.key, "family": r.gpu.family, "source": r.gpu.source},
        "calibrated": r.calibrated, "estimate": True, "known": r.known,
        "workload": {"isl": w.isl, "osl": w.osl, "concurrency": w.concurrency, "rate": w.rate,
                     "num_prompts": w.prompts()},
        **(r.estimate.to_dict() if r.estimate is not None else
           {"ttft_ms": None, "tpot_ms": None, "output_tok_s_per_gpu": None, "output_tok_s_total": None}),
        "pools": {role: e.to_dict() for role, e in r.pools},
        "expected_error": expected_error(), "vllm": r.vllm,
        "bench_command": r.bench_command, "errors": list(r.errors), "notes": list(r.notes),
    }


def finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
