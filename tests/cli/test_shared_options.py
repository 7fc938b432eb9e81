"""An option several commands take is one option object, so its help cannot drift between them, and
``--json`` against a ``--format`` naming another format is one error in every command (issue #26)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import click
import pytest
from click.testing import Result

from vllm_recipes.cli.main import cli

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"


def _commands() -> Iterator[tuple[str, click.Command]]:
    """Every command (a group's subcommands too), by its full name."""
    todo: list[tuple[str, click.Command]] = [("", cli)]
    while todo:
        path, group = todo.pop()
        assert isinstance(group, click.Group)
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            assert cmd is not None
            full = f"{path} {name}".strip()
            if isinstance(cmd, click.Group):
                todo.append((full, cmd))
            else:
                yield full, cmd


def _helps(option: str, commands: set[str] | None = None) -> dict[str, str | None]:
    return {name: p.help for name, cmd in _commands() if commands is None or name in commands
            for p in cmd.params if option in p.opts}


def test_every_json_switch_says_the_same() -> None:
    helps = _helps("--json")
    assert {"command", "validate", "fit", "perf", "recommend", "vllm-flags", "i18n check", "i18n sections"} <= set(helps)
    assert set(helps.values()) == {"Machine-readable output (JSON on stdout)."}, helps


@pytest.mark.parametrize(("option", "commands"), [
    ("--gpu", {"fit", "perf"}), ("--gpu-memory", {"fit", "perf"}), ("--gpus", {"fit", "perf"}),
    ("--hf-config", {"fit", "perf", "recommend"}), ("--offline", {"fit", "perf", "recommend"}),
])
def test_fit_and_perf_share_their_hardware_and_fact_options(option: str, commands: set[str]) -> None:
    helps = _helps(option, commands)
    assert set(helps) == commands and len(set(helps.values())) == 1, helps


@pytest.mark.parametrize(("args", "fmt"), [
    (["command", V41, "--format", "text"], "text"), (["explain", V41, "--format", "text"], "text"),
    (["validate", "--format", "sarif"], "sarif"), (["diff", "git:HEAD", "--format", "markdown"], "markdown"),
])
def test_json_against_another_format_is_one_error(run_cli: Callable[..., Result], args: list[str], fmt: str) -> None:
    res = run_cli(*args, "--json")
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines()[-1] == f"Error: --json conflicts with --format {fmt}; give one of them."
