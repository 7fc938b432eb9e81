"""The selections a user of the builder (or the JSON API) can reach, enumerated approximately exhaustively:
per variant and listed hardware, each served strategy with its default features, all features and every
mode, each KV option, and each Mooncake deployment offered there. The lints and the translation drift
check resolve them (:func:`vllm_recipes.synth.resolved.resolved_selections`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_map, get, is_map, truthy

from .defaults import default_features, listed_hardware, recommend_strategy
from .gates import (
    feature_conflicts,
    fits_single_node,
    is_scalable,
    is_strategy_reachable,
    is_strategy_supported_on_hardware,
    kv_store_offered,
    nodes_for_strategy,
    offered_strategies,
    spans_nodes,
)
from .selection import Selection
from .state import kv_choices

FeatureSet = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]


def _feature_sets(r: Mapping[str, Any], defaults: tuple[str, ...]) -> Iterator[FeatureSet]:
    """The defaults; every feature on (one of each conflicting pair, then the others); each mode."""
    feats = as_map(r.get("features"))
    yield defaults, ()
    everything: list[str] = []
    for f in feats:
        if not any(o in everything for o in feature_conflicts(r, f)):
            everything.append(f)
    yield tuple(everything), ()
    others = tuple(f for f in feats if f not in everything)
    if others:
        yield tuple(x for x in everything if not any(x in feature_conflicts(r, o) for o in others)) + others, ()
    for f, feat in feats.items():
        if is_map(feat) and truthy(feat.get("modes")):
            for m in as_map(feat.get("modes")):
                yield tuple(everything if f in everything else (*everything, f)), ((f, m),)


def pd_pool_request() -> dict[str, Any]:
    """A fresh copy of the PD pool request the enumeration offers (each selection gets its own dict)."""
    return {"prefill": {"nodes": 2, "parallelism": "dep"}, "decode": {"nodes": 2, "parallelism": "dep"}}


def served_strategies(catalog: Catalog, r: Mapping[str, Any], profile: Mapping[str, Any],
                      hw: str) -> list[tuple[str, int]]:
    """The serving strategies offered on ``hw`` (no Mooncake deployments), each with its node count: the
    strict builder's own strategy checks."""
    gpn = profile.get("gpu_count")
    scalable = is_scalable(profile)
    served: list[tuple[str, int]] = []
    for s in offered_strategies(r):
        dt = get(catalog.strategies.get(s), "deploy_type")
        if (dt is None or dt == "kv_store_lb" or not is_strategy_supported_on_hardware(r, s, profile, hw)
                or not is_strategy_reachable(r, s, dt, gpn, hw)
                or (not scalable and spans_nodes(s, dt))):
            continue
        served.append((s, max(2 if dt == "multi_node" else 1, nodes_for_strategy(r, s, gpn, hw))))
    return served


def _stores(catalog: Catalog, r: Mapping[str, Any], variant: Mapping[str, Any], profile: Mapping[str, Any],
            hw: str) -> list[tuple[str, str, int]]:
    """The Mooncake deployments offered on ``hw``: id, the serving strategy under it, node count."""
    ids = [kv_id for kv_id, spec in catalog.strategies.items()
           if get(spec, "deploy_type") == "kv_store_lb" and kv_store_offered(r, kv_id, profile, hw)]
    nc = (1 if fits_single_node(profile, variant, hw) else 2) if ids else 1
    return [(kv_id, recommend_strategy(r, nc), nc) for kv_id in ids]


def offered_selections(catalog: Catalog, recipe: Recipe) -> Iterator[Selection]:
    """Per variant and listed hardware, each served ``(strategy, nodes)`` with every feature set (on
    ``pd_cluster`` each also with :func:`pd_pool_request`) and with each KV choice; then each Mooncake
    deployment. None for an omni recipe."""
    r = recipe.data
    if recipe.is_omni:
        return
    kv_offered: dict[tuple[str, str], list[str]] = {}  # KV choices read the hardware and strategy, not the variant
    for vk, variant in as_map(r.get("variants")).items():
        if not is_map(variant):
            continue
        for hw in listed_hardware(catalog.hardware_profiles, variant, r):
            profile = as_map(catalog.hardware_profiles.get(hw))
            served = served_strategies(catalog, r, profile, hw)
            defaults = tuple(default_features(r, hw, vk))
            feature_sets = list(dict.fromkeys(_feature_sets(r, defaults))) if served else []
            for s, nodes in served:
                for feats, modes in feature_sets:
                    yield Selection(variant_key=vk, hw_id=hw, strategy=s, node_count=nodes, features=feats,
                                    feature_modes=modes)
                    if s == "pd_cluster":
                        yield Selection(variant_key=vk, hw_id=hw, strategy=s, node_count=1, features=feats,
                                        feature_modes=modes, pd_nodes=pd_pool_request())
                if (hw, s) not in kv_offered:
                    kv_offered[(hw, s)] = kv_choices(catalog, recipe, hw, s)
                for kv in kv_offered[(hw, s)]:
                    yield Selection(variant_key=vk, hw_id=hw, strategy=s, node_count=nodes, features=defaults,
                                    kv_offload=kv)
            for kv_id, strategy, nc in _stores(catalog, r, variant, profile, hw):
                yield Selection(variant_key=vk, hw_id=hw, strategy=strategy, node_count=nc, features=defaults,
                                kv_offload=kv_id)
