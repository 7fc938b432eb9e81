"""The lazy command group: every command resolves to the module that registers it."""

from __future__ import annotations

import subprocess
import sys

import click

from vllm_recipes.cli.main import COMMAND_MODULES, cli


def test_every_lazy_command_is_registered_by_its_module() -> None:
    ctx = click.Context(cli)
    for name in COMMAND_MODULES:
        cmd = cli.get_command(ctx, name)
        assert cmd is not None and cmd.name == name
    assert set(cli.list_commands(ctx)) == set(COMMAND_MODULES)


def test_command_start_up_does_not_import_unrelated_modules() -> None:
    """`command` validates its recipe (the publishing rule), so pydantic loads; the web stack does not."""
    code = (
        "import sys\n"
        "from vllm_recipes.cli.main import cli\n"
        "try:\n"
        "    cli(['command', 'deepseek-ai/DeepSeek-V4.1-Flash'], standalone_mode=False)\n"
        "finally:\n"
        "    print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in "
        "('starlette', 'uvicorn', 'markdown_it')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "LOADED []"
