"""The ``vllm-recipes`` command group; each sub-module registers its own commands.

Sub-command modules are imported only when their command runs (or for
``--help``), so ``vllm-recipes command`` does not pay for the web server,
validation models or the API builder at start-up.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, NoReturn

import click

from vllm_recipes import __version__

if TYPE_CHECKING:
    from collections.abc import Callable

    from vllm_recipes.catalog import Catalog, Recipe

recipes_dir_option = click.option(
    "--recipes-dir",
    type=click.Path(file_okay=False, path_type=str),
    envvar="VLLM_RECIPES_DIR",
    default=None,
    help="Recipe directory in the public layout (docs/reference/recipe-format.md); its models/ is the whole "
         "list of recipes, while taxonomy, platforms, strategies and kv stores it lacks come from the bundled "
         "catalog (default: the bundled catalog). Env: VLLM_RECIPES_DIR.",
)


#: command name -> module (under ``vllm_recipes.cli``) that registers it
COMMAND_MODULES = {
    "command": "engine_cmds",
    "explain": "engine_cmds",
    "validate": "inspect_cmds",
    "list": "inspect_cmds",
    "show": "inspect_cmds",
    "build-api": "api_cmds",
    "i18n": "i18n_cmds",
    "serve": "web_cmds",
    "vllm-flags": "vllm_cmds",
    "export": "export_cmds",
    "fit": "fit_cmds",
    "perf": "perf_cmds",
    "recommend": "perf_cmds",
    "mcp": "mcp_cmds",
    "diff": "review_cmds",
    "cache": "cache_cmds",
}


class LazyGroup(click.Group):
    """A group that imports a command's module the first time the command is needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMAND_MODULES))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(f"vllm_recipes.cli.{COMMAND_MODULES[cmd_name]}")
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vllm-recipes")
def cli() -> None:
    """Turn serving recipes into exact vLLM deployment commands.

    Reference (recipe format, synthesis rules, JSON API, website):
    docs/reference/README.md.
    """


def fail(message: str) -> NoReturn:
    """A usage problem: message on stderr, exit 2."""
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


def find_or_exit(catalog: Catalog, hf_id: str) -> tuple[Recipe, str | None]:
    """``catalog.find(hf_id)``, or exit 2 saying why: the file failed to load (file:line),
    or no such recipe (with close matches)."""
    found = catalog.find(hf_id)
    if found is not None:
        return found
    broken = catalog.load_error_for(hf_id)
    if broken is not None:
        fail(f"recipe {hf_id!r} failed to load: {broken}")
    close = catalog.close_matches(hf_id)
    fail(f"unknown recipe {hf_id!r}." + (f" Did you mean: {', '.join(close)}?" if close else ""))


def load_or_exit(recipes_dir: str | None, meanwhile: Callable[[], object] | None = None, *,
                 prevalidate: bool = False) -> Catalog:
    """Load the catalog or exit 2 with a readable reason (never a traceback).

    The first load of a large catalog parses on two cores; ``meanwhile`` runs
    while the second core parses, and ``prevalidate`` finds each recipe's errors
    meanwhile too (see :func:`~vllm_recipes.catalog.load_catalog`).
    """
    import gc

    from vllm_recipes.catalog import load_catalog
    from vllm_recipes.gcpause import cyclic_gc_paused

    try:
        with cyclic_gc_paused():
            catalog = load_catalog(recipes_dir, parallel=True, meanwhile=meanwhile, prevalidate=prevalidate)
            # the catalog lives as long as the command: moved out of the collector's generations
            # before it runs again (else its first run scans every object the load made, ~0.1 s)
            gc.freeze()
            return catalog
    except (FileNotFoundError, NotADirectoryError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read recipes directory {recipes_dir}: {exc.strerror or exc}")


def main() -> None:
    cli(prog_name="vllm-recipes")
