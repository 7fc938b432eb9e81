"""``vllm-recipes cache``: where the caches live and what they hold (for disk space and bug reports), and
``--clear``; none is needed for correctness, fetched recipe sources are kept for offline use. ``vllm-recipes
catalog pull|list``: fetch remote recipe sources into the cache (any command fetches one on first use, then
reads it offline), and see what is there."""

from __future__ import annotations

import click

from vllm_recipes.catalog.diagnostics import plural
from vllm_recipes.catalog.parsecache import ENV_CACHE_DIR, cache_dir, cache_files, clear_cache
from vllm_recipes.catalog.remote import SourceError, cached_sources, parse_source, pull, remove_cached_sources

from .main import cli, failing
from .output import dump_json, json_option, print_table


@cli.command("cache")
@click.option("--clear", is_flag=True,
              help="Remove every cache file of ours and the fetched recipe sources (nothing else in the directory).")
@json_option
def cache_cmd(clear: bool, as_json: bool) -> None:
    """Show the cache directory (parsed recipes, compiled templates, fetched recipe sources); --clear empties it.

    Location: $VLLM_RECIPES_CACHE_DIR, else $XDG_CACHE_HOME/vllm-recipes, else
    ~/.cache/vllm-recipes; VLLM_RECIPES_CACHE_DIR=off turns caching off.
    """
    folder = cache_dir()
    files = cache_files()
    sources = cached_sources()
    removed = clear_cache() if clear else 0
    removed_sources = remove_cached_sources() if clear else 0
    total = sum(size for _p, size in files)
    if as_json:
        dump_json({"directory": str(folder) if folder else None, "enabled": folder is not None, "files": len(files),
                   "bytes": total, "sources": len(sources), "removed": removed, "removed_sources": removed_sources},
                  indent=None, ensure_ascii=True)
        return
    if folder is None:
        click.echo(f"caching is off ({ENV_CACHE_DIR}=off)")
        return
    click.echo(f"{folder}: {plural(len(files), 'file')}, {total / 1e6:.1f} MB; "
               f"{plural(len(sources), 'fetched recipe source')}")
    if clear:
        click.echo(f"removed {plural(removed, 'file')} and {plural(removed_sources, 'fetched source')}")


@cli.group("catalog")
def catalog_group() -> None:
    """Remote recipe sources: github:ORG/REPO[@REF], git+https://...[@REF], git+file:///...[@REF],
    http(s)://.../*.tar.gz. Fetched once into the cache directory, then used offline."""


@catalog_group.command("pull")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
def pull_cmd(sources: tuple[str, ...]) -> None:
    """Fetch SOURCE again (the newest commit of its ref, or the archive) into the cache."""
    for spec in sources:
        with failing(SourceError):
            got = pull(parse_source(spec))
        click.echo(f"{got.label}\t{got.path}")


@catalog_group.command("list")
@json_option
def list_cmd(as_json: bool) -> None:
    """Show the cached sources: spec, ref, resolved commit or archive digest, when fetched, where."""
    got = cached_sources()
    if as_json:
        dump_json([{"source": c.spec, "ref": c.ref or None, "resolved": c.resolved, "fetched": c.fetched,
                    "path": str(c.path)} for c in got], indent=1, ensure_ascii=True)
        return
    if not got:
        click.echo("no recipe sources cached (vllm-recipes catalog pull SOURCE fetches one)")
        return
    print_table(None, ["SOURCE", "REF", "RESOLVED", "FETCHED", "PATH"],
                [[c.spec, c.ref or "(default)", c.resolved[:12], c.fetched, str(c.path)] for c in got])
