"""The selections a review compares, and the defaults a user starts from.

For every variant and hardware the strict builder accepts: each served strategy (the builder's own
checks, :func:`~vllm_recipes.select.offered.served_strategies`) at its defaults, and each optional
feature switched on. Keys name the *request* (variant, hardware, strategy, extra feature), so a
default that moves shows up as a moved default rather than as a different selection.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, NamedTuple

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_map
from vllm_recipes.select.offered import served_strategies
from vllm_recipes.select.omni import OmniSelection, resolve_omni_tasks, select_omni
from vllm_recipes.select.state import PageRequest, PageState, SelectionError, build_state, hardware_choices


class SelectionKey(NamedTuple):
    """One offered selection, as a user would request it."""

    variant: str
    hardware: str
    strategy: str
    #: an optional feature switched on on top of the defaults ("" for none)
    feature: str = ""

    @property
    def label(self) -> str:
        extra = f" +{self.feature}" if self.feature else ""
        return f"variant={self.variant} hardware={self.hardware} strategy={self.strategy}{extra}"


class DefaultKey(NamedTuple):
    """Where a default applies: ``what`` for variant (and hardware, "" for per-variant defaults)."""

    what: str
    variant: str
    hardware: str = ""


@dataclass(frozen=True)
class ReviewedSelections:
    """A recipe's selections (key -> builder state, or omni selection) and its defaults (key -> value)."""

    states: dict[SelectionKey, PageState | OmniSelection]
    defaults: dict[DefaultKey, Any]


def _omni_selections(catalog: Catalog, recipe: Recipe) -> ReviewedSelections:
    """Omni recipes: every (variant, hardware, task) the strict omni selector accepts; strategy ``task:KEY``."""
    states: dict[SelectionKey, PageState | OmniSelection] = {}
    defaults: dict[DefaultKey, Any] = {}
    tasks: list[str | None] = [t.key for t in resolve_omni_tasks(recipe.data)] or [None]
    for vk, variant in recipe.variants.items():
        with contextlib.suppress(SelectionError):
            defaults[DefaultKey("default hardware", vk)] = select_omni(catalog, recipe, None, vk, None, None).hw_id
        for hw in hardware_choices(catalog, recipe, as_map(variant)):
            for task in tasks:
                try:
                    osel = select_omni(catalog, recipe, hw, vk, task, None)
                except SelectionError:
                    continue
                states[SelectionKey(vk, hw, f"task:{osel.task.key if osel.task else '-'}")] = osel
    return ReviewedSelections(states, defaults)


def _state(catalog: Catalog, recipe: Recipe, req: PageRequest) -> PageState | None:
    try:
        return build_state(catalog, recipe, req, strict=True)
    except SelectionError:
        return None


def reviewed_selections(catalog: Catalog, recipe: Recipe) -> ReviewedSelections:
    """All offered selections of a recipe (omni recipes: per variant, hardware and task)."""
    if recipe.is_omni:
        return _omni_selections(catalog, recipe)
    states: dict[SelectionKey, PageState | OmniSelection] = {}
    defaults: dict[DefaultKey, Any] = {}
    r = recipe.data
    features = list(as_map(r.get("features")))
    for vk, variant in recipe.variants.items():
        first = _state(catalog, recipe, PageRequest(variant=vk))
        if first is not None:
            defaults[DefaultKey("default hardware", vk)] = first.selection.hw_id
        for hw in hardware_choices(catalog, recipe, as_map(variant)):
            base = _state(catalog, recipe, PageRequest(variant=vk, hardware=hw))
            if base is None or base.selection.variant_key != vk:
                continue
            defaults[DefaultKey("recommended strategy", vk, hw)] = base.recommended_strategy
            defaults[DefaultKey("default features", vk, hw)] = ", ".join(base.default_features) or "(none)"
            for s, _nodes in served_strategies(catalog, r, as_map(catalog.hardware_profiles.get(hw)), hw):
                st = base if s == base.selection.strategy else \
                    _state(catalog, recipe, PageRequest(variant=vk, hardware=hw, strategy=s))
                if st is not None and st.selection.strategy == s:
                    states[SelectionKey(vk, hw, s)] = st
            for f in features:
                if f not in base.default_features:
                    st = _state(catalog, recipe, PageRequest(variant=vk, hardware=hw, add_features=(f,)))
                    if st is not None and f in st.selection.features:
                        states[SelectionKey(vk, hw, st.selection.strategy, f)] = st
    return ReviewedSelections(states, defaults)
