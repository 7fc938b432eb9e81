"""The CLI says what it resolved, has one ``--json`` switch, fits tables to the terminal,
names options as typed, and says why a recipe is missing (issue 14 B1-B3, A3, D2)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import engine_cmds, inspect_cmds, output  # noqa: F401  (registers the commands)
from vllm_recipes.web import create_app

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
HEADER = (f"# {V41} · hardware gb200 (default) · variant default · strategy single_node_tp (recommended) · "
          "1 node · frontend rust (recipe default) · install docker (default)")


# --- B1: the resolved-selection line ------------------------------------------------------------


def test_command_names_what_it_resolved_on_stderr_and_stdout_is_only_the_command(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41)
    code, out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0
    header, *lint = err.strip().splitlines()
    assert header == HEADER
    # then the release lint of the same selection (tests/lint/test_vllm_lint_seeds.py)
    assert lint[0].startswith("# checked against vLLM ") and all(line.startswith("#") for line in lint)
    assert out.startswith("docker run") and "#" not in out.splitlines()[0]


def test_picked_values_are_not_marked_as_defaults(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--hardware", "mi355x", "--strategy", "pd_cluster", "--frontend", "python", "--install", "docker")
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0
    assert err.strip().splitlines()[0] == (f"# {V41} · hardware mi355x · variant default · strategy pd_cluster · "
                           "prefill 1 node TP + decode 1 node TP · frontend python · install docker")


def test_quiet_and_json_print_no_header(run_cli: Callable[..., Result]) -> None:
    assert run_cli("command", V41, "--quiet").stderr == ""
    assert run_cli("command", V41, "--json").stderr == ""


def test_explain_is_titled_with_the_same_line(run_cli: Callable[..., Result]) -> None:
    res = run_cli("explain", V41)
    code, out = res.exit_code, res.stdout
    assert code == 0 and out.splitlines()[0] == HEADER.removeprefix("# ")


# --- B2: one output switch, tables that fit -----------------------------------------------------


def test_json_is_the_switch_and_format_json_its_alias(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--json")
    code, out = res.exit_code, res.stdout
    assert code == 0 and json.loads(out)["hardware"] == "gb200"
    assert run_cli("command", V41, "--format", "json").stdout == out
    res = run_cli("command", V41, "--format", "text", "--json")
    code, err = res.exit_code, res.stderr
    assert code == 2 and "--json conflicts with --format text" in err


@pytest.mark.parametrize("cmd", [["command", V41], ["explain", V41], ["list"], ["show", V41], ["validate"]])
def test_every_command_with_a_machine_form_takes_json(run_cli: Callable[..., Result], cmd: list[str]) -> None:
    res = run_cli(*cmd, "--json")
    code, out = res.exit_code, res.stdout
    assert code == 0, out
    json.loads(out)


def test_piped_explain_never_wraps(run_cli: Callable[..., Result]) -> None:
    res = run_cli("explain", V41, "--hardware", "b200")
    code, out = res.exit_code, res.stdout
    assert code == 0
    row = next(line for line in out.splitlines() if "--attention-config" in line)
    assert '{"backend":' in row and "strategy-override" in row and ".yaml:" in row


def test_terminal_tables_fit_the_width_and_keep_flags_whole(run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "is_tty", lambda: True)
    res = run_cli("explain", V41, "--hardware", "b200", env={"COLUMNS": "100"})
    code, out = res.exit_code, res.stdout
    assert code == 0
    lines = out.splitlines()[1:]  # after the title line
    assert max(len(line) for line in lines) <= 100
    for token in ("--enable-auto-tool-choice", "VLLM_ENGINE_READY_TIMEOUT_S", "strategy-override-generation"):
        assert any(token in line for line in lines), token
    wide = run_cli("explain", V41, "--hardware", "b200", env={"COLUMNS": "200"}).stdout
    assert max(len(line) for line in wide.splitlines()) > 100  # uses the room it has, no forced width


# --- B3: options as typed, ids in any case ------------------------------------------------------


def test_errors_name_command_line_options(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--strategy", "pd_cluster", "--prefill-rank", "3")
    code, err = res.exit_code, res.stderr
    assert code == 2
    assert "Error: --prefill-rank must be 0 for a 1-node prefill pool; got 3. Valid choices: 0." in err
    res = run_cli("command", V41, "--feature", "reasoning", "--no-feature", "reasoning")
    code, err = res.exit_code, res.stderr
    assert code == 2 and "--feature reasoning and --no-feature reasoning contradict each other" in err
    res = run_cli("command", V41, "--router", "smg-grpc")
    code, err = res.exit_code, res.stderr
    assert code == 2 and "--router applies to --strategy pd_cluster only" in err
    res = run_cli("command", V41, "--mode", "reasoning=high")
    code, err = res.exit_code, res.stderr
    assert code == 2 and "Feature 'reasoning' has no modes (--mode reasoning=high)" in err


def test_ids_match_in_any_case(run_cli: Callable[..., Result]) -> None:
    lower = run_cli("command", V41, "--hardware", "h200", "--strategy", "pd_cluster", "--json").stdout
    upper = run_cli("command", V41.upper(), "--hardware", "H200", "--strategy", "PD_CLUSTER", "--install", "Docker", "--json").stdout
    assert lower == upper and json.loads(upper)["hardware"] == "h200"


def test_public_advanced_ids_work_on_the_command_line(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--advanced", "max_num_seqs_256", "--json")
    code, out = res.exit_code, res.stdout
    assert code == 0 and "--max-num-seqs" in json.loads(out)["argv"]


# --- A3: --recipes-dir and recipes that fail to load --------------------------------------------


@pytest.fixture
def own_dir(tmp_path: Path) -> Path:
    good = {"meta": {"title": "Tiny"}, "model": {"model_id": "acme/Tiny"},
            "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 10}},
            "compatible_strategies": ["single_node_tp"]}
    (tmp_path / "models" / "acme").mkdir(parents=True)
    (tmp_path / "models" / "acme" / "Tiny.yaml").write_text(yaml.safe_dump(good), encoding="utf-8")
    (tmp_path / "models" / "acme" / "Broken.yaml").write_text("meta:\n  title: [unclosed\n", encoding="utf-8")
    return tmp_path


def test_a_recipe_that_fails_to_load_says_so_with_file_and_line(run_cli: Callable[..., Result], own_dir: Path) -> None:
    for cmd in ("command", "explain", "show"):
        res = run_cli(cmd, "acme/broken", "--recipes-dir", str(own_dir))
        code, err = res.exit_code, res.stderr
        assert code == 2
        assert re.search(r"Recipe 'acme/broken' failed to load: models/acme/Broken\.yaml:\d+:\d+: ", err), err


def test_the_api_says_failed_to_load_too(own_dir: Path) -> None:
    with TestClient(create_app(load_catalog(own_dir))) as client:
        r = client.get("/api/resolve", params={"model": "acme/Broken"})
    assert r.status_code == 400 and "failed to load: models/acme/Broken.yaml:" in r.json()["error"]


def test_own_directory_models_are_not_mixed_with_bundled_ones(run_cli: Callable[..., Result], own_dir: Path) -> None:
    res = run_cli("list", "--recipes-dir", str(own_dir), "--json")
    code, out = res.exit_code, res.stdout
    assert code == 0 and [r["hf_id"] for r in json.loads(out)] == ["acme/Tiny"]
    res = run_cli("command", V41, "--recipes-dir", str(own_dir))
    code, err = res.exit_code, res.stderr
    assert code == 2 and "Unknown recipe" in err
    # strategies and taxonomy the directory lacks come from the bundled catalog
    res = run_cli("command", "acme/Tiny", "--recipes-dir", str(own_dir), "--hardware", "h200", "--json")
    code, out = res.exit_code, res.stdout
    assert code == 0 and json.loads(out)["strategy"] == "single_node_tp"


# --- D2 on the command line ----------------------------------------------------------------------


def test_pool_mode_override_resizes_the_pool(run_cli: Callable[..., Result], dep_pool_catalog_dir: Path) -> None:
    base = ("command", "acme/Big", "--recipes-dir", str(dep_pool_catalog_dir), "--hardware", "h200", "--strategy", "pd_cluster")
    default = json.loads(run_cli(*base, "--json").stdout)["decode"]
    assert (default["nodes"], default["parallelism"], default["tp"]) == (2, "dep", 1)
    res = run_cli(*base, "--decode-mode", "tp")
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and "decode 1 node TP" in err
    decode = json.loads(run_cli(*base, "--decode-mode", "tp", "--json").stdout)["decode"]
    assert (decode["nodes"], decode["parallelism"], decode["tp"]) == (1, "tp", 8)


def test_the_recipe_page_says_failed_to_load(own_dir: Path) -> None:
    with TestClient(create_app(load_catalog(own_dir))) as client:
        r = client.get("/acme/Broken")
        missing = client.get("/acme/Missing")
    assert r.status_code == 404 and "failed to load: models/acme/Broken.yaml:" in r.text
    assert missing.status_code == 404 and "failed to load" not in missing.text


def test_omni_recipes_name_their_selection_too(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    recipe = {"meta": {"title": "Tiny video", "tasks": ["omni"]}, "model": {"model_id": "acme/Video"},
              "variants": {"default": {"precision": "bf16"}}, "omni": {"tasks": ["t2v", "i2v"]}}
    (tmp_path / "models" / "acme").mkdir(parents=True)
    (tmp_path / "models" / "acme" / "Video.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    res = run_cli("command", "acme/video", "--recipes-dir", str(tmp_path), "--task", "I2V", "--hardware", "H200")
    code, out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and out.startswith("vllm serve acme/Video")
    assert err.strip() == "# acme/Video · hardware h200 · variant default · task i2v · install pip (default)"
