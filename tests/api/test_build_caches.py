"""The build's newer shortcuts give exactly the bytes of the long way.

* floats go through orjson only when orjson spells them as ``json.dumps`` does;
* profiles a recipe cannot tell apart share one rendering
  (``synth.context.rendering_hardware_key``): every pair of profiles with equal
  keys must render identically but for the ``hardware`` id, and sharing must happen;
* contexts, compiled argument tuples, env merges keyed by hardware class and the
  per-recipe gates of ``api.tree.recipe_gates`` are
  covered by ``test_memo_equivalence.py`` (memoized vs unmemoized builds).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.api.build import _encode_fast, encode, orjson_safe
from vllm_recipes.api.tree import render_selection
from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.jsvalues import get
from vllm_recipes.select.defaults import default_features, listed_hardware
from vllm_recipes.select.gates import nodes_for_strategy, offered_strategies
from vllm_recipes.synth.context import rendering_hardware_key

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from catalog_gen import make_catalog

TRICKY_FLOATS = [155.5, 0.95, 1e-7, 1e-5, 1e16, 1e22, -0.0, 5e-324, 2.0 ** 53, math.nan, math.inf, -math.inf]
FLOATS = st.one_of(st.sampled_from(TRICKY_FLOATS), st.floats(allow_nan=True, allow_infinity=True))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), FLOATS, st.text(max_size=6))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES)
def test_orjson_is_used_only_where_it_writes_json_dumps_bytes(value: Any) -> None:
    if orjson_safe(value):
        assert _encode_fast(value) == encode(value)


def test_plain_figures_are_orjson_safe_and_odd_spellings_are_not() -> None:
    assert orjson_safe({"checkpoint_gib": {"fp8": 148.66, "default": 155.5}, "fraction": 0.95})
    for odd in (1e-7, 1e-5, math.nan, math.inf):
        assert not orjson_safe({"x": [1, odd]}), odd


@pytest.fixture(scope="module")
def bench_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return load_catalog(make_catalog(tmp_path_factory.mktemp("bench-catalog-hw"), n_recipes=8))


def _fresh(catalog: Catalog) -> Catalog:
    return dataclasses.replace(catalog, memo={})


def test_profiles_with_one_rendering_key_render_alike_but_for_their_id(bench_catalog: Catalog) -> None:
    """The key's claim, checked without the cache: equal keys -> equal renderings (fresh each)."""
    groups: dict[tuple[Any, ...], list[tuple[str, dict[str, Any] | None]]] = defaultdict(list)
    for recipe in bench_catalog.recipes:
        r = recipe.data
        for vk, variant in recipe.variants.items():
            for hw in listed_hardware(bench_catalog.hardware_profiles, variant, r):
                gpn = get(bench_catalog.hardware_profiles.get(hw), "gpu_count")
                feats = default_features(r, hw, vk)
                for s in offered_strategies(r):
                    nodes = max(2 if s.startswith("multi_node_") else 1, nodes_for_strategy(r, s, gpn, hw))
                    key = (recipe.rel_path, vk, s, nodes,
                           rendering_hardware_key(bench_catalog, r, recipe.rel_path, vk, s, hw))
                    out = render_selection(_fresh(bench_catalog), recipe, vk, s, hw, nodes, feats)
                    groups[key].append((hw, out))
    shared = [g for g in groups.values() if len({hw for hw, _ in g}) > 1]
    assert len(shared) > 20, "the benchmark catalog must exercise sharing"
    for members in shared:
        (_, first), *rest = members
        for hw, out in rest:
            if first is None or out is None:
                assert first is out, hw
            else:
                assert {**out, "hardware": None} == {**first, "hardware": None}, hw


def _twins(catalog: Catalog) -> tuple[Any, str, str, str, str]:
    """A recipe, variant, strategy and two profiles it cannot tell apart."""
    for recipe in catalog.recipes:
        for vk, variant in recipe.variants.items():
            hws = listed_hardware(catalog.hardware_profiles, variant, recipe.data)
            for s in offered_strategies(recipe.data):
                if s.startswith("multi_node_") or s == "pd_cluster":
                    continue
                by_key: dict[Any, list[str]] = defaultdict(list)
                for hw in hws:
                    by_key[rendering_hardware_key(catalog, recipe.data, recipe.rel_path, vk, s, hw)].append(hw)
                for group in by_key.values():
                    if len(group) > 1:
                        return recipe, vk, s, group[0], group[1]
    raise AssertionError("no two profiles share a key")


def test_a_shared_rendering_carries_the_asking_profile_id(bench_catalog: Catalog) -> None:
    catalog = _fresh(bench_catalog)
    recipe, vk, s, a, b = _twins(catalog)
    first = render_selection(catalog, recipe, vk, s, a, 1, [])
    second = render_selection(catalog, recipe, vk, s, b, 1, [])
    assert first is not None and second is not None
    assert (first["hardware"], second["hardware"]) == (a, b)
    assert list(second) == list(first)
    second["strategy_spec"] = {}  # callers add keys: the shared entry must not see them
    again = render_selection(catalog, recipe, vk, s, b, 1, [])
    assert again is not None and "strategy_spec" not in again


def test_a_profile_the_recipe_names_gets_its_own_key(bench_catalog: Catalog) -> None:
    recipe = next(r for r in bench_catalog.recipes
                  if any("h100" in (get(v, "hardware_overrides") or {}) for v in r.variants.values()))
    vk = next(k for k, v in recipe.variants.items() if "h100" in (get(v, "hardware_overrides") or {}))
    key = rendering_hardware_key(bench_catalog, recipe.data, recipe.rel_path, vk, "single_node_tp", "h100")
    assert key[0] == "h100"


def test_features_memo_keyed_by_admitted_features_matches_fresh_plans(tmp_path: Path) -> None:
    """A feature limited to some strategies: strategies that admit the same features share
    the features entry, and every plan equals one resolved with a memo that stores nothing."""
    import yaml

    from vllm_recipes.api.build import build_api
    from vllm_recipes.render.explain import explain_json
    from vllm_recipes.select.selection import Selection
    from vllm_recipes.synth.resolve import resolve

    root = make_catalog(tmp_path / "cat", n_recipes=2)
    limited = 0
    for path in sorted((root / "models").rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        offered = doc.get("compatible_strategies") or []
        for i, feat in enumerate((doc.get("features") or {}).values()):
            if isinstance(feat, dict) and offered:
                feat["strategies"] = offered[i % len(offered):][:2]
                limited += 1
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    assert limited
    catalog = load_catalog(root)

    class NoMemo(dict):  # type: ignore[type-arg]
        def __setitem__(self, key: Any, value: Any) -> None:
            return None

    plain = dataclasses.replace(catalog, memo=NoMemo())
    checked = 0
    for recipe in catalog.recipes:
        feats = tuple(recipe.data.get("features") or ())
        for hw in ("h200", "b200", "mi355x"):
            for s in offered_strategies(recipe.data):
                sel = Selection(hw_id=hw, strategy=s, features=feats, node_count=2 if s.startswith("multi") else 1)
                try:
                    _, plan = resolve(catalog, recipe, sel)
                except Exception as exc:
                    with pytest.raises(type(exc)):
                        resolve(plain, recipe, sel)
                    continue
                _, fresh = resolve(plain, recipe, sel)
                assert plan == fresh, (recipe.rel_path, hw, s)
                assert explain_json(catalog, plan) == explain_json(plain, fresh)
                checked += 1
    assert checked > 20
    assert build_api(catalog, jobs=1).files == build_api(plain, jobs=1).files


def test_docker_forms_laid_out_from_a_shared_head_equal_the_direct_ones(bench_catalog: Catalog) -> None:
    """``render.rendering`` lays the env part of ``docker run`` out once per env; the forms must
    equal ``docker_run_text`` / ``docker_run_argv`` of the same command."""
    from vllm_recipes.render.docker import docker_run_argv, docker_run_text
    from vllm_recipes.render.rendering import _dock, env_pairs, meta_for, rendering_object
    from vllm_recipes.select.selection import Selection
    from vllm_recipes.synth.plan import EnvValue, SinglePlan, Source
    from vllm_recipes.synth.resolve import resolve

    catalog = _fresh(bench_catalog)
    checked = 0
    for recipe in catalog.recipes:
        for hw in ("h200", "mi355x", "b200"):
            ctx, plan = resolve(catalog, recipe, Selection(hw_id=hw, features=tuple(recipe.data.get("features") or ())))
            assert isinstance(plan, SinglePlan)
            out = rendering_object(ctx, plan)
            pairs = env_pairs(plan.env)
            assert out["docker_command"] == docker_run_text(out["command"], pairs, meta_for(ctx))
            assert out["docker_argv"] == docker_run_argv(out["argv"], pairs, meta_for(ctx))
            checked += 1
    assert checked >= 8
    # a local model path (mount and comment) and a config-path env var, on another port
    env = (EnvValue("LMCACHE_CONFIG_PATH", "/etc/lm.yaml", Source("test"), ()),)
    text = "vllm serve /models/m \\\n  --port 8002"
    argv = ("vllm", "serve", "/models/m", "--port", "8002")
    memo: dict[Any, Any] = {}
    for _ in range(2):  # the second time the head comes from memory
        got = _dock(memo, meta_for(ctx), (text, argv), env, 8002)
        assert got == (docker_run_text(text, env_pairs(env), meta_for(ctx), 8002),
                       docker_run_argv(argv, env_pairs(env), meta_for(ctx), 8002))
    assert got[0].startswith("# /models/m must already exist")


def test_a_gpu_count_written_as_a_float_is_another_key(bench_catalog: Catalog) -> None:
    """8 and 8.0 are equal keys in Python but print differently (PD pool sizes): never shared."""
    from vllm_recipes.catalog.yamlsource import FrozenDict

    profiles = bench_catalog.hardware_profiles
    twin = FrozenDict({**profiles["h200"], "gpu_count": 8.0})
    taxonomy = FrozenDict({**bench_catalog.taxonomy,
                           "hardware_profiles": FrozenDict({**profiles, "h200_float": twin})})
    catalog = dataclasses.replace(bench_catalog, taxonomy=taxonomy, memo={})
    for recipe in catalog.recipes:
        keys = [rendering_hardware_key(catalog, recipe.data, recipe.rel_path, "default", "pd_cluster", hw)
                for hw in ("h200", "h200_float")]
        assert keys[0][1:4] == keys[1][1:4] or keys[0][0] == "h200"  # same classes, generation, brand
        assert keys[0] != keys[1]
