"""A GPU memory of ``inf`` or ``nan`` is refused by every front end, never planned. Before, the CLI's
``--gpu-memory`` took them (click reads both as floats above 0): ``fit MODEL --gpu-memory inf`` ended in a
``ValueError`` traceback and ``--gpu-memory nan`` planned a fit that "starts". ``/api/fit`` and the MCP
``fit`` tool already refused them with the service's range rule; these tests keep it so."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.agents.tools import AgentTools, ToolError
from vllm_recipes.catalog import Catalog
from vllm_recipes.web import create_app

V4 = "deepseek-ai/DeepSeek-V4-Flash"


@pytest.mark.parametrize("command", [["fit", V4], ["fit", V4, "--hardware", "h100"], ["fit", "--gpus", "2"],
                                     ["fit", V4, "--gpu", "H100"], ["perf", V4, "--isl", "1000", "--osl", "100"]])
@pytest.mark.parametrize("value", ["inf", "nan", "-nan", "Infinity", "1e400"])
def test_the_cli_refuses_a_non_finite_gpu_memory(run_cli: Callable[..., Result], command: list[str],
                                                 value: str) -> None:
    res = run_cli(*command, "--gpu-memory", value)
    assert res.exit_code == 2
    assert res.stderr.endswith(f"Error: Invalid value for '--gpu-memory': expected a positive number of GB, "
                               f"got {value!r}.\n")


@pytest.mark.parametrize("value", ["inf", "nan"])
def test_the_cli_refuses_a_non_finite_checkpoint_size(run_cli: Callable[..., Result], value: str) -> None:
    """``--weights-gib nan`` planned a fit that "starts"."""
    res = run_cli("fit", V4, "--weights-gib", value)
    assert res.exit_code == 2
    assert res.stderr.endswith(f"Error: Invalid value for '--weights-gib': expected a positive number of GiB, "
                               f"got {value!r}.\n")


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "abc", "0", "-3", "5000"])
def test_api_fit_refuses_a_gpu_memory_out_of_range_in_the_users_words(catalog: Catalog, value: str) -> None:
    """The refusal quotes the value as the URL gave it (it said "got -1.0." for ``nan`` and ``abc``)."""
    res = TestClient(create_app(catalog)).get(f"/api/fit?model={V4}&gpu_memory={value}")
    assert res.status_code == 400
    assert res.json() == {"error": f"Parameter 'gpu_memory' must be GB per GPU (0-4096), got {value!r}.",
                          "param": "gpu_memory", "choices": []}


@pytest.mark.parametrize(("value", "shown"), [(float("inf"), "inf"), (float("nan"), "nan")])
def test_the_mcp_fit_tool_refuses_a_non_finite_gpu_memory(catalog: Catalog, value: float, shown: str) -> None:
    with pytest.raises(ToolError) as err:
        AgentTools(catalog).call("fit", {"hf_id": V4, "gpu_memory": value})
    assert err.value.to_dict() == {"error": f"Parameter 'gpu_memory' must be GB per GPU (0-4096), got {shown}.",
                                   "param": "gpu_memory", "choices": []}
