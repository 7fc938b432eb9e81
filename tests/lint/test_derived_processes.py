"""Processes derived from a base plan (KV options, other feature sets) are exactly the resolved ones.

Over a reduced benchmark catalog (PD, multi-node, Mooncake, KV options with and
without env, on many hardware profiles): every derived process list equals, token
for token and env entry for env entry (values and sources), what ``resolve`` gives.
And the pass that counts such a selection by its new last tokens alone
(``RecipePass.add_suffix``) reports what the straightforward path does, both
where those tokens have findings of their own and where they shadow recipe tokens.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.catalog.diagnostics import Finding
from vllm_recipes.lint.deadvalues import dead_value_findings, offered_selections
from vllm_recipes.lint.derived_processes import (
    base_feature_tokens,
    feature_set_processes,
    kv_option_processes,
)
from vllm_recipes.lint.validate_pass import RecipePass, recipe_pass_findings
from vllm_recipes.lint.vllm_validate import ReleaseFindings
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.select.defaults import default_features
from vllm_recipes.select.selection import Selection
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
            ctx, processes = derived.ctx, derived.processes
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


def test_feature_set_processes_are_the_resolved_ones(catalog: Catalog) -> None:
    seen: Counter[str] = Counter()
    for recipe in catalog.recipes:
        for sel in offered_selections(catalog, recipe):
            default = tuple(default_features(recipe.data, sel.hw_id, sel.variant_key))
            if sel.kv_offload or (sel.features == default and not sel.feature_modes):
                continue
            base_sel = dataclasses.replace(sel, features=default, feature_modes=())
            try:
                _ctx, base = resolve(catalog, recipe, base_sel)
            except Exception:
                continue
            known = base_feature_tokens(catalog, recipe, base_sel)
            derived = feature_set_processes(catalog, recipe, sel, base_sel, base, known)
            assert derived is not None, sel  # the base processes always end with the base's feature tokens
            want_ctx, plan = resolve(catalog, recipe, sel)
            assert derived.processes == plan_processes(plan, env_on_workers=True), sel
            assert derived.ctx == want_ctx
            seen[type(plan).__name__] += 1
            seen["modes"] += bool(sel.feature_modes)
            seen["tokens replaced"] += bool(known) and derived.suffix != known
    assert {"SinglePlan", "MultiNodePlan", "PdPlan"} <= set(seen), seen
    assert seen["modes"] >= 20 and seen["tokens replaced"] >= 100, seen


def test_a_mooncake_store_is_not_derived_from_a_kv_option_base(catalog: Catalog) -> None:
    """A store changes the deployment shape (its own plan, Mooncake args and env): not from the plain plan."""
    recipe = catalog.recipes[0]
    stores = [s for s in offered_selections(catalog, recipe)
              if s.kv_offload and catalog.strategies.get(s.kv_offload) is not None]
    assert stores
    _ctx, base = resolve(catalog, recipe, dataclasses.replace(stores[0], kv_offload=None))
    assert kv_option_processes(catalog, recipe, stores[0], base) is None


def _straightforward(catalog: Catalog, recipe_index: int, forced: str | None = None) -> list[Finding]:
    recipe = catalog.recipes[recipe_index]
    acc = ReleaseFindings(catalog, forced, recipe)
    return [*dead_value_findings(catalog, recipe, on_plan=acc.add), *acc.findings]


def _suffix_counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool]]:
    """Records every ``add_suffix`` call: (a KV-option selection?, counted by its new tokens alone?)."""
    answers: list[tuple[bool, bool]] = []
    original = RecipePass.add_suffix

    def spy(self: RecipePass, sel: Selection, *args: object) -> bool:
        answer = original(self, sel, *args)  # type: ignore[arg-type]
        answers.append((sel.kv_offload is not None, answer))
        return answer

    monkeypatch.setattr(RecipePass, "add_suffix", spy)
    return answers


def test_option_token_findings_come_from_the_suffix_alone(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against an old release the option's connectors are unregistered: reported from the option tokens,
    named by the first KV selection, as on the straightforward path."""
    want = _straightforward(catalog, 0, forced="0.10.2")
    answers = _suffix_counted(monkeypatch)
    got = recipe_pass_findings(catalog, catalog.recipes[0], "0.10.2")
    assert got == want
    assert answers.count((True, True)) >= 50 and answers.count((False, True)) >= 50
    assert any(f.file == catalog.taxonomy_file and f.key_path.startswith("kv_offload.") for f in got)


@pytest.fixture(scope="module")
def shadowing_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """One generated recipe whose base args carry a ``--kv-transfer-config`` that its variants always shadow:
    a KV option then shadows the variant's (and the base's) token instead."""
    root = make_catalog(tmp_path_factory.mktemp("kv-shadow"), n_recipes=1)
    path = next((root / "models").rglob("*.yaml"))
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    flag = "--kv-transfer-config"
    doc["model"]["base_args"] = [*(doc["model"].get("base_args") or []), flag, '{"kv_connector":"NixlConnector"}']
    for variant in doc["variants"].values():
        variant["extra_args"] = [*(variant.get("extra_args") or []), flag,
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']
    # a default-on feature whose default mode sets a flag the base args carry and whose other mode does not:
    # picking the other mode lets the base args' token through (a base token no longer shadowed)
    doc["model"]["base_args"] += ["--max-num-batched-tokens", "4096"]
    doc["features"]["prefill_tuning"] = {
        "description": "Prefill batch size.", "default_mode": "large",
        "modes": {"large": {"label": "Large", "description": "Large prefill batches.",
                            "args": ["--max-num-batched-tokens", "65536"]},
                  "plain": {"label": "Plain", "description": "Chunked prefill.", "args": ["--enable-chunked-prefill"]}}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return load_catalog(root)


def test_option_tokens_that_shadow_recipe_tokens_are_counted_in_full(shadowing_catalog: Catalog,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    want = _straightforward(shadowing_catalog, 0)
    answers = _suffix_counted(monkeypatch)
    got = recipe_pass_findings(shadowing_catalog, shadowing_catalog.recipes[0])
    assert got == want
    kv = [answer for is_kv, answer in answers if is_kv]
    assert kv and not any(kv)  # every KV option shadows a recipe token: none is counted by its tokens alone
    assert (False, False) in answers  # the other prefill mode no longer shadows a base token: counted in full
    assert not [f for f in got if f.code == "dead-value" and "4096" in f.message]  # emitted with the plain mode
    shadowed = [f for f in got if f.code == "dead-value" and f.key_path.startswith("model.base_args")]
    assert shadowed and all("kv-option" in f.message for f in shadowed), [f.message for f in shadowed]
