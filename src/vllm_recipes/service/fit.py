"""Will it fit: the memory summary of a resolved selection (the ``fit`` key of ``/api/resolve``)
and the fit of a query on other GPUs or the reverse search (``/api/fit``, the MCP ``fit`` tool)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.usable import fails_validation
from vllm_recipes.fit.architecture import Architecture, ArchitectureError, recipe_architecture
from vllm_recipes.fit.checkpoints import CheckpointInfo
from vllm_recipes.fit.hardware import (
    GpuTarget,
    HardwareError,
    custom_profile_target,
    custom_target,
    named_target,
    profile_target,
)
from vllm_recipes.fit.limits import MAX_GPU_MEMORY, MAX_GPUS
from vllm_recipes.fit.report import (
    FitReport,
    ReleaseChoice,
    checkpoint_repo,
    fit_plan,
    fit_state,
    report_dict,
    summary_dict,
)
from vllm_recipes.select.aliases import canonical
from vllm_recipes.select.options import flag
from vllm_recipes.select.state import hardware_block_reason
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan

from .frontends import strict_state
from .perf import int_param, number, require_serve
from .query import Query, QueryError, find_request
from .url import query_from_items

log = logging.getLogger(__name__)

MAX_CTX = 1 << 24
#: ``/api/fit``'s own parameters besides the selection (``ctx`` and ``context`` are one)
FIT_PARAMS = ("ctx", "context", "gpu", "gpu_memory", "gpus")


def parse_ctx(value: str | None) -> int | None:
    """A context length from the URL (``131072``, ``128k``, ``1m``); ``None`` when absent or unusable."""
    return int_param(value, MAX_CTX, "km")


@dataclass(frozen=True)
class KnownFacts:
    """What the fit knows about the model beyond the recipe, and why a fact is missing."""

    arch: Architecture | None
    checkpoint: CheckpointInfo | None = None
    cached_gib: float | None = None
    notes: tuple[str, ...] = ()


def known_facts(recipe: Recipe, variant_key: str, *, hf_config: str | None = None, online: bool = False,
                need_checkpoint: bool = True) -> KnownFacts:
    """The architecture: ``hf_config``'s layers (with the recipe's checkpoint facts), else the recipe's own,
    else the Hugging Face cache's config.json, else (``online``) the Hub's; the variant's checkpoint summary
    likewise. A page stays offline: it must not wait on the Hub. An unreadable config: ArchitectureError."""
    from vllm_recipes.fit import sources

    own = recipe_architecture(recipe)
    arch: Architecture | None = own
    notes: list[str] = []
    if hf_config:
        arch = sources.architecture_from_file(hf_config)
        if own is not None:  # the config describes the layers; the recipe still knows its checkpoints
            arch = replace(arch, checkpoint_gib=own.checkpoint_gib, expert_fraction=own.expert_fraction,
                           host_tables=own.host_tables)
    elif own is None:
        arch, why = sources.architecture_from_hub(recipe.model_repo, offline=not online)
        if why:
            notes.append(why)
    if (arch is not None and arch.checkpoint_for(variant_key) is not None) or not need_checkpoint:
        return KnownFacts(arch, notes=tuple(notes))
    repo = checkpoint_repo(recipe, variant_key)
    checkpoint = sources.cached_info(repo)
    if checkpoint is None and online and not sources.hub_offline():
        try:
            checkpoint = sources.fetch_info(repo)
        except sources.HubError as exc:
            if str(exc) not in notes:  # an unreachable Hub is said once
                notes.append(f"checkpoint size: {exc}")
    return KnownFacts(arch, checkpoint, sources.checkpoint_gib_from_cache(repo), tuple(notes))


def _local_facts(recipe: Recipe, variant_key: str) -> KnownFacts:
    """Facts a page or API may use, notes aside: a broken cached config.json is no fact, not a failure."""
    try:
        return replace(known_facts(recipe, variant_key), notes=())
    except ArchitectureError:
        return KnownFacts(None)


def command_release(ctx: Ctx) -> str | None:
    """The release the rendered command runs (the lint's choice: the image tag, else the newest)."""
    from vllm_recipes.lint.vllm_plan import target_for

    return target_for(ctx)[0].release


def fit_of_plan(recipe: Recipe, ctx: Ctx, plan: Plan, target: GpuTarget, context: int | None) -> FitReport:
    """The fit of a resolved plan on ``target`` with every fact known locally (page panel, API summary)."""
    facts = _local_facts(recipe, ctx.sel.variant_key)
    return fit_plan(recipe, ctx, plan, target, facts.arch, context=context, release=command_release(ctx),
                    checkpoint=facts.checkpoint, cached_checkpoint_gib=facts.cached_gib)


def fit_summary(catalog: Catalog, recipe: Recipe, ctx: Ctx, plan: Plan, context: int | None = None
                ) -> dict[str, Any] | None:
    """The ``fit`` key of ``/api/resolve``: the summary on the selection's own hardware, concurrency
    at ``context`` when given (verdict ``unknown`` when the facts are not known yet)."""
    try:
        target = profile_target(catalog.hardware_profiles, ctx.sel.hw_id)
        return summary_dict(fit_of_plan(recipe, ctx, plan, target, context))
    except Exception as exc:  # the summary is an addition: never fail the resolve because of it
        if fails_validation(catalog, recipe):  # (serve --watch): the recipe's error, one line
            log.warning("fit summary failed for %s: %s: %s (the recipe fails validation)", recipe.hf_id,
                        type(exc).__name__, exc)
        else:
            log.exception("fit summary failed for %s", recipe.hf_id)
        return None



def fit_target(catalog: Catalog, gpu: str | None, gpu_memory: float | None, gpus: int | None,
               hardware: str | None = None) -> GpuTarget | None:
    """The GPUs ``gpu`` names (a catalog profile when one matches, else a known GPU), else ``gpus`` (default 1;
    with ``hardware``, that profile's) of ``gpu_memory`` GB; ``None``: the selection's own hardware. Shared by
    ``fit``, ``perf``, ``/api/fit`` and the MCP ``fit`` tool. Raises :class:`QueryError`."""
    profiles = catalog.hardware_profiles
    if gpu and hardware:
        raise QueryError("hardware", f"Give either {flag('hardware')} or {flag('gpu')}, not both.")
    if gpu_memory is not None and hardware:
        try:
            return custom_profile_target(profiles, canonical(hardware, profiles), gpu_memory, gpus)
        except HardwareError as exc:
            raise QueryError("hardware", f"{exc}.", exc.choices) from None
    try:
        if gpu:
            return named_target(profiles, gpu, gpus, gpu_memory)
        if gpu_memory is not None:
            return custom_target(gpu_memory, gpus or 1)
    except HardwareError as exc:
        raise QueryError("gpu", f"{exc}.", exc.choices) from None
    if gpus is not None:
        raise QueryError("gpus", f"{flag('gpus')} needs {flag('gpu_memory')} (GB per GPU) or {flag('gpu')} "
                                 "(a GPU name).")
    return None


def _bad_gpus(gpus: object) -> QueryError:
    """The refusal of a ``gpus`` value outside 1..MAX_GPUS (an int, or the text of a URL query)."""
    return QueryError("gpus", f"Parameter 'gpus' must be an integer from 1 to {MAX_GPUS}, got {gpus!r}.")


def fit_answer(catalog: Catalog, query: Query, *, gpu: str | None = None, gpu_memory: float | None = None,
               gpus: int | None = None, context: int | None = None,
               gpu_memory_text: str | None = None) -> dict[str, Any]:
    """The fit of the query's selection on its hardware or on the given GPUs; without a model
    (``query.model`` empty) every recipe variant that starts on those GPUs (or
    ``query.request.hardware``), best first; ``gpu_memory_text``: the memory as the user wrote it (refusals
    quote it). Raises :class:`QueryError`."""
    if gpus is not None and not 0 < gpus <= MAX_GPUS:
        raise _bad_gpus(gpus)
    if gpu_memory is not None and not 0 < gpu_memory <= MAX_GPU_MEMORY:
        shown = gpu_memory if gpu_memory_text is None else gpu_memory_text
        raise QueryError("gpu_memory", f"Parameter 'gpu_memory' must be GB per GPU (0-{MAX_GPU_MEMORY}), "
                                       f"got {shown!r}.")
    target = fit_target(catalog, gpu, gpu_memory, gpus, query.request.hardware)
    if not query.model:
        if target is None and query.request.hardware:
            try:
                target = profile_target(catalog.hardware_profiles, query.request.hardware)
            except HardwareError as exc:
                raise QueryError("hardware", str(exc), exc.choices) from None
        if target is None:
            raise QueryError("model", "Give a model, or the hardware to search for (gpus + gpu_memory, gpu, "
                                      "or hardware).")
        from vllm_recipes.fit.search import search, search_dict

        return search_dict(search(catalog, target, context))
    return report_dict(fit_report(catalog, query, target, context=context))


def fit_report(catalog: Catalog, query: Query, target: GpuTarget | None, *, context: int | None = None,
               facts: Callable[[Recipe, str], KnownFacts] = _local_facts, release: ReleaseChoice = command_release,
               weights_gib: float | None = None) -> FitReport:
    """The fit of the query's selection on ``target`` (``None``: its own hardware) with the model's ``facts``
    for the selected variant (their notes added). Raises :class:`QueryError`."""
    recipe, req = find_request(catalog, query)
    require_serve(recipe, "fit plans vLLM serve commands")
    strategy_given = req.strategy is not None
    if req.hardware is None and target is not None and not target.custom and target.profile_id:
        variant = recipe.variants.get(req.variant or "default") or {}
        if hardware_block_reason(catalog, recipe, variant, target.profile_id) is None:
            req = replace(req, hardware=target.profile_id)  # offered: the selection's hardware
        else:  # planned as a custom profile of that family
            target = replace(target, custom=True, notes=(f"{target.profile_id} is not offered by {recipe.hf_id}",))
    agreed = strict_state(catalog, recipe, req)
    known = facts(recipe, agreed.state.selection.variant_key)
    report = fit_state(catalog, recipe, agreed.state, target, known.arch, context=context,
                       strategy_given=strategy_given, release=release, weights_gib=weights_gib,
                       checkpoint=known.checkpoint, cached_checkpoint_gib=known.cached_gib,
                       resolution=agreed.resolution)
    return replace(report, notes=(*report.notes, *known.notes))


def fit_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/fit`` returns for a URL query; :class:`QueryError` on bad input (400)."""
    vals = {k: v.strip() for k, v in items if k in FIT_PARAMS}
    raw = vals.get("ctx") or vals.get("context")
    context = parse_ctx(raw)
    if raw and context is None:
        raise QueryError("ctx", f"Parameter 'ctx' must be a context length (e.g. 131072 or 128k), got {raw!r}.")
    gpus = vals.get("gpus") or None
    if gpus is not None and not (gpus.isascii() and gpus.isdigit() and len(gpus) <= 4):
        raise _bad_gpus(gpus)
    memory = number(vals["gpu_memory"]) if vals.get("gpu_memory") else None
    query, _extra = query_from_items([(k, v) for k, v in items if k not in FIT_PARAMS],
                                     allowed_extra=frozenset({"lang"}))
    return fit_answer(catalog, query, gpu=vals.get("gpu") or None, gpu_memory=memory,
                      gpus=None if gpus is None else int(gpus), context=context,
                      gpu_memory_text=vals.get("gpu_memory"))  # (`number` reads a non-number as -1)
