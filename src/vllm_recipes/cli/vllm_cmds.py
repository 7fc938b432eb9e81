"""``vllm-recipes vllm-flags [FLAG]``, and the ``--vllm`` release and lint table of ``command``/``explain``/``validate``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from .main import cli, fail
from .output import dump_json, json_option, print_table

if TYPE_CHECKING:
    from vllm_recipes.lint.vllm_plan import PlanLint
    from vllm_recipes.lint.vllm_tables import Tables


#: ``--vllm VERSION``: check against that release instead of the one the image / pip would run
vllm_option = click.option("--vllm", "vllm_release", metavar="VERSION", default=None,
                           help="Lint the commands against this vLLM release (e.g. 0.31) instead of the one the "
                                "image tag or pip install runs.")


def check_release(value: str | None) -> str | None:
    """A ``--vllm`` value the tables know, or exit 2 naming the known releases."""
    if value is None:
        return None
    from vllm_recipes.lint.vllm_tables import load_tables

    t = load_tables()
    if t.index_of(value) is None:
        fail(f"no table for vLLM {value!r}; known releases: {', '.join(t.releases)}")
    return value


def print_lint_table(lint: PlanLint) -> None:
    """``explain``'s last table: the checked release and each finding with its recipe line."""
    c = lint.counts
    title = (f"checked against vLLM {lint.target.release} ({lint.target.reason}): {c['error']} errors, "
             f"{c['warning']} warnings, {c['info']} notes")
    rows = [[p.finding.severity, p.finding.code, p.process, p.location, p.finding.message] for p in lint.findings]
    print_table(title, ["severity", "code", "process", "from", "finding"], rows, whole=(0, 1))


def _flag_report(t: Tables, name: str) -> dict[str, Any] | None:
    primary = t.primary_of(name if name.startswith("-") else f"--{name}")
    ranges = t.flag_ranges(primary)
    if not ranges:
        return None
    changes = [{"from": rel, "type": s.describe(), "deprecated": s.deprecated} for rel, s in t.flag_changes(primary)]
    aliases = sorted(a for a, p in t.history["aliases"].items() if p == primary)
    out: dict[str, Any] = {"flag": primary, "aliases": aliases, "releases": t.spans(ranges),
                           "in_newest": primary in t.view(len(t.releases) - 1).specs, "changes": changes}
    last = t.flag_changes(primary)[-1][1]
    if last.choices:
        out["choices"] = [c for c in last.choices if c is not None]
    if last.known:
        out["known_values"] = list(last.known)
    if last.config:
        out["config"] = last.config
        out["keys"] = {k: t.spans(r) for k, r in t.history["keys"].get(primary, {}).items()}
        if (cfg := t.configs.get(last.config)) is not None:
            out["forbids_unknown_keys"] = bool(cfg.get("forbid"))
    return out


@cli.command("vllm-flags", context_settings={"ignore_unknown_options": True})
@click.argument("flag", required=False)
@click.option("--vllm", "vllm_release", metavar="VERSION", default=None,
              help="List the flags of this release (default: the newest table).")
@json_option
def vllm_flags_cmd(flag: str | None, vllm_release: str | None, as_json: bool) -> None:
    """What the shipped vLLM tables know about FLAG (type, choices, JSON keys, releases), or list all flags."""
    from vllm_recipes.lint.vllm_lint import did_you_mean
    from vllm_recipes.lint.vllm_tables import load_tables

    t = load_tables()
    if flag is None:
        idx = t.index_of(check_release(vllm_release) or t.newest)
        assert idx is not None
        view = t.view(idx)
        rows = {p: s.describe() for p, s in sorted(view.specs.items())}
        if as_json:
            dump_json({"release": view.release, "flags": rows}, ensure_ascii=True)
            return
        click.echo(f"vLLM {view.release}: {len(rows)} flags (tables cover {t.releases[0]} to {t.newest})")
        width = max(map(len, rows), default=0)
        for p, d in rows.items():
            click.echo(f"  {p.ljust(width)}  {d}")
        return
    report = _flag_report(t, flag)
    if report is None:
        fail(f"{flag!r} is not an option of any vLLM release from {t.releases[0]} to {t.newest}"
             + did_you_mean(flag if flag.startswith("-") else f"--{flag}", t.history["names"]).replace("; did", ". Did"))
    if as_json:
        dump_json(report, ensure_ascii=True)
        return
    click.echo(f"{report['flag']}" + (f" (also {', '.join(report['aliases'])})" if report["aliases"] else ""))
    click.echo(f"  releases: {report['releases']}" + ("" if report["in_newest"] else
                                                      f"  (not in the newest, {t.newest})"))
    for c in report["changes"]:
        dep = f"  [deprecated: {c['deprecated']}]" if c["deprecated"] else ""
        click.echo(f"  from {c['from']}: {c['type']}{dep}")
    if report.get("choices"):
        click.echo(f"  choices: {', '.join(map(str, report['choices']))}")
    if report.get("known_values"):
        click.echo(f"  built-in values (others may come from plugins): {', '.join(map(str, report['known_values']))}")
    if report.get("config"):
        forbid = "unknown keys refused" if report.get("forbids_unknown_keys") else "unknown keys ignored"
        click.echo(f"  JSON keys of {report['config']} ({forbid}):")
        width = max(map(len, report["keys"]), default=0)
        for k, spans in report["keys"].items():
            click.echo(f"    {k.ljust(width)}  {spans}")
    sys.stdout.flush()
