"""``validate``'s fast pass gives exactly the straightforward path's findings.

The straightforward path resolves every offered selection and dedupes, tallies
and lints every process of it (``dead_value_findings`` with a
``ReleaseFindings`` hook). The fast pass skips equivalent selections, does each
distinct process once and spreads recipes over forked workers. Compared on a
reduced copy of the benchmark catalog (seeds varied along exact-GPU and
generation overrides, PD, Mooncake, feature modes, variants), finding for
finding and in order.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.catalog.diagnostics import Finding
from vllm_recipes.lint.deadvalues import dead_value_checker, dead_value_findings, offered_selections
from vllm_recipes.lint.finalized import final_positions, token_shape
from vllm_recipes.lint.validate_pass import _Equivalence, catalog_pass_findings, recipe_pass_findings
from vllm_recipes.lint.vllm_validate import ReleaseFindings
from vllm_recipes.render.shell import final_tokens
from vllm_recipes.synth.plan import Arg, Invocation, Source

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from catalog_gen import make_catalog


@pytest.fixture(scope="module")
def bench_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_catalog(tmp_path_factory.mktemp("validate-catalog"), n_recipes=6)


@pytest.fixture(scope="module")
def straightforward(bench_catalog: Path) -> list[Finding]:
    """Every offered selection resolved, each of its processes finalized, tallied and linted."""
    catalog = load_catalog(bench_catalog)
    out: list[Finding] = []
    for recipe in catalog.recipes:
        if recipe.is_omni:
            continue
        acc = ReleaseFindings(catalog, recipe=recipe)
        out.extend(dead_value_findings(catalog, recipe, on_plan=acc.add))
        out.extend(acc.findings)
    return out


def test_the_comparison_is_not_vacuous(straightforward: list[Finding]) -> None:
    codes = {f.code for f in straightforward}
    assert "dead-value" in codes
    assert {"vllm-min-version", "vllm-unknown-env"} <= codes
    assert any("(e.g. --hardware" in f.message for f in straightforward)


def test_fast_pass_in_one_process_equals_the_straightforward_path(bench_catalog: Path,
                                                                   straightforward: list[Finding]) -> None:
    assert catalog_pass_findings(load_catalog(bench_catalog), workers=1) == straightforward


def test_forked_workers_give_the_same_findings_in_the_same_order(bench_catalog: Path,
                                                                  straightforward: list[Finding]) -> None:
    assert catalog_pass_findings(load_catalog(bench_catalog), workers=2) == straightforward


def test_a_finding_in_a_shared_file_names_the_model_it_came_from(straightforward: list[Finding],
                                                                 bench_catalog: Path) -> None:
    """Every recipe declaring an old ``min_vllm_version`` trips the taxonomy's frontend env: one line each, each
    naming its model (else ``validate`` printed the very same line once per recipe)."""
    ids = {r.rel_path: r.hf_id for r in load_catalog(bench_catalog).recipes}
    shared = [f for f in straightforward if f.file not in ids and f.code.startswith("vllm-")]
    assert len(shared) >= 2
    assert len({f.format() for f in straightforward}) == len(straightforward)
    for f in shared:
        assert any(f"(e.g. {hf} --" in f.message for hf in ids.values()), f.message
    own = [f for f in straightforward if f.file in ids and f.code.startswith("vllm-")]
    assert own and all("(e.g. --" in f.message for f in own)  # in its own file the model goes without saying


def test_dead_values_alone_equal_the_straightforward_tally(bench_catalog: Path,
                                                          straightforward: list[Finding]) -> None:
    assert dead_value_checker(load_catalog(bench_catalog)) == [f for f in straightforward if f.code == "dead-value"]


def test_skipping_equivalent_hardware_changes_nothing_and_skips_something(bench_catalog: Path) -> None:
    catalog = load_catalog(bench_catalog)
    recipe = catalog.recipes[0]
    every = recipe_pass_findings(load_catalog(bench_catalog), recipe, skip_equivalent=False)
    assert recipe_pass_findings(catalog, recipe) == every
    eq = _Equivalence(catalog, recipe)
    sels = list(offered_selections(catalog, recipe))
    distinct = {eq.key(s, equivalent=False) for s in sels}
    merged = {eq.key(s) for s in sels}
    assert len(merged) < len(distinct) <= len(sels)


def test_a_named_gpu_keeps_its_own_class(bench_catalog: Path) -> None:
    """Hardware the recipe names in an override is never merged with another profile."""
    catalog: Catalog = load_catalog(bench_catalog)
    for recipe in catalog.recipes:
        eq = _Equivalence(catalog, recipe)
        for sel in offered_selections(catalog, recipe):
            variant = recipe.data["variants"].get(sel.variant_key) or {}
            if sel.hw_id in (variant.get("hardware_overrides") or {}):
                assert eq.hardware_key(sel)[0][0][0] == sel.hw_id  # ((rendering key, image), ...)
                return
    pytest.fail("no selection on hardware named by its variant")


# -- positions of finalize ---------------------------------------------------------------------

_TOKENS = st.sampled_from(["--a", "--b", "--c", "-x", "1", "v", "w", "", "-1", "--a.k"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_TOKENS, max_size=14), st.lists(st.sampled_from(["--a", "--c", "-x", "v"]), max_size=2, unique=True))
def test_final_positions_are_final_tokens_on_positions(values: list[str], drop: list[str]) -> None:
    args = tuple(Arg(v, Source("layer", "f.yaml", ("args",)), i) for i, v in enumerate(values))
    inv = Invocation("m", args, drop_flags=tuple(drop))
    kept, shadowed = final_tokens(inv)
    pos = {id(a): i for i, a in enumerate(args)}
    got = final_positions(values, tuple(drop))
    assert got.kept == tuple(pos[id(a)] for a in kept)
    assert got.kept_values == tuple(a.value for a in kept)
    by_shape = final_positions(token_shape(values, tuple(drop)), tuple(drop))  # what the memo shares
    assert (by_shape.kept, by_shape.shadowed) == (got.kept, got.shadowed)
    winner = {a.value: pos[id(a)] for a in kept if a.value.startswith("-")}
    assert got.shadowed == tuple((pos[id(t)], winner.get(flag, -1)) for flag, units in shadowed.items()
                                 for u in units for t in (u.flag, u.value) if t is not None)
