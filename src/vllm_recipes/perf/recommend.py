"""Which of a recipe's offered configurations meet an SLA, fewest GPUs first.

Every variant x hardware x strategy the builder offers, multi-node at each even node count and PD at
each pair of pool sizes; sizes are walked fewest GPUs first, a walk stops at the first size that meets,
and a size whose lower bound (``_Plan.bounds``) already misses is not simulated. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import Architecture
from vllm_recipes.jsvalues import as_map
from vllm_recipes.select.gates import MAX_NODES, node_gpus
from vllm_recipes.select.nodes import node_count_issue, pool_split, strategy_split
from vllm_recipes.select.request import PageRequest, SelectionError
from vllm_recipes.select.state import PageState, build_state, candidate_strategies, hardware_choices

from .architecture import ComputeFacts
from .report import PerfReport, Planned, plan_state, report_dict, report_of
from .scheduler import Workload

#: PD pools: pairs walked up to this many nodes beyond the default pools (both pools together)
PD_EXTRA_NODES = 6


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


def _even_counts(recipe: Recipe, split: Any, gpn: float, lo: int) -> list[int]:
    """Node counts from ``lo`` up that split the model evenly (``select.nodes``' rule)."""
    return [n for n in range(max(1, lo), MAX_NODES + 1) if node_count_issue(recipe.data, split, gpn, n) is None]


def _node_gpus(catalog: Catalog, base: PageRequest) -> int | float:
    """GPUs on one node of ``base``'s hardware (the page's rule, :func:`node_gpus`)."""
    return node_gpus(as_map(catalog.hardware_profiles.get(base.hardware or "")).get("gpu_count"))


def _pd_sizes(catalog: Catalog, recipe: Recipe, base: PageRequest) -> Iterator[list[PageRequest]]:
    """PD pool pairs from the default pools up, grouped by total nodes, fewest first."""
    try:
        pools = build_state(catalog, recipe, base, strict=True).selection.pd_nodes
    except SelectionError:
        return
    if not isinstance(pools, Mapping):  # co-located on one node: one size only
        yield [base]
        return
    gpn = _node_gpus(catalog, base)
    lo = {role: int(pools[role]["nodes"]) for role in ("prefill", "decode")}
    counts = {role: _even_counts(recipe, pool_split(pools[role]["parallelism"]), gpn, lo[role])
              for role in ("prefill", "decode")}
    floor = lo["prefill"] + lo["decode"]
    for total in range(floor, floor + PD_EXTRA_NODES + 1):
        group = [replace(base, prefill_nodes=p, decode_nodes=total - p)
                 for p in counts["prefill"] if total - p in counts["decode"]]
        if group:
            yield group


def _bases(catalog: Catalog, recipe: Recipe, hardware: Sequence[str]) -> Iterator[tuple[PageRequest, str | None]]:
    """Every variant x offered hardware x candidate strategy (default features), with its deploy type."""
    for vk, variant in recipe.variants.items():
        if not isinstance(variant, Mapping):
            continue
        for hw in hardware_choices(catalog, recipe, variant):
            if hardware and hw not in hardware:
                continue
            # one node's candidates, then those that need several (multi-node, PD pools)
            found = dict.fromkeys([*candidate_strategies(catalog, recipe, hw, 1),
                                   *candidate_strategies(catalog, recipe, hw, 2)])
            strategies: list[str | None] = list(found) or [None]
            for strategy in strategies:
                kind = as_map(catalog.strategies.get(strategy or "")).get("deploy_type")
                yield PageRequest(hardware=hw, variant=vk, strategy=strategy), kind


def hopeless(smaller: tuple[int, tuple[float, float]], larger: tuple[int, tuple[float, float]]) -> bool:
    """Whether no larger size of the same kind can meet the SLA, from two sizes' (GPUs, estimate / target):
    a time that falls as ``a + b / GPUs`` (the per-GPU terms shrink, collectives and fixed costs do not) tends
    to ``a``; when ``a`` of TTFT or TPOT is still over its target, more GPUs cannot help."""
    (n1, r1), (n2, r2) = smaller, larger
    if n2 <= n1:
        return False
    return any(b > 1 and b - (a - b) * n1 / (n2 - n1) > 1 for a, b in zip(r1, r2, strict=True))


class _Search:
    """The walk over a recipe's sizes: estimates, what was pruned by the lower bound, what is unknown."""

    def __init__(self, catalog: Catalog, recipe: Recipe, sla: Sla, workload: Workload,
                 arch: Architecture | None, facts: ComputeFacts | None) -> None:
        self.catalog, self.recipe, self.sla, self.workload = catalog, recipe, sla, workload
        self.arch, self.facts = arch, facts
        self.seen: set[tuple[Any, ...]] = set()
        self.cands: list[Candidate] = []
        self.unknown: list[PerfReport] = []
        #: (worst bound / target, plan) of the sizes not simulated
        self.pruned: list[tuple[float, Planned]] = []

    def state(self, req: PageRequest) -> PageState | None:
        """The builder state of ``req`` (``None``: refused, or a selection already seen)."""
        try:
            state = build_state(self.catalog, self.recipe, req, strict=True)
        except SelectionError:
            return None
        sel = state.selection
        key = (sel.variant_key, sel.hw_id, sel.strategy, sel.node_count, str(sel.pd_nodes))
        if key in self.seen:
            return None
        self.seen.add(key)
        return state

    def estimate(self, planned: Planned) -> Candidate | None:
        rep = report_of(planned, self.workload)
        if not rep.known:
            self.unknown.append(rep)
            return None
        e = rep.estimate
        assert e is not None
        misses = tuple((k, v / t) for k, v, t in (("ttft", e.ttft_ms, self.sla.ttft_ms),
                                                  ("tpot", e.tpot_ms, self.sla.tpot_ms)) if v > t)
        c = Candidate(rep, e.gpus, not misses, misses)
        self.cands.append(c)
        return c

    def consider(self, req: PageRequest) -> Candidate | None:
        """Estimate ``req`` unless its bound already misses (``None``: refused, seen, pruned or unknown)."""
        state = self.state(req)
        if state is None:
            return None
        planned = plan_state(self.catalog, self.recipe, state, self.workload, arch=self.arch, facts=self.facts)
        if planned.plan is not None:
            bounds = planned.plan.bounds(self.workload)
            worst = max(bounds[0] / self.sla.ttft_ms, bounds[1] / self.sla.tpot_ms)
            if worst > 1:
                self.pruned.append((worst, planned))
                return None
        return self.estimate(planned)

    def ratios(self, c: Candidate) -> tuple[float, float]:
        e = c.report.estimate
        assert e is not None
        return e.ttft_ms / self.sla.ttft_ms, e.tpot_ms / self.sla.tpot_ms

    def walk(self, groups: Iterator[list[PageRequest]]) -> None:
        """Groups of equal size, fewest GPUs first; stop after the first group with a size that meets, or when
        two sizes in a row say no size will (:func:`hopeless`)."""
        last: tuple[int, tuple[float, float]] | None = None
        for group in groups:
            got = [c for c in (self.consider(req) for req in group) if c is not None]
            if any(c.meets for c in got):
                return
            if len(got) == 1:
                now = (got[0].gpus, self.ratios(got[0]))
                if last is not None and hopeless(last, now):
                    return
                last = now

    def closest(self) -> Candidate | None:
        """The candidate nearest the SLA; pruned sizes are estimated while their bound could still beat it."""
        def score(c: Candidate) -> tuple[float, int]:
            return max(v for _, v in c.misses), c.gpus

        best = min(self.cands, key=score, default=None)
        for worst, planned in sorted(self.pruned, key=lambda p: p[0]):
            if best is not None and worst >= score(best)[0]:
                break
            c = self.estimate(planned)
            if c is not None and (best is None or score(c) < score(best)):
                best = c
        return best


def recommend(catalog: Catalog, recipe: Recipe, sla: Sla, workload: Workload, *, hardware: Sequence[str] = (),
              arch: Architecture | None = None, facts: ComputeFacts | None = None) -> Recommendation:
    search = _Search(catalog, recipe, sla, workload, arch, facts)
    for base, kind in _bases(catalog, recipe, hardware):
        if kind == "multi_node":  # at each node count that splits the model evenly, fewest first
            split = strategy_split(catalog.strategies.get(base.strategy or "") or {})
            gpn = _node_gpus(catalog, base)
            search.walk([replace(base, nodes=n)] for n in _even_counts(recipe, split, gpn, 2))
        elif kind == "pd_cluster":
            search.walk(_pd_sizes(catalog, recipe, base))
        else:
            search.walk(iter([[base]]))
    meeting = sorted((c for c in search.cands if c.meets),
                     key=lambda c: (c.gpus, -(c.report.estimate.output_tok_s_per_gpu if c.report.estimate else 0)))
    closest = None if meeting else search.closest()
    return Recommendation(recipe.hf_id, sla, workload, tuple(meeting), closest, tuple(search.unknown),
                          len(search.seen))


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
