"""``vllm-recipes diff``: the rendered-command impact of a recipe change (or of two selections)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vllm_recipes.select.params import PARAMS, Param

from .main import cli, fail, failing, load_or_exit, recipes_dir_option
from .output import dump_json, json_option, output_format

if TYPE_CHECKING:
    from vllm_recipes.review.compare import Impact

#: ``--a``/``--b`` keys: the selection options without their dashes (``hardware=h200 feature=x``)
SELECTION_KEYS: dict[str, Param] = {p.cli.removeprefix("--"): p for p in PARAMS if p.cli and p.name != "task"}


def parse_selection_spec(spec: str, option: str) -> dict[str, Any]:
    """``'hardware=h200 strategy=pd_cluster feature=x'`` (spaces or ``&``) -> selection option values."""
    kw: dict[str, Any] = {}
    for item in spec.replace("&", " ").split():
        key, sep, value = item.partition("=")
        key = key.strip().replace("_", "-")
        if not sep or not value or key not in SELECTION_KEYS:
            fail(f"{option} expects KEY=VALUE items with KEY one of: {', '.join(SELECTION_KEYS)}; got {item!r}.")
        p = SELECTION_KEYS[key]
        if p.kind == "int":
            try:
                kw[p.field] = int(value)
            except ValueError:
                fail(f"{option}: {key} expects a number, got {value!r}.")
        elif p.kind in ("list", "pairs"):
            kw[p.field] = (*kw.get(p.field, ()), value)
        else:
            kw[p.field] = value
    return kw


def read_side(spec: str, git_cwd: str) -> dict[str, bytes]:
    """The catalog files of a directory, or of ``git:REV[:SUBDIR]`` read from ``git_cwd``'s repository."""
    from vllm_recipes.catalog.fileset import read_catalog_files
    from vllm_recipes.catalog.gitrev import GitSourceError, is_git_spec, parse_git_spec, read_git_files

    if is_git_spec(spec):
        with failing(GitSourceError, say=lambda exc: f"{spec}: {exc}"):
            return read_git_files(*parse_git_spec(spec), git_cwd)
    if not Path(spec).is_dir():
        fail(f"recipes directory not found: {spec}")
    return read_catalog_files(spec)


def _selection_impact(hf_id: str, recipes_dir: tuple[str, ...], spec_a: str, spec_b: str) -> Impact:
    from vllm_recipes.review.compare import compare_selections

    from .options import find_recipe, resolve_request

    catalog = load_or_exit(recipes_dir)
    kw_a, kw_b = parse_selection_spec(spec_a, "--a"), parse_selection_spec(spec_b, "--b")
    recipe = find_recipe(catalog, hf_id, kw_a)
    find_recipe(catalog, hf_id, kw_b)
    if recipe.is_omni:
        fail(f"{recipe.hf_id} is an omni recipe; diff --a/--b compares serving selections only.")
    state_a, state_b = resolve_request(catalog, recipe, kw_a), resolve_request(catalog, recipe, kw_b)
    return compare_selections(catalog, recipe, (spec_a, state_a.selection), (spec_b, state_b.selection))


def _catalog_impact(base: str, head: str | None, recipes_dir: tuple[str, ...], jobs: int | None) -> Impact:
    """BASE against HEAD (default: the last --recipes-dir, else the current directory)."""
    from vllm_recipes.catalog.gitrev import is_git_spec
    from vllm_recipes.review.compare import catalogs_for_comparison, compare_catalogs

    head_spec = head or (recipes_dir[-1] if recipes_dir else ".")
    git_cwd = "." if is_git_spec(head_spec) else head_spec
    head_files = read_side(head_spec, git_cwd)
    base_files = read_side(base, git_cwd)
    empty = [spec for spec, files in ((base, base_files), (head_spec, head_files))
             if not any(k.startswith("models/") for k in files)]
    if len(empty) == 2:  # (one empty side is a catalog added or removed whole; both: the wrong place)
        fail(f"no recipes found: no models/<org>/<repo>.yaml in {base} nor in {head_spec}"
             + (f" (looked in {Path(git_cwd).resolve()})" if git_cwd else ""))
    for spec in empty:
        click.echo(f"note: no recipe files under {spec} (models/<org>/<repo>.yaml)", err=True)
    base_cat, head_cat = catalogs_for_comparison(base_files, head_files, base, head_spec)
    return compare_catalogs(base_cat, head_cat, base, head or head_spec, jobs=jobs)


@cli.command("diff")
@click.argument("base")
@click.argument("head", required=False)
@click.option("--a", "spec_a", metavar="SELECTION", help="With BASE=HF_ID: the first selection, e.g. 'hardware=h200'.")
@click.option("--b", "spec_b", metavar="SELECTION", help="With BASE=HF_ID: the second selection.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"], case_sensitive=False), default=None,
              help="Output: text (terminal), json (same as --json), markdown (a pull-request comment).  "
                   "[default: text]")
@json_option
@click.option("--fail-on-change", is_flag=True, help="Exit 1 when anything rendered changed.")
@click.option("--jobs", type=click.IntRange(1, 64), default=None, help="Worker processes (default: automatic).")
@recipes_dir_option
def diff_cmd(base: str, head: str | None, spec_a: str | None, spec_b: str | None, fmt: str | None, as_json: bool,
             fail_on_change: bool, jobs: int | None, recipes_dir: tuple[str, ...]) -> None:
    """Show what a recipe change does to the rendered commands.

    BASE and HEAD are recipe directories or git revisions (git:REV[:SUBDIR], read
    without a checkout; SUBDIR defaults to HEAD's place in the repository). HEAD
    defaults to --recipes-dir, else the current directory. Every offered selection
    of every changed recipe is resolved on both sides (all recipes when taxonomy,
    platforms, strategies or kv_store changed); identical changes are grouped.

    With --a/--b, BASE is a recipe id and the two selections of it are compared.
    Exit 0 unless --fail-on-change and something changed.
    """
    from vllm_recipes.review.report import markdown_report, terminal_report

    fmt = output_format(as_json, fmt)
    if spec_a is not None or spec_b is not None:
        if spec_a is None or spec_b is None:
            fail("--a and --b go together: pass both selections.")
        if head is not None:
            fail("with --a/--b, pass one recipe id (HF_ID), not two sources.")
        impact = _selection_impact(base, recipes_dir, spec_a, spec_b)
    else:
        impact = _catalog_impact(base, head, recipes_dir, jobs)
    if fmt == "json":
        dump_json(impact.to_dict())
    elif fmt == "markdown":
        click.echo(markdown_report(impact))
    else:
        terminal_report(impact)
    if fail_on_change and impact.has_changes:
        raise SystemExit(1)
