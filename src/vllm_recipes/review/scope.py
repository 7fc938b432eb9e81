"""Naming a set of selections the way a reviewer reads it ("on all 7 NVIDIA GPUs")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_recipes.catalog.diagnostics import plural
from vllm_recipes.jsvalues import get

from .selections import DefaultKey, SelectionKey

#: at most this many hardware ids or selection labels are spelled out
MAX_NAMED = 6

Keyed = SelectionKey | DefaultKey


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


def _hardware_phrase(hws: list[str], universe_hws: list[str], profiles: Mapping[str, Any]) -> str:
    """``all 7 NVIDIA GPUs``, ``all AMD GPUs and h200``, or the ids themselves."""
    def brand(hw: str) -> str:
        b = get(profiles.get(hw), "brand")
        return b if isinstance(b, str) else "other"

    chosen = set(hws)
    parts: list[str] = []
    rest: list[str] = []
    for b in dict.fromkeys(brand(h) for h in hws):
        of_brand = [h for h in universe_hws if brand(h) == b]
        if b != "other" and len(of_brand) > 1 and set(of_brand) <= chosen:
            parts.append(f"all {len(of_brand)} {b} GPUs")
        else:
            rest.extend(h for h in hws if brand(h) == b)
    if rest:
        parts.append(_names(rest))
    return " and ".join(parts)


def describe_scope(keys: Sequence[Keyed], universe: Sequence[Keyed], profiles: Mapping[str, Any]) -> str:
    """Where a change applies, relative to every compared selection of the recipe."""
    chosen = set(keys)
    n = len(chosen)
    if not universe or chosen >= set(universe):
        return f"on all {plural(n, 'selection')}" if n != 1 else "on the only selection"
    return (_by_hardware(keys, universe, profiles) or _by_strategy(keys, universe)
            or f"on {plural(n, 'selection')}: {_names([getattr(k, 'label', f'{k.variant}/{k.hardware}') for k in keys])}")


def _by_hardware(keys: Sequence[Keyed], universe: Sequence[Keyed], profiles: Mapping[str, Any]) -> str | None:
    """``on all 7 NVIDIA GPUs (variant fp8), 9 selections``, when the change covers whole hardware."""
    chosen = set(keys)
    variants = list(dict.fromkeys(k.variant for k in keys))
    hws = list(dict.fromkeys(k.hardware for k in keys))
    if not all(k in chosen for k in universe if k.variant in variants and k.hardware in hws):
        return None
    all_variants = len(variants) == len(dict.fromkeys(k.variant for k in universe))
    variant_part = "" if all_variants else f" (variant {', '.join(variants)})"
    universe_hws = list(dict.fromkeys(k.hardware for k in universe))
    if set(hws) == set(universe_hws) and variant_part:
        return f"on every hardware{variant_part}, {plural(len(chosen), 'selection')}"
    return f"on {_hardware_phrase(hws, universe_hws, profiles)}{variant_part}, {plural(len(chosen), 'selection')}"


def _by_strategy(keys: Sequence[Keyed], universe: Sequence[Keyed]) -> str | None:
    """``with strategy tp8, 4 selections``, when the change covers every selection of some strategies."""
    strategies = list(dict.fromkeys(getattr(k, "strategy", "") for k in keys))
    if not all(strategies) or set(keys) != {k for k in universe if getattr(k, "strategy", "") in strategies}:
        return None
    tasks = [s.removeprefix("task:") for s in strategies if s.startswith("task:")]
    if len(tasks) == len(strategies):
        phrase = ("task " if len(tasks) == 1 else "tasks ") + _names(tasks)
    else:
        phrase = ("strategy " if len(strategies) == 1 else "strategies ") + _names(strategies)
    return f"with {phrase}, {plural(len(set(keys)), 'selection')}"
