"""How fast will this selection serve? The estimate of one builder state, from the plan its command renders.

:func:`perf_state` is the pure entry point: the memory planner (:func:`~vllm_recipes.fit.report.fit_state`)
gives each process's weights, KV and batch limits; this adds compute facts, GPU facts and the constants.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any, NamedTuple

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import Architecture, recipe_architecture
from vllm_recipes.fit.hardware import GpuTarget
from vllm_recipes.fit.memory import ProcessFit
from vllm_recipes.fit.report import FitReport, fit_state
from vllm_recipes.fit.vllm_rules import parse_release
from vllm_recipes.jsvalues import as_map
from vllm_recipes.select.state import PageState
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan

from .architecture import ComputeFacts, facts_from_recipe
from .estimate import Estimate, calibration, estimate_process, lower_bounds
from .gpus import GpuSpec, spec_for_name, spec_for_profile, with_profile_facts
from .model import Params
from .scheduler import Workload

#: vLLM releases the calibration measurements ran (InferenceMAX images of Oct 2025, 0.12.0, 0.15.1, 0.18.0)
CALIBRATED_VLLM = ((0, 10), (0, 18))
#: Poisson arrivals simulated for a PD prefill pool (its mean TTFT; a closed loop's full count says no more)
PD_PREFILL_PROMPTS = 400


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
    args += ["--request-rate", f"{w.rate:g}"] if w.rate else ["--max-concurrency", str(w.concurrency or 1)]
    return shlex.join(args)


def gpu_for(catalog: Catalog, target: GpuTarget) -> GpuSpec | None:
    """The chip of the target: a custom ``--gpu`` by its name, else the profile's (its own ``gpu_facts``
    over the package's figures)."""
    pid = target.profile_id or ""
    prof = as_map(catalog.hardware_profiles.get(pid))
    name = prof.get("display_name")
    if target.custom:
        found = spec_for_name(target.label.split("(")[0].replace("Custom:", ""))
        if found is not None:
            return found
    spec = spec_for_profile(target.profile_id, str(name) if name else None)
    facts = prof.get("gpu_facts")
    where = catalog.origin_of(catalog.taxonomy_file, ("hardware_profiles", pid, "gpu_facts")) if facts else ""
    return with_profile_facts(spec, pid, facts, where)


def _release_note(vllm: str | None) -> tuple[str, ...]:
    if not vllm:
        return ()
    given, (lo, hi) = parse_release(vllm), CALIBRATED_VLLM
    span = "{}.{}-{}.{}".format(*lo, *hi)
    if given is None:
        return (f"vLLM {vllm}: not a version number; the estimate does not depend on it",)
    if lo <= given <= hi:
        return (f"vLLM {vllm}: inside the calibrated releases ({span})",)
    return (f"vLLM {vllm}: outside the calibrated releases ({span}); "
            "kernels and scheduler defaults change between releases, expect a larger error",)


@dataclass(frozen=True)
class _Plan:
    """Everything an estimate of one builder state needs, once every fact is known."""

    facts: ComputeFacts
    arch: Architecture
    gpu: GpuSpec
    precision: str
    params: Params
    gpus_per_node: int
    processes: tuple[ProcessFit, ...]

    def role(self, name: str) -> ProcessFit | None:
        return next((p for p in self.processes if p.role == name), None)

    @property
    def disaggregated(self) -> bool:
        return self.role("prefill") is not None and self.role("decode") is not None

    def estimate(self, fit: ProcessFit, workload: Workload) -> Estimate:
        return estimate_process(self.facts, self.arch, fit, self.gpu, self.precision, self.params, workload,
                                self.gpus_per_node)

    def bounds(self, workload: Workload) -> tuple[float, float]:
        """(TTFT, TPOT) ms no load can beat (:func:`~.estimate.lower_bounds`) - cheap, no simulation."""
        first, last = self.role("prefill") or self.processes[0], self.role("decode") or self.processes[0]
        args = (self.gpu, self.precision, self.params, workload, self.gpus_per_node)
        return lower_bounds(self.facts, self.arch, first, *args)[0], lower_bounds(self.facts, self.arch, last, *args)[1]


class Planned(NamedTuple):
    """What :func:`plan_state` gives, before any workload is simulated."""

    report: PerfReport  # without its estimate: the errors that leave it unknown, else the notes
    plan: _Plan | None  # None when unknown


def _unknown(recipe: Recipe, fit: FitReport, arch: Architecture | None, facts: ComputeFacts | None,
             gpu: GpuSpec | None) -> list[str]:
    """Why no estimate can be made (empty: every fact is known)."""
    errors = list(fit.errors)
    if arch is not None and facts is None:
        errors.append(f"the compute facts of {recipe.hf_id} are unknown: the recipe needs parameter_count and "
                      "architecture_facts with num_layers and hidden_size, or pass --hf-config PATH")
    if gpu is None:
        errors.append(f"no GPU facts for {fit.hardware.label} (peak FLOPs, memory bandwidth): performance unknown")
    if fit.processes and not all(p.starts for p in fit.processes):
        errors.append("the selection does not start (see fit): no performance to estimate")
    return list(dict.fromkeys(errors))


def _notes(plan: _Plan, calibrated: bool, vllm: str | None) -> list[str]:
    notes = [*_release_note(vllm)]
    if not calibrated:
        notes.append(f"{plan.gpu.key} ({plan.gpu.family}) has no calibration measurements: constants of the "
                     "median calibrated family; expect a larger error")
    if not plan.facts.exact:
        notes.append(f"compute facts are coarse ({plan.facts.source}); a config.json (--hf-config) makes them exact")
    if not plan.arch.exact:
        notes.append("compressed sparse attention: KV reads use the recipe's estimate of KV per token")
    return notes


def plan_state(catalog: Catalog, recipe: Recipe, state: PageState, workload: Workload, target: GpuTarget | None = None,
               arch: Architecture | None = None, facts: ComputeFacts | None = None, strategy_given: bool = False,
               cached_checkpoint_gib: float | None = None, vllm: str | None = None,
               resolution: tuple[Ctx, Plan] | None = None) -> Planned:
    """The report without its estimate, and the plan when every fact is known."""
    arch = arch or recipe_architecture(recipe)
    fit = fit_state(catalog, recipe, state, target, arch, context=workload.isl + workload.osl,
                    strategy_given=strategy_given, cached_checkpoint_gib=cached_checkpoint_gib, resolution=resolution)
    gpu = gpu_for(catalog, fit.hardware)
    params, calibrated = calibration().params_for(gpu.family if gpu else "")
    head = PerfReport(hf_id=recipe.hf_id, variant=fit.variant, strategy=fit.strategy, nodes=fit.node_count,
                      hardware=fit.hardware.label, gpu=gpu, calibrated=calibrated, workload=workload, fit=fit,
                      vllm=vllm, bench_command=bench_command(recipe.model_repo, workload))
    if arch is not None and facts is None:
        facts = facts_from_recipe(arch, recipe.model)
    errors = _unknown(recipe, fit, arch, facts, gpu)
    if errors or facts is None or arch is None or gpu is None:
        return Planned(dataclasses.replace(head, errors=tuple(errors), notes=_release_note(vllm)), None)
    variant = as_map(recipe.variants.get(state.selection.variant_key))
    plan = _Plan(facts, arch, gpu, str(variant.get("precision") or "bf16").lower(), params,
                 fit.hardware.gpus_per_node, tuple(fit.processes))
    return Planned(dataclasses.replace(head, notes=tuple(_notes(plan, calibrated, vllm))), plan)


def perf_state(catalog: Catalog, recipe: Recipe, state: PageState, workload: Workload, *,
               target: GpuTarget | None = None, arch: Architecture | None = None, facts: ComputeFacts | None = None,
               strategy_given: bool = False, cached_checkpoint_gib: float | None = None,
               vllm: str | None = None, resolution: tuple[Ctx, Plan] | None = None) -> PerfReport:
    """Estimate a builder state at ``workload`` (pure; unknown facts give errors, never a guess);
    ``resolution``: the state's ``(ctx, plan)`` when the caller already has it."""
    return report_of(plan_state(catalog, recipe, state, workload, target, arch, facts, strategy_given,
                                cached_checkpoint_gib, vllm, resolution), workload)


def report_of(planned: Planned, workload: Workload) -> PerfReport:
    """The report of a :func:`plan_state` at ``workload``."""
    report, plan = planned
    if plan is None:
        return report
    if plan.disaggregated:
        pre, dec = _pd_pools(plan, workload)
        notes = (*report.notes, "disaggregated: TTFT from the prefill pool, TPOT from the decode pool; KV "
                 "transfer between pools is not modelled")
        return dataclasses.replace(report, estimate=_combine(pre, dec, workload),
                                   pools=(("prefill", pre), ("decode", dec)), notes=notes)
    est = plan.estimate(plan.processes[0], workload)
    errors = (f"one request of {workload.isl + workload.osl:,} tokens does not fit the KV cache",) \
        if est.blocked else ()
    return dataclasses.replace(report, estimate=est, errors=errors)


def _pd_pools(plan: _Plan, workload: Workload) -> tuple[Estimate, Estimate]:
    """The prefill pool at the users' request rate (a closed loop: what its cycle gives), the decode pool fed
    with computed prompts."""
    pre_fit, dec_fit = plan.role("prefill"), plan.role("decode")
    assert pre_fit is not None and dec_fit is not None
    dec = plan.estimate(dec_fit, dataclasses.replace(workload, prefilled=True))
    rate = workload.rate
    if rate is None:  # closed loop: the prefill pool sees the users' request rate, not a wall of them
        alone = plan.estimate(pre_fit, Workload(workload.isl, 1, concurrency=1, num_prompts=3))
        cycle = (alone.ttft_ms + max(0, workload.osl - 1) * dec.tpot_ms) / 1e3
        rate = (workload.concurrency or 1) / cycle if cycle > 0 else None
    pre = plan.estimate(pre_fit, Workload(workload.isl, 1, rate=rate, num_prompts=min(workload.prompts(),
                                                                                       PD_PREFILL_PROMPTS),
                                          seed=workload.seed))
    return pre, dec


def _combine(pre: Estimate, dec: Estimate, w: Workload) -> Estimate:
    gpus = pre.gpus + dec.gpus
    if w.rate:
        total = min(w.rate * w.osl, dec.output_tok_s_total)
    else:
        total = (w.concurrency or 1) * w.osl / ((pre.ttft_ms + max(0, w.osl - 1) * dec.tpot_ms) / 1e3)
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

