"""How fast will it serve: ``/api/perf``, ``/api/recommend`` and the MCP ``estimate_performance`` and
``recommend`` tools (typed answers first, the URL forms parse into them)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import is_number
from vllm_recipes.select.options import flag

from .frontends import strict_state
from .query import NotApplicable, Query, QueryError, check_hardware, find_recipe, find_request
from .url import query_from_items

if TYPE_CHECKING:  # (the simulation is imported by the answers that run it: a page or --help waits for it)
    from vllm_recipes.perf.recommend import Sla
    from vllm_recipes.perf.scheduler import Workload


@dataclass(frozen=True)
class Load:
    """One workload parameter (1 to ``hi``): the CLI options, the MCP and OpenAPI schemas come from these."""

    kind: Literal["integer", "number"]
    hi: int
    help: str
    required: bool = False


#: the workload parameters, declared once
WORKLOAD: dict[str, Load] = {
    "isl": Load("integer", 1 << 20, "Input (prompt) tokens.", required=True),
    "osl": Load("integer", 1 << 17, "Output tokens.", required=True),
    "concurrency": Load("integer", 4096, "Concurrent users, closed loop (default 1)."),
    "rate": Load("number", 100_000, "Poisson arrivals, requests/s (instead of concurrency)."),
}
#: the page's Performance pills (``conc`` is its short spelling of ``concurrency``)
LIMITS = {"isl": WORKLOAD["isl"].hi, "osl": WORKLOAD["osl"].hi, "conc": WORKLOAD["concurrency"].hi}


def load_schema() -> dict[str, dict[str, Any]]:
    """The workload parameters as JSON schemas (the MCP tools' input and the OpenAPI document)."""
    low = {"integer": {"minimum": 1}, "number": {"exclusiveMinimum": 0}}
    return {k: {"type": p.kind, **low[p.kind], "maximum": p.hi, "description": p.help} for k, p in WORKLOAD.items()}


#: ``/api/recommend``'s parameters besides the model
API_PARAMS = (*WORKLOAD, "ttft_ms", "tpot_ms", "hardware")


def int_param(value: str | None, limit: int, units: str = "k") -> int | None:
    """A token count from a URL (``1024``, ``8k``; ``1m`` when ``units`` has ``m``: k = 1024, m = 1024²);
    ``None`` when absent or unusable."""
    v = (value or "").strip().lower()
    mult = 1
    if v[-1:] and v[-1] in units:
        v, mult = v[:-1], 1024 ** ("km".index(v[-1]) + 1)
    if not v.isascii() or not v.isdigit() or len(v) > 9:
        return None
    n = int(v) * mult
    return n if 0 < n <= limit else None


def require_serve(recipe: Recipe, does: str = "perf estimates vLLM serve commands") -> None:
    """What ``does`` applies to ``vllm serve`` recipes: :class:`NotApplicable` for an omni recipe."""
    if recipe.is_omni:
        raise NotApplicable("model", f"{recipe.hf_id} is an omni recipe; {does} only.")


def perf_answer(catalog: Catalog, query: Query, workload: Workload) -> dict[str, Any]:
    """The estimate of the query's selection at ``workload`` (a ``vllm serve`` recipe)."""
    from vllm_recipes.perf.report import perf_state, report_dict

    recipe, req = find_request(catalog, query)
    require_serve(recipe)
    agreed = strict_state(catalog, recipe, req)
    return report_dict(perf_state(catalog, recipe, agreed.state, workload, strategy_given=req.strategy is not None,
                                  resolution=agreed.resolution))


def recommend_answer(catalog: Catalog, model: str, sla: Sla, workload: Workload,
                     hardware: tuple[str, ...] = ()) -> dict[str, Any]:
    """The recipe's offered configurations that meet ``sla`` at ``workload``, fewest GPUs first."""
    from vllm_recipes.perf.recommend import recommend, recommendation_dict

    recipe, _ = find_recipe(catalog, model)
    check_hardware(catalog, hardware)
    return recommendation_dict(recommend(catalog, recipe, sla, workload, hardware=hardware))


def workload(vals: Mapping[str, object], num_prompts: int = 0) -> Workload:
    """``isl``/``osl`` and ``concurrency`` or ``rate`` as a workload: the one check of the command line,
    ``/api/perf``, ``/api/recommend`` and the MCP tools (URL strings such as ``8k`` or typed numbers)."""
    isl, osl, conc = (_count(vals, k) for k in ("isl", "osl", "concurrency"))
    rate = None if vals.get("rate") is None else number(vals["rate"])
    if rate is not None:
        if not 0 < rate <= WORKLOAD["rate"].hi:
            raise QueryError("rate", f"Parameter '{flag('rate')}' must be requests per second (0-100000), "
                                         f"got {vals['rate']!r}.")
        if conc:
            raise QueryError("rate", f"Give {flag('concurrency')} or {flag('rate')}, not both.")
    assert isl is not None and osl is not None
    from vllm_recipes.perf.scheduler import Workload

    return Workload(isl, osl, concurrency=None if rate else (conc or 1), rate=rate, num_prompts=num_prompts)


def _count(vals: Mapping[str, object], k: str) -> int | None:
    v, limit = vals.get(k), WORKLOAD[k].hi
    if v is None:
        if WORKLOAD[k].required:
            raise QueryError(k, f"Parameter '{flag(k)}' is required (tokens).")
        return None
    n = int_param(v, limit) if isinstance(v, str) else v if type(v) is int and 0 < v <= limit else None
    if n is None:
        raise QueryError(k, f"Parameter '{flag(k)}' must be a positive integer up to {limit}, got {v!r}.")
    return n


def as_float(value: int | float) -> float:
    """A JSON number as a float; an integer too large for one is infinite (out of every range)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def number(v: object) -> float:
    """A number from a URL string or a typed argument; -1 (out of every range) when it is not one (or NaN)."""
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return -1.0
    n = as_float(v) if is_number(v) else -1.0
    return -1.0 if n != n else n


def sla(vals: Mapping[str, object]) -> Sla:
    """The ``ttft_ms`` / ``tpot_ms`` targets (URL strings or typed numbers)."""
    from vllm_recipes.perf.recommend import Sla

    return Sla(_ms(vals, "ttft_ms"), _ms(vals, "tpot_ms"))


def _ms(vals: Mapping[str, object], k: str) -> float:
    v = number(vals.get(k, ""))
    if not 0 < v <= 1e7:
        raise QueryError(k, f"Parameter '{flag(k)}' must be a time in milliseconds, got {vals.get(k)!r}.")
    return v


def perf_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/perf`` returns; :class:`QueryError` on bad input (400)."""
    query, vals = query_from_items(items, allowed_extra=frozenset({"lang", *WORKLOAD}))
    return perf_answer(catalog, query, workload(vals))


def recommend_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/recommend`` returns; :class:`QueryError` on bad input (400)."""
    bad = next((k for k, _ in items if k not in ("model", *API_PARAMS)), None)
    if bad is not None:
        raise QueryError(bad, f"Unknown parameter {bad!r}.", ["model", *API_PARAMS])
    vals = {k: v.strip() for k, v in items}
    w = workload(vals)
    hardware = tuple(v.strip() for k, v in items if k == "hardware")
    return recommend_answer(catalog, vals.get("model", ""), sla(vals), w, hardware)
