"""``vllm-recipes catalog pull|list``: fetch remote recipe sources into the cache (any command fetches
one on first use, then reads it offline), and see what is there."""

from __future__ import annotations

import click

from .main import cli, failing
from .output import dump_json, json_option, print_table


@cli.group("catalog")
def catalog_group() -> None:
    """Remote recipe sources: github:ORG/REPO[@REF], git+https://...[@REF], git+file:///...[@REF],
    http(s)://.../*.tar.gz. Fetched once into the cache directory, then used offline."""


@catalog_group.command("pull")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
def pull_cmd(sources: tuple[str, ...]) -> None:
    """Fetch SOURCE again (the newest commit of its ref, or the archive) into the cache."""
    from vllm_recipes.catalog.remote import SourceError, parse_source, pull

    for spec in sources:
        with failing(SourceError):
            got = pull(parse_source(spec))
        click.echo(f"{got.label}\t{got.path}")


@catalog_group.command("list")
@json_option
def list_cmd(as_json: bool) -> None:
    """Show the cached sources: spec, ref, resolved commit or archive digest, when fetched, where."""
    from vllm_recipes.catalog.remote import cached_sources

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
