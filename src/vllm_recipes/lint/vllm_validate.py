"""``validate``: the release lint over every offered selection, reported at the recipe's ``file:line:col``.

Each selection the builder can reach (the dead-value lint's enumeration) is
resolved and linted against the release its commands run (or ``--vllm``); a
finding is reported once per recipe location and message, naming the first
selection that produced it.
"""

from __future__ import annotations

from vllm_recipes.catalog import Catalog, Recipe, format_key_path
from vllm_recipes.catalog.diagnostics import Checker, Finding, position_of
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.resolve import resolve

from .deadvalues import offered_selections
from .vllm_plan import lint_plan


def _selection_hint(sel: Selection) -> str:
    parts = [f"--hardware {sel.hw_id}", f"--strategy {sel.strategy}"]
    if sel.variant_key != "default":
        parts.insert(0, f"--variant {sel.variant_key}")
    if sel.kv_offload:
        parts.append(f"--kv-offload {sel.kv_offload}")
    return " ".join(parts)


def recipe_release_findings(catalog: Catalog, recipe: Recipe, forced: str | None = None) -> list[Finding]:
    """Located findings of one recipe over all of its offered selections."""
    out: dict[tuple[str, int, int, str, str], Finding] = {}
    for sel in offered_selections(catalog, recipe):
        try:
            ctx, plan = resolve(catalog, recipe, sel)
        except Exception:  # a selection that cannot resolve is the engine's finding, not the lint's
            continue
        for pf in lint_plan(ctx, plan, forced=forced).findings:
            f = pf.finding
            if not pf.file:
                continue  # image notes without a recipe location (shown by command / the page)
            doc = catalog.source_for(pf.file)
            if doc is None:
                continue
            pos = position_of(doc, pf.key_path)
            key = (pf.file, pos.line, pos.col, f.code, f.message)
            if key not in out:
                out[key] = Finding(f.severity, pf.file, pos.line, pos.col, format_key_path(pf.key_path),
                                   f"[{f.code}] {f.message} (e.g. {_selection_hint(sel)})", f.code)
    return list(out.values())


def vllm_release_checker(forced: str | None = None) -> Checker:
    """The catalog-wide checker ``validate`` registers (``forced``: ``--vllm VERSION``)."""

    def check(catalog: Catalog) -> list[Finding]:
        out: list[Finding] = []
        for recipe in catalog.recipes:
            if not recipe.is_omni:
                out.extend(recipe_release_findings(catalog, recipe, forced))
        return out

    return check
