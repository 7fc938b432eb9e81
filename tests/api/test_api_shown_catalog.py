"""``ApiBuild.catalog`` is the catalog the API shows (``llms.txt`` reads it): what ``usable_catalog`` would
make of the input — without what the build left out, ``usable``, every reason in ``skipped`` — and it keeps what
the input already computed while the recipes are the same."""

from __future__ import annotations

from pathlib import Path

from api_helpers import recipe, write_dir

from vllm_recipes.api.build import build_api
from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.usable import usable_catalog


def _dir(tmp_path: Path, *, bad: bool) -> Path:
    recipes: dict[str, object] = {"acme/Good.yaml": recipe("acme/Good"), "acme/Other.yaml": recipe("acme/Other")}
    if bad:
        recipes["acme/Bad.yaml"] = recipe("acme/Bad", variants={"default": {"precision": 7}})
        recipes["acme/Modes.yaml"] = recipe("acme/Modes", features={"x": {"modes": {}}})
        recipes["acme/Broken.yaml"] = "meta: [unclosed\n"
    return write_dir(tmp_path / "recipes", recipes)


def test_left_out_recipes_are_gone_and_the_catalog_says_it_is_usable(tmp_path: Path) -> None:
    catalog = load_catalog(_dir(tmp_path, bad=True))
    shown = build_api(catalog, jobs=1, strict=False).catalog
    assert [r.hf_id for r in shown.recipes] == ["acme/Good", "acme/Other"]
    assert shown.usable
    expected, findings = usable_catalog(catalog)
    assert [r.hf_id for r in expected.recipes] == [r.hf_id for r in shown.recipes]
    assert sorted(map(repr, shown.skipped)) == sorted(map(repr, findings))
    assert {f.file for f in shown.skipped} == {"models/acme/Bad.yaml", "models/acme/Modes.yaml",
                                              "models/acme/Broken.yaml"}


def test_a_catalog_with_nothing_left_out_keeps_what_it_computed(tmp_path: Path) -> None:
    catalog = load_catalog(_dir(tmp_path, bad=False))
    shown = build_api(catalog, jobs=1, strict=False).catalog
    assert shown.usable and shown.skipped == () and shown.recipes == catalog.recipes
    assert shown.strategies is catalog.strategies and shown.recipe("acme/Good") is catalog.recipe("acme/Good")
    usable, _ = usable_catalog(catalog)
    assert build_api(usable, jobs=1, strict=False).catalog is usable
