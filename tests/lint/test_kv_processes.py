"""A KV-option selection's processes derived from its base plan are exactly the resolved ones.

Over a reduced benchmark catalog (PD, multi-node, Mooncake, KV options with and
without env, on many hardware profiles): every derived process list equals, token
for token and env entry for env entry (values and sources), what ``resolve`` gives.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from pathlib import Path

import pytest

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.lint.deadvalues import offered_selections
from vllm_recipes.lint.kv_processes import kv_option_processes
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.synth.resolve import resolve

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from catalog_gen import make_catalog


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return load_catalog(make_catalog(tmp_path_factory.mktemp("kv-catalog"), n_recipes=4))


def test_derived_processes_are_the_resolved_ones(catalog: Catalog) -> None:
    seen: Counter[str] = Counter()
    for recipe in catalog.recipes:
        for sel in offered_selections(catalog, recipe):
            if not sel.kv_offload:
                continue
            try:
                _ctx, base = resolve(catalog, recipe, dataclasses.replace(sel, kv_offload=None))
            except Exception:
                continue
            derived = kv_option_processes(catalog, recipe, sel, base)
            if derived is None:
                seen["resolved instead"] += 1
                continue
            ctx, processes = derived
            want_ctx, plan = resolve(catalog, recipe, sel)
            assert processes == plan_processes(plan, env_on_workers=True), sel
            assert ctx == want_ctx
            seen[type(plan).__name__] += 1
            seen["with option env" if any(e.source.layer == "kv-option" for _t, _i, env in processes for e in env)
                 else "without option env"] += 1
            seen["option tokens"] += any(a.source.layer == "kv-option" for _t, inv, _e in processes for a in inv.args)
    # not vacuous: single and multi-node plans, options with and without env, stores resolved instead
    assert {"SinglePlan", "MultiNodePlan", "with option env", "without option env",
            "resolved instead"} <= set(seen), seen
    assert seen["option tokens"] >= 100, seen


def test_a_mooncake_store_is_resolved_instead(catalog: Catalog) -> None:
    """A store changes the deployment shape (its own plan, Mooncake args and env): never derived."""
    recipe = catalog.recipes[0]
    stores = [s for s in offered_selections(catalog, recipe)
              if s.kv_offload and catalog.strategies.get(s.kv_offload) is not None]
    assert stores
    _ctx, base = resolve(catalog, recipe, dataclasses.replace(stores[0], kv_offload=None))
    assert kv_option_processes(catalog, recipe, stores[0], base) is None
