"""Fit on the web: the recipe page's Fit panel, ``/api/fit`` and the fit summary of ``/api/resolve``.

Everything is computed from the builder's own resolved plan (``fit_plan``) or,
for ``/api/fit``, from the same strict builder state ``/api/resolve`` uses - the
panel and the CLI call the same core function, so their figures agree.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import Architecture, ArchitectureError
from vllm_recipes.fit.checkpoints import CheckpointInfo
from vllm_recipes.fit.hardware import GpuTarget, HardwareError, custom_target, named_target, profile_target
from vllm_recipes.fit.memory import GIB
from vllm_recipes.fit.report import (
    FitReport,
    fit_plan,
    fit_state,
    recipe_architecture,
    report_dict,
    summary_dict,
)
from vllm_recipes.select.page import PageState, SelectionError, build_state
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan

from .urlstate import encode, parse_params
from .wording import fit_unknown, page_lever, page_sentence, page_warning

log = logging.getLogger(__name__)

#: the page's context-length parameter (Fit panel); also accepted as ``context`` by /api/fit
CTX_PARAM = "ctx"
MAX_CTX = 1 << 24
FIT_PARAMS = ("ctx", "context", "gpu", "gpu_memory", "gpus")


def parse_ctx(value: str | None) -> int | None:
    """A context length from the URL (``131072``, ``128k``, ``1m``); ``None`` when absent or unusable."""
    if not value:
        return None
    v = value.strip().lower()
    mult = 1
    if v.endswith("k"):
        v, mult = v[:-1], 1024
    elif v.endswith("m"):
        v, mult = v[:-1], 1024 * 1024
    if not v.isascii() or not v.isdigit() or len(v) > 9:
        return None
    n = int(v) * mult
    return n if 0 < n <= MAX_CTX else None


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
    """What ``fit_panel.html`` renders."""

    hardware: str
    roles: tuple[str, ...]
    rows: tuple[PanelRow, ...]
    verdict: str
    starts: bool
    context: int | None
    #: (label, href, current) links that set the ``ctx`` parameter
    contexts: tuple[tuple[str, str, bool], ...]
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


def panel_from_report(r: FitReport, url: str, context: int | None) -> FitPanel:
    """The panel's rows: the same figures, in the same order, as ``vllm-recipes fit``."""
    head = FitPanel(hardware=r.hardware.label, context=context, contexts=context_links(url, context), roles=(),
                    rows=(), verdict="unknown", starts=False)
    if r.missing:
        what = "architecture" if "architecture" in r.missing else "checkpoint size"
        return replace(head, unknown=f"The model's {what} is not known yet, so the memory plan cannot be computed.",
                       unknown_link=f"https://huggingface.co/{r.hf_id}", unknown_link_label="The model on Hugging Face")
    if not r.processes:
        return replace(head, unknown=fit_unknown("; ".join(r.errors) or "no serve process"))
    procs = r.processes
    rows = [
        ("Parallelism", [f"TP {p.shape.tp} x PP {p.shape.pp}" + (f", DP {p.shape.dp}" if p.shape.dp > 1 else "")
                         + (", EP" if p.shape.expert_parallel else "") for p in procs]),
        ("GPU memory", [f"{_g(p.gpu_memory)} x {p.utilization:g}" for p in procs]),
        ("Weights per GPU", [_g(p.weights) for p in procs]),
        ("Start-up peak", [_g(p.activation) + (" (sampler warm-up)" if p.sampler > p.forward else "")
                           for p in procs]),
        ("Other overheads", [_g(p.non_torch + p.cuda_graphs) for p in procs]),
        ("KV budget per GPU", [_g(p.kv_budget) for p in procs]),
        ("KV bytes per token", [f"{p.kv_bytes_per_token:,.1f} ({p.shape.kv_cache_dtype})" for p in procs]),
        ("KV capacity (tokens)", [f"{p.kv_tokens:,}" + ("" if p.exact else " (estimate)")
                                  + (f", at least {p.kv_tokens_bound:,}" if p.kv_tokens_bound is not None else "")
                                  + (f"; {p.kv_tokens_per_group:,} per group of {p.kv_groups}"
                                     if p.kv_groups > 1 else "")
                                  for p in procs]),
        ("Longest request (tokens)", [f"{p.max_model_len:,}" for p in procs]),
        ("Concurrency", [f"{p.concurrency:,} at {p.context:,}" + (f" ({p.concurrency * p.shape.dp:,} over "
                                                                    f"{p.shape.dp} DP ranks)" if p.shape.dp > 1 else "")
                         for p in procs]),
        ("Verdict", ["starts" if p.starts else "does not start: " + _FAILURES.get(p.failure, p.failure)
                     for p in procs]),
    ]
    # page words (web/wording.py): levers by kind, notes and warnings without their command-line clauses
    levers = tuple(f"{p.role}: {page_lever(lv.kind, lv.detail)}" + ("" if lv.starts else " (still does not start)")
                   for p in procs for lv in p.levers)
    notes = tuple(n for n in dict.fromkeys(page_sentence(n) for n in [*(n for p in procs for n in p.notes), *r.notes,
                                                                       f"Memory accounting of vLLM {r.release}."])
                  if n)
    return replace(head, roles=tuple(p.role for p in procs),
                   rows=tuple(PanelRow(label, tuple(vals)) for label, vals in rows),
                   verdict=r.verdict, starts=r.starts, levers=levers,
                   warnings=tuple(page_warning(m) for m in (*r.errors, *(c.message for c in r.checks))),
                   notes=notes)


@dataclass(frozen=True)
class KnownFacts:
    arch: Architecture | None
    checkpoint: CheckpointInfo | None = None
    cached_gib: float | None = None


def known_facts(catalog: Catalog, recipe: Recipe, variant_key: str) -> KnownFacts:
    """The architecture and checkpoint facts a page or API answer may use: the recipe's own, else what the
    local caches hold (the Hugging Face cache's config.json, a cached safetensors summary). Never the
    network: a page must not wait on the Hub."""
    from vllm_recipes.fit.report import checkpoint_repo
    from vllm_recipes.fit.sources import architecture_from_cache, cached_info, checkpoint_gib_from_cache

    arch = recipe_architecture(catalog, recipe)
    if arch is None:
        try:
            arch = architecture_from_cache(str(recipe.model.get("model_id") or recipe.hf_id))
        except ArchitectureError:
            arch = None
    if arch is not None and arch.checkpoint_for(variant_key) is not None:
        return KnownFacts(arch)
    repo = checkpoint_repo(recipe, variant_key)
    return KnownFacts(arch, cached_info(repo), checkpoint_gib_from_cache(repo))


def command_release(ctx: Ctx) -> str | None:
    """The release the rendered command runs (the lint's choice: the image tag, else the newest)."""
    from vllm_recipes.lint.vllm_plan import target_for

    return target_for(ctx)[0].release


def _fit(catalog: Catalog, recipe: Recipe, ctx: Ctx, plan: Plan, target: GpuTarget,
         context: int | None) -> FitReport:
    facts = known_facts(catalog, recipe, ctx.sel.variant_key)
    return fit_plan(catalog, recipe, ctx, plan, target, facts.arch, context=context, release=command_release(ctx),
                    checkpoint=facts.checkpoint, cached_checkpoint_gib=facts.cached_gib)


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
    return panel_from_report(_fit(catalog, recipe, ctx, plan, target, context), url, context)


def resolve_fit_summary(catalog: Catalog, recipe: Recipe, ctx: Ctx, plan: Plan,
                        raw_ctx: str | None = None) -> dict[str, Any] | None:
    """The ``fit`` key of ``/api/resolve``: the summary on the selection's own hardware, concurrency at the
    page's ``ctx`` when given (verdict ``unknown`` when the facts are not known yet)."""
    try:
        target = profile_target(catalog.hardware_profiles, ctx.sel.hw_id)
        return summary_dict(_fit(catalog, recipe, ctx, plan, target, parse_ctx(raw_ctx)))
    except Exception:  # the summary is an addition: never fail the resolve because of it
        log.exception("fit summary failed for %s", recipe.hf_id)
        return None


# --------------------------------------------------------------------------------------------
# /api/fit
# --------------------------------------------------------------------------------------------

def _target(catalog: Catalog, vals: Mapping[str, str]) -> GpuTarget | None:
    gpu, mem, gpus = vals.get("gpu"), vals.get("gpu_memory"), vals.get("gpus")
    n = None
    if gpus:
        if not gpus.isdigit() or not 0 < int(gpus) <= 64:
            raise SelectionError("gpus", f"Parameter 'gpus' must be an integer from 1 to 64, got {gpus!r}.")
        n = int(gpus)
    m = None
    if mem:
        try:
            m = float(mem)
        except ValueError:
            m = -1.0
        if not 0 < m <= 4096:
            raise SelectionError("gpu_memory", f"Parameter 'gpu_memory' must be GB per GPU (0-4096), got {mem!r}.")
    try:
        if gpu:
            return named_target(catalog.hardware_profiles, gpu, n, m)
        if m is not None:
            return custom_target(m, n or 1)
    except HardwareError as exc:
        raise SelectionError("gpu", f"{exc}.", exc.choices) from None
    if n is not None:
        raise SelectionError("gpus", "Parameter 'gpus' needs gpu_memory or gpu.")
    return None


def fit_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/fit`` returns; :class:`SelectionError` on bad input (400)."""
    from .api import find_model

    fit_vals: dict[str, str] = {}
    rest: list[tuple[str, str]] = []
    model = None
    for k, v in items:
        if k == "model":
            model = v.strip()
        elif k in FIT_PARAMS:
            fit_vals[k] = v.strip()
        else:
            rest.append((k, v))
    raw_ctx = fit_vals.get("ctx") or fit_vals.get("context")
    context = parse_ctx(raw_ctx)
    if raw_ctx and context is None:
        raise SelectionError("ctx", f"Parameter 'ctx' must be a context length (e.g. 131072 or 128k), got {raw_ctx!r}.")
    target = _target(catalog, fit_vals)
    if not model:
        hw = dict(rest).get("hardware")
        if target is None and hw:
            try:
                target = profile_target(catalog.hardware_profiles, hw)
            except HardwareError as exc:
                raise SelectionError("hardware", str(exc), exc.choices) from None
        if target is None:
            raise SelectionError("model", "Give a model, or the hardware to search for (gpus + gpu_memory, gpu, "
                                          "or hardware).")
        from vllm_recipes.fit.search import search, search_dict

        return search_dict(search(catalog, target, context))
    recipe, vk = find_model(catalog, model)
    if recipe.is_omni:
        raise SelectionError("model", f"{recipe.hf_id} is an omni recipe; fit plans vLLM serve commands only.")
    if vk is not None and not any(k == "variant" for k, _ in rest):
        rest.append(("variant", vk))
    req = parse_params(rest, strict=True, allowed_extra=frozenset({"lang"})).request
    strategy_given = req.strategy is not None
    if target is not None and not target.custom and target.profile_id and req.hardware is None:
        from dataclasses import replace

        from vllm_recipes.select.page import hardware_block_reason

        variant = recipe.variants.get(req.variant or "default") or {}
        if hardware_block_reason(catalog, recipe, variant, target.profile_id) is None:
            req = replace(req, hardware=target.profile_id)
        else:
            target = replace(target, custom=True, notes=(f"{target.profile_id} is not offered by {recipe.hf_id}",))
    st: PageState = build_state(catalog, recipe, req, strict=True)
    facts = known_facts(catalog, recipe, st.selection.variant_key)
    report = fit_state(catalog, recipe, st, target, facts.arch, context=context, strategy_given=strategy_given,
                       release=command_release, checkpoint=facts.checkpoint, cached_checkpoint_gib=facts.cached_gib)
    return report_dict(report)


def openapi_paths(params: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``/api/fit`` entry of the OpenAPI document (the selection parameters of ``/api/resolve`` plus fit's)."""
    own = [
        {"name": "ctx", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 16},
         "description": "Context length for the concurrency figure (131072, 128k, 1m; default --max-model-len). "
                        "Alias: context."},
        {"name": "gpu", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 64},
         "description": "GPU name, e.g. RTX 5090 (a catalog profile when one matches, else a custom profile)."},
        {"name": "gpu_memory", "in": "query", "required": False, "schema": {"type": "number"},
         "description": "Memory per GPU in GB for a custom profile."},
        {"name": "gpus", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1},
         "description": "Number of GPUs (with gpu or gpu_memory)."},
    ]
    model = [{**p, "required": False} if p["name"] == "model" else p for p in params]
    error = {"$ref": "#/components/schemas/Error"}
    return {"/api/fit": {"get": {
        "summary": "Will it fit? Memory and KV-cache plan of a selection, or a reverse search",
        "description": "With `model`: the fit of the selection `/api/resolve` would render (weights per GPU, KV "
                       "budget, KV tokens, concurrency at `ctx`, verdict, levers) on its hardware or on "
                       "`gpu`/`gpu_memory`/`gpus`. Without `model`: every recipe variant that starts on the "
                       "given GPUs, best first.",
        "parameters": model + own,
        "responses": {
            "200": {"description": "A fit report (with model) or a search result (without).",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
            "400": {"description": "A parameter cannot be honoured.",
                    "content": {"application/json": {"schema": error}}}}}}}
