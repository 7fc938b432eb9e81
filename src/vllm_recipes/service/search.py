"""Find recipes: each recipe as a card (the words search matches, the facets browse filters),
and the search the MCP ``list_recipes`` tool and the site's pages share (ui.md "Search")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import parameters_billions
from vllm_recipes.jsvalues import as_list, as_map
from vllm_recipes.select.defaults import recipe_hardware
from vllm_recipes.select.request import PageRequest
from vllm_recipes.select.state import build_state
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.resolve import resolve

from .query import QueryError, check_hardware

_SEP = re.compile(r"[-_.]")

SIZE_BUCKETS: tuple[tuple[str, str, float, float], ...] = (
    ("lt10b", "<10B", 0, 10),
    ("10-70b", "10-70B", 10, 70),
    ("70-200b", "70-200B", 70, 200),
    ("200b-1t", "200B-1T", 200, 1000),
    ("1t", "≥1T", 1000, float("inf")),
)


def norm(text: str) -> str:
    """Search normalization: lower case, ``-_.`` separators ignored (ui.md "Search")."""
    return _SEP.sub("", text.lower())


@dataclass
class Card:
    """One recipe as the home page, provider pages, browse and search see it."""

    recipe: Recipe
    hf_id: str
    org: str
    repo: str
    title: str
    provider: str
    description: str
    date_added: str
    date_updated: str
    tasks: list[str]
    arch: str
    params: str
    active: str
    size_b: float | None
    precisions: list[str]
    verified: list[str]
    url: str = ""
    haystack: str = ""
    facets: dict[str, list[str]] = field(default_factory=dict)

    @property
    def released(self) -> str:
        return self.date_added or self.date_updated

    @property
    def size_bucket(self) -> str | None:
        size = self.size_b
        return next((key for key, _label, lo, hi in SIZE_BUCKETS if size is not None and lo <= size < hi), None)


def make_card(catalog: Catalog, recipe: Recipe) -> Card:
    meta, model = recipe.meta, recipe.model
    tasks = [str(t) for t in as_list(meta.get("tasks")) if isinstance(t, str)]
    precisions = list(dict.fromkeys(p.lower() for v in recipe.variants.values()
                                    if isinstance(p := as_map(v).get("precision"), str)))
    hw_status = as_map(meta.get("hardware"))
    verified = [hw for hw in catalog.hardware_profiles if hw_status.get(hw) == "verified"]
    card = Card(
        recipe=recipe, hf_id=recipe.hf_id, org=recipe.org, repo=recipe.repo, title=recipe.title,
        provider=recipe.provider, description=str(meta.get("description") or ""),
        date_added=str(meta.get("date_added") or ""), date_updated=str(meta.get("date_updated") or ""),
        tasks=tasks, arch=str(model.get("architecture") or ""),
        params=str(model.get("parameter_count") or ""), active=str(model.get("active_parameters") or ""),
        size_b=parameters_billions(model.get("parameter_count")), precisions=precisions, verified=verified,
        url="/" + recipe.hf_id,
    )
    hw_names = [str(as_map(catalog.hardware_profiles.get(h)).get("display_name") or h) for h in verified]
    card.haystack = norm(" ".join([card.repo, card.org, card.title, card.provider, card.description, *tasks,
                                   card.arch, card.params, *precisions, *verified, *hw_names]))
    card.facets = {
        "task": tasks, "arch": [card.arch] if card.arch else [],
        "size": [card.size_bucket] if card.size_bucket else [], "precision": precisions,
        "hw": verified, "provider": [card.org],
    }
    return card


def matches_query(card_haystack: str, query: str) -> bool:
    """Every whitespace-separated word of ``query`` must occur (normalized)."""
    return all(w in card_haystack for w in map(norm, query.split()) if w)


def search(catalog: Catalog, cards: list[Card], query: str | None = None, hardware: str | None = None,
           fits_gpus: int | None = None) -> list[dict[str, Any]]:
    """Recipes whose card has every word of ``query``, best match (words in the id) first; with
    ``hardware`` or ``fits_gpus``, only those whose recommended selection runs there on at most
    that many GPUs (each entry then names the hardware, strategy and GPU count)."""
    if fits_gpus is not None and (not isinstance(fits_gpus, int) or isinstance(fits_gpus, bool) or fits_gpus < 1):
        raise QueryError("fits_gpus", "fits_gpus must be a positive integer.")
    if hardware is not None:
        check_hardware(catalog, (hardware,))
    if query:
        words = [norm(w) for w in query.split() if w]
        cards = sorted((c for c in cards if matches_query(c.haystack, query)),
                       key=lambda c: -sum(w in norm(c.hf_id) for w in words))
    out = []
    for card in cards:
        entry: dict[str, Any] = {"hf_id": card.hf_id, "title": card.title, "provider": card.provider,
                                 "description": card.description, "tasks": card.tasks,
                                 "parameters": card.params, "date_updated": card.date_updated,
                                 "page": card.url, "json": card.url + ".json"}
        if hardware is not None or fits_gpus is not None:
            need = recommended_gpus(catalog, card.recipe, hardware)
            if need is None or (fits_gpus is not None and need[1] > fits_gpus):
                continue
            entry.update({"hardware": need[0], "gpus": need[1], "strategy": need[2]})
        out.append(entry)
    return out


def recommended_gpus(catalog: Catalog, recipe: Recipe, hardware: str | None) -> tuple[str, int, str] | None:
    """``(hardware, GPUs, strategy)`` of the page's default selection on ``hardware``, or ``None``
    when the recipe is not offered there or cannot be synthesized."""
    if recipe.is_omni or (hardware is not None and hardware not in recipe_hardware(catalog, recipe)):
        return None
    try:
        st = build_state(catalog, recipe, PageRequest(hardware=hardware), strict=True)
        ctx, _plan = resolve(catalog, recipe, st.selection)
    except Exception:  # a recipe that cannot render its default is not offered
        return None
    return st.selection.hw_id, gpus_used(ctx), st.selection.strategy


def gpus_used(ctx: Ctx) -> int:
    """GPUs the selection occupies: every GPU of every node for multi-node and PD pools, the
    resolved parallel size on one node."""
    per_node = ctx.gpu_count if isinstance(ctx.gpu_count, int) else 1
    if ctx.is_multi:
        return per_node * max(1, ctx.node_count)
    if ctx.is_pd:
        pools = ctx.sel.pd_nodes if isinstance(ctx.sel.pd_nodes, Mapping) else {}
        sizes = [p.get("nodes") if isinstance(p, Mapping) else p for p in map(pools.get, ("prefill", "decode"))]
        return per_node * max(1, sum(n for n in sizes if isinstance(n, int)))
    size = ctx.single_node_tp
    return int(size) if isinstance(size, int | float) and size == size else per_node
