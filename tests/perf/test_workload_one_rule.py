"""The workload (isl/osl/concurrency/rate) and SLA targets are checked once, in the service: the command
line, /api/perf, /api/recommend and the MCP tools refuse the same values in the same words."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
import yaml
from click.testing import CliRunner
from starlette.testclient import TestClient

from vllm_recipes.agents.tools import AgentTools, ToolError
from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import engine_cmds, perf_cmds  # noqa: F401  (registers the commands)
from vllm_recipes.cli.main import cli
from vllm_recipes.web import create_app

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
OK = {"isl": 1024, "osl": 128, "ttft_ms": 5000, "tpot_ms": 100}
#: one bad workload each: (what changes, the refusal in URL spelling)
BAD = [
    ({"isl": 2_000_000}, "Parameter 'isl' must be a positive integer up to 1048576, got 2000000"),
    ({"osl": 0}, "Parameter 'osl' must be a positive integer up to 131072, got 0"),
    ({"concurrency": 5000}, "Parameter 'concurrency' must be a positive integer up to 4096, got 5000"),
    ({"rate": 200_000}, "Parameter 'rate' must be requests per second (0-100000), got 200000"),
    ({"concurrency": 2, "rate": 3}, "Give concurrency or rate, not both."),
    ({"isl": None}, "Parameter 'isl' is required (tokens)."),
    ({"tpot_ms": -1}, "Parameter 'tpot_ms' must be a time in milliseconds, got -1"),
]


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(load_catalog()))


@pytest.fixture(scope="module")
def tools() -> AgentTools:
    return AgentTools(load_catalog())


def _plain(text: str) -> str:
    """A refusal without quotes (a URL value is the string '5', a typed one the number 5)."""
    return text.replace("'", "")


def _args(change: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in {**OK, **change}.items() if v is not None}


@pytest.mark.parametrize(("change", "words"), BAD)
def test_api_mcp_and_cli_refuse_alike(client: TestClient, tools: AgentTools, change: dict[str, object],
                                      words: str) -> None:
    args = _args(change)
    param = "rate" if "rate" in change else next(iter(change))
    r = client.get("/api/recommend?" + urlencode({"model": V41, **args}))
    assert r.status_code == 400 and r.json()["param"] == param
    assert _plain(r.json()["error"]).startswith(_plain(words))
    with pytest.raises(ToolError) as err:
        tools.call("recommend", {"hf_id": V41, **args})
    assert err.value.param == param and _plain(str(err.value)).startswith(_plain(words))
    argv = [f"--{k.replace('_', '-')}={v}" for k, v in args.items()]
    res = CliRunner().invoke(cli, ["recommend", V41, *argv])
    cli_words = re.sub(r"\b(isl|osl|concurrency|rate|tpot_ms)\b(?=[' ,])",
                       lambda m: "--" + m.group(1).replace("_", "-"), words)  # options spelled as typed
    assert res.exit_code == 2 and _plain(res.output).startswith(_plain(f"Error: {cli_words}")), res.output


def test_token_counts_read_alike(client: TestClient, tools: AgentTools) -> None:
    """``8k`` is 8192 on the command line as in the URL; a typed MCP argument must be a whole number."""
    res = CliRunner().invoke(cli, ["perf", V41, "--isl", "8k", "--osl", "128", "--concurrency", "8", "--json"])
    api = client.get(f"/api/perf?model={V41}&isl=8192&osl=128&concurrency=8").json()
    assert res.exit_code == 0 and f'"ttft_ms": {api["ttft_ms"]}' in res.output
    with pytest.raises(ToolError, match="Parameter 'isl' must be a positive integer"):
        tools.call("estimate_performance", {"hf_id": V41, "isl": 1.5, "osl": 1})


def test_schemas_say_the_checked_limits(client: TestClient, tools: AgentTools) -> None:
    spec = client.get("/api/openapi.json").json()["paths"]["/api/perf"]["get"]["parameters"]
    api = {p["name"]: p["schema"] for p in spec}
    mcp = next(t for t in tools.tools if t.name == "estimate_performance").input_schema["properties"]
    for name, hi in (("isl", 1 << 20), ("osl", 1 << 17), ("concurrency", 4096), ("rate", 100_000)):
        assert api[name]["maximum"] == mcp[name]["maximum"] == hi


OMNI = {
    "meta": {"title": "Tiny omni", "provider": "Acme", "tasks": ["omni"], "hardware": {"h200": "verified"}},
    "model": {"model_id": "acme/Omni"},
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40}},
    "omni": {"port": 8091, "tasks": [{"id": "t2i", "label": "Text to image"}]},
}


def test_omni_recipe_has_no_estimate_anywhere(tmp_path: Path) -> None:
    """The command line, /api/perf and the MCP tool refuse an omni recipe in the same words."""
    path = tmp_path / "models" / "acme" / "Omni.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(OMNI, sort_keys=False), encoding="utf-8")
    words = "acme/Omni is an omni recipe; perf estimates vLLM serve commands only."
    catalog = load_catalog(str(tmp_path))
    r = TestClient(create_app(catalog)).get("/api/perf?model=acme/Omni&isl=10&osl=10")
    assert r.status_code == 400 and r.json()["error"] == words
    with pytest.raises(ToolError, match=re.escape(words)):
        AgentTools(catalog).call("estimate_performance", {"hf_id": "acme/Omni", "isl": 10, "osl": 10})
    res = CliRunner().invoke(cli, ["perf", "acme/Omni", "--recipes-dir", str(tmp_path), "--isl", "10", "--osl", "10"])
    assert res.exit_code == 2 and res.output == f"Error: {words}\n"
