"""The builder's node rows read a profile's GPUs per node by the engine's one rule (issue #26): a count
the catalog accepts but that says nothing about the node (0, negative) shows 8 GPUs a node, as the engine
plans with, never "0 GPUs" or "-4 GPUs"."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.catalog.validate import validate_catalog
from vllm_recipes.cli import engine_cmds  # noqa: F401  (registers the commands)
from vllm_recipes.cli.main import cli
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


def test_the_command_plans_the_nodes_the_page_shows_and_validate_reports_the_count(tmp_path: Path) -> None:
    # the engine read the raw count (``--tensor-parallel-size -4``, with 0: ``0``) while the page showed 8 a node
    for count in ("-2", "0"):
        layer = tmp_path / count
        layer.mkdir()
        (layer / "taxonomy.yaml").write_text(f"hardware_profiles:\n  h200:\n    gpu_count: {count}\n")
        rows = _rows([PERF_RECIPES, layer], "acme/Dense-70B", [("hardware", "h200"), ("strategy", "multi_node_tp"),
                                                                ("nodes", "2")])
        assert rows["nodes"]["hint"] == "16 GPUs in total"
        res = CliRunner().invoke(cli, ["command", "acme/Dense-70B", "--recipes-dir", str(PERF_RECIPES), "--recipes-dir",
                                       str(layer), "--hardware", "h200", "--strategy", "multi_node_tp", "--nodes",
                                       "2", "--quiet"], catch_exceptions=False)
        assert res.exit_code == 0
        assert "--tensor-parallel-size 16 \\\n" in res.output
        found = [f for f in validate_catalog(load_catalog([PERF_RECIPES, layer]))
                 if f.key_path == "hardware_profiles.h200.gpu_count"]
        assert [(f.severity, f.file.endswith("taxonomy.yaml"), f.line) for f in found] == [("error", True, 3)]


def test_a_zero_gpu_count_shows_eight_gpus_a_pd_node(tmp_path: Path) -> None:
    (tmp_path / "taxonomy.yaml").write_text("hardware_profiles:\n  b200:\n    gpu_count: 0\n")
    recipe = tmp_path / "models" / "deepseek-ai"
    recipe.mkdir(parents=True)
    shutil.copy(BUNDLED_DIR / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml", recipe)
    rows = _rows([tmp_path], "deepseek-ai/DeepSeek-V4.1-Flash", [("hardware", "b200"), ("strategy", "pd_cluster")])
    assert rows["pd-prefill"]["pills"][1]["title"] == "2 x 8 GPUs"
