"""The ``vllm-recipes`` command group. A command's module is imported only when it runs (or for
``--help``), so ``command`` does not pay for the web server, validation or the API builder."""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import click

from vllm_recipes import __version__

if TYPE_CHECKING:
    from vllm_recipes.catalog import Catalog, Recipe
    from vllm_recipes.catalog.loader import RecipesDirs

recipes_dir_option = click.option(
    "--recipes-dir",
    "recipes_dir",
    multiple=True,
    envvar="VLLM_RECIPES_DIR",
    metavar="SOURCE",
    help="Recipes in the public layout (docs/reference/recipe-format.md): a directory, github:ORG/REPO[@REF], "
         "git+https://...[@REF], git+file:///...[@REF] or an http(s)://.../*.tar.gz archive (fetched once, then "
         "read from the cache). Repeat it to layer sources: later ones replace recipes per model id, and "
         "taxonomy, platforms, strategies and kv stores merge per entry and per field over the bundled "
         "catalog's (default: the bundled catalog). Env: VLLM_RECIPES_DIR (space-separated).",
)


def _set_follow(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:  # (the loader and the server's worker processes read it from the environment)
        from vllm_recipes.catalog.yamlsource import ENV_FOLLOW_SYMLINKS

        os.environ[ENV_FOLLOW_SYMLINKS] = "1"


follow_symlinks_option = click.option(
    "--follow-symlinks", is_flag=True, expose_value=False, is_eager=True, callback=_set_follow,
    help="Read recipe files that are symbolic links to files outside the recipes directory "
         "(refused by default, with a finding).")

#: command name -> module (under ``vllm_recipes.cli``) that registers it
COMMAND_MODULES = {name: module for module, names in {
    "engine_cmds": ("command", "explain"),
    "inspect_cmds": ("validate", "list", "show"),
    "api_cmds": ("build-api",),
    "i18n_cmds": ("i18n",),
    "web_cmds": ("serve",),
    "vllm_cmds": ("vllm-flags",),
    "export_cmds": ("export",),
    "fit_cmds": ("fit",),
    "perf_cmds": ("perf", "recommend"),
    "mcp_cmds": ("mcp",),
    "diff_cmds": ("diff",),
    "cache_cmds": ("cache", "catalog"),
}.items() for name in names}


class LazyGroup(click.Group):
    """A group that imports a command's module the first time the command is needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMAND_MODULES))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command with the whole first sentence of its help (click cuts it at 45 characters)."""
        rows = [(name, cmd.get_short_help_str(limit=300)) for name in self.list_commands(ctx)
                if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(f"vllm_recipes.cli.{COMMAND_MODULES[cmd_name]}")
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        from vllm_recipes.render.unsafe import UnsafeValue

        try:
            return super().invoke(ctx)
        except UnsafeValue as exc:  # a value the rendering refuses to write into a command (H7)
            fail(f"refusing to render: {exc} (run `vllm-recipes validate` for the file and line)")


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vllm-recipes")
def cli() -> None:
    """Turn serving recipes into exact vLLM deployment commands.

    Reference (recipe format, synthesis rules, JSON API, website):
    docs/reference/README.md.
    """


def fail(message: str) -> NoReturn:
    """A usage problem on stderr, exit 2, in click's style: ``Error: Sentence case.``."""
    if re.match(r"[a-z]+ ", message):
        message = message[:1].upper() + message[1:]
    click.echo(f"Error: {message}", err=True)
    sys.exit(2)


@contextmanager
def failing(*errors: type[Exception], say: Callable[[Any], str] = str) -> Iterator[None]:
    """One of ``errors`` inside the block exits 2 with ``say(exc)`` (a usage problem, see :func:`fail`)."""
    try:
        yield
    except errors as exc:
        fail(say(exc))


def refusals() -> AbstractContextManager[None]:
    """A :class:`QueryError` inside the block exits 2 with its message, options spelled as typed."""
    from vllm_recipes.service import QueryError

    return failing(QueryError, say=lambda exc: exc.text("cli"))


def find_or_exit(catalog: Catalog, hf_id: str) -> tuple[Recipe, str | None]:
    """The recipe ``hf_id`` names (a variant's model id: ``(parent, variant key)``), else exit 2, or 1
    for validation errors: what ``serve`` and ``build-api`` leave out is not rendered either
    (docs/decisions-catalog.md). A name that is not one (H7) is refused even without ``validate``."""
    from vllm_recipes.catalog.diagnostics import plural
    from vllm_recipes.catalog.identifiers import recipe_identifier_findings
    from vllm_recipes.catalog.usable import validation_errors
    from vllm_recipes.service import find_recipe

    with refusals():
        recipe, variant_key = find_recipe(catalog, hf_id)
    bad = [f for f in recipe_identifier_findings(recipe.doc) if f.severity == "error"]
    if bad:
        fail(f"refusing to render {recipe.hf_id}: " + "".join(f"\n  {f.format()}" for f in bad[:20]))
    errors = validation_errors(catalog, [recipe])[0]
    if errors:
        click.echo(f"Error: recipe {recipe.hf_id!r} has {plural(len(errors), 'validation error')}; it is not "
                   "published (serve, build-api) nor rendered:", err=True)
        for finding in errors:
            click.echo(f"  {finding.format()}", err=True)
        sys.exit(1)
    return recipe, variant_key


def load_or_exit(recipes_dir: RecipesDirs, *, require_recipes: bool = True) -> Catalog:
    """Load the catalog or exit 2 with a readable reason, also when it holds no recipe at all (a
    directory one level off, say: a command would answer about nothing)."""
    from vllm_recipes.catalog import load_catalog

    try:
        catalog = load_catalog(recipes_dir)
    except (FileNotFoundError, NotADirectoryError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read recipes directory {recipes_dir}: {exc.strerror or exc}")
    except Exception as exc:  # a remote source's SourceError (its module is imported only for remote sources)
        from vllm_recipes.catalog.remote import SourceError

        if not isinstance(exc, SourceError):
            raise
        fail(str(exc))
    if require_recipes and not (catalog.all_ids or catalog.load_errors or catalog.refused):
        root = catalog.root
        hint = f"; did you mean --recipes-dir {root.parent}?" \
            if root.name == "models" or (root.parent / "models").is_dir() else ""
        fail(f"no recipes found: no models/<org>/<repo>.yaml under {root.resolve() / 'models'}{hint}")
    from vllm_recipes.catalog.usable import usable_static

    return usable_static(catalog)[0]  # (entries every stage would trip over are left out, as serve does)


def main() -> None:
    cli(prog_name="vllm-recipes")
