"""Reverse search: every recipe variant that starts on given GPUs, with the single-node strategy it would use.

Pure: the normal resolve and fit of the recommended single-node strategy (else the next one that starts)
on the target as a ``custom`` profile; best first by concurrency at the asked context, then KV capacity.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_map
from vllm_recipes.select.defaults import default_features, recommend_strategy
from vllm_recipes.select.gates import is_precision_compatible, is_strategy_supported_on_hardware
from vllm_recipes.select.selection import Selection
from vllm_recipes.select.state import candidate_strategies
from vllm_recipes.synth.resolve import resolve

from .architecture import Architecture, ArchitectureError, recipe_architecture
from .checkpoints import CheckpointInfo
from .hardware import GpuTarget
from .report import (
    CUSTOM_ID,
    FitReport,
    checkpoint_repo,
    checkpoint_size,
    fit_plan,
    report_dict,
    template_id,
    with_custom_profile,
)


@dataclass(frozen=True)
class SearchHit:
    hf_id: str
    variant: str
    strategy: str
    report: FitReport

    @property
    def score(self) -> tuple[int, int]:
        p = self.report.processes
        return (min((x.concurrency * x.shape.dp for x in p), default=0), self.report.kv_tokens)


@dataclass(frozen=True)
class SearchResult:
    hardware: GpuTarget
    context: int | None
    hits: tuple[SearchHit, ...]
    #: recipes skipped because the planner knows nothing about their architecture
    unknown: tuple[str, ...]
    #: (recipe, variant) pairs that were tried and do not start
    rejected: int


def cached_architectures(catalog: Catalog) -> dict[str, Architecture]:
    """Architectures of the recipes without facts that the local Hugging Face cache has (never the network)."""
    from .sources import architecture_from_cache

    out: dict[str, Architecture] = {}
    for r in catalog.recipes:
        if not r.is_omni and recipe_architecture(r) is None:
            with suppress(ArchitectureError):
                if (arch := architecture_from_cache(r.model_repo)) is not None:
                    out[r.hf_id] = arch
    return out


def cached_checkpoints(catalog: Catalog) -> dict[str, CheckpointInfo]:
    """The safetensors summaries already cached for the catalog's variants (never the network)."""
    from .sources import cached_info

    repos = {checkpoint_repo(r, vk) for r in catalog.recipes if not r.is_omni for vk in r.variants}
    return {repo: info for repo in sorted(repos) if (info := cached_info(repo)) is not None}


def search(catalog: Catalog, target: GpuTarget, context: int | None = None,
           archs: Mapping[str, Architecture] | None = None,
           checkpoints: Mapping[str, CheckpointInfo] | None = None) -> SearchResult:
    """Every variant that starts on ``target`` (one node), best first. ``archs``: architectures of recipes
    without facts, by recipe id; ``checkpoints``: safetensors summaries by repository (what a front end found
    in the local caches)."""
    # the catalog with ``target`` as its custom profile, made anew per search: keeping it saved 6%,
    # 453 vs 482 ms (docs/decisions-fit.md section 8)
    template = template_id(catalog, target, target.profile_id or "")
    if not template and catalog.hardware_profiles:
        template = next(iter(catalog.hardware_profiles))
    cat = with_custom_profile(catalog, target, template)
    profile = as_map(cat.hardware_profiles.get(CUSTOM_ID))
    hits: list[SearchHit] = []
    unknown: list[str] = []
    rejected = 0
    for recipe in cat.recipes:
        arch = None if recipe.is_omni else recipe_architecture(recipe) or (archs or {}).get(recipe.hf_id)
        if arch is None:
            if not recipe.is_omni:
                unknown.append(recipe.hf_id)
            continue
        strategies = _strategies(cat, recipe, profile)
        for vk, variant in recipe.variants.items():
            if not isinstance(variant, dict) or not is_precision_compatible(profile, variant):
                continue
            info = (checkpoints or {}).get(checkpoint_repo(recipe, vk))
            ckpt = checkpoint_size(arch, recipe, vk, info=info)[0]
            if ckpt is None:  # no size, not even an estimate: nothing to rank
                unknown.append(recipe.hf_id)
                continue
            # even split over every GPU the weights alone do not fit: no need to resolve
            hit = None if ckpt / target.gpus_per_node > target.gpu_gib else \
                _first_that_starts(cat, recipe, vk, strategies, target, arch, context, info)
            if hit is None:
                rejected += 1
            else:
                hits.append(hit)
    hits.sort(key=lambda h: h.score, reverse=True)
    return SearchResult(target, context, tuple(hits), tuple(dict.fromkeys(unknown)), rejected)


def _strategies(cat: Catalog, recipe: Recipe, profile: Mapping[str, Any]) -> list[str]:
    """The single-node strategies offered on the custom profile, the one the command would use first."""
    strategies = [s for s in candidate_strategies(cat, recipe, CUSTOM_ID, 1)
                  if is_strategy_supported_on_hardware(recipe.data, s, profile, CUSTOM_ID)]
    rec = recommend_strategy(recipe.data, 1)
    return sorted(strategies, key=lambda s: s != rec)


def _first_that_starts(cat: Catalog, recipe: Recipe, variant_key: str, strategies: list[str], target: GpuTarget,
                       arch: Architecture, context: int | None, info: CheckpointInfo | None) -> SearchHit | None:
    """The first strategy whose command starts, in the order a user would get them (default features of the
    variant, computed once)."""
    if not strategies:
        return None
    features = tuple(default_features(recipe.data, CUSTOM_ID, variant_key))
    for s in strategies:
        selection = Selection(variant_key=variant_key, hw_id=CUSTOM_ID, strategy=s, node_count=1, features=features)
        ctx, plan = resolve(cat, recipe, selection)
        rep = fit_plan(recipe, ctx, plan, target, arch, context=context, checkpoint=info)
        if rep.starts:
            return SearchHit(recipe.hf_id, variant_key, s, rep)
    return None


def search_dict(res: SearchResult) -> dict[str, Any]:
    """The JSON form of a search (CLI ``--json`` and ``/api/fit`` without a model)."""
    return {"hardware": res.hardware.to_dict(), "context": res.context,
            "results": [{"model": h.hf_id, "variant": h.variant, "strategy": h.strategy,
                         "kv_tokens": h.report.kv_tokens, "concurrency": h.score[0],
                         "fit": report_dict(h.report)} for h in res.hits],
            "unknown_architecture": list(res.unknown), "not_starting": res.rejected}
