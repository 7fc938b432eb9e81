"""Memoization never changes a byte: the engine's caches against a catalog that remembers nothing.

Resolve and render memoize compiled layer tuples, contexts, env maps and text by
what they read (hardware *classes*, token values, identities). A key that misses
something a layer reads would make two selections share an answer they must not.
Here a reduced copy of the benchmark catalog (seeds varied along hardware
overrides, PD, Mooncake, feature modes, promoted variants) is built twice, once
with the memo and once with a memo that never stores, and every file, every
explain table and every copyable command must be identical.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest

from vllm_recipes.api.build import build_api
from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.render.deployment import deployment_blocks
from vllm_recipes.render.explain import explain_json
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolve import resolve

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_resolve import selections
from catalog_gen import make_catalog


class NoMemo(dict):  # type: ignore[type-arg]
    """A memo that forgets everything: every lookup recomputes."""

    def __setitem__(self, key: Any, value: Any) -> None:
        return None


def forgetful(catalog: Catalog) -> Catalog:
    return dataclasses.replace(catalog, memo=NoMemo())


def resolve_both(catalog: Catalog, plain: Catalog, recipe: Recipe,
                 sel: Selection) -> tuple[tuple[Ctx, Plan], tuple[Ctx, Plan]] | None:
    """``sel`` resolved on ``catalog`` and on ``plain`` (which remembers nothing); ``None`` when
    the memoized path fails, after checking that the plain path fails the same way."""
    try:
        memoized = resolve(catalog, recipe, sel)
    except Exception as exc:
        with pytest.raises(type(exc)):
            resolve(plain, recipe, sel)
        return None
    return memoized, resolve(plain, recipe, sel)


@pytest.fixture(scope="module")
def bench_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    root = make_catalog(tmp_path_factory.mktemp("bench-catalog"), n_recipes=8)
    return load_catalog(root)


def test_memoized_build_is_byte_identical_to_an_unmemoized_one(bench_catalog: Catalog) -> None:
    memoized = build_api(bench_catalog, jobs=1)
    plain = build_api(forgetful(bench_catalog), jobs=1)
    assert memoized.summary == plain.summary
    assert memoized.warnings == plain.warnings
    assert list(memoized.files) == list(plain.files)
    differing = [p for p, data in memoized.files.items() if plain.files[p] != data]
    assert not differing, differing[:5]
    assert len(bench_catalog.memo) > 0


def test_explain_and_commands_are_unchanged_by_the_memo(bench_catalog: Catalog) -> None:
    plain_catalog = forgetful(bench_catalog)
    sels = list(selections(bench_catalog))
    assert len(sels) > 500
    for recipe, sel in sels[::3]:
        both = resolve_both(bench_catalog, plain_catalog, recipe, sel)
        if both is None:
            continue
        (ctx, plan), (pctx, pplan) = both
        assert plan == pplan, (recipe.rel_path, sel)
        assert explain_json(bench_catalog, plan) == explain_json(plain_catalog, pplan)
        assert rendering_object(ctx, plan) == rendering_object(pctx, pplan)
        for install in ("pip", "docker"):
            assert deployment_blocks(ctx, plan, install) == deployment_blocks(pctx, pplan, install)


def test_a_memoized_context_has_every_field() -> None:
    catalog = load_catalog()
    recipe = catalog.recipes[0]
    ctx, _ = resolve(catalog, recipe, Selection(hw_id="h200"))
    names = {f.name for f in dataclasses.fields(Ctx)}
    assert set(vars(ctx)) == names
