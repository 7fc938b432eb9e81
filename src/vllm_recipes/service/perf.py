"""How fast will it serve: ``/api/perf``, ``/api/recommend`` and the MCP ``estimate_performance`` and
``recommend`` tools (typed answers first, the URL forms parse into them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from vllm_recipes.catalog import Catalog
from vllm_recipes.perf.recommend import Sla, recommend, recommendation_dict
from vllm_recipes.perf.report import perf_state, report_dict
from vllm_recipes.perf.scheduler import Workload
from vllm_recipes.select.state import build_state

from .errors import NotApplicable, QueryError
from .frontends import agree_on_frontend
from .lookup import find_recipe
from .query import Query
from .url import parse_params

SelectionError = QueryError
LIMITS = {"isl": 1 << 20, "osl": 1 << 17, "conc": 4096}
API_PARAMS = ("isl", "osl", "concurrency", "rate", "ttft_ms", "tpot_ms", "hardware")


def int_param(value: str | None, limit: int) -> int | None:
    """A token count from a URL (``1024``, ``8k``); ``None`` when absent or unusable."""
    v = (value or "").strip().lower()
    mult = 1
    if v.endswith("k"):
        v, mult = v[:-1], 1024
    if not v.isascii() or not v.isdigit() or len(v) > 9:
        return None
    n = int(v) * mult
    return n if 0 < n <= limit else None


def perf_answer(catalog: Catalog, query: Query, workload: Workload) -> dict[str, Any]:
    """The estimate of the query's selection at ``workload`` (a ``vllm serve`` recipe)."""
    recipe, vk = find_recipe(catalog, query.model)
    if recipe.is_omni:
        raise NotApplicable("model", f"{recipe.hf_id} is an omni recipe; perf estimates vLLM serve commands only.")
    req = query.request if vk is None or query.request.variant is not None else replace(query.request, variant=vk)
    st = agree_on_frontend(catalog, recipe, build_state(catalog, recipe, req, strict=True), strict=True).state
    return report_dict(perf_state(catalog, recipe, st, workload, strategy_given=req.strategy is not None))


def recommend_answer(catalog: Catalog, model: str, sla: Sla, workload: Workload,
                     hardware: tuple[str, ...] = ()) -> dict[str, Any]:
    """The recipe's offered configurations that meet ``sla`` at ``workload``, fewest GPUs first."""
    recipe, _ = find_recipe(catalog, model)
    bad = [h for h in hardware if h not in catalog.hardware_profiles]
    if bad:
        raise QueryError("hardware", f"Unknown hardware {bad[0]!r}.", list(catalog.hardware_profiles))
    return recommendation_dict(recommend(catalog, recipe, sla, workload, hardware=hardware))


def _split(items: list[tuple[str, str]], own: tuple[str, ...], multi: str = ""
           ) -> tuple[str | None, dict[str, str], list[tuple[str, str]], list[str]]:
    model, vals, rest, hw = None, {}, [], []
    for k, v in items:
        if k == "model":
            model = v.strip()
        elif k == multi:
            hw.append(v.strip())
        elif k in own:
            vals[k] = v.strip()
        else:
            rest.append((k, v))
    return model, vals, rest, hw


def _workload(vals: Mapping[str, str]) -> Workload:
    def num(k: str, limit: int, required: bool) -> int | None:
        if k not in vals:
            if required:
                raise SelectionError(k, f"Parameter {k!r} is required (tokens).")
            return None
        n = int_param(vals[k], limit)
        if n is None:
            raise SelectionError(k, f"Parameter {k!r} must be a positive integer up to {limit}, got {vals[k]!r}.")
        return n

    isl, osl = num("isl", LIMITS["isl"], True), num("osl", LIMITS["osl"], True)
    conc = num("concurrency", LIMITS["conc"], False)
    rate = None
    if "rate" in vals:
        try:
            rate = float(vals["rate"])
        except ValueError:
            rate = -1.0
        if not 0 < rate <= 1e5:
            raise SelectionError("rate", f"Parameter 'rate' must be requests per second (0-100000), got "
                                         f"{vals['rate']!r}.")
        if conc:
            raise SelectionError("rate", "Give concurrency or rate, not both.")
    assert isl is not None and osl is not None
    return Workload(isl, osl, concurrency=None if rate else (conc or 1), rate=rate)


def _ms(vals: Mapping[str, str], k: str) -> float:
    try:
        v = float(vals.get(k, ""))
    except ValueError:
        v = -1.0
    if not 0 < v <= 1e7:
        raise SelectionError(k, f"Parameter {k!r} must be a time in milliseconds, got {vals.get(k)!r}.")
    return v


def perf_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/perf`` returns; :class:`SelectionError` on bad input (400)."""
    model, vals, rest, _ = _split(items, ("isl", "osl", "concurrency", "rate"))
    w = _workload(vals)
    recipe, vk = find_recipe(catalog, model)
    if recipe.is_omni:
        raise SelectionError("model", f"{recipe.hf_id} is an omni recipe; perf estimates vLLM serve commands only.")
    if vk is not None and not any(k == "variant" for k, _ in rest):
        rest.append(("variant", vk))
    req = parse_params(rest, strict=True, allowed_extra=frozenset({"lang"})).request
    return perf_answer(catalog, Query(recipe.hf_id, req), w)


def recommend_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/recommend`` returns; :class:`SelectionError` on bad input (400)."""
    model, vals, rest, hw = _split(items, ("isl", "osl", "concurrency", "rate", "ttft_ms", "tpot_ms"),
                                   "hardware")
    if rest:
        raise SelectionError(rest[0][0], f"Unknown parameter {rest[0][0]!r}.", ["model", *API_PARAMS])
    w = _workload(vals)
    sla = Sla(_ms(vals, "ttft_ms"), _ms(vals, "tpot_ms"))
    return recommend_answer(catalog, model or "", sla, w, tuple(hw))
