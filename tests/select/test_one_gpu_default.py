"""Default hardware of a one-GPU model (issue #27.13; docs/decisions.md, "Default hardware of a
one-GPU model"): a recipe without ``meta.default_hardware`` whose model fits one GPU of the public
default (an 8-GPU node) defaults to the smallest one-GPU profile it offers of the same brand that
holds the model. Every front end reads the one rule (``select.defaults.pick_default_hardware``).

The fixture is our own, shaped like the public catalog's small models that list workstation
profiles (bf16/fp8/nvfp4 variants, restricted one-GPU profiles declared in ``meta.hardware``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.agents.tools import AgentTools
from vllm_recipes.api.build import build_api
from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.select.defaults import listed_hardware, pick_default_hardware
from vllm_recipes.select.request import PageRequest
from vllm_recipes.service import Query, answers
from vllm_recipes.web import create_app

WORKSTATIONS = {"dgx_station_gb300": "supported", "dgx_spark_gb10": "supported",
                "rtx_pro_6000": "verified", "rtx_5090": "supported"}


def _recipe(model: str, variants: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"meta": {"title": model, "provider": "Acme", "tasks": ["text"], **meta},
            "model": {"model_id": f"acme/{model}"}, "variants": variants,
            "compatible_strategies": ["single_node_tp", "multi_node_tp"]}


RECIPES = {
    # bf16 84 GB, fp8 45 GB, nvfp4 24 GB: each fits one GPU of H200 (141) / B200 (180)
    "Small-35B": _recipe("Small-35B", {
        "default": {"precision": "bf16", "vram_minimum_gb": 84},
        "fp8": {"precision": "fp8", "vram_minimum_gb": 45, "model_id": "acme/Small-35B-FP8"},
        "nvfp4": {"precision": "nvfp4", "vram_minimum_gb": 24, "model_id": "acme/Small-35B-NVFP4"},
    }, hardware=WORKSTATIONS),
    # the recipe says so: an 8-GPU node stays the default
    "Declared-35B": _recipe("Declared-35B", {"default": {"precision": "bf16", "vram_minimum_gb": 84}},
                            hardware=WORKSTATIONS, default_hardware="h200"),
    # 200 GB needs two H200 GPUs: not a one-GPU model, although a DGX Station (252 GB) holds it
    "Big-200B": _recipe("Big-200B", {"default": {"precision": "fp8", "vram_minimum_gb": 200}},
                        hardware=WORKSTATIONS),
    # the only one-GPU profile offered is another brand's accelerator (a TPU chip)
    "Tpu-31B": _recipe("Tpu-31B", {"default": {"precision": "bf16", "vram_minimum_gb": 75}},
                       hardware={"ironwood": "supported"}),
    # no one-GPU profile offered at all: the public rule (its command uses one GPU of the node)
    "Plain-8B": _recipe("Plain-8B", {"default": {"precision": "bf16", "vram_minimum_gb": 20}}),
    # one-GPU profiles that cannot hold the model (rtx_5090: 32 GB)
    "Tight-27B": _recipe("Tight-27B", {"default": {"precision": "bf16", "vram_minimum_gb": 67}},
                         hardware={"rtx_5090": "supported"}),
}

WANT = {
    ("Small-35B", "default"): "rtx_pro_6000",  # 96 GB: the smallest one-GPU profile holding 84 GB
    ("Small-35B", "fp8"): "rtx_pro_6000",
    ("Small-35B", "nvfp4"): "rtx_5090",  # 32 GB holds 24 GB
    ("Declared-35B", "default"): "h200",
    ("Big-200B", "default"): "h200",
    ("Tpu-31B", "default"): "h200",
    ("Plain-8B", "default"): "h200",
    ("Tight-27B", "default"): "h200",
}


@pytest.fixture(scope="module")
def recipes_dir(tmp_path_factory: pytest.TempPathFactory, recipe_writer: Callable[..., Path]) -> Path:
    root = tmp_path_factory.mktemp("one-gpu")
    for name, data in RECIPES.items():
        recipe_writer(root, f"acme/{name}", data)
    return root


@pytest.fixture(scope="module")
def cat(recipes_dir: Path) -> Catalog:
    return load_catalog(str(recipes_dir))


@pytest.mark.parametrize(("model", "variant"), sorted(WANT))
def test_the_rule(cat: Catalog, model: str, variant: str) -> None:
    recipe = cat.recipe(f"acme/{model}")
    got = pick_default_hardware(cat.hardware_profiles, recipe.variants[variant], recipe.data)
    assert got == WANT[(model, variant)]


def test_the_json_api_lists_the_default_first(cat: Catalog) -> None:
    recipe = cat.recipe("acme/Small-35B")
    hws = listed_hardware(cat.hardware_profiles, recipe.variants["default"], recipe.data)
    assert hws[0] == "rtx_pro_6000" and "h200" in hws
    files = build_api(cat, jobs=1).files
    top = json.loads(files["acme/Small-35B.json"])
    assert top["recommended_command"]["hardware"] == "rtx_pro_6000"
    assert top["recommended_command"]["argv"][-2:] == ["--tensor-parallel-size", "1"]
    # the default hardware's alternatives live under <base>/strategies/, H200's under hw/h200/
    assert "acme/Small-35B/strategies/multi_node_tp.json" not in files  # rtx_pro_6000 cannot scale out
    assert "acme/Small-35B/hw/h200.json" in files
    nvfp4 = json.loads(files["acme/Small-35B-NVFP4.json"])
    assert nvfp4["recommended_command"]["hardware"] == "rtx_5090"


def test_cli_page_api_and_mcp_agree(cat: Catalog, recipes_dir: Path,
                                    run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", "acme/Small-35B", "--recipes-dir", str(recipes_dir))
    assert res.exit_code == 0, res.output
    assert "· hardware rtx_pro_6000 (default) ·" in res.stderr
    assert res.stdout.strip() == "vllm serve acme/Small-35B \\\n  --tensor-parallel-size 1"
    as_json = json.loads(run_cli("command", "acme/Small-35B", "--recipes-dir", str(recipes_dir),
                                 "--format", "json").stdout)
    assert as_json["hardware"] == "rtx_pro_6000"

    payload = answers.resolve_payload(cat, Query("acme/Small-35B", PageRequest()))
    assert payload["selection"]["hardware"] == "rtx_pro_6000"
    assert "hardware=" not in payload["selection"]["query"]  # the default is left out of the URL

    mcp = AgentTools(cat).call("resolve_command", {"hf_id": "acme/Small-35B"})
    assert json.dumps(mcp).count('"hardware": "rtx_pro_6000"') >= 1

    client = TestClient(create_app(cat))
    page = client.get("/acme/Small-35B")
    assert page.status_code == 200
    assert ('<a class="pill is-active" href="/acme/Small-35B" data-nav data-key="hardware:rtx_pro_6000" '
            'aria-current="true"') in page.text
    api = client.get("/api/resolve?model=acme/Small-35B")
    assert api.status_code == 200 and api.json()["selection"]["hardware"] == "rtx_pro_6000"


def test_asking_for_the_8_gpu_node_still_works(cat: Catalog, recipes_dir: Path,
                                               run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", "acme/Small-35B", "--hardware", "h200", "--recipes-dir", str(recipes_dir))
    assert res.exit_code == 0 and "· hardware h200 ·" in res.stderr
    assert "--tensor-parallel-size 1" in res.stdout
    payload = answers.resolve_payload(cat, Query("acme/Small-35B", PageRequest(hardware="h200")))
    assert "hardware=h200" in payload["selection"]["query"]  # no longer the default: kept in the URL
