"""Catalog-wide indexes the pages need (cards, providers, browse facets, search, sitemap), computed
once per (immutable) catalog so a request only filters small in-memory lists."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from vllm_recipes.catalog import Catalog
from vllm_recipes.jsvalues import as_map, is_number
from vllm_recipes.service.search import SIZE_BUCKETS, Card, make_card, matches_query, norm
from vllm_recipes.service.url import query_string

TASK_ORDER = ("multimodal", "text", "omni", "embedding")


class Sort(NamedTuple):
    """A browse sort: its chip label, the card key, and whether the largest key comes first."""
    label: str
    key: Callable[[Card], Any]
    descending: bool


#: the browse sorts (``released``: newest first, by date_added, else date_updated)
SORTS: dict[str, Sort] = {
    "released": Sort("Released", lambda c: (c.released, c.date_updated), descending=True),
    "updated": Sort("Updated", lambda c: (c.date_updated, c.released), descending=True),
    "size": Sort("Size", lambda c: (c.size_b is None, -(c.size_b or 0), c.title.lower()), descending=False),
    "name": Sort("Name", lambda c: (c.title.lower(), c.hf_id), descending=False),
}
#: the browse page's filter rows and their labels
BROWSE_ROWS = {"task": "Task", "arch": "Architecture", "size": "Size", "precision": "Precision",
               "hw": "Verified on", "provider": "Provider"}


def fmt_int(v: Any) -> str:
    """``131072`` -> ``131,072``; anything that is not a finite number as written (``inf``, ``nan``)."""
    return f"{int(v):,}" if is_number(v) and math.isfinite(v) else str(v)


@dataclass
class Provider:
    org: str
    name: str
    cards: list[Card]

    @property
    def url(self) -> str:
        return "/" + self.org

    @property
    def latest_update(self) -> str:
        return max((c.date_updated for c in self.cards), default="")


@dataclass
class Chip:
    value: str
    label: str
    count: int
    active: bool
    href: str


@dataclass
class BrowseResult:
    cards: list[Card]
    rows: list[tuple[str, str, list[Chip]]]
    sorts: list[Chip]
    query: str
    clear_href: str
    active: bool


class SiteIndex:
    """Indexes over one catalog."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.cards = [make_card(catalog, r) for r in catalog.recipes]
        self.by_id = {c.hf_id: c for c in self.cards}
        grouped: dict[str, list[Card]] = {}
        for c in self.cards:
            grouped.setdefault(c.org, []).append(c)
        self.providers = {org: Provider(org, Counter(c.provider for c in cards).most_common(1)[0][0], cards)
                          for org, cards in grouped.items()}
        self._providers_lower = {o.lower(): p for o, p in self.providers.items()}

    def provider(self, org: str) -> Provider | None:
        return self._providers_lower.get(org.lower())

    @cached_property
    def latest(self) -> list[Card]:
        """Home page: newest first (date_added, else date_updated), at most one per provider, 8."""
        newest: dict[str, Card] = {}
        for c in _sorted(self.cards, "released"):
            newest.setdefault(c.org.lower(), c)
        return list(newest.values())[:8]

    @cached_property
    def provider_grid(self) -> list[Provider]:
        return sorted(self.providers.values(), key=lambda p: (p.org.lower(), p.org))

    def provider_groups(self, provider: Provider) -> list[tuple[str, list[Card]]]:
        """A provider's recipes grouped by first task (ui.md order), newest first."""
        groups: dict[str, list[Card]] = {}
        for c in provider.cards:
            groups.setdefault(c.tasks[0] if c.tasks else "other", []).append(c)
        order = [t for t in TASK_ORDER if t in groups] + sorted(t for t in groups if t not in TASK_ORDER)
        return [(t, _sorted(groups[t], "released")) for t in order]

    def task_label(self, task: str) -> str:
        spec = as_map(as_map(self.catalog.taxonomy.get("tasks")).get(task))
        return str(spec.get("display_name") or task.replace("_", " ").title())

    def hw_label(self, hw: str) -> str:
        """The profile's display name, with its GPU count when another profile shares the name
        (``rtx_5090`` and ``rtx_5090_2x`` are both "RTX 5090": two chips must not read the same)."""
        return self._hw_labels.get(hw, hw)

    @cached_property
    def _hw_labels(self) -> dict[str, str]:
        names = {h: str(as_map(p).get("display_name") or h) for h, p in self.catalog.hardware_profiles.items()}
        shared = Counter(names.values())
        out = {}
        for h, name in names.items():
            n = as_map(self.catalog.hardware_profiles.get(h)).get("gpu_count")
            out[h] = f"{name} ×{n}" if shared[name] > 1 and isinstance(n, int) and not isinstance(n, bool) else name
        dupes = Counter(out.values())
        return {h: (f"{lab} ({h})" if dupes[lab] > 1 else lab) for h, lab in out.items()}

    def facet_label(self, row: str, value: str) -> str:
        """A value's chip label in a ``BROWSE_ROWS`` row. Only ``arch`` and ``precision`` reach the last line:
        a precision, or an architecture of up to 4 letters, in capitals; a longer architecture title-cased."""
        if row == "task":
            return self.task_label(value)
        if row == "hw":
            return self.hw_label(value)
        if row == "size":
            return next((lab for k, lab, _, _ in SIZE_BUCKETS if k == value), value)
        if row == "provider":
            p = self.providers.get(value)
            return p.name if p else value
        return value.upper() if row == "precision" or len(value) <= 4 else value.title()

    @cached_property
    def search_index(self) -> dict[str, Any]:
        """What the header search script matches against (same normalization as /browse?q=)."""
        return {
            "providers": [{"name": p.name, "org": p.org, "url": p.url, "count": len(p.cards),
                           "n": norm(f"{p.org} {p.name}")} for p in self.provider_grid],
            "recipes": [{"title": c.title, "hf_id": c.hf_id, "provider": c.provider, "url": c.url,
                         "tasks": c.tasks, "params": c.params, "n": c.haystack} for c in self.cards],
        }

    def browse(self, params: Mapping[str, str]) -> BrowseResult:
        """ui.md "Browse": OR within a row, AND across rows; counts with the other rows applied."""
        query = (params.get("q") or "").strip()[:200]
        selected = {row: list(dict.fromkeys(v.strip() for v in (params.get(row) or "").split(",") if v.strip()))[:50]
                    for row in BROWSE_ROWS}
        asked = params.get("sort", "")
        sort = asked if asked in SORTS else "released"
        base = [c for c in self.cards if not query or matches_query(c.haystack, query)]
        rows = [self._facet_row(row, base, selected, query, sort) for row in BROWSE_ROWS]
        cards = _sorted([c for c in base if _passes(c, selected, None)], sort)
        sorts = [Chip(k, s.label, 0, k == sort, _browse_href(query, selected, k)) for k, s in SORTS.items()]
        return BrowseResult(cards, rows, sorts, query, _browse_href(query, {}, "released"), any(selected.values()))

    def _facet_row(self, row: str, base: list[Card], selected: dict[str, list[str]], query: str,
                   sort: str) -> tuple[str, str, list[Chip]]:
        """One filter row: a chip per value that toggles it, counted with the other rows applied."""
        counts: Counter[str] = Counter()
        for c in base:
            if _passes(c, selected, row):
                counts.update(set(c.facets.get(row, [])))
        values = self._facet_values(row)
        values += [v for v in selected[row] if v not in values]
        chips = []
        for v in values:
            on = v in selected[row]
            new = {**selected, row: [x for x in selected[row] if x != v] if on else [*selected[row], v]}
            chips.append(Chip(v, self.facet_label(row, v), counts.get(v, 0), on, _browse_href(query, new, sort)))
        return row, BROWSE_ROWS[row], chips

    def _facet_values(self, row: str) -> list[str]:
        if row == "size":
            return [k for k, *_ in SIZE_BUCKETS]
        if row == "hw":
            return [h for h in self.catalog.hardware_profiles if any(h in c.verified for c in self.cards)]
        if row == "provider":
            return [p.org for p in self.provider_grid]
        if row == "task":
            present = {t for c in self.cards for t in c.tasks}
            return [t for t in TASK_ORDER if t in present] + sorted(present - set(TASK_ORDER))
        return sorted({v for c in self.cards for v in c.facets.get(row, [])})

    def sitemap_entries(self) -> Iterable[tuple[str, str]]:
        yield "/", max((c.date_updated for c in self.cards), default="")
        for p in self.provider_grid:
            yield p.url, p.latest_update
        for c in self.cards:
            yield c.url, c.date_updated


def _passes(c: Card, selected: Mapping[str, Sequence[str]], skip: str | None) -> bool:
    """The card has one of the selected values on every row but ``skip``."""
    return all(row == skip or not vals or set(vals) & set(c.facets.get(row, [])) for row, vals in selected.items())


def _browse_href(query: str, selected: Mapping[str, Sequence[str]], sort: str) -> str:
    items: list[tuple[str, str]] = [("q", query)] if query else []
    items += [(row, ",".join(selected[row])) for row in BROWSE_ROWS if selected.get(row)]
    if sort != "released":
        items.append(("sort", sort))
    q = query_string(items)
    return "/browse" + ("?" + q if q else "")


def _sorted(cards: Iterable[Card], sort: str) -> list[Card]:
    s = SORTS[sort]
    return sorted(cards, key=s.key, reverse=s.descending)
