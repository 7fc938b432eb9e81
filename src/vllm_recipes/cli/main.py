"""The ``vllm-recipes`` command group; each sub-module registers its own commands."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

import click

from vllm_recipes import __version__

if TYPE_CHECKING:
    from vllm_recipes.catalog import Catalog

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


def fail(message: str) -> NoReturn:
    """A usage problem: message on stderr, exit 2."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


def load_or_exit(recipes_dir: str | None) -> Catalog:
    """Load the catalog or exit 2 with a readable reason (never a traceback)."""
    from vllm_recipes.catalog import load_catalog

    try:
        return load_catalog(recipes_dir)
    except (FileNotFoundError, NotADirectoryError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read recipes directory {recipes_dir}: {exc.strerror or exc}")


def main() -> None:
    # Sub-command modules register themselves on import.
    from vllm_recipes.cli import api_cmds, engine_cmds, i18n_cmds, inspect_cmds, web_cmds  # noqa: F401

    cli(prog_name="vllm-recipes")
