"""The recipe page's Fit panel: computed from the builder's own plan by the core function the CLI and
``/api/fit`` call, so the figures agree."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, urlsplit

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.hardware import HardwareError, profile_target
from vllm_recipes.fit.memory import GIB, ProcessFit
from vllm_recipes.fit.report import FitReport
from vllm_recipes.service.fit import fit_of_plan, parse_ctx
from vllm_recipes.service.url import encode
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan

from .wording import fit_unknown, page_lever, page_sentence, page_warning

#: the page's context-length parameter (Fit panel); also accepted as ``context`` by /api/fit
CTX_PARAM = "ctx"


def page_extra(query: Mapping[str, str]) -> dict[str, str]:
    """The Fit panel's own URL parameter, kept on every builder link like ``lang``."""
    n = parse_ctx(query.get(CTX_PARAM))
    return {CTX_PARAM: str(n)} if n else {}


@dataclass(frozen=True)
class PanelRow:
    label: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class FitPanel:
    """What ``fit_panel.html`` renders (without figures until :func:`panel_from_report` adds them)."""

    hardware: str
    #: (label, href, current) links that set the ``ctx`` parameter
    contexts: tuple[tuple[str, str, bool], ...]
    roles: tuple[str, ...] = ()
    rows: tuple[PanelRow, ...] = ()
    verdict: str = "unknown"
    starts: bool = False
    levers: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: verdict "unknown": what is not known yet, in the page's words, and where the facts live
    unknown: str | None = None
    unknown_link: str | None = None
    unknown_link_label: str | None = None


#: context lengths the panel offers as links (no form: the page works without JavaScript)
CONTEXT_CHOICES = ((8192, "8k"), (32768, "32k"), (131072, "128k"), (262144, "256k"), (1048576, "1M"))


def context_links(url: str, current: int | None) -> tuple[tuple[str, str, bool], ...]:
    """``max-model-len`` (no ``ctx``) plus the common context lengths, each keeping the selection's URL."""
    parts = urlsplit(url)
    base = {k: v for k, v in parse_qsl(parts.query) if k != CTX_PARAM}

    def href(n: int | None) -> str:
        q = encode({**base, CTX_PARAM: str(n)} if n else base)
        return parts.path + ("?" + q if q else "")

    out = [("max context", href(None), current is None)]
    out += [(label, href(n), current == n) for n, label in CONTEXT_CHOICES]
    if current is not None and all(current != n for n, _ in CONTEXT_CHOICES):
        out.append((f"{current:,}", href(current), True))
    return tuple(out)


def _g(b: float) -> str:
    return f"{b / GIB:,.2f} GiB"


_FAILURES = {"weights": "the weights do not fit", "no_kv_memory": "no memory is left for the KV cache",
             "max_model_len": "one request of the full context does not fit"}


def _parallelism(p: ProcessFit) -> str:
    s = p.shape
    dp = f", DP {s.dp}" if s.dp > 1 else ""
    ep = ", EP" if s.expert_parallel else ""
    return f"TP {s.tp} x PP {s.pp}{dp}{ep}"


def _capacity(p: ProcessFit) -> str:
    return (f"{p.kv_tokens:,}" + ("" if p.exact else " (estimate)")
            + (f", at least {p.kv_tokens_bound:,}" if p.kv_tokens_bound is not None else "")
            + (f"; {p.kv_tokens_per_group:,} per group of {p.kv_groups}" if p.kv_groups > 1 else ""))


def _concurrency(p: ProcessFit) -> str:
    dp = p.shape.dp
    ranks = f" ({p.concurrency * dp:,} over {dp} DP ranks)" if dp > 1 else ""
    return f"{p.concurrency:,} at {p.context:,}{ranks}"


#: the panel's rows, in the order of ``vllm-recipes fit``'s table: label -> the cell of one process
_ROWS: tuple[tuple[str, Callable[[ProcessFit], str]], ...] = (
    ("Parallelism", _parallelism),
    ("GPU memory", lambda p: f"{_g(p.gpu_memory)} x {p.utilization:g}"),
    ("Weights per GPU", lambda p: _g(p.weights)),
    ("Start-up peak", lambda p: _g(p.activation) + (" (sampler warm-up)" if p.sampler > p.forward else "")),
    ("Other overheads", lambda p: _g(p.non_torch + p.cuda_graphs)),
    ("KV budget per GPU", lambda p: _g(p.kv_budget)),
    ("KV bytes per token", lambda p: f"{p.kv_bytes_per_token:,.1f} ({p.shape.kv_cache_dtype})"),
    ("KV capacity (tokens)", _capacity),
    ("Longest request (tokens)", lambda p: f"{p.max_model_len:,}"),
    ("Concurrency", _concurrency),
    ("Verdict", lambda p: "starts" if p.starts else "does not start: " + _FAILURES.get(p.failure, p.failure)),
)


def panel_from_report(r: FitReport, url: str, context: int | None) -> FitPanel:
    """The panel's rows: the same figures, in the same order, as ``vllm-recipes fit``."""
    head = FitPanel(hardware=r.hardware.label, contexts=context_links(url, context))
    if r.missing:  # what is missing, in plain words, with a link to the model (never command-line advice)
        what = "architecture" if "architecture" in r.missing else "checkpoint size"
        return replace(head, unknown=f"The model's {what} is not known yet, so the memory plan cannot be computed.",
                       unknown_link=f"https://huggingface.co/{r.hf_id}", unknown_link_label="The model on Hugging Face")
    if not r.processes:
        return replace(head, unknown=fit_unknown("; ".join(r.errors) or "no serve process"))
    procs = r.processes
    levers = tuple(f"{p.role}: {page_lever(lv.kind, lv.detail)}" + ("" if lv.starts else " (still does not start)")
                   for p in procs for lv in p.levers)
    # notes in page words, once each, without their command-line clauses
    said = [*(n for p in procs for n in p.notes), *r.notes, f"Memory accounting of vLLM {r.release}."]
    return replace(head, roles=tuple(p.role for p in procs),
                   rows=tuple(PanelRow(label, tuple(cell(p) for p in procs)) for label, cell in _ROWS),
                   verdict=r.verdict, starts=r.starts, levers=levers,
                   warnings=tuple(page_warning(m) for m in (*r.errors, *r.checks)),
                   notes=tuple(n for n in dict.fromkeys(page_sentence(n) for n in said) if n))


def fit_panel(catalog: Catalog, recipe: Recipe, ctx: Ctx, plan: Plan, url: str,
              extra: Mapping[str, str]) -> FitPanel | None:
    """The builder's Fit panel for its own plan (``None`` when the hardware has no GPU size)."""
    try:
        target = profile_target(catalog.hardware_profiles, ctx.sel.hw_id)
    except HardwareError:
        return None
    if target.gpu_gib <= 0:
        return None
    context = parse_ctx(extra.get(CTX_PARAM))
    return panel_from_report(fit_of_plan(recipe, ctx, plan, target, context), url, context)
