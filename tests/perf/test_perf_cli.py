"""``vllm-recipes perf`` / ``recommend`` end to end, the web panel, /api/perf, /api/recommend and the MCP tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from vllm_recipes.agents.tools import ToolError
from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import engine_cmds, perf_cmds  # noqa: F401  (registers the commands)
from vllm_recipes.cli.main import cli
from vllm_recipes.web import create_app

DATA = Path(__file__).parent / "data"
RECIPES = str(DATA / "recipes")
DENSE = "acme/Dense-70B"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
SHORT = ("--arg", "--max-model-len", "--arg", "8192")


def run(*args: str) -> tuple[int, str, str]:
    offline = ["--offline"] if args and args[0] in ("perf", "recommend") else []  # tests never use the network
    res = CliRunner().invoke(cli, [*args, *offline])
    return res.exit_code, res.stdout, res.stderr


def perf_json(*args: str) -> dict:  # type: ignore[type-arg]
    code, out, err = run("perf", *args, "--json")
    assert code == 0, out + err
    return json.loads(out)


def test_perf_json_fields_and_bench_command() -> None:
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


def test_perf_text_names_the_bounds_and_says_estimate() -> None:
    code, out, _ = run("perf", DENSE, "--recipes-dir", RECIPES, "--hardware", "b200", *SHORT, "--isl", "8192",
                       "--osl", "128", "--concurrency", "64", "--vllm", "0.9")
    assert code == 0, out
    assert "ESTIMATE" in out and "expected error" in out
    assert "TPOT" in out and "bound: memory bandwidth" in out
    assert "outside the calibrated releases" in out
    assert "measure it: vllm bench serve" in out


def test_more_gpus_lower_tpot_on_the_cli() -> None:
    tp = [perf_json(DENSE, "--recipes-dir", RECIPES, "--hardware", "h100", *SHORT, "--arg", "--tensor-parallel-size",
                    "--arg", str(n), "--isl", "1024", "--osl", "128", "--concurrency", "8")["tpot_ms"] for n in (2, 8)]
    assert tp[1] < tp[0]


def test_disaggregated_pools() -> None:
    d = perf_json(V41, "--hardware", "h200", "--strategy", "pd_cluster", "--isl", "2048", "--osl", "128",
                  "--concurrency", "16")
    pre, dec = d["pools"]["prefill"], d["pools"]["decode"]
    assert d["ttft_ms"] == pre["ttft_ms"] and d["tpot_ms"] == dec["tpot_ms"]
    assert d["gpus"] == pre["gpus"] + dec["gpus"]
    assert any("disaggregated" in n for n in d["notes"])


def test_unknown_architecture_is_a_clear_unknown() -> None:
    code, out, _ = run("perf", "acme/Opaque-8B", "--recipes-dir", RECIPES, "--isl", "128", "--osl", "128")
    assert code == 1 and "unknown: the architecture of acme/Opaque-8B" in out
    d = json.loads(run("perf", "acme/Opaque-8B", "--recipes-dir", RECIPES, "--isl", "128", "--osl", "128",
                       "--json")[1])
    assert d["known"] is False and d["ttft_ms"] is None


def test_hf_config_gives_exact_compute_facts(tmp_path: Path) -> None:
    d = perf_json("acme/Opaque-8B", "--recipes-dir", RECIPES, "--hf-config", str(DATA / "moe_config.json"),
                  "--isl", "512", "--osl", "64", "--concurrency", "4")
    assert d["known"] and d["tpot_ms"] > 0


def test_bad_input_exits_2() -> None:
    code, out, err = run("perf", DENSE, "--recipes-dir", RECIPES, "--isl", "1", "--osl", "1", "--concurrency", "2",
                         "--rate", "3")
    assert code == 2 and "not both" in out + err
    code, out, err = run("perf", DENSE, "--recipes-dir", RECIPES, "--hardware", "nope", "--isl", "1", "--osl", "1")
    assert code == 2 and "h200" in out + err
    code, out, err = run("recommend", DENSE, "--recipes-dir", RECIPES, "--isl", "1", "--osl", "1", "--ttft-ms",
                         "1", "--tpot-ms", "1", "--hardware", "nope")
    assert code == 2 and "Unknown hardware 'nope'" in out + err


def test_recommend_fewest_gpus_first_and_none_meets_it() -> None:
    code, out, _ = run("recommend", V41, "--isl", "1024", "--osl", "256", "--concurrency", "16", "--ttft-ms", "3000",
                       "--tpot-ms", "50", "--json")
    assert code == 0, out
    d = json.loads(out)
    gpus = [m["gpus"] for m in d["meeting"]]
    assert gpus and gpus == sorted(gpus) and all(m["meets"] for m in d["meeting"])
    assert all(m["ttft_ms"] <= 3000 and m["tpot_ms"] <= 50 for m in d["meeting"])
    first = d["meeting"][0]
    assert first["command"].startswith(f"vllm-recipes command {V41} --hardware ")
    code, out, _ = run(*first["command"].split()[1:])  # the line renders that configuration
    assert code == 0 and out.startswith(("vllm serve", "docker run"))
    code, out, _ = run("recommend", V41, "--isl", "1024", "--osl", "256", "--concurrency", "16", "--ttft-ms", "1",
                       "--tpot-ms", "0.1", "--hardware", "h200")
    assert code == 1 and "none meets it." in out and "closest:" in out and "TPOT x" in out


def test_corpus_shaped_recipe_without_facts_recommends_nothing_it_cannot_know() -> None:
    code, out, _ = run("recommend", "acme/Opaque-8B", "--recipes-dir", RECIPES, "--isl", "10", "--osl", "10",
                       "--ttft-ms", "100", "--tpot-ms", "10")
    assert code == 1 and "without an estimate" in out and "architecture" in out


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
