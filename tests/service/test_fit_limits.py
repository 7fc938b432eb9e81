"""The largest GPU target is one rule (``fit.limits``) in every front end: the CLI took any ``--gpu-memory``
(5000 GB planned a fit) where ``/api/fit`` and the MCP tool refused above 4096, and the OpenAPI document
declared no bounds at all."""

from __future__ import annotations

from collections.abc import Callable

from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.agents.tools import AgentTools
from vllm_recipes.catalog import Catalog
from vllm_recipes.web import create_app

V4 = "deepseek-ai/DeepSeek-V4-Flash"


def test_the_cli_refuses_what_the_api_refuses(run_cli: Callable[..., Result], catalog: Catalog) -> None:
    res = run_cli("fit", V4, "--gpu-memory", "5000")
    assert res.exit_code == 2
    assert res.stderr.endswith("Error: Invalid value for '--gpu-memory': 5000.0 is not in the range 0<x<=4096.\n")
    assert TestClient(create_app(catalog)).get(f"/api/fit?model={V4}&gpu_memory=5000").status_code == 400
    res = run_cli("fit", V4, "--gpus", "65", "--gpu-memory", "80")
    assert res.exit_code == 2
    assert "65 is not in the range 1<=x<=64" in res.stderr


def test_openapi_and_mcp_declare_the_same_bounds(catalog: Catalog) -> None:
    spec = TestClient(create_app(catalog)).get("/api/openapi.json").json()
    params = {p["name"]: p["schema"] for p in spec["paths"]["/api/fit"]["get"]["parameters"]}
    fit_tool = next(t for t in AgentTools(catalog).tools if t.name == "fit")
    props = fit_tool.input_schema["properties"]
    for name, largest in (("gpu_memory", 4096), ("gpus", 64)):
        assert params[name]["maximum"] == props[name]["maximum"] == largest
    assert params["gpu_memory"]["exclusiveMinimum"] == props["gpu_memory"]["exclusiveMinimum"] == 0
