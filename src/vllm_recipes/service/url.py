"""URL query <-> builder state (ui.md "URL state"), generated from the parameter table. A parameter
equal to its default is omitted, so every selection has one short URL. The page parses leniently
(an unusable value is dropped with a notice), ``/api/*`` strictly (a 400 naming the choices)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_map, get
from vllm_recipes.select.params import BY_NAME, MAX_VALUE, URL_NAMES
from vllm_recipes.select.request import PageRequest, SelectionError
from vllm_recipes.select.state import (
    PageState,
    build_state,
    canonical_request,
    default_hardware,
    pd_pool_nodes,
)

from .frontends import Agreed, agree_on_frontend
from .query import Query

#: accepted spellings of a parameter (the engine field name of the PD router)
ALIASES = {"pd_router": "router"}
#: page-only parameters that are not builder state
PAGE_PARAMS = frozenset({"lang", "ctx", "isl", "osl", "conc"})  # ctx: Fit panel; isl, osl, conc: Performance panel
MAX_QUERY = 4096


def _split_list(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def parse_params(items: Iterable[tuple[str, str]], *, strict: bool,
                 allowed_extra: frozenset[str] = PAGE_PARAMS) -> tuple[PageRequest, list[tuple[str, str]]]:
    """Query items -> the request and ``(param, message)`` per unreadable value (``strict``: a
    :class:`SelectionError` instead)."""
    values: dict[str, str] = {}
    problems: list[tuple[str, str]] = []

    def problem(param: str, message: str, choices: Iterable[str] = ()) -> None:
        if strict:
            raise SelectionError(param, message, list(choices))
        problems.append((param, message))

    for raw_key, value in items:
        key = ALIASES.get(raw_key, raw_key)
        if key in allowed_extra:
            continue
        if key not in URL_NAMES:
            problem(raw_key, f"Unknown parameter {raw_key!r}.", [*URL_NAMES, *sorted(allowed_extra)])
        elif len(value) > MAX_VALUE:
            problem(key, f"Parameter {key!r} is longer than {MAX_VALUE} characters.")
        else:
            values[key] = value  # last one wins, like URLSearchParams.set

    kw: dict[str, Any] = {}
    for key, value in values.items():
        param = BY_NAME[key]
        if param.kind == "int":
            v = value.strip()
            if not v.isascii() or not v.isdigit() or len(v) > 3:
                problem(key, f"Parameter {key!r} must be a small non-negative integer, got {value!r}.")
                continue
            kw[param.field] = int(v)
        elif param.kind == "list":
            kw[param.field] = _split_list(value)
        elif param.kind == "pairs":
            pairs = []
            for part in _split_list(value):
                f, sep, m = part.partition(":")
                if sep and f and m:
                    pairs.append((f, m))
                else:
                    problem(key, f"Parameter {key!r} expects feature:mode pairs, got {part!r}.")
            kw[param.field] = tuple(pairs)
        else:
            v = value.strip()
            if v:
                kw[param.field] = v
    if kw.get("kv_offload") == "off":
        kw.pop("kv_offload")
    return PageRequest(**kw), problems


def query_string(items: Iterable[tuple[str, str]]) -> str:
    """``a=b&c=d`` with commas, colons and slashes left readable (every query string the site writes)."""
    return urlencode(list(items), quote_via=quote, safe=",:/")


def encode(params: Mapping[str, str]) -> str:
    """The query string of page parameters in canonical order: the parameter table's, then the page's own."""
    return query_string((k, params[k]) for k in (*URL_NAMES, *sorted(PAGE_PARAMS)) if k in params)


def page_url(path: str, query: str = "") -> str:
    """A site path (``/org/model``, percent-encoded but for ``/``) with its query string, if any."""
    return quote(path, safe="/-._~") + ("?" + query if query else "")


def recipe_url(hf_id: str, params: Mapping[str, str] | None = None) -> str:
    """The recipe page's URL for these parameters (the builder's and the omni page's links)."""
    return page_url("/" + hf_id, encode(params or {}))


def state_params(catalog: Catalog, recipe: Recipe, st: PageState, *, full: bool = False) -> dict[str, str]:
    """Every choice of ``st`` that differs from its default, by rule (not yet verified); ``full``: every
    choice written out (the fallback when the omission rules do not round-trip)."""
    sel = st.selection
    q: dict[str, str] = {"nodes": str(sel.node_count)} if full else {}
    if full or sel.variant_key != "default":
        q["variant"] = sel.variant_key
    if full or sel.hw_id != default_hardware(catalog, recipe, sel.variant_key):
        q["hardware"] = sel.hw_id
    if full or sel.strategy != st.recommended_strategy:
        q["strategy"] = sel.strategy
    if full or list(sel.features) != list(st.default_features):
        q["features"] = ",".join(sel.features)
    fm = [(f, m) for f, m in sel.feature_modes if full or st.default_modes.get(f) != m]
    if fm:
        q["fmode"] = ",".join(f"{f}:{m}" for f, m in fm)
    adv = [a for a, _ in sel.advanced if a != "arg"]
    if adv:
        q["advanced"] = ",".join(adv)
    q.update(_kv_params(catalog, st, full))
    q.update(_pd_params(catalog, recipe, st, full))
    if sel.frontend:  # (chosen, even the recipe's own: a choice is checked against the command, a default not)
        q["frontend"] = sel.frontend
    first_tab = st.install_tabs[0] if st.install_tabs else "docker"
    if full or st.install != first_tab:
        q["install"] = st.install
    if sel.pd_router and (full or sel.pd_router != "vllm-router"):
        q["router"] = sel.pd_router
    return q


def _kv_params(catalog: Catalog, st: PageState, full: bool) -> dict[str, str]:
    """The KV offload choice; for a KV store, its instance count unless the default, and the instance shown."""
    sel = st.selection
    if not sel.kv_offload:
        return {}
    q = {"kv_offload": sel.kv_offload}
    kvi = sel.kv_instances
    if isinstance(kvi, Mapping):
        default_count = get(catalog.strategies.get(sel.kv_offload), "default_instances") or 2
        count = kvi.get("count")
        if count is not None and (full or count != default_count):
            q["kv_instances"] = str(count)
        if full or kvi.get("current"):
            q["kv_instance"] = str(kvi.get("current") or 0)
    return q


def _pd_params(catalog: Catalog, recipe: Recipe, st: PageState, full: bool) -> dict[str, str]:
    """The PD pool choices of ``st`` that differ from their defaults (a pool's default size follows its mode)."""
    sel = st.selection
    if st.pd_co_located:
        return {"prefill_nodes": "0", "decode_nodes": "0"}
    q: dict[str, str] = {}
    if not isinstance(sel.pd_nodes, Mapping) or not (full or isinstance(st.default_pd, Mapping)):
        return q
    for role in ("prefill", "decode"):
        cur = as_map(sel.pd_nodes.get(role))
        dflt = as_map(get(st.default_pd, role))
        mode = cur.get("parallelism")
        expected_nodes = dflt.get("nodes")
        if full or mode != dflt.get("parallelism"):
            q[f"{role}_mode"] = str(mode)
            if not full:
                expected_nodes = pd_pool_nodes(catalog, recipe, sel.variant_key, sel.hw_id, role, str(mode))
        if full or cur.get("nodes") != expected_nodes:
            q[f"{role}_nodes"] = str(cur.get("nodes"))
        if full or cur.get("rank"):
            q[f"{role}_rank"] = str(cur.get("rank") or 0)
    return q


def _same(a: PageState, b: PageState) -> bool:
    return a.selection == b.selection and a.install == b.install and a.pd_co_located == b.pd_co_located


def canonical_params(catalog: Catalog, recipe: Recipe, st: PageState, *, fresh: bool = False) -> dict[str, str]:
    """The shortest parameter set (by ui.md's omission rules) that rebuilds ``st`` exactly. ``fresh``:
    ``st`` is ``build_state`` of ``st.request``, unchanged, so giving that request back needs no rebuild."""
    def rebuilt(params: dict[str, str]) -> PageState:
        return build_state(catalog, recipe, parse_params(params.items(), strict=False)[0], strict=False)

    q = state_params(catalog, recipe, st)
    if fresh and canonical_request(catalog, recipe, parse_params(q.items(), strict=False)[0]) == st.request:
        return q
    trial = rebuilt(q)
    if trial.selection.node_count != st.selection.node_count:
        q["nodes"] = str(st.selection.node_count)
        trial = rebuilt(q)
    if _same(trial, st):
        return q
    full = state_params(catalog, recipe, st, full=True)
    return full if _same(rebuilt(full), st) else q


def lenient_state(catalog: Catalog, recipe: Recipe, items: Iterable[tuple[str, str]]) -> tuple[PageState, list[str]]:
    """The state a query asks for, unusable values dropped with a notice each (an omni recipe raises
    :class:`SelectionError`). It resolves nothing: the page a link leads to checks its frontend."""
    request, problems = parse_params(items, strict=False)
    st = build_state(catalog, recipe, request, strict=False)
    return st, [m for _, m in problems] + list(st.notices)


def page_state(catalog: Catalog, recipe: Recipe, items: Iterable[tuple[str, str]]) -> tuple[Agreed, list[str]]:
    """The page's state for any query (:func:`lenient_state`), with a frontend its command
    does not run dropped with a notice; the :class:`Agreed` carries the resolution it made."""
    st, notices = lenient_state(catalog, recipe, items)
    agreed = agree_on_frontend(catalog, recipe, st, strict=False)
    return agreed, notices + list(agreed.state.notices[len(st.notices):])


def query_from_items(items: Iterable[tuple[str, str]], *, allowed_extra: frozenset[str] = PAGE_PARAMS
                     ) -> tuple[Query, dict[str, str]]:
    """``model=...&<builder parameters>`` (``/api/resolve``, ``/api/export``, ...) -> a strict
    :class:`Query` and the page-only parameters (``lang``, ``ctx``). Raises ``SelectionError``."""
    items = list(items)
    model = next((v.strip() for k, v in reversed(items) if k == "model"), "")
    request, _ = parse_params([(k, v) for k, v in items if k != "model"], strict=True, allowed_extra=allowed_extra)
    return Query(model, request), {k: v.strip() for k, v in items if k in allowed_extra}

