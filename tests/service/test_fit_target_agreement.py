"""A fit on a hardware profile with another memory per GPU (``--hardware h200 --gpu-memory 100``) plans the
profile's GPUs at that memory, in every front end. ``/api/fit`` and the MCP ``fit`` tool planned one unnamed
GPU instead ("Custom: 1x GPU (100 GB each)") while the CLI planned "Custom: 8x H200 (100 GB each)"."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.agents.tools import AgentTools, ToolError
from vllm_recipes.catalog import Catalog
from vllm_recipes.web import create_app

V4 = "deepseek-ai/DeepSeek-V4-Flash"
EXPECTED = {"label": "Custom: 8x H200 (100 GB each)", "gpu_memory_gib": 100.0, "gpus_per_node": 8,
            "profile": "h200", "custom": True}


def _target(hardware: dict) -> dict:
    return {k: hardware[k] for k in EXPECTED}


def test_cli_api_and_mcp_plan_the_same_gpus(run_cli: Callable[..., Result], catalog: Catalog) -> None:
    res = run_cli("fit", V4, "--hardware", "h200", "--gpu-memory", "100", "--json")
    assert res.exit_code == 0, res.output
    cli = json.loads(res.stdout)
    api = TestClient(create_app(catalog)).get(f"/api/fit?model={V4}&hardware=h200&gpu_memory=100")
    assert api.status_code == 200, api.text
    mcp = AgentTools(catalog).call("fit", {"hf_id": V4, "hardware": "h200", "gpu_memory": 100})
    assert _target(cli["hardware"]) == _target(api.json()["hardware"]) == _target(mcp["hardware"]) == EXPECTED
    assert cli["verdict"] == api.json()["verdict"] == mcp["verdict"]


def test_the_search_without_a_model_plans_the_same_gpus(run_cli: Callable[..., Result], catalog: Catalog) -> None:
    res = run_cli("fit", "--hardware", "h200", "--gpu-memory", "100", "--json")
    assert res.exit_code == 0, res.output
    api = TestClient(create_app(catalog)).get("/api/fit?hardware=h200&gpu_memory=100")
    assert api.status_code == 200, api.text
    mcp = AgentTools(catalog).call("fit", {"hardware": "h200", "gpu_memory": 100})
    cli = json.loads(res.stdout)
    assert _target(cli["hardware"]) == _target(api.json()["hardware"]) == _target(mcp["hardware"]) == EXPECTED


def test_an_unknown_hardware_with_a_memory_is_refused_as_the_hardware(catalog: Catalog) -> None:
    for query in (f"model={V4}&hardware=bogus&gpu_memory=100", "hardware=bogus&gpu_memory=100"):
        api = TestClient(create_app(catalog)).get(f"/api/fit?{query}")
        assert api.status_code == 400
        assert api.json()["param"] == "hardware"


def test_refusals_keep_their_order(catalog: Catalog) -> None:
    """The memory's range is checked after the GPU count and the unknown parameters, as before."""
    client = TestClient(create_app(catalog))
    assert client.get(f"/api/fit?model={V4}&gpus=0&gpu_memory=abc").json()["param"] == "gpus"
    assert client.get(f"/api/fit?model={V4}&gpu_memory=-3&bogus=1").json()["error"].startswith("Unknown parameter")


def test_a_gpu_and_a_hardware_together_are_refused_everywhere(run_cli: Callable[..., Result],
                                                            catalog: Catalog) -> None:
    """The CLI refused the pair; ``/api/fit`` and the MCP tool used the GPU and silently dropped the hardware."""
    res = run_cli("fit", V4, "--gpu", "H100", "--hardware", "h100")
    assert res.exit_code == 2
    assert res.stderr.endswith("Error: Give either --hardware or --gpu, not both.\n")
    api = TestClient(create_app(catalog)).get(f"/api/fit?model={V4}&gpu=H100&hardware=h100")
    assert api.status_code == 400
    assert api.json() == {"error": "Give either hardware or gpu, not both.", "param": "hardware", "choices": []}
    with pytest.raises(ToolError) as err:
        AgentTools(catalog).call("fit", {"hf_id": V4, "gpu": "H100", "hardware": "h100"})
    assert err.value.to_dict() == api.json()


def test_the_mcp_tool_refuses_a_memory_too_large_for_a_float(catalog: Catalog) -> None:
    """A JSON integer of 400 digits raised an uncaught OverflowError in the MCP ``fit`` tool."""
    with pytest.raises(ToolError) as err:
        AgentTools(catalog).call("fit", {"hf_id": V4, "gpu_memory": 10**400})
    assert err.value.to_dict()["param"] == "gpu_memory"


def test_every_mcp_tool_reads_a_number_too_large_for_a_float_as_out_of_range(catalog: Catalog) -> None:
    """The shared reader (``service.perf.number``) raised OverflowError for a 400-digit JSON integer
    (``recommend``'s latency targets), not only the fit tool's memory."""
    with pytest.raises(ToolError) as err:
        AgentTools(catalog).call("recommend", {"hf_id": V4, "ttft_ms": 10**400, "tpot_ms": 50})
    assert err.value.to_dict()["param"] == "ttft_ms"
