"""A fresh install does not warn about itself (issue #27 item 12)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from vllm_recipes.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_s_first_example_prints_no_lint_finding() -> None:
    block = re.search(r"## Examples\n\n```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block is not None
    first = block.group(1).splitlines()[0].split("#")[0]
    args = shlex.split(first)
    assert args[:2] == ["vllm-recipes", "command"]
    got = CliRunner().invoke(cli, args[1:], env={"VLLM_RECIPES_DIR": ""})
    assert got.exit_code == 0, got.output
    assert "0 errors, 0 warnings" in got.stderr and "warning [" not in got.stderr


def test_i18n_check_is_clean_on_the_bundled_catalog() -> None:
    import vllm_recipes.cli.i18n_cmds  # noqa: F401

    got = CliRunner().invoke(cli, ["i18n", "check"], env={"VLLM_RECIPES_DIR": ""})
    assert got.exit_code == 0, got.output
