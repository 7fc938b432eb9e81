"""The shortcuts of ``validate``'s fast pass, each held equal to the long way on the benchmark catalog.

- keying selections from their shared parts (:func:`keyed_selections`) gives exactly the offered selections,
  their ``_Equivalence`` keys and the keys of the plans they are derived from;
- a feature set's context made from its base's (``with_selection``) is the one ``build_context`` makes;
- a tail counted once per (tail, env, release) reports what counting it every time does.

The whole pass is compared with the straightforward path in ``test_validate_pass.py`` and
``test_derived_processes.py``.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.lint import validate_pass
from vllm_recipes.lint.deadvalues import offered_groups, offered_selections
from vllm_recipes.lint.validate_pass import RecipePass, _Equivalence, keyed_selections, recipe_pass_findings
from vllm_recipes.select.defaults import default_features
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx, build_context, with_selection
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolve import resolve_plan

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from catalog_gen import make_catalog


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return load_catalog(make_catalog(tmp_path_factory.mktemp("shortcuts"), n_recipes=4))


def _base_key(catalog: Catalog, recipe_data: dict, eq: _Equivalence, sel: Selection, key: object) -> object:
    """The key of the plan ``sel`` is derived from, the selection-by-selection way (``None``: resolved)."""
    if type(key) is not tuple:
        return None
    if sel.kv_offload:
        if sel.kv_offload in catalog.strategies:
            return None
        return eq.key(dataclasses.replace(sel, kv_offload=None))
    default = tuple(default_features(recipe_data, sel.hw_id, sel.variant_key))
    if sel.features != default or sel.feature_modes:
        return eq.key(dataclasses.replace(sel, features=default, feature_modes=()))
    return None


def test_keyed_selections_are_the_first_offered_ones_of_their_keys(catalog: Catalog) -> None:
    seen = {"derived": 0, "feature bases": 0, "pool sets derived": 0, "repeated keys": 0}
    for recipe in catalog.recipes:
        eq = _Equivalence(catalog, recipe)
        done: set[object] = set()
        items = list(keyed_selections(eq, offered_groups(catalog, recipe), done))
        want: list[tuple[object, Selection]] = []
        keys: set[object] = set()
        for sel in offered_selections(catalog, recipe):
            key = eq.key(sel)
            if key in keys:
                seen["repeated keys"] += 1
                continue
            keys.add(key)
            want.append((key, sel))
        assert done == keys and len(items) == len(want)
        for item, (key, sel) in zip(items, want, strict=True):
            assert repr(item.sel) == repr(sel)
            assert item.key == key and repr(item.key) == repr(key), sel  # (types too: 8 and 8.0 differ)
            base = _base_key(catalog, recipe.data, eq, sel, key)
            assert item.base_key == base and repr(item.base_key) == repr(base), sel
            if item.base_sel is not None:
                default = tuple(default_features(recipe.data, sel.hw_id, sel.variant_key))
                assert item.base_sel == dataclasses.replace(sel, features=default, feature_modes=())
                seen["feature bases"] += 1
            seen["derived"] += base is not None
            seen["pool sets derived"] += sel.pd_nodes is not None and base is not None
    assert seen["derived"] >= 500 and seen["feature bases"] >= 100 and seen["pool sets derived"] >= 10, seen
    assert seen["repeated keys"] >= 500, seen


def test_a_feature_sets_context_from_its_bases_is_the_built_one(catalog: Catalog) -> None:
    checked = refused = 0
    for recipe in catalog.recipes[:2]:
        bases: dict[tuple[str, str, str, int], object] = {}
        for sel in offered_selections(catalog, recipe):
            if sel.kv_offload:
                continue
            k = (sel.variant_key, sel.hw_id, sel.strategy, sel.node_count)
            built = build_context(catalog, recipe.data, recipe.rel_path, sel)
            base = bases.setdefault(k, built)
            assert with_selection(base, sel) == built  # type: ignore[arg-type]
            checked += 1
            other = dataclasses.replace(sel, node_count=sel.node_count + 1)
            assert with_selection(base, other) is None  # type: ignore[arg-type]
            assert with_selection(base, dataclasses.replace(sel, node_count=float(sel.node_count))) is None  # type: ignore[arg-type]
            refused += 1
    assert checked >= 100 and refused == checked


def test_a_tail_counted_once_reports_what_counting_it_every_time_does(catalog: Catalog,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Against an old release the KV options' connectors have findings; with the tail memo off (every
    tail counted again) the findings are the same, and the memo did answer."""
    recipe = catalog.recipes[0]
    hits = 0
    original = RecipePass.add_suffix

    def counting(self: RecipePass, *args: object) -> bool:
        nonlocal hits
        before = len(self._tails_done)
        answer = original(self, *args)  # type: ignore[arg-type]
        hits += answer and len(self._tails_done) == before
        return answer

    monkeypatch.setattr(RecipePass, "add_suffix", counting)
    fast = recipe_pass_findings(catalog, recipe, "0.10.2")
    assert hits >= 50

    class Forgetful(dict):  # type: ignore[type-arg]
        def get(self, key: object, default: object = None) -> object:
            return default

    monkeypatch.setattr(RecipePass, "add_suffix", original)
    init = RecipePass.__init__

    def forgetful_init(self: RecipePass, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        self._tails_done = Forgetful()

    monkeypatch.setattr(RecipePass, "__init__", forgetful_init)
    assert recipe_pass_findings(catalog, recipe, "0.10.2") == fast
    assert any(f.file == catalog.taxonomy_file for f in fast)


def test_the_pass_does_not_resolve_what_it_derives(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Derived selections are not resolved (else the shortcuts above would be for nothing)."""
    resolved: list[Selection] = []

    def spy(ctx: Ctx) -> Plan:
        resolved.append(ctx.sel)
        return resolve_plan(ctx)

    monkeypatch.setattr(validate_pass, "resolve_plan", spy)
    recipe = catalog.recipes[0]
    recipe_pass_findings(catalog, recipe)
    offered = list(offered_selections(catalog, recipe))
    options = [s for s in resolved if s.kv_offload and s.kv_offload not in catalog.strategies]
    pools = [s for s in resolved if s.pd_nodes is not None]
    assert 0 < len(resolved) < len(offered) / 2 and not options
    assert pools and len(pools) < len([s for s in offered if s.pd_nodes is not None]) / 2
