"""Which selections the JSON API renders and what they hold, per (recipe, variant, hardware).

Rules: json-api.md §6-§8, synthesis.md §11. Pure: laying them out as files is ``api.build``'s job.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.yamlsource import freeze
from vllm_recipes.jsvalues import as_map, first_truthy, get, is_number, truthy
from vllm_recipes.lint.vllm_plan import with_vllm_lint
from vllm_recipes.render.rendering import rendering_fields, with_hardware
from vllm_recipes.select.defaults import default_features, pick_fitting_variant, recommend_strategy
from vllm_recipes.select.gates import (
    effective_vram_min,
    fits_single_node,
    is_scalable,
    is_strategy_reachable,
    is_strategy_supported_on_hardware,
    kv_store_offered,
    nodes_for_strategy,
    offered_strategies,
    pd_fits_single_node,
    spans_nodes,
)
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import AlikeResolves, less_hardware
from vllm_recipes.synth.resolve import resolve

Warn = Callable[[str], None]


@dataclass
class HardwareRendering:
    recommended: dict[str, Any]
    alternatives: list[tuple[str, dict[str, Any]]]


#: One recipe's renderings so far: the fields (:func:`rendering_fields`) of each selection less its hardware,
#: shared by every selection whose hardware reads alike (never resolved again).
Rendered = AlikeResolves[Mapping[str, Any]]


def render_selection(catalog: Catalog, recipe: Recipe, vk: str, strategy: str, hw: str, nodes: int,
                     features: list[str], pd_nodes: Any = None, kv_offload: str | None = None,
                     warn: Warn | None = None, rendered: Rendered | None = None) -> dict[str, Any] | None:
    """§8 ``render``: a synthesis exception becomes a warning and no rendering."""
    sel = Selection(variant_key=vk, hw_id=hw, strategy=strategy, node_count=nodes, features=tuple(features),
                    pd_nodes=pd_nodes, kv_offload=kv_offload)
    rest = less_hardware(sel)
    got = rendered.find(rest, hw) if rendered is not None else None
    if got is not None:
        fields = got[0]
    else:
        try:
            ctx, plan = resolve(catalog, recipe, sel)
            fields = freeze(with_vllm_lint(rendering_fields(ctx, plan), ctx, plan))
        except Exception as exc:
            if warn:
                warn(f"  ⚠ command synthesis failed for {recipe.hf_id} / {vk} / {strategy}: {exc}")
            return None
        if rendered is not None:
            rendered.add(rest, ctx.hw, fields)
    return with_hardware(hw, fields)


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
    out = {}
    pd_spec = as_map(catalog.strategies.get("pd_cluster"))
    for role in ("prefill", "decode"):
        par = first_truthy(get(get(get(recipe.get("strategy_overrides"), "pd_cluster"), role), "parallelism"),
                           get(pd_spec.get(role), "parallelism"), "tp")
        out[role] = max(per_role, nodes_for_strategy(recipe, par, profile.get("gpu_count"), hw))
    return out


@dataclass
class _OnHardware:
    """One (recipe, variant, hardware) and how its renderings are chosen (synthesis §11.3)."""

    catalog: Catalog
    recipe: Recipe
    vk: str
    variant: Mapping[str, Any]
    hw: str
    profile: Mapping[str, Any]
    features: list[str]
    warn: Warn | None
    rendered: Rendered | None

    def deploy_type(self, s: str) -> Any:
        return get(self.catalog.strategies.get(s), "deploy_type")

    def is_candidate(self, s: str, scalable: bool) -> bool:
        """Step 2: a Mooncake store offered here, or a strategy supported, reachable, and single-node on
        hardware that cannot scale."""
        r, dt = self.recipe.data, self.deploy_type(s)
        if dt == "kv_store_lb":
            return kv_store_offered(r, s, self.profile, self.hw)
        return (is_strategy_supported_on_hardware(r, s, self.profile, self.hw)
                and is_strategy_reachable(r, s, dt, self.profile.get("gpu_count"), self.hw)
                and (scalable or not spans_nodes(s, dt)))

    def nodes_for(self, s: str) -> int:
        return max(2 if self.deploy_type(s) == "multi_node" else 1,
                   nodes_for_strategy(self.recipe.data, s, self.profile.get("gpu_count"), self.hw))

    def render(self, strategy: str, nodes: int, pd_nodes: Any = None,
               kv_offload: str | None = None) -> dict[str, Any] | None:
        return render_selection(self.catalog, self.recipe, self.vk, strategy, self.hw, nodes, self.features,
                                pd_nodes, kv_offload, self.warn, self.rendered)

    def serving_for(self, n: int) -> str | None:
        """The serving strategy under a Mooncake store on ``n`` nodes: the recommended one, else the first offered."""
        def ok(sid: str) -> bool:
            dt = self.deploy_type(sid)
            if sid not in self.catalog.strategies or dt in ("pd_cluster", "kv_store_lb"):
                return False
            return dt == "multi_node" if n > 1 else dt != "multi_node"
        r = self.recipe.data
        return next((sid for sid in (recommend_strategy(r, n), *offered_strategies(r)) if ok(sid)), None)

    def kv_store(self, s: str) -> dict[str, Any] | None:
        """Mooncake deployment ``s`` over the serving strategy it would wrap (none: no rendering)."""
        nc = 1 if fits_single_node(self.profile, self.variant, self.hw) else 2
        ss = self.serving_for(nc)
        if ss is None and nc == 2:
            nc, ss = 1, self.serving_for(1)
        if ss is None:
            return None
        if self.deploy_type(ss) == "multi_node":
            nc = max(nc, nodes_for_strategy(self.recipe.data, ss, self.profile.get("gpu_count"), self.hw))
        return self.render(ss, nc, None, s)

    def alternative(self, s: str) -> dict[str, Any] | None:
        if s == "pd_cluster":
            pd = pick_pd_nodes(self.catalog, self.recipe.data, self.profile, self.variant, self.hw)
            return None if pd == "skip" else self.render(s, 1, pd)
        if self.deploy_type(s) == "kv_store_lb":
            return self.kv_store(s)
        return self.render(s, self.nodes_for(s))


def render_for_hardware(catalog: Catalog, recipe: Recipe, vk: str, hw: str,
                        warn: Warn | None = None, rendered: Rendered | None = None) -> HardwareRendering | None:
    """§7 ``renderForHardware`` of a truthy variant of a ``vllm serve`` recipe (synthesis §11.3)."""
    r = recipe.data
    variants = as_map(r.get("variants"))
    variant = as_map(variants.get(vk))
    profile = as_map(catalog.hardware_profiles.get(hw))
    scalable = is_scalable(profile)
    if not scalable and not fits_single_node(profile, variant, hw):
        fit = pick_fitting_variant(r, profile, hw)
        if fit is None:
            return None
        vk, variant = fit, as_map(variants[fit])
    on = _OnHardware(catalog, recipe, vk, variant, hw, profile, default_features(r, hw, vk), warn, rendered)
    stores = [k for k, s in catalog.strategies.items() if get(s, "deploy_type") == "kv_store_lb"]
    compatible = [s for s in dict.fromkeys([*offered_strategies(r), *stores]) if on.is_candidate(s, scalable)]
    supports_multi = scalable and any(on.deploy_type(s) == "multi_node" for s in compatible)
    base_nodes = 2 if (not fits_single_node(profile, variant, hw) and supports_multi) else 1
    rec = recommend_strategy(r, base_nodes)
    if rec not in compatible:  # step 4: the first plain candidate, else the first that is not a store
        plain = [s for s in compatible if on.deploy_type(s) != "kv_store_lb"]
        not_pd = [s for s in plain if s != "pd_cluster"]
        if not_pd:
            rec = not_pd[0]
        elif plain:
            rec = plain[0]
    rec_pd = pick_pd_nodes(catalog, r, profile, variant, hw) if rec == "pd_cluster" else None
    if rec_pd == "skip":
        return None
    recommended = on.render(rec, max(base_nodes, on.nodes_for(rec)), rec_pd)
    if recommended is None:
        return None
    if rec in catalog.strategies:
        recommended["strategy_spec"] = catalog.strategies[rec]
    recommended["hardware_profile"] = profile
    alternatives = ((s, on.alternative(s)) for s in compatible if s != rec)
    return HardwareRendering(recommended, [(s, a) for s, a in alternatives if a is not None])
