"""The recipe page's Performance panel: the builder's own selection estimated at the URL's ``isl`` /
``osl`` / ``conc`` (links, no form) with :func:`vllm_recipes.perf.report.perf_state`, like the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, urlsplit

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.select.state import PageState
from vllm_recipes.service.perf import LIMITS, int_param, workload
from vllm_recipes.service.url import encode

#: the panel's URL parameters and their defaults (the page's `vllm bench serve` snippet: 1024 / 1024 / 32)
PERF_PARAMS = ("isl", "osl", "conc")
DEFAULTS = {"isl": 1024, "osl": 1024, "conc": 32}
CHOICES = {"isl": (128, 1024, 8192), "osl": (128, 1024, 8192), "conc": (1, 8, 32, 128)}


def page_extra(query: Mapping[str, str]) -> dict[str, str]:
    """The panel's own URL parameters, kept on every builder link like ``lang``."""
    return {k: str(n) for k in PERF_PARAMS if (n := int_param(query.get(k), LIMITS[k])) is not None}


def _label(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


@dataclass(frozen=True)
class PerfPanel:
    """What ``perf_panel.html`` renders."""

    error: str
    calibrated: bool
    bench: str
    #: per parameter: (label, href, current) links
    links: tuple[tuple[str, tuple[tuple[str, str, bool], ...]], ...]
    rows: tuple[tuple[str, str], ...] = ()
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
    from vllm_recipes.perf.report import expected_error

    e = expected_error()
    if not e:
        return "not calibrated"
    names = {"tpot": "TPOT", "ttft": "TTFT", "output_tok_s_per_gpu": "tokens/s"}
    return ", ".join(f"{names.get(k, k)} ±{v['median'] * 100:.0f}%" for k, v in e.items()) + " (median)"


def perf_panel(catalog: Catalog, recipe: Recipe, state: PageState, url: str,
               extra: Mapping[str, str]) -> PerfPanel | str | None:
    """The builder's Performance panel for its own selection; until the URL asks for it (``isl``, ``osl``
    or ``conc``), only the link that does - the estimate costs a simulation and the page has a byte budget."""
    if not any(k in extra for k in PERF_PARAMS):
        parts = urlsplit(url)
        q = {**dict(parse_qsl(parts.query)), "isl": str(DEFAULTS["isl"])}
        return parts.path + "?" + encode(q) + "#perf"
    values = {k: int(extra[k]) if k in extra else DEFAULTS[k] for k in PERF_PARAMS}
    from vllm_recipes.perf.report import perf_state

    try:
        w = workload({"isl": values["isl"], "osl": values["osl"], "concurrency": values["conc"]})
        r = perf_state(catalog, recipe, state, w)
    except Exception:  # an addition to the page: the builder never fails because of it
        return None
    panel = PerfPanel(error=error_text(), calibrated=r.calibrated, bench=r.bench_command, links=_links(url, values))
    e = r.estimate
    if e is None or not r.known:
        return replace(panel, unknown="; ".join(r.errors) or "no estimate")
    return replace(panel, rows=(
        ("Time to first token", f"{e.ttft_ms:,.0f} ms ({'queueing' if e.queueing else e.prefill_bound})"),
        ("Time per output token", f"{e.tpot_ms:,.1f} ms ({e.tok_s_per_user:,.0f} tokens/s per user; "
                                  f"{e.decode_bound})"),
        ("Output tokens/s", f"{e.output_tok_s_total:,.0f} total, {e.output_tok_s_per_gpu:,.0f} per GPU "
                            f"({e.gpus} GPUs)"),
        ("Running batch", f"{e.running_mean:,.0f} on average, at most {e.running_cap:,}"),
    ))
