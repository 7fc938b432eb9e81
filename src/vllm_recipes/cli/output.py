"""How every command prints: ``--json`` for scripts; for people, rich tables sized to the terminal
(flags and ids never broken), plain aligned columns when piped (one row per line, greppable)."""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Sequence
from contextlib import suppress
from typing import Any

import click

from .main import fail

#: ``--json``: the command's machine-readable form on stdout
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output (JSON on stdout).")
#: ``--format text|json``: the same switch as ``--json``, for scripts that spell it this way
format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"], case_sensitive=False),
                             default=None, help="Same as --json when 'json' (kept for scripts).")


def output_format(as_json: bool, fmt: str | None) -> str:
    """The format ``--json`` or ``--format`` names (default ``text``); exit 2 when they name two."""
    if as_json and fmt not in (None, "json"):
        fail(f"--json conflicts with --format {fmt}; give one of them.")
    return "json" if as_json else (fmt or "text")


def is_tty() -> bool:
    with suppress(AttributeError, ValueError):  # (a replaced or closed stdout is no terminal)
        return sys.stdout.isatty()
    return False


def dump_json(obj: Any, *, indent: int | None = 2, ensure_ascii: bool = False) -> None:
    click.echo(json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii))


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value)
    return str(value)


def print_table(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Any]],
                whole: Collection[int] = (0,)) -> None:
    """A table: rich and terminal-wide on a terminal, plain aligned columns when piped. Columns in
    ``whole`` hold flags or ids: never wrapped, so a flag is never broken mid-token."""
    cells = [[cell(c) for c in row] for row in rows]
    if is_tty():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, title_justify="left", show_lines=False)
        for i, h in enumerate(headers):
            if i in whole:
                table.add_column(h, no_wrap=True, overflow="ignore",
                                 min_width=max([len(h), *(len(r[i]) for r in cells)]))
            else:
                table.add_column(h, overflow="fold")
        for row in cells:
            table.add_row(*row)
        Console().print(table)
        return
    if title:
        click.echo(title)
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    for n, row in enumerate([list(headers), *cells]):
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))
