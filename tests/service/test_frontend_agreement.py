"""Issue #27.9: the frontend a selection names and the one its command runs agree.

A public recipe (Kimi-K3's shape) exports ``VLLM_USE_RUST_FRONTEND=1`` in its Hopper and
Blackwell hardware blocks but not for AMD, and names no default frontend. The command
runs what its env says, so: the header and the JSON ``frontend`` key name Rust there; an
explicit ``python`` is refused naming the choice that runs (CLI exit 2, ``/api/resolve``
400, an MCP tool error) or, on the page, dropped with a notice and its pill disabled. The
reverse shape (default Rust, an AMD block exporting ``=0``) works the same way round.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.agents.tools import AgentTools, ToolError
from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.web import create_app

Run = Callable[..., Result]

ENV_RUST = {
    "meta": {"title": "Env Rust", "provider": "Acme", "tasks": ["text"],
             "hardware": {"h200": "verified", "b200": "supported", "mi355x": "supported"}},
    "model": {"model_id": "acme/EnvRust", "architecture": "moe"},
    "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 900}},
    "compatible_strategies": ["single_node_tp", "multi_node_tp", "multi_node_dep"],
    "hardware_overrides": {
        "hopper": {"extra_args": ["--max-model-len", "32768"],
                   "extra_env": {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_USE_V2_MODEL_RUNNER": "1",
                                 "VLLM_USE_RUST_FRONTEND": "1"}},
        "blackwell": {"extra_env": {"VLLM_USE_RUST_FRONTEND": "1"}},
        "amd": {"extra_env": {"VLLM_ROCM_USE_AITER": "1"}},
    },
}
ENV_PYTHON = {
    "meta": {"title": "Env Python", "provider": "Acme", "tasks": ["text"],
             "hardware": {"h200": "verified", "mi355x": "supported"}},
    "model": {"model_id": "acme/EnvPython", "default_frontend": "rust"},
    "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 300}},
    "compatible_strategies": ["single_node_tp"],
    "hardware_overrides": {"amd": {"extra_env": {"VLLM_USE_RUST_FRONTEND": "0"}}},
}


@pytest.fixture(scope="module")
def recipes_dir(tmp_path_factory: pytest.TempPathFactory, recipe_writer: Callable[..., Path]) -> Path:
    root = tmp_path_factory.mktemp("frontends")
    for name, data in (("EnvRust", ENV_RUST), ("EnvPython", ENV_PYTHON)):
        recipe_writer(root, f"acme/{name}", data)
    return root


@pytest.fixture(scope="module")
def cat(recipes_dir: Path) -> Catalog:
    return load_catalog(str(recipes_dir))


def _line(recipes_dir: Path, name: str, text: str) -> int:
    lines = (recipes_dir / "models" / "acme" / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if text in line)


def test_the_default_names_the_frontend_the_env_runs(run_cli: Run, recipes_dir: Path) -> None:
    res = run_cli("command", "acme/EnvRust", "--hardware", "h200", "--recipes-dir", str(recipes_dir))
    assert res.exit_code == 0, res.output
    assert "export VLLM_USE_RUST_FRONTEND=1" in res.stdout
    assert "· frontend rust (the recipe's env sets VLLM_USE_RUST_FRONTEND=1) ·" in res.stderr
    obj = json.loads(run_cli("command", "acme/EnvRust", "--hardware", "h200", "--format", "json",
                             "--recipes-dir", str(recipes_dir)).stdout)
    assert obj["frontend"] == "rust" and obj["env"]["VLLM_USE_RUST_FRONTEND"] == "1"


@pytest.mark.parametrize("cmd", ["command", "explain", "export"])
def test_a_contradicting_choice_is_refused_naming_the_one_that_runs(run_cli: Run, recipes_dir: Path,
                                                                    cmd: str) -> None:
    extra = ("--to", "compose", "-o", "-") if cmd == "export" else ()
    res = run_cli(cmd, "acme/EnvRust", "--hardware", "h200", "--frontend", "python", *extra,
                  "--recipes-dir", str(recipes_dir))
    line = _line(recipes_dir, "EnvRust", "VLLM_USE_RUST_FRONTEND")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip() == (
        "Error: --frontend python does not apply to acme/EnvRust on h200: the recipe's env sets "
        f"VLLM_USE_RUST_FRONTEND=1 (models/acme/EnvRust.yaml:{line}), which runs the rust frontend. "
        "Valid choices: rust.")


def test_the_agreeing_choice_and_other_hardware_work(run_cli: Run, recipes_dir: Path) -> None:
    rust = run_cli("command", "acme/EnvRust", "--hardware", "h200", "--frontend", "rust",
                   "--recipes-dir", str(recipes_dir))
    assert rust.exit_code == 0 and "· frontend rust (the recipe's env sets VLLM_USE_RUST_FRONTEND=1) ·" in rust.stderr
    amd = run_cli("command", "acme/EnvRust", "--hardware", "mi355x", "--frontend", "python",
                  "--recipes-dir", str(recipes_dir))
    assert amd.exit_code == 0 and "VLLM_USE_RUST_FRONTEND" not in amd.stdout
    assert "· frontend python ·" in amd.stderr
    amd_rust = run_cli("command", "acme/EnvRust", "--hardware", "mi355x", "--frontend", "rust",
                       "--recipes-dir", str(recipes_dir))
    assert amd_rust.exit_code == 0 and "export VLLM_USE_RUST_FRONTEND=1" in amd_rust.stdout
    assert "· frontend rust ·" in amd_rust.stderr


def test_the_reverse_shape(run_cli: Run, recipes_dir: Path) -> None:
    """Default Rust; the AMD block exports ``VLLM_USE_RUST_FRONTEND=0``, so Python runs there."""
    nv = run_cli("command", "acme/EnvPython", "--hardware", "h200", "--recipes-dir", str(recipes_dir))
    assert "export VLLM_USE_RUST_FRONTEND=1" in nv.stdout and "· frontend rust (recipe default) ·" in nv.stderr
    amd = run_cli("command", "acme/EnvPython", "--hardware", "mi355x", "--recipes-dir", str(recipes_dir))
    assert amd.exit_code == 0 and "export VLLM_USE_RUST_FRONTEND=0" in amd.stdout
    assert "· frontend python (the recipe's env sets VLLM_USE_RUST_FRONTEND=0) ·" in amd.stderr
    refused = run_cli("command", "acme/EnvPython", "--hardware", "mi355x", "--frontend", "rust",
                      "--recipes-dir", str(recipes_dir))
    assert refused.exit_code == 2
    assert "which runs the python frontend. Valid choices: python." in refused.stderr


def test_api_and_mcp_refuse_with_the_same_choices(cat: Catalog) -> None:
    client = TestClient(create_app(cat))
    bad = client.get("/api/resolve?model=acme/EnvRust&hardware=h200&frontend=python")
    assert bad.status_code == 400
    assert bad.json()["param"] == "frontend" and bad.json()["choices"] == ["rust"]
    good = client.get("/api/resolve?model=acme/EnvRust&hardware=h200")
    assert good.json()["rendering"]["frontend"] == "rust" and good.json()["selection"]["hardware"] == "h200"
    with pytest.raises(ToolError) as err:
        AgentTools(cat).call("resolve_command", {"hf_id": "acme/EnvRust", "hardware": "h200", "frontend": "python"})
    assert "Valid choices: rust." in str(err.value)


def test_the_page_drops_the_choice_and_disables_its_pill(cat: Catalog) -> None:
    client = TestClient(create_app(cat))
    page = client.get("/acme/EnvRust?hardware=h200&frontend=python").text
    assert "frontend python does not apply to acme/EnvRust on h200" in page  # the notice
    row = re.search(r'data-row="frontend">(.*?)</div>', page, re.S)
    assert row is not None
    python, rust = re.findall(r'<(?:a|span) class="pill[^>]*data-key="frontend:(?:python|rust)"[^>]*>', row.group(1))
    assert "is-disabled" in python and "href" not in python
    assert "VLLM_USE_RUST_FRONTEND=1, so the command runs the Rust frontend" in python
    assert "is-active" in rust and 'aria-current="true"' in rust
    # the command shown exports what the header of the CLI names
    assert "VLLM_USE_RUST_FRONTEND=1" in page
    amd = client.get("/acme/EnvRust?hardware=mi355x").text
    amd_row = re.search(r'data-row="frontend">(.*?)</div>', amd, re.S)
    assert amd_row is not None and "is-disabled" not in amd_row.group(1)


@pytest.mark.parametrize("answer", ["fit", "perf"])
def test_fit_and_perf_reuse_the_resolution_the_frontend_check_made(cat: Catalog, answer: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import vllm_recipes.synth.resolve as synth
    from vllm_recipes.service.fit import fit_payload
    from vllm_recipes.service.perf import perf_payload

    plans = []
    real = synth.resolve_plan
    monkeypatch.setattr(synth, "resolve_plan", lambda ctx: plans.append(ctx) or real(ctx))
    items = [("model", "acme/EnvRust"), ("hardware", "h200"), ("frontend", "rust")]
    if answer == "fit":
        got = fit_payload(cat, items)
        assert got["model"] == "acme/EnvRust"
    else:
        got = perf_payload(cat, [*items, ("isl", "1024"), ("osl", "128")])
        assert got["model"] == "acme/EnvRust"
    assert len(plans) == 1
