"""Which selections the JSON API renders (json-api.md §6-§8, synthesis.md §11).

Pure: which renderings exist for one (recipe, variant, hardware) and what they
hold. Laying them out as files (json-api.md §6) is ``api.build``'s job.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_map, get, is_number, truthy
from vllm_recipes.lint.vllm_plan import with_vllm_lint
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.defaults import (
    default_features,
    pick_fitting_variant,
    recommend_strategy,
)
from vllm_recipes.select.gates import (
    effective_vram_min,
    fits_single_node,
    is_scalable,
    is_strategy_reachable,
    is_strategy_supported_on_hardware,
    kv_store_brand_supported,
    nodes_for_strategy,
    offered_strategies,
    pd_fits_single_node,
)
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.resolve import resolve

Warn = Callable[[str], None]


@dataclass
class HardwareRendering:
    recommended: dict[str, Any]
    alternatives: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def render_selection(catalog: Catalog, recipe: Recipe, vk: str, strategy: str, hw: str, nodes: int,
                     features: list[str], pd_nodes: Any = None, kv_offload: str | None = None,
                     warn: Warn | None = None) -> dict[str, Any] | None:
    """§8 ``render``: a synthesis exception becomes a warning and no rendering."""
    sel = Selection(variant_key=vk, hw_id=hw, strategy=strategy, node_count=nodes, features=tuple(features),
                    pd_nodes=pd_nodes, kv_offload=kv_offload)
    try:
        ctx, plan = resolve(catalog, recipe, sel)
        return with_vllm_lint(rendering_object(ctx, plan), ctx, plan)
    except Exception as exc:
        if warn:
            warn(f"  ⚠ command synthesis failed for {recipe.hf_id} / {vk} / {strategy}: {exc}")
        return None


def kv_ids(catalog: Catalog) -> list[str]:
    return [k for k, s in catalog.strategies.items() if get(s, "deploy_type") == "kv_store_lb"]


def deploy_type_of(catalog: Catalog, s: str) -> Any:
    return get(catalog.strategies.get(s), "deploy_type")


def pick_pd_nodes(catalog: Catalog, recipe: Mapping[str, Any], profile: Mapping[str, Any],
                  variant: Mapping[str, Any], hw: str) -> Any:
    """§7.8: ``None`` (co-located), ``{"prefill": n, "decode": n}`` or ``"skip"``."""
    if pd_fits_single_node(profile, variant, hw):
        return None
    node_vram: float = profile["vram_gb"] if is_number(profile.get("vram_gb")) else 0
    mv = effective_vram_min(variant, hw)
    model_vram = mv if is_number(mv) and truthy(mv) else 0
    if node_vram <= 0 or model_vram <= 0:
        return None
    if not math.isfinite(model_vram / node_vram) or model_vram / node_vram > 4:  # (.inf: issue #28.1/2)
        return "skip"
    per_role = math.ceil(model_vram / node_vram)
    if per_role > 4:
        return "skip"
    out = {}
    pd_spec = as_map(catalog.strategies.get("pd_cluster"))
    for role in ("prefill", "decode"):
        par = get(get(get(recipe.get("strategy_overrides"), "pd_cluster"), role), "parallelism")
        if not truthy(par):
            par = get(pd_spec.get(role), "parallelism")
        if not truthy(par):
            par = "tp"
        out[role] = max(per_role, nodes_for_strategy(recipe, par, profile.get("gpu_count"), hw))
    return out


@dataclass(frozen=True)
class RecipeGates:
    """What :func:`render_for_hardware` asks of a recipe whatever the hardware (once per recipe)."""

    offered: tuple[str, ...]
    #: offered strategies, then the Mooncake deployments, each once
    ordered: tuple[str, ...]
    #: deploy type of every strategy in ``ordered``
    deploy: Mapping[str, Any]
    #: ``recommend_strategy`` for one node and for several
    recommended: tuple[str, str]


def recipe_gates(catalog: Catalog, recipe: Recipe) -> RecipeGates:
    r = recipe.data
    offered = tuple(offered_strategies(r))
    ordered = tuple(dict.fromkeys([*offered, *kv_ids(catalog)]))
    return RecipeGates(offered, ordered, {s: deploy_type_of(catalog, s) for s in ordered},
                       (recommend_strategy(r, 1), recommend_strategy(r, 2)))


def _is_compatible(r: Mapping[str, Any], s: str, dt: Any, profile: Mapping[str, Any], hw: str, scalable: bool) -> bool:
    """Strategy ``s`` (deploy type ``dt``) can run on the hardware profile."""
    if dt == "kv_store_lb":
        return scalable and kv_store_brand_supported(profile) and \
            get(get(r.get("kv_cache_strategy_hardware"), s), hw) != "unsupported"
    return (is_strategy_supported_on_hardware(r, s, profile, hw)
            and is_strategy_reachable(r, s, dt, profile.get("gpu_count"), hw)
            and (scalable or (not s.startswith("multi_node_") and s != "pd_cluster")))


def _recommended(rec: str, compatible: list[str], deploy_type: Callable[[str], Any]) -> str:
    """The recipe's recommendation when compatible, else the first compatible plain strategy (then PD)."""
    if rec in compatible:
        return rec
    alt = next((s for s in compatible if deploy_type(s) != "kv_store_lb" and s != "pd_cluster"), None)
    if alt is None:
        alt = next((s for s in compatible if deploy_type(s) != "kv_store_lb"), None)
    return rec if alt is None else alt


def render_for_hardware(catalog: Catalog, recipe: Recipe, vk: str, hw: str,
                        warn: Warn | None = None) -> HardwareRendering | None:
    """§7 ``renderForHardware`` (the recipe's own gates computed once: :func:`recipe_gates`)."""
    r = recipe.data
    variants = as_map(r.get("variants"))
    variant = variants.get(vk)
    if not truthy(variant) or recipe.is_omni:
        return None
    variant = as_map(variant)
    profile = as_map(catalog.hardware_profiles.get(hw))
    scalable = is_scalable(profile)
    if not scalable and not fits_single_node(profile, variant, hw):
        fit = pick_fitting_variant(r, profile, hw)
        if fit is None:
            return None
        vk, variant = fit, as_map(variants[fit])
    gpn = profile.get("gpu_count")
    strategies = catalog.strategies
    gates = recipe_gates(catalog, recipe)
    deploy = gates.deploy

    def deploy_type(s: str) -> Any:
        return deploy[s] if s in deploy else deploy_type_of(catalog, s)

    def nodes_for(s: str) -> int:
        return max(2 if deploy_type(s) == "multi_node" else 1, nodes_for_strategy(r, s, gpn, hw))

    compatible = [s for s in gates.ordered if _is_compatible(r, s, deploy_type(s), profile, hw, scalable)]
    supports_multi = scalable and any(s.startswith("multi_node_") for s in compatible)
    base_nodes = 2 if (not fits_single_node(profile, variant, hw) and supports_multi) else 1
    rec = _recommended(gates.recommended[base_nodes > 1], compatible, deploy_type)
    rec_nodes = max(base_nodes, nodes_for(rec))
    features = default_features(r, hw, vk)
    rec_pd = pick_pd_nodes(catalog, r, profile, variant, hw) if rec == "pd_cluster" else None
    if rec_pd == "skip":
        return None
    recommended = render_selection(catalog, recipe, vk, rec, hw, rec_nodes, features, rec_pd, None, warn)
    if recommended is None:
        return None
    if rec in strategies:
        recommended["strategy_spec"] = strategies[rec]
    recommended["hardware_profile"] = profile

    result = HardwareRendering(recommended)

    def serving_for(n: int) -> str | None:
        """The serving strategy under a Mooncake store on ``n`` nodes: the recommended one, else the first offered."""
        def ok(sid: str) -> bool:
            dt = deploy_type(sid)
            if sid not in strategies or dt in ("pd_cluster", "kv_store_lb"):
                return False
            return dt == "multi_node" if n > 1 else dt != "multi_node"
        return next((sid for sid in (gates.recommended[n > 1], *gates.offered) if ok(sid)), None)

    for s in compatible:
        if s == rec:
            continue
        if s == "pd_cluster":
            pd = pick_pd_nodes(catalog, r, profile, variant, hw)
            if pd == "skip":
                continue
            rendering = render_selection(catalog, recipe, vk, s, hw, 1, features, pd, None, warn)
        elif deploy_type(s) == "kv_store_lb":
            nc = 1 if fits_single_node(profile, variant, hw) else 2
            ss = serving_for(nc)
            if ss is None and nc == 2:
                nc, ss = 1, serving_for(1)
            if ss is None:
                continue
            if deploy_type(ss) == "multi_node":
                nc = max(nc, nodes_for_strategy(r, ss, gpn, hw))
            rendering = render_selection(catalog, recipe, vk, ss, hw, nc, features, None, s, warn)
        else:
            rendering = render_selection(catalog, recipe, vk, s, hw, nodes_for(s), features, None, None, warn)
        if rendering is not None:
            result.alternatives.append((s, rendering))
    return result
