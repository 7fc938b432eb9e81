"""The per-shape compiled caches (``synth.compiled``) never change a plan.

A shape (recipe, variant, strategy, frontend, KV choice) memoizes its hardware
context fields, class parts (static argument triples and layer contributions),
env merges and prefix, features and companions, and the parallelism tokens are
memoized across variants. Every key names only part of a selection, so here the
selections that share a shape (other hardware, feature sets, modes, KV options,
PD pool requests, node and instance counts) are resolved one after another on
one warm catalog and each plan is compared with the plan of a catalog that
remembers nothing. The reduced benchmark catalog varies what those keys read.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_memo_equivalence import forgetful, resolve_both

from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.lint.deadvalues import offered_selections
from vllm_recipes.render.explain import explain_json
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import hardware_class, layer_scope
from vllm_recipes.synth.resolve import resolve

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from catalog_gen import make_catalog


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return load_catalog(make_catalog(tmp_path_factory.mktemp("compiled-catalog"), n_recipes=2))


def siblings(catalog: Catalog, recipe: Recipe) -> Iterator[Selection]:
    """Every fifth offered selection, plus the same with other node and instance counts, pool requests and
    feature lists (the offered ones come grouped by shape: the picked ones still share their shapes)."""
    for sel in islice(offered_selections(catalog, recipe), 0, None, 5):
        yield sel
        yield dataclasses.replace(sel, node_count=sel.node_count + 1)
        if sel.kv_offload:
            yield dataclasses.replace(sel, kv_instances=3)
            yield dataclasses.replace(sel, kv_instances={"count": 3, "current": 2})
        if sel.strategy == "pd_cluster":
            yield dataclasses.replace(sel, pd_nodes={"prefill": 2, "decode": {"nodes": 1, "parallelism": "tp"}})
            yield dataclasses.replace(sel, pd_nodes={"prefill": {"nodes": 2, "rank": 1, "parallelism": "dep"},
                                                     "decode": 2})
        if sel.features:
            yield dataclasses.replace(sel, features=sel.features[::-1])
            yield dataclasses.replace(sel, features=sel.features[1:])


def test_sibling_selections_resolve_as_without_the_memo(catalog: Catalog) -> None:
    plain = forgetful(catalog)
    compared = 0
    for recipe in catalog.recipes:
        if recipe.is_omni:
            continue
        for sel in siblings(catalog, recipe):
            both = resolve_both(catalog, plain, recipe, sel)
            if both is None:
                continue
            (ctx, plan), (pctx, pplan) = both
            assert plan == pplan, (recipe.rel_path, sel)
            assert ctx == pctx, (recipe.rel_path, sel)
            if compared % 7 == 0:  # provenance too (plans compare sources already; explain reads them)
                assert explain_json(catalog, plan) == explain_json(plain, pplan)
            compared += 1
    assert compared > 1500


def test_context_hardware_classes_follow_the_class_rule(catalog: Catalog) -> None:
    """``build_context`` computes both classes inline from cached facts: the same as :func:`hardware_class`."""
    seen = set()
    for recipe in catalog.recipes:
        if recipe.is_omni:
            continue
        for sel in offered_selections(catalog, recipe):
            ctx, _plan = resolve(catalog, recipe, sel)
            args = (catalog, recipe.data, recipe.rel_path, sel.hw_id, ctx.profile)
            assert ctx.hw_class == hardware_class(*args, layer_scope(ctx.variant_data_key, sel.strategy))
            assert ctx.features_hw_class == hardware_class(*args, ("features",))
            seen.add(isinstance(ctx.hw_class, str))
    assert seen == {True, False}  # both named ids and shared classes occur


def write_recipe(root: Path, data: dict[str, Any]) -> Catalog:
    path = root / "models" / "org" / "model.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump({"meta": {"title": "Model"}, "model": {"model_id": "org/model"},
                                    "variants": {"default": {"precision": "bf16"}}, **data}, sort_keys=False),
                    encoding="utf-8")
    return load_catalog(root)


def same_plans(catalog: Catalog, sels: list[Selection]) -> list[Any]:
    """Each selection's plan on the warm catalog, checked against a catalog that remembers nothing."""
    plain = forgetful(catalog)
    recipe = catalog.recipe("org/model")
    assert recipe is not None
    plans = []
    for sel in sels:
        plan = resolve(catalog, recipe, sel)[1]
        assert plan == resolve(plain, recipe, sel)[1], sel
        plans.append(plan)
    return plans


def test_companions_follow_the_feature_list_and_kv_option(tmp_path: Path) -> None:
    """Companions are memoized per shape by the feature list and whether the KV option applies."""
    catalog = write_recipe(tmp_path, {
        "compatible_strategies": ["single_node_tp", "single_node_dep"],
        "features": {"c": {"args": ["--c"], "companion": {"command": "run-c", "label": "C"}},
                     "d": {"args": ["--d"], "companion": {"command": "run-d"}, "strategies": ["single_node_dep"]},
                     "e": {"args": ["--e"]}},
    })
    plans = same_plans(catalog, [Selection(hw_id="h200", strategy=strategy, features=feats, kv_offload=kv)
                                 for kv in (None, "lmcache") for strategy in ("single_node_tp", "single_node_dep")
                                 for feats in (("c",), ("e",), ("c", "d", "e"), ("d", "c"), ())])
    assert len({tuple(c.feature for c in p.companions) for p in plans}) >= 5


def test_hardware_overrides_keyed_by_what_they_read(tmp_path: Path) -> None:
    """The layer's key names the id, the strategy and the role only where the override maps need them."""
    ho = {"hardware_overrides": {"h200": {"extra_args": ["--h200-only"]}, "hopper": {"extra_args": ["--hopper"]}}}
    catalog = write_recipe(tmp_path, {
        "compatible_strategies": ["single_node_tp", "single_node_dep", "pd_cluster"],
        "hardware_overrides": {"blackwell": {"extra_args": ["--recipe-blackwell"]}},
        "strategy_overrides": {"single_node_dep": ho,
                               "pd_cluster": {"prefill": {"hardware_overrides": {"h200": {"extra_args": ["--p"]}}},
                                              "decode": {"hardware_overrides": {"h200": {"extra_args": ["--d"]},
                                                                                "b200": {"extra_args": ["--d-b200"]}}}}},
    })
    plans = same_plans(catalog, [Selection(hw_id=hw, strategy=s) for s in ("single_node_tp", "single_node_dep",
                                                                            "pd_cluster")
                                 for hw in ("h200", "h100", "b200", "b300")])
    tokens = {a.value for p in plans for inv in (getattr(p, "serve", None), *(
        r.serve for r in (getattr(p, "prefill", None), getattr(p, "decode", None)) if r is not None))
        if inv is not None for a in inv.args}
    assert {"--h200-only", "--hopper", "--recipe-blackwell", "--p", "--d", "--d-b200"} <= tokens
