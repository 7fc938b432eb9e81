"""``validate``: the release lint over every offered selection, reported at the recipe's ``file:line:col``.

Each selection the builder can reach is resolved in the dead-value lint's pass (:func:`.deadvalues.tally`)
and linted against the release its commands run (or ``--vllm``); a finding is reported once per recipe
location and message, naming the first selection that produced it.
"""

from __future__ import annotations

import gc

from vllm_recipes.catalog import Catalog, Recipe, format_key_path
from vllm_recipes.catalog.diagnostics import Checker, Finding
from vllm_recipes.catalog.usable import usable_catalog
from vllm_recipes.parallel import parallel_map
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolved import resolved_selections

from .deadvalues import dead_value_findings
from .vllm_lint import LintTarget, VllmFinding
from .vllm_plan import ReleaseKey, node_findings, process_findings, release_key, target_for


def _selection_hint(sel: Selection) -> str:
    parts = [f"--hardware {sel.hw_id}", f"--strategy {sel.strategy}"]
    if sel.variant_key != "default":
        parts.insert(0, f"--variant {sel.variant_key}")
    if sel.kv_offload:
        parts.append(f"--kv-offload {sel.kv_offload}")
    return " ".join(parts)


class ReleaseFindings:
    """Collects one recipe's located findings over its selections (``add`` per resolved selection)."""

    def __init__(self, catalog: Catalog, forced: str | None, recipe: Recipe) -> None:
        self.catalog = catalog
        self.forced = forced
        #: whose selections these are: a finding located in a shared file (taxonomy, strategies)
        #: names the model in its example, else every recipe would print the very same line
        self.recipe = recipe
        self._seen: set[tuple[str, tuple[str | int, ...], str, str]] = set()
        self.findings: list[Finding] = []
        #: the release of each :func:`~.vllm_plan.release_key`
        self._targets: dict[ReleaseKey, LintTarget] = {}

    def add(self, sel: Selection, ctx: Ctx, plan: Plan) -> None:
        """:func:`~.vllm_plan.lint_plan` of one resolved selection (image notes have no recipe location and
        are not reported)."""
        key = release_key(ctx)
        target = self._targets.get(key)
        if target is None:
            target = self._targets[key] = target_for(ctx, self.forced)[0]
        for pf in node_findings(ctx, plan):
            self.add_finding(sel, pf.finding, pf.file, pf.key_path)
        for _title, inv, env in plan_processes(plan, env_on_workers=True):
            if inv.binary != "vllm serve":
                continue
            for f, src, kp in process_findings(inv, env, target):
                if src is not None:
                    self.add_finding(sel, f, src.file, kp)

    def add_finding(self, sel: Selection, f: VllmFinding, file: str, key_path: tuple[str | int, ...]) -> None:
        """Report ``f`` at its recipe location, unless that location already has it (``sel``: the example)."""
        if not file:
            return  # image notes without a recipe location (shown by command / the page)
        key = (file, key_path, f.code, f.message)
        if key in self._seen:
            return
        self._seen.add(key)
        doc = self.catalog.source_for(file)
        if doc is None:
            return
        pos = doc.position(key_path)  # (in a merged shared file: the layer that wrote the value)
        hint = _selection_hint(sel)
        if file != self.recipe.rel_path:
            hint = f"{self.recipe.hf_id} {hint}"
        self.findings.append(Finding(f.severity, pos.file, pos.line, pos.col, format_key_path(key_path),
                                     f"[{f.code}] {f.message} (e.g. {hint})", f.code))


def recipe_release_findings(catalog: Catalog, recipe: Recipe, forced: str | None = None) -> list[Finding]:
    """Located findings of one recipe over all of its offered selections."""
    acc = ReleaseFindings(catalog, forced, recipe)
    for sel, ctx, plan in resolved_selections(catalog, recipe):
        acc.add(sel, ctx, plan)
    return acc.findings


def vllm_release_checker(forced: str | None = None) -> Checker:
    """The release lint alone as a catalog-wide checker (``forced``: ``--vllm VERSION``)."""

    def check(catalog: Catalog) -> list[Finding]:
        return [f for recipe in catalog.recipes for f in recipe_release_findings(catalog, recipe, forced)]

    return check


def _text_size(job: tuple[Catalog, Recipe, str | None]) -> int:
    """A recipe's text: a fair guess at its work (the largest start first)."""
    return len(job[1].doc.text or "")


def _dead_values_and_release(job: tuple[Catalog, Recipe, str | None]) -> list[Finding]:
    catalog, recipe, forced = job
    acc = ReleaseFindings(catalog, forced, recipe)
    return [*dead_value_findings(catalog, recipe, on_plan=acc.add), *acc.findings]


def dead_value_and_release_checker(forced: str | None = None) -> Checker:
    """Dead values and the release lint in one pass over the offered selections (what ``validate`` runs),
    recipes spread over the cores. Like every other use of the engine, only recipes without validation
    errors are resolved (the others are reported by their errors alone)."""

    def check(catalog: Catalog) -> list[Finding]:
        usable = usable_catalog(catalog)[0]
        jobs = [(usable, recipe, forced) for recipe in usable.recipes if not recipe.is_omni]
        # the pass makes next to no cyclic garbage, and each collection would walk all it made (8% of its CPU);
        # forked workers inherit the pause; a caller's own setting is restored
        was = gc.isenabled()
        gc.disable()
        try:
            found = parallel_map(_dead_values_and_release, jobs, min_items=2, size=_text_size)
        finally:
            if was:
                gc.enable()
        return [f for recipe_found in found for f in recipe_found]

    return check
