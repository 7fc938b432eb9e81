"""``vllm-recipes perf`` / ``recommend`` end to end, the web panel, /api/perf, /api/recommend and the MCP tools."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.agents.tools import ToolError
from vllm_recipes.catalog import load_catalog
from vllm_recipes.web import create_app

DATA = Path(__file__).parent / "data"
RECIPES = str(DATA / "recipes")
DENSE = "acme/Dense-70B"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
SHORT = ("--arg", "--max-model-len", "--arg", "8192")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never use the network (what ``--offline`` does, for every command)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def perf_json(run_cli: Callable[..., Result]) -> Callable[..., dict[str, Any]]:
    def run(*args: str) -> dict[str, Any]:
        res = run_cli("perf", *args, "--json")
        assert res.exit_code == 0, res.stdout + res.stderr
        return json.loads(res.stdout)

    return run


def test_perf_json_fields_and_bench_command(perf_json: Callable[..., dict[str, Any]]) -> None:
    d = perf_json(DENSE, "--recipes-dir", RECIPES, "--hardware", "h200", *SHORT, "--isl", "1024", "--osl", "256",
                  "--concurrency", "16")
    for k in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu", "output_tok_s_total", "tok_s_per_user"):
        assert d[k] > 0
    assert d["estimate"] is True and d["calibrated"] is True and d["gpu"]["key"] == "h200_sxm"
    assert d["output_tok_s_per_gpu"] == pytest.approx(d["output_tok_s_total"] / d["gpus"], rel=0.01)
    assert d["running_batch"]["peak"] <= min(16, d["running_batch"]["cap"])
    assert d["bench_command"] == ("vllm bench serve --model acme/Dense-70B --dataset-name random "
                                  "--random-input-len 1024 --random-output-len 256 --ignore-eos --num-prompts 160 "
                                  "--max-concurrency 16")
    assert set(d["expected_error"]) == {"ttft", "tpot", "output_tok_s_per_gpu"}


def test_perf_text_names_the_bounds_and_says_estimate(run_cli: Callable[..., Result]) -> None:
    res = run_cli("perf", DENSE, "--recipes-dir", RECIPES, "--hardware", "b200", *SHORT, "--isl", "8192",
                  "--osl", "128", "--concurrency", "64", "--vllm", "0.9")
    assert res.exit_code == 0, res.stdout
    assert "ESTIMATE" in res.stdout and "expected error" in res.stdout
    assert "TPOT" in res.stdout and "bound: memory bandwidth" in res.stdout
    assert "outside the calibrated releases" in res.stdout
    assert "measure it: vllm bench serve" in res.stdout


def test_more_gpus_lower_tpot_on_the_cli(perf_json: Callable[..., dict[str, Any]]) -> None:
    tp = [perf_json(DENSE, "--recipes-dir", RECIPES, "--hardware", "h100", *SHORT, "--arg", "--tensor-parallel-size",
                    "--arg", str(n), "--isl", "1024", "--osl", "128", "--concurrency", "8")["tpot_ms"] for n in (2, 8)]
    assert tp[1] < tp[0]


def test_disaggregated_pools(perf_json: Callable[..., dict[str, Any]]) -> None:
    d = perf_json(V41, "--hardware", "h200", "--strategy", "pd_cluster", "--isl", "2048", "--osl", "128",
                  "--concurrency", "16")
    pre, dec = d["pools"]["prefill"], d["pools"]["decode"]
    assert d["ttft_ms"] == pre["ttft_ms"] and d["tpot_ms"] == dec["tpot_ms"]
    assert d["gpus"] == pre["gpus"] + dec["gpus"]
    assert any("disaggregated" in n for n in d["notes"])


def test_unknown_architecture_is_a_clear_unknown(run_cli: Callable[..., Result]) -> None:
    res = run_cli("perf", "acme/Opaque-8B", "--recipes-dir", RECIPES, "--isl", "128", "--osl", "128")
    assert res.exit_code == 1 and "unknown: the architecture of acme/Opaque-8B" in res.stdout
    d = json.loads(run_cli("perf", "acme/Opaque-8B", "--recipes-dir", RECIPES, "--isl", "128", "--osl", "128",
                           "--json").stdout)
    assert d["known"] is False and d["ttft_ms"] is None


def test_hf_config_gives_exact_compute_facts(perf_json: Callable[..., dict[str, Any]], tmp_path: Path) -> None:
    d = perf_json("acme/Opaque-8B", "--recipes-dir", RECIPES, "--hf-config", str(DATA / "moe_config.json"),
                  "--isl", "512", "--osl", "64", "--concurrency", "4")
    assert d["known"] and d["tpot_ms"] > 0


def test_bad_input_exits_2(run_cli: Callable[..., Result]) -> None:
    res = run_cli("perf", DENSE, "--recipes-dir", RECIPES, "--isl", "1", "--osl", "1", "--concurrency", "2",
                  "--rate", "3")
    assert res.exit_code == 2 and "not both" in res.stdout + res.stderr
    res = run_cli("perf", DENSE, "--recipes-dir", RECIPES, "--hardware", "nope", "--isl", "1", "--osl", "1")
    assert res.exit_code == 2 and "h200" in res.stdout + res.stderr
    res = run_cli("recommend", DENSE, "--recipes-dir", RECIPES, "--isl", "1", "--osl", "1", "--ttft-ms",
                  "1", "--tpot-ms", "1", "--hardware", "nope")
    assert res.exit_code == 2 and "Unknown hardware 'nope'" in res.stdout + res.stderr


def test_recommend_fewest_gpus_first_and_none_meets_it(run_cli: Callable[..., Result]) -> None:
    res = run_cli("recommend", V41, "--isl", "1024", "--osl", "256", "--concurrency", "16", "--ttft-ms", "3000",
                  "--tpot-ms", "50", "--json")
    assert res.exit_code == 0, res.stdout
    d = json.loads(res.stdout)
    gpus = [m["gpus"] for m in d["meeting"]]
    assert gpus and gpus == sorted(gpus) and all(m["meets"] for m in d["meeting"])
    assert all(m["ttft_ms"] <= 3000 and m["tpot_ms"] <= 50 for m in d["meeting"])
    first = d["meeting"][0]
    assert first["command"].startswith(f"vllm-recipes command {V41} --hardware ")
    res = run_cli(*first["command"].split()[1:])  # the line renders that configuration
    assert res.exit_code == 0 and res.stdout.startswith(("vllm serve", "docker run"))
    res = run_cli("recommend", V41, "--isl", "1024", "--osl", "256", "--concurrency", "16", "--ttft-ms", "1",
                  "--tpot-ms", "0.1", "--hardware", "h200")
    assert res.exit_code == 1 and "none meets it." in res.stdout and "closest:" in res.stdout and "TPOT x" in res.stdout


def test_corpus_shaped_recipe_without_facts_recommends_nothing_it_cannot_know(run_cli: Callable[..., Result]) -> None:
    res = run_cli("recommend", "acme/Opaque-8B", "--recipes-dir", RECIPES, "--isl", "10", "--osl", "10",
                  "--ttft-ms", "100", "--tpot-ms", "10")
    assert res.exit_code == 1 and "without an estimate" in res.stdout and "architecture" in res.stdout


# --- web, API, MCP ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(load_catalog()))


def test_panel_follows_the_url_and_agrees_with_the_api(client: TestClient) -> None:
    page = client.get(f"/{V41}?isl=8192&osl=128&conc=8")
    assert page.status_code == 200
    html = page.text
    assert 'id="perf"' in html and "estimate" in html and "Expected error" in html
    assert 'aria-current="true">8k</a>' in html and "isl=8192" in html
    api = client.get(f"/api/perf?model={V41}&isl=8192&osl=128&concurrency=8").json()
    assert f"{api['ttft_ms']:,.0f} ms" in html and f"{api['tpot_ms']:,.1f} ms" in html
    assert "--random-input-len 8192" in html


def test_panel_folds_to_a_link_until_asked(client: TestClient) -> None:
    html = client.get(f"/{V41}?hardware=h200").text
    assert 'id="perf"' in html and "Time per output token" not in html
    assert f'href="/{V41}?hardware=h200&amp;isl=1024#perf"' in html
    opened = client.get(f"/{V41}?hardware=h200&isl=1024").text
    assert "Time per output token" in opened
    assert "?hardware=h200&amp;conc=128&amp;isl=1024&amp;osl=1024" in opened  # every parameter kept in pills


def test_api_errors_are_400_with_the_parameter(client: TestClient) -> None:
    r = client.get(f"/api/perf?model={V41}&isl=x&osl=1")
    assert r.status_code == 400 and r.json()["param"] == "isl"
    r = client.get(f"/api/recommend?model={V41}&isl=10&osl=10&ttft_ms=1&tpot_ms=1&hardware=nope")
    assert r.status_code == 400 and "h200" in r.json()["choices"]
    assert "/api/perf" in client.get("/api/openapi.json").json()["paths"]


def test_mcp_tools() -> None:
    from vllm_recipes.agents.tools import AgentTools

    tools = AgentTools(load_catalog())
    d = tools.call("estimate_performance", {"hf_id": V41, "isl": 1024, "osl": 128, "concurrency": 8})
    assert d["tpot_ms"] > 0 and d["estimate"] is True
    r = tools.call("recommend", {"hf_id": V41, "isl": 1024, "osl": 128, "ttft_ms": 5000, "tpot_ms": 100,
                                 "hardware": ["h200"]})
    assert r["meeting"] and all(m["hardware"].startswith("H200") for m in r["meeting"])
    with pytest.raises(ToolError):
        tools.call("estimate_performance", {"hf_id": V41, "isl": "many", "osl": 1})
