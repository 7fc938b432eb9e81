"""Which of a recipe's offered configurations meet an SLA, fewest GPUs first.

Enumerates the selections the builder offers (variant x hardware x strategy x
node count: multi-node strategies at 2 and 4 nodes, PD deployments at their
default pool sizes), estimates each with :func:`~vllm_recipes.perf.report.perf_state`, and keeps
those whose TTFT and TPOT are within the SLA. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import Architecture
from vllm_recipes.select.state import (
    PageRequest,
    SelectionError,
    build_state,
    candidate_strategies,
    hardware_choices,
)

from .architecture import ComputeFacts
from .report import PerfReport, perf_state, report_dict
from .scheduler import Workload

MULTI_NODE_COUNTS = (2, 4)


@dataclass(frozen=True)
class Sla:
    ttft_ms: float
    tpot_ms: float


@dataclass(frozen=True)
class Candidate:
    report: PerfReport
    gpus: int
    meets: bool
    #: what misses the SLA ("ttft", "tpot") and by how much (estimate / target)
    misses: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Recommendation:
    hf_id: str
    sla: Sla
    workload: Workload
    meeting: tuple[Candidate, ...]
    closest: Candidate | None
    unknown: tuple[PerfReport, ...]
    considered: int


def requests(catalog: Catalog, recipe: Recipe, hardware: Sequence[str] = ()) -> list[PageRequest]:
    """Every offered selection (default features), as builder requests."""
    out: list[PageRequest] = []
    for vk, variant in recipe.variants.items():
        if not isinstance(variant, Mapping):
            continue
        for hw in hardware_choices(catalog, recipe, variant):
            if hardware and hw not in hardware:
                continue
            strategies: list[str | None] = list(candidate_strategies(catalog, recipe, hw, 1)) or [None]
            for strategy in strategies:
                spec = catalog.strategies.get(strategy or "") or {}
                kind = spec.get("deploy_type") if isinstance(spec, Mapping) else None
                if kind == "multi_node":
                    out += [PageRequest(hardware=hw, variant=vk, strategy=strategy, nodes=n)
                            for n in MULTI_NODE_COUNTS]
                elif kind == "pd_cluster":
                    out.append(PageRequest(hardware=hw, variant=vk, strategy=strategy))
                else:
                    out.append(PageRequest(hardware=hw, variant=vk, strategy=strategy))
    return out


def judge(r: PerfReport, sla: Sla) -> Candidate:
    e = r.estimate
    assert e is not None
    misses = tuple((k, v / t) for k, v, t in (("ttft", e.ttft_ms, sla.ttft_ms), ("tpot", e.tpot_ms, sla.tpot_ms))
                   if v > t)
    return Candidate(r, e.gpus, not misses, misses)


def recommend(catalog: Catalog, recipe: Recipe, sla: Sla, workload: Workload, *, hardware: Sequence[str] = (),
              arch: Architecture | None = None, facts: ComputeFacts | None = None) -> Recommendation:
    seen: set[tuple[Any, ...]] = set()
    cands: list[Candidate] = []
    unknown: list[PerfReport] = []
    considered = 0
    for req in requests(catalog, recipe, hardware):
        try:
            state = build_state(catalog, recipe, req, strict=True)
        except SelectionError:
            continue
        sel = state.selection
        key = (sel.variant_key, sel.hw_id, sel.strategy, sel.node_count, str(sel.pd_nodes))
        if key in seen:
            continue
        seen.add(key)
        considered += 1
        rep = perf_state(catalog, recipe, state, workload, arch=arch, facts=facts)
        if not rep.known:
            unknown.append(rep)
            continue
        cands.append(judge(rep, sla))
    meeting = sorted((c for c in cands if c.meets),
                     key=lambda c: (c.gpus, -(c.report.estimate.output_tok_s_per_gpu if c.report.estimate else 0)))
    closest = None
    if not meeting and cands:
        closest = min(cands, key=lambda c: (max(v for _, v in c.misses), c.gpus))
    return Recommendation(recipe.hf_id, sla, workload, tuple(meeting), closest, tuple(unknown), considered)


def selection_command(r: PerfReport) -> str:
    """The ``vllm-recipes command`` line that renders this configuration."""
    hw = r.fit.hardware.profile_id if r.fit is not None else None
    return (f"vllm-recipes command {r.hf_id}" + (f" --hardware {hw}" if hw else "")
            + f" --variant {r.variant} --strategy {r.strategy}" + (f" --nodes {r.nodes}" if r.nodes > 1 else ""))


def candidate_dict(c: Candidate) -> dict[str, Any]:
    return {**report_dict(c.report), "gpus": c.gpus, "meets": c.meets,
            "misses": {k: round(v, 2) for k, v in c.misses}, "command": selection_command(c.report)}


def recommendation_dict(r: Recommendation) -> dict[str, Any]:
    w = r.workload
    return {
        "model": r.hf_id, "estimate": True,
        "sla": {"ttft_ms": r.sla.ttft_ms, "tpot_ms": r.sla.tpot_ms},
        "workload": {"isl": w.isl, "osl": w.osl, "concurrency": w.concurrency, "rate": w.rate},
        "considered": r.considered, "meeting": [candidate_dict(c) for c in r.meeting],
        "closest": None if r.closest is None else candidate_dict(r.closest),
        "unknown": [{"variant": u.variant, "hardware": u.hardware, "strategy": u.strategy, "nodes": u.nodes,
                     "errors": list(u.errors)} for u in r.unknown],
    }
