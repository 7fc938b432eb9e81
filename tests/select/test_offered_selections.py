"""The selections the lints and the drift check walk: what a user of the builder can reach."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vllm_recipes.catalog import load_catalog
from vllm_recipes.select.defaults import listed_hardware
from vllm_recipes.select.offered import offered_selections, pd_pool_request
from vllm_recipes.synth.resolved import resolved_selections

RECIPE = {
    "meta": {"title": "Tiny", "provider": "Acme", "hardware": {"h100": "verified", "mi300x": "verified"}},
    "model": {"model_id": "acme/Tiny"},
    "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 60}},
    "compatible_strategies": ["single_node_tp", "pd_cluster"],
    "features": {
        "spec": {"label": "Spec", "args": ["--speculative-config", "{}"],
                 "modes": {"fast": {"args": ["--x"]}, "slow": {"args": ["--y"]}}},
        "eager": {"label": "Eager", "args": ["--enforce-eager"], "conflicts_with": ["graphs"]},
        "graphs": {"label": "Graphs", "args": ["--compile"]},
    },
}


def _catalog(tmp_path: Path, recipe_writer: Callable[..., Path], data: dict):  # type: ignore[no-untyped-def]
    recipe_writer(tmp_path, "acme/Tiny", data)
    catalog = load_catalog(tmp_path)
    return catalog, catalog.recipe("acme/Tiny")


def test_every_listed_hardware_strategy_feature_set_mode_and_kv_choice_is_offered(tmp_path, recipe_writer) -> None:
    catalog, recipe = _catalog(tmp_path, recipe_writer, RECIPE)
    sels = list(offered_selections(catalog, recipe))
    listed = listed_hardware(catalog.hardware_profiles, recipe.variants["default"], recipe.data)
    assert "mi300x" in listed
    assert {s.hw_id for s in sels} == set(listed)
    on_h100 = [s for s in sels if s.hw_id == "h100"]
    assert {s.strategy for s in on_h100} == {"single_node_tp", "pd_cluster"}
    # conflicting features: each side on with the others, never both in one set but the defaults
    assert {("spec", "eager"), ("spec", "graphs")} <= {s.features for s in on_h100}
    assert {s.feature_modes for s in on_h100} == {(), (("spec", "fast"),), (("spec", "slow"),)}
    assert {"simple", "lmcache"} <= {s.kv_offload for s in on_h100 if s.strategy == "single_node_tp"}
    # PD: each feature set with the default pools and with the pool request, each its own dict
    pd = [s for s in on_h100 if s.strategy == "pd_cluster" and s.kv_offload is None]
    pools = [s.pd_nodes for s in pd if s.pd_nodes is not None]
    assert len(pools) == len(pd) // 2 and all(p == pd_pool_request() for p in pools)
    assert len({id(p) for p in pools}) == len(pools)


def test_an_omni_recipe_offers_no_serve_selection(tmp_path, recipe_writer) -> None:
    catalog, recipe = _catalog(tmp_path, recipe_writer, {**RECIPE, "meta": {**RECIPE["meta"], "tasks": ["omni"]}})
    assert recipe.is_omni
    assert list(offered_selections(catalog, recipe)) == []


def test_resolved_selections_resolve_each_once_and_skip_look_alike_hardware(tmp_path, recipe_writer) -> None:
    catalog, recipe = _catalog(tmp_path, recipe_writer, RECIPE)
    resolved = list(resolved_selections(catalog, recipe))
    offered = list(offered_selections(catalog, recipe))
    assert 0 < len(resolved) < len(offered)  # h100/h200 (and the other look-alikes) render alike
    assert all(plan is not None and ctx.hw.id == sel.hw_id for sel, ctx, plan in resolved)
    keys = [repr({**vars(sel)}) for sel, _ctx, _plan in resolved]
    assert len(keys) == len(set(keys))
