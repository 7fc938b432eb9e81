"""``vllm-recipes command`` and ``explain``: exact commands and why each flag is there. Both name what
they resolved in one line: ``command`` on stderr as a ``#`` comment, so stdout stays exactly the command."""

from __future__ import annotations

from typing import Any

import click

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import recipe_architecture
from vllm_recipes.lint.vllm_plan import lint_plan, process_lints, with_process_lint, with_vllm_lint
from vllm_recipes.render.deployment import deployment_blocks, deployment_text
from vllm_recipes.render.explain import ExplainRow, explain_plan, sections_json
from vllm_recipes.render.header import omni_selection_header, selection_header
from vllm_recipes.render.others import other_nodes
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.options import spell
from vllm_recipes.service import Query
from vllm_recipes.service.answers import Resolved, Selected, resolve
from vllm_recipes.synth.resolve import resolve as resolve_selection

from . import output
from .main import cli, fail, load_or_exit, refusals
from .options import find_recipe, request_from_options, selection_options
from .output import dump_json, format_option, json_option, output_format, print_table
from .vllm_cmds import check_release, print_lint_table, vllm_option


def _resolve(hf_id: str, recipes_dir: tuple[str, ...], kw: dict[str, Any], vllm_release: str | None
             ) -> tuple[Catalog, Recipe, Resolved, str | None]:
    """The recipe, the selection and its plan, resolved once (exit 2 on a refusal), and the ``--vllm``
    release to lint against (vllm-omni commands are not linted)."""
    catalog = load_or_exit(recipes_dir)
    recipe = find_recipe(catalog, hf_id, kw)
    if recipe.is_omni and vllm_release is not None:
        fail(f"{recipe.hf_id} is an omni recipe; its vllm-omni commands are not linted, so --vllm does not apply.")
    forced = None if recipe.is_omni else check_release(vllm_release)
    if kw.get("hardware") == "auto" and not recipe.is_omni:
        from .fit_cmds import auto_hardware_state

        catalog, state = auto_hardware_state(catalog, recipe, kw)
        ctx, plan = resolve_selection(catalog, recipe, state.selection)
        return catalog, recipe, Resolved(Selected(recipe, state), ctx, plan), forced
    with refusals():
        return catalog, recipe, resolve(catalog, Query(recipe.hf_id, request_from_options(kw))), forced


def _header(recipe: Recipe, r: Resolved, kw: dict[str, Any]) -> str:
    """What was resolved, in one line (the values the user did not pick marked as defaults)."""
    if r.selected.omni is not None:
        return omni_selection_header(recipe, r.selected.omni, kw.get("hardware"), kw.get("variant"),
                                     kw.get("task"), kw.get("install"))
    assert r.selected.state is not None and r.ctx is not None and r.plan is not None
    return selection_header(recipe, r.selected.state, r.ctx, r.plan)


def _warn_architecture(recipe: Recipe, plan: Any) -> None:
    """Architecture-aware warnings (TP vs heads, context) on stderr. A recipe without architecture
    facts has none: the checks are then not even imported."""
    arch = recipe_architecture(recipe)
    if arch is None:
        return
    from vllm_recipes.fit.checks import plan_checks

    for check in plan_checks(arch, recipe, plan):
        click.echo(f"warning: {check}", err=True)


def _header_comment(text: str, quiet: bool) -> None:
    """The resolved selection on stderr, as a shell comment (harmless if pasted with the command)."""
    if not quiet:
        click.echo(f"# {text}", err=True)


@cli.command("command")
@selection_options
@json_option
@vllm_option
@format_option
@click.option("--quiet", "-q", is_flag=True, help="Do not print the resolved-selection line on stderr.")
def command_cmd(hf_id: str, recipes_dir: tuple[str, ...], as_json: bool, fmt: str | None, quiet: bool,
                vllm_release: str | None = None, **kw: Any) -> None:
    """Print the exact commands for HF_ID at the chosen selection (defaults: the page's initial state).

    Unless --json or --quiet, one line on stderr names what was resolved (model,
    hardware, variant, strategy, nodes, frontend, install) and marks defaults;
    stdout holds only the command. Rules: docs/reference/synthesis.md. The
    release-lint findings follow on stderr too (--quiet drops them; in the
    JSON they are the ``vllm_lint`` key).
    """
    as_json = output_format(as_json, fmt) == "json"
    catalog, recipe, r, forced = _resolve(hf_id, recipes_dir, kw, vllm_release)
    state, ctx, plan, osel, oplan = r.selected.state, r.ctx, r.plan, r.selected.omni, r.omni_plan
    if osel is not None and oplan is not None:
        from vllm_recipes.render.omni import omni_rendering_object, render_omni  # (omni recipes only)

        _header_comment(_header(recipe, r, kw), quiet or as_json)
        rendered = render_omni(catalog, recipe, osel, oplan)
        if as_json:
            dump_json(omni_rendering_object(osel, oplan, rendered))
        else:
            click.echo(rendered.shown)
        return
    assert state is not None and ctx is not None and plan is not None
    _warn_architecture(recipe, plan)
    if as_json:
        dump_json(with_vllm_lint(rendering_object(ctx, plan), ctx, plan, forced))
        return
    _header_comment(_header(recipe, r, kw), quiet)
    for other in other_nodes(plan):  # pools and instances printed one node at a time
        _header_comment(spell(other, "cli"), quiet)
    click.echo(deployment_text(deployment_blocks(ctx, plan, state.install)))
    if not quiet:  # the badge line and one line per finding, on stderr too
        from vllm_recipes.lint.vllm_plan import findings_text

        for line in findings_text(lint_plan(ctx, plan, forced=forced)):
            click.echo(line, err=True)


@cli.command("explain")
@selection_options
@json_option
@vllm_option
@format_option
def explain_cmd(hf_id: str, recipes_dir: tuple[str, ...], as_json: bool, fmt: str | None,
                vllm_release: str | None = None, **kw: Any) -> None:
    """Show every final flag and env var with its layer, file:line and what it shadowed.

    Layers and their order: docs/reference/synthesis.md. A last table lists the
    release-lint findings.
    """
    as_json = output_format(as_json, fmt) == "json"
    catalog, recipe, r, forced = _resolve(hf_id, recipes_dir, kw, vllm_release)
    state, ctx, plan, hw = r.selected.state, r.ctx, r.plan, None
    if r.omni_plan is not None:
        from vllm_recipes.render.omni import explain_omni  # (omni recipes only)

        sections = explain_omni(catalog, r.omni_plan)
        lint = lints = None
    else:
        assert state is not None and ctx is not None and plan is not None
        _warn_architecture(recipe, plan)
        hw = state.selection.hw_id
        sections = explain_plan(catalog, plan)
        lint = None if as_json else lint_plan(ctx, plan, forced=forced)
        lints = process_lints(ctx, plan, forced=forced) if as_json else None
    if as_json:
        dump_json(sections_json(sections) if lints is None else with_process_lint(sections_json(sections), lints))
        return
    click.echo(_header(recipe, r, kw))
    if len(catalog.layers) > 1:  # recipe sources beside the bundled catalog: say where things came from
        click.echo(f"recipe from {recipe.source}: {recipe.rel_path}")
        for file, keys in catalog.hardware_origins(hw).items() if hw else ():
            click.echo(f"hardware {hw}: {', '.join(keys)} from {file}")
    for title, rows in sections:
        click.echo()
        _print_section(title, rows)
    if lint is not None:
        click.echo()
        print_lint_table(lint)


def _print_section(title: str, rows: list[ExplainRow]) -> None:
    """One process's flags and env: a table on a terminal; piped, one line per entry with only the flag
    column aligned (long JSON values would pad every row), what it shadowed on the next."""
    table_rows = []
    for r in rows:
        shadow = "; ".join(f"{s['value']!s} ({s['layer']}{' @ ' + s['location'] if s['location'] else ''})"
                           for s in r.shadowed)
        where = r.source["location"] or (r.source["note"] or "")
        table_rows.append([r.kind, r.name, r.value or "", r.source["layer"], where, shadow])
    if output.is_tty():
        print_table(title, ["kind", "flag / env", "value", "layer", "from", "shadowed"], table_rows,
                    whole=(0, 1, 3))
        return
    click.echo(title)
    width = min(40, max((len(row[1]) for row in table_rows), default=0))
    for kind, name, value, layer, where, shadow in table_rows:
        line = f"  {kind:<3}  {name:<{width}}  {value}".rstrip() + f"  [{layer}] {where}".rstrip()
        click.echo(line)
        if shadow:
            click.echo(f"  {'':3}  {'':<{width}}  shadowed: {shadow}")

