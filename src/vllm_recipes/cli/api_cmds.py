"""``vllm-recipes build-api``: the static JSON API (json-api.md), written atomically; stdout is
exactly the reference's summary (§10.1), and a build error leaves the previous API untouched."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from .main import cli, follow_symlinks_option, recipes_dir_option

_warn = functools.partial(click.echo, err=True)


@cli.command("build-api")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@recipes_dir_option
@follow_symlinks_option
@click.option("--check", "check", is_flag=True,
              help="Do not write: rebuild in memory and list every file that differs from OUT (exit 1 if any).")
@click.option("--full", is_flag=True, hidden=True, help="Accepted for old scripts: every build is a full build.")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None,
              help="Worker processes (default: all cores).")
@click.option("--no-translations", is_flag=True, help="Omit the translations key from recipe files.")
@click.option("--llms/--no-llms", default=True, show_default=True,
              help="Also write llms.txt and llms-full.txt (the catalog for language models, from the engine).")
def build_api_cmd(out: Path, recipes_dir: tuple[str, ...], check: bool, full: bool, jobs: int | None,
                  no_translations: bool, llms: bool) -> None:
    """Write the static JSON API to OUT (docs/reference/json-api.md), atomically.

    Every file (with llms.txt and llms-full.txt) is written into a sibling
    directory that is then swapped in, so OUT is always a whole old or new API.
    A recipe with validation errors is skipped and its errors are printed; no
    output path can leave OUT.
    """
    from vllm_recipes.api.build import ApiBuildError, build_api
    from vllm_recipes.api.llms import llms_files
    from vllm_recipes.api.translations import translations_hook
    from vllm_recipes.api.writer import diff_tree, publish
    from vllm_recipes.catalog import load_catalog

    factory = None if no_translations else translations_hook
    try:
        if check:
            catalog = load_catalog(recipes_dir)
            api = build_api(catalog, _warn, extra_recipe_keys=factory(catalog) if factory else None, jobs=jobs,
                            strict=False)  # as publish()
            expected = {**api.files, **llms_files(api.catalog)} if llms else api.files
            diff = diff_tree(expected, out)
            for line in diff.lines():
                click.echo(line)
            n = len(diff.missing) + len(diff.extra) + len(diff.changed)
            if n:
                click.echo(f"{n} file(s) differ from a fresh build of the JSON API in {out}", err=True)
                sys.exit(1)
            click.echo(f"{out}: up to date ({len(expected)} files)", err=True)
            return
        result = publish(recipes_dir, out, _warn, hook_factory=factory, llms=llms, jobs=jobs)
    except ApiBuildError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    except (FileNotFoundError, FileExistsError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # full or read-only destination: the previous API is left as it was
        where = f" ({exc.filename})" if exc.filename else ""
        raise click.ClickException(f"cannot write the JSON API to {out}: {exc.strerror or exc}{where}; "
                                   "the previous API is unchanged") from None
    click.echo(result.summary)
