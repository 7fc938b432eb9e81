"""Issue #27 items 9 and 11: the command line says the same things the same way."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"

#: a public-style recipe whose hardware block switches the Rust frontend on through its env
RUST_ENV = """\
meta: {title: Env Frontend, provider: Acme, hardware: {h200: verified}}
model: {model_id: acme/EnvFront}
variants:
  default: {precision: bf16, vram_minimum_gb: 100}
compatible_strategies: [single_node_tp]
hardware_overrides:
  hopper:
    extra_env: {VLLM_USE_RUST_FRONTEND: "1"}
"""


@pytest.fixture
def env_frontend_dir(tmp_path: Path) -> Path:
    path = tmp_path / "models" / "acme" / "EnvFront.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(RUST_ENV, encoding="utf-8")
    return tmp_path


Run = Callable[..., Result]


def test_an_unknown_frontend_names_the_valid_ones(run_cli: Run, env_frontend_dir: Path) -> None:
    res = run_cli("command", "acme/EnvFront", "--frontend", "go", "--recipes-dir", str(env_frontend_dir))
    assert res.exit_code == 2
    assert res.stderr.strip() == "Error: --frontend 'go' is not a known frontend. Valid choices: python, rust."


def test_the_header_names_the_frontend_the_command_runs(run_cli: Run, env_frontend_dir: Path) -> None:
    res = run_cli("command", "acme/EnvFront", "--hardware", "h200", "--recipes-dir", str(env_frontend_dir))
    assert res.exit_code == 0 and "export VLLM_USE_RUST_FRONTEND=1" in res.stdout
    assert "frontend rust (the recipe's env sets VLLM_USE_RUST_FRONTEND=1)" in res.stderr
    # an explicit contradicting choice is refused (tests/service/test_frontend_agreement.py: every front end)
    python = run_cli("command", "acme/EnvFront", "--hardware", "h200", "--frontend", "python",
                     "--recipes-dir", str(env_frontend_dir))
    assert python.exit_code == 2 and python.stdout == ""


def test_a_selected_frontend_reads_as_chosen(run_cli: Run) -> None:
    res = run_cli("command", V41, "--frontend", "python")
    assert "· frontend python ·" in res.stderr and "VLLM_USE_RUST_FRONTEND" not in res.stdout


def test_explain_takes_format_json_like_command(run_cli: Run) -> None:
    as_json = run_cli("explain", V41, "--json")
    assert as_json.exit_code == 0
    assert run_cli("explain", V41, "--format", "json").stdout == as_json.stdout
    assert json.loads(as_json.stdout)[0]["process"] == "vLLM"
    both = run_cli("explain", V41, "--format", "text", "--json")
    assert both.exit_code == 2 and "--json conflicts with --format text" in both.stderr


def test_piped_explain_lines_are_as_wide_as_their_content(run_cli: Run) -> None:
    res = run_cli("explain", V41, "--hardware", "b200")
    entries = [line for line in res.stdout.splitlines() if line.startswith(("  arg ", "  env "))]
    assert entries
    for line in entries:
        value_free = line.replace(line.split("  [", 1)[0], "")
        assert "   " not in value_free.strip(), line  # no padding after the value
        assert len(line) <= 120 or "{" in line, line  # only a long JSON value makes a line long


def test_usage_errors_read_alike(run_cli: Run) -> None:
    unknown = run_cli("command", "org/Nope")
    assert unknown.exit_code == 2 and unknown.stderr.startswith("Error: Unknown recipe 'org/Nope'.")
    feature = run_cli("command", V41, "--feature", "nope")
    assert feature.exit_code == 2 and feature.stderr.startswith("Error: Unknown feature 'nope'.")
    option = run_cli("command", V41, "--strategy", "nope")
    assert option.exit_code == 2 and option.stderr.startswith("Error: --strategy 'nope' is not offered")


def test_top_level_help_gives_whole_summaries(run_cli: Run) -> None:
    res = run_cli("--help")
    commands = res.stdout.split("Commands:", 1)[1]
    assert not [line for line in commands.splitlines() if line.rstrip().endswith("...")]  # click's cut mark
    assert "Write the static JSON API to OUT (docs/reference/json-api.md), atomically." in " ".join(commands.split())


def test_build_api_examples_name_models_of_the_catalog(run_cli: Run, env_frontend_dir: Path,
                                                       tmp_path: Path) -> None:
    res = run_cli("build-api", str(tmp_path / "api"), "--recipes-dir", str(env_frontend_dir), "--no-llms")
    assert res.exit_code == 0, res.output
    assert "(e.g. /acme/EnvFront.json)" in res.stdout and "Kimi-K2.5" not in res.stdout
    assert "(promoted variants)" in res.stdout  # no variant of its own: no borrowed example


def test_build_api_refusing_a_folder_leaves_nothing_behind(run_cli: Run, tmp_path: Path) -> None:
    out = tmp_path / "docs"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    res = run_cli("build-api", str(out))
    assert res.exit_code != 0 and "refusing to replace it" in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs"]
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_recipe_used_here_is_valid(run_cli: Run, env_frontend_dir: Path) -> None:
    res = run_cli("validate", "--recipes-dir", str(env_frontend_dir))
    assert res.exit_code == 0, textwrap.shorten(res.output, 500)
