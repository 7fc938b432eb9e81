"""``vllm-recipes i18n check|sections``: drift checks for translated recipe guides (exit 1 when one is
stale, for CI), and the slugs and hashes a new translation records."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from vllm_recipes.catalog import Catalog

from .main import cli, load_or_exit, recipes_dir_option
from .output import dump_json, json_option

if TYPE_CHECKING:
    from vllm_recipes.i18n.translation import Translation


@cli.group("i18n")
def i18n_group() -> None:
    """Translated recipe guides (models/<org>/<repo>.<lang>.md)."""


@i18n_group.command("check")
@recipes_dir_option
@json_option
@click.option("--lang", "langs", multiple=True, metavar="LANG", help="Only these languages (repeatable).")
@click.argument("hf_ids", nargs=-1, metavar="[HF_ID]...")
def check_cmd(recipes_dir: tuple[str, ...], as_json: bool, langs: tuple[str, ...], hf_ids: tuple[str, ...]) -> None:
    """Report translations that drifted from their recipe; exit 1 if any is stale.

    Per translation: source sections changed since it was made (hash mismatch or
    unknown), sections added or removed, and facts -- flags, env vars, images,
    numbers, versions, dates, PR references -- the translation states but the
    recipe no longer holds, or the recipe added and the translation lacks.
    """
    from vllm_recipes.i18n import check_all  # the drift check renders recipes: import on use

    catalog = load_or_exit(recipes_dir, require_recipes=False)
    for hf_id in hf_ids:
        if catalog.recipe(hf_id) is None:
            raise click.UsageError(f"no recipe {hf_id!r} in {catalog.root}")
    wanted = {h.lower() for h in hf_ids}
    results = [t for t in check_all(catalog)
               if (not wanted or t.hf_id.lower() in wanted) and (not langs or t.lang in langs)]
    if as_json:
        dump_json(_check_report(catalog, results))
    else:
        _print_check(results)
    sys.exit(1 if any(t.stale for t in results) else 0)


def _check_report(catalog: Catalog, results: list[Translation]) -> dict[str, Any]:
    stale = [t for t in results if t.stale]
    translations = []
    for t in results:
        recipe = catalog.recipe(t.hf_id)  # None when the translated recipe is gone
        translations.append({
            "path": t.rel_path,
            "recipe": t.hf_id,
            "lang": t.lang,
            "source_date_updated": t.source_date_updated,
            "recipe_date_updated": recipe.meta.get("date_updated") if recipe is not None else None,
            "stale": t.stale,
            "stale_sections": sorted(t.stale_sections),
            "findings": [f.to_dict() for f in t.findings],
        })
    return {
        "recipes_dir": str(catalog.root),
        "translations": translations,
        "summary": {"checked": len(results), "stale": len(stale), "clean": len(results) - len(stale),
                    "findings": sum(len(t.findings) for t in results)},
    }


def _print_check(results: list[Translation]) -> None:
    for t in results:
        if not t.stale:
            click.echo(f"{t.rel_path}: ok (translated from {t.source_date_updated}, nothing drifted)")
            continue
        for f in t.findings:
            click.echo(f"{t.rel_path}: {f.section}: {f.label}: {f.token} ({f.explanation})")
    if not results:
        click.echo("no translations found", err=True)
        return
    stale = [t for t in results if t.stale]
    n = sum(len(t.findings) for t in stale)
    click.echo(f"{len(results)} translation(s) checked: {len(stale)} stale ({n} finding(s)), "
               f"{len(results) - len(stale)} clean")


@i18n_group.command("sections")
@recipes_dir_option
@json_option
@click.argument("hf_id")
def sections_cmd(recipes_dir: tuple[str, ...], as_json: bool, hf_id: str) -> None:
    """Print a recipe's guide sections with the slug and hash a translation records.

    The YAML output is ready to paste as ``source_hashes:`` front matter.
    """
    from vllm_recipes.i18n import content_hash, guide_sections
    from vllm_recipes.i18n.drift import header_sources

    catalog = load_or_exit(recipes_dir, require_recipes=False)
    recipe = catalog.recipe(hf_id)
    if recipe is None:
        raise click.UsageError(f"no recipe {hf_id!r} in {catalog.root}")
    guide = recipe.data.get("guide")
    sections = guide_sections(guide) if isinstance(guide, str) else []
    date = recipe.meta.get("date_updated")
    date = date if isinstance(date, str) else None
    if as_json:
        dump_json({
            "recipe": recipe.hf_id,
            "date_updated": date,
            "sections": [{"slug": s.slug, "title": s.title, "level": s.level, "hash": s.hash, "line": s.line}
                         for s in sections],
            "header": {key: content_hash(text) for key, text in header_sources(recipe).items()},
        })
        return
    click.echo(f"# {recipe.hf_id}, revision {date}")
    click.echo(f'source_date_updated: "{date}"')
    click.echo("source_hashes:")
    for s in sections:
        click.echo(f"  {s.slug}: {s.hash}  # {'#' * s.level} {s.title}".rstrip())
    for key, text in header_sources(recipe).items():
        click.echo(f"  {key}: {content_hash(text)}  # only if the front matter translates it")
