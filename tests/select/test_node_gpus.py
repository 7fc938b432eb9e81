"""One rule for a hardware profile's GPUs per node (issue #26): a positive number, else 8, wherever it is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_recipes.catalog import load_catalog
from vllm_recipes.perf.recommend import Sla, recommend
from vllm_recipes.perf.scheduler import Workload
from vllm_recipes.select import gates as g

PERF_DATA = Path(__file__).parents[1] / "perf" / "data"


@pytest.mark.parametrize(("count", "want"), [(4, 4), (4.0, 4.0), (None, 8), (0, 8), (-2, 8), (True, 8), ("4", 8)])
def test_the_rule(count: object, want: float) -> None:
    assert g.node_gpus(count) == want


def test_a_negative_count_is_the_default_not_a_node_that_reaches_nothing() -> None:
    # validate reports a non-positive gpu_count, but the engine still plans: -2 says nothing about the node, like 0
    r = {"strategy_min_gpus": {"multi_node_tp": 20}}
    assert g.nodes_for_strategy(r, "multi_node_tp", -2, "x") == g.nodes_for_strategy(r, "multi_node_tp", None, "x") == 3
    assert g.is_strategy_reachable(r, "multi_node_tp", "multi_node", -2, "x")


def test_perf_walks_a_float_count_like_the_whole_number(tmp_path: Path) -> None:
    # a YAML ``4.0`` is a valid gpu_count; the recommend walk used to read it as "not said" (8 GPUs a node)
    considered = []
    for count in ("4", "4.0"):
        layer = tmp_path / count
        layer.mkdir()
        (layer / "taxonomy.yaml").write_text(f"hardware_profiles:\n  h100:\n    gpu_count: {count}\n")
        catalog = load_catalog([PERF_DATA / "recipes", layer])
        recipe = catalog.recipe("acme/Dense-70B")
        assert recipe is not None
        rec = recommend(catalog, recipe, Sla(1.0, 0.1), Workload(1024, 128, concurrency=8), hardware=("h100",))
        considered.append(rec.considered)
    assert considered[0] == considered[1]
