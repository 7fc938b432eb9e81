"""The variant's default hardware is remembered per catalog: a catalog whose profiles differ gets its own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vllm_recipes.catalog import load_catalog
from vllm_recipes.select.state import default_hardware

RECIPE = {"meta": {"title": "Small"}, "model": {"model_id": "acme/Small"},
          "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 40}},
          "compatible_strategies": ["single_node_tp"]}


def test_each_catalog_answers_from_its_own_profiles(tmp_path: Path,
                                                    recipe_writer: Callable[[Path, str, object], Path]) -> None:
    plain, restricted = tmp_path / "plain", tmp_path / "restricted"
    for root in (plain, restricted):
        recipe_writer(root, "acme/Small", RECIPE)
    # the second catalog's taxonomy offers h100 and a restricted h200 (offered only to recipes that declare it)
    (restricted / "taxonomy.yaml").write_text("hardware_profiles:\n  h100: {}\n  h200:\n    restricted: true\n",
                                              encoding="utf-8")
    a, b = load_catalog(str(plain)), load_catalog(str(restricted))
    ra, rb = a.recipes[0], b.recipes[0]

    assert default_hardware(a, ra, "default") == "h200"
    assert default_hardware(b, rb, "default") == "h100"
    assert default_hardware(a, ra, "default") == "h200"  # asked again: still the first catalog's answer
    # the same recipe object read against the other catalog's profiles answers from those profiles
    assert default_hardware(b, ra, "default") == "h100"
