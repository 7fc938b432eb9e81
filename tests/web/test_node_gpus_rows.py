"""The builder's node rows read a profile's GPUs per node by the engine's one rule (issue #26): a count
the catalog accepts but that says nothing about the node (0, negative) shows 8 GPUs a node, as the engine
plans with, never "0 GPUs" or "-4 GPUs"."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.web.site import SiteIndex
from vllm_recipes.web.twins import recipe_page_json

PERF_RECIPES = Path(__file__).parents[1] / "perf" / "data" / "recipes"


def _rows(dirs: list[Path], hf_id: str, query: list[tuple[str, str]]) -> dict[str, Any]:
    catalog = load_catalog(dirs)
    recipe = catalog.recipe(hf_id)
    assert recipe is not None
    out = recipe_page_json(catalog, SiteIndex(catalog), recipe, query, None)
    assert out["notices"] == []
    return {row["key"]: row for row in out["builder"]["rows"]}


def test_a_negative_gpu_count_shows_eight_gpus_a_node(tmp_path: Path) -> None:
    (tmp_path / "taxonomy.yaml").write_text("hardware_profiles:\n  h200:\n    gpu_count: -2\n")
    rows = _rows([PERF_RECIPES, tmp_path], "acme/Dense-70B", [("hardware", "h200"), ("strategy", "multi_node_tp"),
                                                               ("nodes", "2")])
    assert [p["sub"] for p in rows["nodes"]["pills"]] == ["8 GPUs", "16 GPUs"]
    assert rows["nodes"]["hint"] == "16 GPUs in total"


def test_a_zero_gpu_count_shows_eight_gpus_a_pd_node(tmp_path: Path) -> None:
    (tmp_path / "taxonomy.yaml").write_text("hardware_profiles:\n  b200:\n    gpu_count: 0\n")
    recipe = tmp_path / "models" / "deepseek-ai"
    recipe.mkdir(parents=True)
    shutil.copy(BUNDLED_DIR / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml", recipe)
    rows = _rows([tmp_path], "deepseek-ai/DeepSeek-V4.1-Flash", [("hardware", "b200"), ("strategy", "pd_cluster")])
    assert rows["pd-prefill"]["pills"][1]["title"] == "2 x 8 GPUs"
