"""The ``vllm-recipes`` command group; each sub-module registers its own commands."""

from __future__ import annotations

import click

from vllm_recipes import __version__

recipes_dir_option = click.option(
    "--recipes-dir",
    type=click.Path(file_okay=False, path_type=str),
    envvar="VLLM_RECIPES_DIR",
    default=None,
    help="Recipe directory in the public layout (default: the bundled catalog). Env: VLLM_RECIPES_DIR.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vllm-recipes")
def cli() -> None:
    """Turn serving recipes into exact vLLM deployment commands."""


def main() -> None:
    # Sub-command modules register themselves on import.
    from vllm_recipes.cli import api_cmds, engine_cmds, i18n_cmds, inspect_cmds, web_cmds  # noqa: F401

    cli(prog_name="vllm-recipes")
