"""Typed models: every seed key reachable with its original value; every spec shape accepted."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.catalog.models import (
    BrandDockerImage,
    CudaDockerImage,
    HardwareNote,
    KvStoreModel,
    RecipeModel,
    StrategyModel,
    TaxonomyModel,
)
from vllm_recipes.catalog.yamlsource import freeze, iter_paths

CATALOG = load_catalog(BUNDLED_DIR)
SEEDS = {r.hf_id: r for r in CATALOG.recipes}


def parse_recipe(data: Any) -> RecipeModel:
    """Validate recipe data as the catalog holds it (frozen: lists are tuples)."""
    return RecipeModel.model_validate(freeze(data))


def _step(node: Any, key: Any) -> Any:
    if isinstance(node, BaseModel):
        if isinstance(key, str) and key in type(node).model_fields:
            return getattr(node, key)
        return (node.model_extra or {})[key]
    return node[key]


@pytest.mark.parametrize("hf_id", ["deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4.1-Flash"])
def test_every_seed_key_is_reachable_with_its_value(hf_id: str) -> None:
    recipe = SEEDS[hf_id]
    model = parse_recipe(recipe.data)
    checked = 0
    for path, value in iter_paths(recipe.data):
        node: Any = model
        for key in path:
            node = _step(node, key)
        if isinstance(value, dict | tuple):
            continue
        assert node == value and type(node) is type(value), (path, node, value)
        checked += 1
    assert checked > 100
    # no seed key is unknown to the typed model
    assert not model.model_extra


def test_seed_shapes_are_typed() -> None:
    v4 = parse_recipe(SEEDS["deepseek-ai/DeepSeek-V4-Flash"].data)
    v41 = parse_recipe(SEEDS["deepseek-ai/DeepSeek-V4.1-Flash"].data)
    assert isinstance(v4.model.docker_image, BrandDockerImage)
    assert v4.model.default_frontend == "rust"
    assert v4.variants["ascend_w8a8"].tp == {"ascend_910c": 8}
    assert v4.variants["default"].hardware_overrides["ascend_950pr_8x"].install.pip is False
    assert isinstance(v4.hardware_notes["dgx_spark_gb10"], HardwareNote)
    assert v41.model.smg_grpc.reasoning_parser == "deepseek_v41"
    assert v41.variants["default"].hardware_overrides["dgx_station_gb300"].vram_minimum_gb == 244
    assert v41.strategy_overrides["pd_cluster"].prefill.nodes == 1
    assert v41.strategy_overrides["single_node_tp"].tp["default"] == 4
    assert v41.features["spec_decoding"].hardware_overrides["amd"].args[0] == "--speculative-config"


def _recipe(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"meta": {}, "model": {"model_id": "o/r"}, "variants": {"default": {"precision": "fp8"}}}
    for k, v in extra.items():
        if k == "model":
            base["model"].update(v)
        elif k == "variant":
            base["variants"]["default"].update(v)
        else:
            base[k] = v
    return base


@pytest.mark.parametrize("value", [
    "img:tag",
    {"nvidia": "a", "amd": "b"},
    {"nvidia": {"cu129": "a", "cu130": "b"}},
    {"cu130": "x"},
])
def test_docker_image_shapes(value: Any) -> None:
    r = parse_recipe(_recipe(model={"docker_image": value}, variant={"docker_image": value}))
    if isinstance(value, str):
        assert r.model.docker_image == value
    elif "cu130" in value:
        assert isinstance(r.model.docker_image, CudaDockerImage)
    else:
        assert isinstance(r.model.docker_image, BrandDockerImage)


@pytest.mark.parametrize(("key", "value"), [
    ("strategy_min_gpus", 16),
    ("strategy_min_gpus", {"multi_node_tp": 16, "h100": {"dep": 32}, "b200": 8}),
    ("hardware_notes", {"h100": "plain", "b200": {"title": "t", "link": "https://x"}}),
    ("omni", {"tasks": ["t2i", {"id": "t2v", "hardware_overrides": {"h100": {"extra_args": ["--a"]}}}],
              "port": 8000}),
    ("dependencies", ["uv pip install x", {"command": "y", "optional": True}]),
    ("kv_cache_strategy_hardware", {"kv_store_centralized_mooncake": {"h100": "unsupported"}}),
])
def test_optional_shapes(key: str, value: Any) -> None:
    parse_recipe(_recipe(**{key: value}))


@pytest.mark.parametrize("tp", [4, 2.5, {"default": 4, "h100": 8}, None])
def test_number_or_hardware_map(tp: Any) -> None:
    assert parse_recipe(_recipe(variant={"tp": tp})).variants["default"].tp == tp


def test_null_means_absent_everywhere() -> None:
    parse_recipe(_recipe(features={"f": None, "g": {"modes": {"m": None}}},
                         hardware_overrides={"gb300": None}, strategy_overrides={"pd_cluster": None},
                         model={"base_env": {"A": None}, "install": None}))


@pytest.mark.parametrize(("extra", "loc_tail"), [
    ({"variant": {"tp": "2"}}, "tp"),
    ({"model": {"nightly_required": "true"}}, "nightly_required"),
    ({"model": {"base_args": "--x"}}, "base_args"),
    ({"variant": {"vram_minimum_gb": True}}, "vram_minimum_gb"),
])
def test_strict_types_are_rejected(extra: dict[str, Any], loc_tail: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_recipe(_recipe(**extra))
    assert any(loc_tail in map(str, e["loc"]) for e in info.value.errors())


def test_data_files_parse() -> None:
    tax = TaxonomyModel.model_validate(CATALOG.taxonomy)
    assert tax.hardware_profiles["h100"].arch == "sm90"
    assert tax.frontends["rust"].env == {"VLLM_USE_RUST_FRONTEND": "1"}
    assert StrategyModel.model_validate(CATALOG.serving_strategies["pd_cluster"]).prefill.vllm_args[0] == "--port"
    kv = KvStoreModel.model_validate(CATALOG.kv_stores["kv_store_centralized_mooncake"])
    assert kv.vllm.env["PYTHONHASHSEED"] == 0 and kv.default_instances == 2


def test_models_are_frozen() -> None:
    r = parse_recipe(_recipe())
    with pytest.raises(ValidationError):
        r.meta.title = "x"  # type: ignore[misc]
