"""Performance on the web: the recipe page's Performance panel, ``/api/perf`` and ``/api/recommend``.

The panel estimates the builder's own selection at the page's ``isl`` / ``osl`` /
``conc`` URL parameters (links, no form: the page works without JavaScript); the
API endpoints take the selection parameters of ``/api/resolve``. All call
:func:`vllm_recipes.perf.report.perf_state`, like the CLI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.perf.recommend import Sla, recommend, recommendation_dict
from vllm_recipes.perf.report import PerfReport, expected_error, perf_state, report_dict
from vllm_recipes.perf.scheduler import Workload
from vllm_recipes.select.page import PageState, SelectionError, build_state

from .urlstate import encode, parse_params

#: the panel's URL parameters and their defaults (the page's `vllm bench serve` snippet: 1024 / 1024 / 32)
PERF_PARAMS = ("isl", "osl", "conc")
DEFAULTS = {"isl": 1024, "osl": 1024, "conc": 32}
CHOICES = {"isl": (128, 1024, 8192), "osl": (128, 1024, 8192), "conc": (1, 8, 32, 128)}
LIMITS = {"isl": 1 << 20, "osl": 1 << 17, "conc": 4096}
API_PARAMS = ("isl", "osl", "concurrency", "rate", "ttft_ms", "tpot_ms", "hardware")


def _int(value: str | None, limit: int) -> int | None:
    v = (value or "").strip().lower()
    mult = 1
    if v.endswith("k"):
        v, mult = v[:-1], 1024
    if not v.isascii() or not v.isdigit() or len(v) > 9:
        return None
    n = int(v) * mult
    return n if 0 < n <= limit else None


def page_extra(query: Mapping[str, str]) -> dict[str, str]:
    """The panel's own URL parameters, kept on every builder link like ``lang``."""
    out = {}
    for k in PERF_PARAMS:
        n = _int(query.get(k), LIMITS[k])
        if n is not None:
            out[k] = str(n)
    return out


def _label(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


@dataclass(frozen=True)
class PerfPanel:
    """What ``perf_panel.html`` renders."""

    hardware: str
    isl: int
    osl: int
    conc: int
    rows: tuple[tuple[str, str], ...]
    error: str
    calibrated: bool
    bench: str
    #: per parameter: (label, href, current) links
    links: tuple[tuple[str, tuple[tuple[str, str, bool], ...]], ...]
    notes: tuple[str, ...] = ()
    unknown: str | None = None


def _links(url: str, values: Mapping[str, int]) -> tuple[tuple[str, tuple[tuple[str, str, bool], ...]], ...]:
    """Pill links per parameter: the page's own selection with one value changed (query-relative hrefs keep
    the page light)."""
    parts = urlsplit(url)
    base = dict(parse_qsl(parts.query))
    out = []
    for k in PERF_PARAMS:
        row = []
        choices = list(CHOICES[k])
        if values[k] not in choices:
            choices.append(values[k])
        for n in choices:  # every parameter stays in the link: without any, the panel folds to its link
            q = {**base, **{p: str(v) for p, v in values.items()}, k: str(n)}
            row.append((_label(n), "?" + encode(q), n == values[k]))
        out.append((k, tuple(row)))
    return tuple(out)


def error_text() -> str:
    e = expected_error()
    if not e:
        return "not calibrated"
    names = {"tpot": "TPOT", "ttft": "TTFT", "output_tok_s_per_gpu": "tokens/s"}
    return ", ".join(f"{names.get(k, k)} ±{v['median'] * 100:.0f}%" for k, v in e.items()) + " (median)"


def panel_from_report(r: PerfReport, url: str, values: Mapping[str, int]) -> PerfPanel:
    head = dict(hardware=r.hardware, isl=values["isl"], osl=values["osl"], conc=values["conc"],
                error=error_text(), calibrated=r.calibrated, bench=r.bench_command, links=_links(url, values),
                notes=r.notes)
    e = r.estimate
    if e is None or not r.known:
        return PerfPanel(**head, rows=(), unknown="; ".join(r.errors) or "no estimate")  # type: ignore[arg-type]
    rows = (
        ("Time to first token", f"{e.ttft_ms:,.0f} ms ({'queueing' if e.queueing else e.prefill_bound})"),
        ("Time per output token", f"{e.tpot_ms:,.1f} ms ({e.tok_s_per_user:,.0f} tokens/s per user; "
                                  f"{e.decode_bound})"),
        ("Output tokens/s", f"{e.output_tok_s_total:,.0f} total, {e.output_tok_s_per_gpu:,.0f} per GPU "
                            f"({e.gpus} GPUs)"),
        ("Running batch", f"{e.running_mean:,.0f} on average, at most {e.running_cap:,}"),
    )
    return PerfPanel(**head, rows=rows)  # type: ignore[arg-type]


def perf_panel(catalog: Catalog, recipe: Recipe, state: PageState, url: str,
               extra: Mapping[str, str]) -> PerfPanel | str | None:
    """The builder's Performance panel for its own selection; until the URL asks for it (``isl``, ``osl``
    or ``conc``), only the link that does - the estimate costs a simulation and the page has a byte budget."""
    if not any(k in extra for k in PERF_PARAMS):
        parts = urlsplit(url)
        q = dict(parse_qsl(parts.query))
        q["isl"] = str(DEFAULTS["isl"])
        return parts.path + "?" + encode(q) + "#perf"
    values = {k: int(extra[k]) if k in extra else DEFAULTS[k] for k in PERF_PARAMS}
    w = Workload(values["isl"], values["osl"], concurrency=values["conc"])
    try:
        r = perf_state(catalog, recipe, state, w)
    except Exception:  # an addition to the page: the builder never fails because of it
        return None
    return panel_from_report(r, url, values)


# --------------------------------------------------------------------------------------------
# /api/perf and /api/recommend
# --------------------------------------------------------------------------------------------

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
        n = _int(vals[k], limit)
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
    from .api import find_model

    model, vals, rest, _ = _split(items, ("isl", "osl", "concurrency", "rate"))
    w = _workload(vals)
    recipe, vk = find_model(catalog, model)
    if recipe.is_omni:
        raise SelectionError("model", f"{recipe.hf_id} is an omni recipe; perf estimates vLLM serve commands only.")
    if vk is not None and not any(k == "variant" for k, _ in rest):
        rest.append(("variant", vk))
    req = parse_params(rest, strict=True, allowed_extra=frozenset({"lang"})).request
    st = build_state(catalog, recipe, req, strict=True)
    return report_dict(perf_state(catalog, recipe, st, w, strategy_given=req.strategy is not None))


def recommend_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/recommend`` returns; :class:`SelectionError` on bad input (400)."""
    from .api import find_model

    model, vals, rest, hw = _split(items, ("isl", "osl", "concurrency", "rate", "ttft_ms", "tpot_ms"),
                                   "hardware")
    if rest:
        raise SelectionError(rest[0][0], f"Unknown parameter {rest[0][0]!r}.", ["model", *API_PARAMS])
    w = _workload(vals)
    sla = Sla(_ms(vals, "ttft_ms"), _ms(vals, "tpot_ms"))
    recipe, _ = find_model(catalog, model)
    bad = [h for h in hw if h not in catalog.hardware_profiles]
    if bad:
        raise SelectionError("hardware", f"Unknown hardware {bad[0]!r}.", list(catalog.hardware_profiles))
    return recommendation_dict(recommend(catalog, recipe, sla, w, hardware=tuple(hw)))


def openapi_paths(params: list[dict[str, Any]]) -> dict[str, Any]:
    """``/api/perf`` and ``/api/recommend`` in the OpenAPI document."""
    def q(name: str, schema: dict[str, Any], desc: str, required: bool = False) -> dict[str, Any]:
        return {"name": name, "in": "query", "required": required, "schema": schema, "description": desc}

    load = [q("isl", {"type": "integer", "minimum": 1}, "Input (prompt) tokens.", True),
            q("osl", {"type": "integer", "minimum": 1}, "Output tokens.", True),
            q("concurrency", {"type": "integer", "minimum": 1}, "Concurrent users, closed loop (default 1)."),
            q("rate", {"type": "number"}, "Poisson arrivals in requests/s (instead of concurrency).")]
    error = {"$ref": "#/components/schemas/Error"}
    responses = {"200": {"description": "An estimate (see docs/decisions-perf-model.md).",
                         "content": {"application/json": {"schema": {"type": "object"}}}},
                 "400": {"description": "A parameter cannot be honoured.",
                         "content": {"application/json": {"schema": error}}}}
    model = [p for p in params if p["name"] == "model"]
    return {
        "/api/perf": {"get": {
            "summary": "How fast will it serve? Estimated TTFT, TPOT and throughput of a selection",
            "description": "The calibrated estimate for the selection `/api/resolve` would render, with its "
                           "expected error and the `vllm bench serve` command measuring the same point.",
            "parameters": params + load, "responses": responses}},
        "/api/recommend": {"get": {
            "summary": "The recipe's configurations that meet a TTFT / TPOT target, fewest GPUs first",
            "parameters": model + load + [
                q("ttft_ms", {"type": "number"}, "TTFT target in ms.", True),
                q("tpot_ms", {"type": "number"}, "TPOT target in ms.", True),
                q("hardware", {"type": "string"}, "Only this hardware profile (repeatable).")],
            "responses": responses}},
    }
