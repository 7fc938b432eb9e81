"""``build-api`` reuses the rendering of a selection whose hardware reads like an earlier one's
(``api.tree.Rendered``): the API must be byte for byte what resolving every selection gives.

The fixture catalog has profiles that read alike (b200/b300, gb200/gb300, mi300x/mi325x) and blocks that tell
them apart: exact-id overrides, generation and brand keyed values, per-hardware feature args and PD pool
sizes, on every kind of deployment (single node, multi-node, PD, a Mooncake store, a promoted variant).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from api_helpers import recipe, write_dir

from vllm_recipes.api.build import build_api
from vllm_recipes.catalog import load_catalog
from vllm_recipes.synth.context import AlikeResolves

ALIKE = ("b200", "b300", "gb200", "gb300", "mi300x", "mi325x")
HARDWARE = ("h100", "h200", *ALIKE, "rtx_pro_6000", "xeon6")

RECIPES: dict[str, dict[str, Any]] = {
    "acme/Exact.yaml": recipe(
        "acme/Exact",
        compatible_strategies=["single_node_tp", "single_node_dep", "multi_node_tp", "pd_cluster"],
        docker_image={"nvidia": "vllm/vllm-openai:v0.30.0", "amd": "rocm/vllm:v0.30.0"},
        variants={"default": {"precision": "bf16", "vram_minimum_gb": 40, "description": "BF16",
                              "hardware_overrides": {"b300": {"extra_args": ["--max-num-seqs", "7"],
                                                              "extra_env": {"B300_ONLY": "1"}},
                                                     "mi325x": {"docker_image": "rocm/vllm:mi325x"}}},
                  "fp8": {"precision": "fp8", "vram_minimum_gb": 30, "model_id": "acme/Exact-FP8",
                          "description": "FP8"}},
        hardware_overrides={"blackwell": {"extra_args": ["--kv-cache-dtype", "fp8"]},
                            "amd": {"extra_env": {"VLLM_ROCM_USE_AITER": "1"}}},
        strategy_overrides={"single_node_dep": {"hardware_overrides": {
            "gb300": {"extra_args": ["--max-model-len", "4096"]},
            "hopper": {"extra_env": {"HOPPER_DEP": "1"}}}}},
    ),
    "acme/Features.yaml": recipe(
        "acme/Features",
        compatible_strategies=["single_node_tp", "multi_node_dep", "pd_cluster", "kv_store_centralized_mooncake"],
        features={"spec_decode": {"description": "MTP", "args": ["--speculative-config", '{"method":"mtp"}'],
                                  "hardware_overrides": {"gb200": {"args": ["--speculative-config",
                                                                            '{"method":"mtp","n":2}']}}}},
        opt_in_features=[],
        variants={"default": {"precision": "bf16", "vram_minimum_gb": 900, "description": "big"}},
        strategy_overrides={"pd_cluster": {"decode": {"parallelism": "dep",
                                                      "hardware_overrides": {"b200": {"extra_args": ["--x", "1"]}}}}},
    ),
}


def _build(root: Path) -> tuple[dict[str, bytes], list[str], str]:
    api = build_api(load_catalog(root), jobs=1, strict=False)
    return api.files, api.warnings, api.summary


@pytest.fixture
def catalog_dir(tmp_path: Path) -> Path:
    return write_dir(tmp_path / "recipes", dict(RECIPES), hardware=HARDWARE)


def test_reusing_look_alike_renderings_writes_what_resolving_each_writes(
        catalog_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    finds: list[bool] = []
    real_find = AlikeResolves.find

    def counted(self: AlikeResolves[Any], rest: Any, hw_id: str) -> Any:
        got = real_find(self, rest, hw_id)
        finds.append(got is not None)
        return got

    monkeypatch.setattr(AlikeResolves, "find", counted)
    reused = _build(catalog_dir)
    assert any(finds) and not all(finds)  # some selections reused a rendering, others resolved again
    monkeypatch.setattr(AlikeResolves, "find", lambda self, rest, hw_id: None)
    resolved = _build(catalog_dir)
    assert reused[0].keys() == resolved[0].keys()
    assert [p for p in resolved[0] if reused[0][p] != resolved[0][p]] == []
    assert reused[1:] == resolved[1:]
    # the fixture tells look-alike profiles apart where it should (the reuse had something to get wrong)
    b200 = reused[0]["acme/Exact/hw/b200.json"]
    b300 = reused[0]["acme/Exact/hw/b300.json"]
    assert b"B300_ONLY" in b300 and b"B300_ONLY" not in b200
    assert b"rocm/vllm:mi325x" in reused[0]["acme/Exact/hw/mi325x.json"]
    assert b"rocm/vllm:mi325x" not in reused[0]["acme/Exact/hw/mi300x.json"]


def test_look_alike_renderings_share_nothing_mutable(catalog_dir: Path) -> None:
    """A reused rendering's nested values are immutable: no consumer can change another hardware's file."""
    from vllm_recipes.api.tree import Rendered, render_selection

    catalog = load_catalog(catalog_dir)
    rendered = Rendered(catalog)
    r = catalog.recipe("acme/Exact")
    assert r is not None
    first = render_selection(catalog, r, "default", "single_node_tp", "gb200", 1, [], rendered=rendered)
    again = render_selection(catalog, r, "default", "single_node_tp", "gb300", 1, [], rendered=rendered)
    assert first is not None and again is not None
    assert (first["hardware"], again["hardware"]) == ("gb200", "gb300")
    assert again["argv"] is first["argv"]  # reused, not resolved again
    with pytest.raises((TypeError, AttributeError)):
        again["argv"].append("--oops")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        again["env"]["X"] = "1"
