"""A recipe file says the same thing wherever it is validated from: inside the recipes directory or
given on the command line from elsewhere (one rule for "a recipe must be a mapping", one for the name a
strategy file without ``name`` gets)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.validate import validate_catalog, validate_file


@pytest.mark.parametrize(("text", "got"), [("- a\n- b\n", "a list"), ("", "an empty file"), ("7\n", "a number")])
def test_a_recipe_that_is_no_mapping_reads_alike_inside_and_outside(tmp_path: Path, text: str, got: str) -> None:
    inside = tmp_path / "cat" / "models" / "org" / "r.yaml"
    inside.parent.mkdir(parents=True)
    inside.write_text(text)
    outside = tmp_path / "elsewhere" / "models" / "org" / "r.yaml"
    outside.parent.mkdir(parents=True)
    outside.write_text(text)
    catalog = load_catalog(tmp_path / "cat")
    expected = f"a recipe must be a mapping at the top level, got {got}"
    assert [f.message for f in validate_catalog(catalog)] == [expected]
    assert [f.message for f in validate_file(outside, catalog, "r.yaml")] == [expected]


def test_a_strategy_file_without_name_is_named_as_the_loader_names_it(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "strategies").mkdir()
    (tmp_path / "strategies" / ".yaml").write_text("deploy_type: single_node\n")
    catalog = load_catalog(tmp_path)
    assert ".yaml" in catalog.serving_strategies
    bad = [f.message for f in validate_catalog(catalog) if f.code == "bad-id"]
    assert bad == ["strategy name (from the file name) '.yaml' is not a valid identifier "
                   "(1-96 characters of A-Z a-z 0-9 . _ - starting with a letter, digit or _)"]
