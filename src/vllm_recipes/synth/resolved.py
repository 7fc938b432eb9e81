"""Every offered selection of a recipe resolved, for the analyses that read them all (the dead-value and
release lints, the translation drift check)."""

from __future__ import annotations

from collections.abc import Iterator

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.select.offered import offered_selections
from vllm_recipes.select.selection import Selection

from .context import AlikeResolves, Ctx, less_hardware
from .plan import Plan
from .resolve import resolve


def resolved_selections(catalog: Catalog, recipe: Recipe) -> Iterator[tuple[Selection, Ctx, Plan]]:
    """Each offered selection resolved once (one that fails is skipped), but for a selection whose hardware
    and modes read like an earlier one's (same everything else): it renders that very plan
    (:class:`AlikeResolves`)."""
    alike: AlikeResolves[None] = AlikeResolves(catalog)
    for sel in offered_selections(catalog, recipe):
        # a repeat (Mooncake deployments also come as KV choices) reads alike too: resolved once
        rest = less_hardware(sel)
        if alike.find(rest, sel.hw_id, sel.feature_modes) is not None:
            continue
        try:
            ctx, plan = resolve(catalog, recipe, sel, alike.hardware(sel.hw_id, sel.feature_modes))
        except Exception:
            continue
        alike.add(rest, ctx.hw, None)  # (what the caller reads of ``ctx.hw`` is recorded there too)
        yield sel, ctx, plan
