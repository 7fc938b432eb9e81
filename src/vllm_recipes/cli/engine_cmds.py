"""``vllm-recipes command`` and ``vllm-recipes explain``: exact commands and why each flag is there.

Both name what they resolved in one line (``render/header.py``): ``command`` writes
it to stderr as a ``#`` comment, so stdout stays exactly the command (safe to pipe
or paste); ``explain`` uses it as the title of its tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from vllm_recipes.select.state import PageState
from vllm_recipes.service import Query
from vllm_recipes.service.answers import resolve
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolve import resolve as resolve_selection

from . import output
from .main import cli, fail, load_or_exit
from .options import find_recipe, refusals, request_from_options, selection_options
from .output import dump_json, format_option, json_option, print_table, wants_json
from .vllm_cmds import check_release, echo_lint, print_lint_table, vllm_option

if TYPE_CHECKING:
    from vllm_recipes.select.omni import OmniSelection
    from vllm_recipes.synth.omni import OmniPlan


def _resolved_for(catalog: Catalog, recipe: Recipe, kw: dict[str, Any]) -> tuple[Catalog, PageState, Ctx, Plan]:
    """The builder state and its plan, resolved once; ``--hardware auto`` detects the local GPUs
    (see ``fit_cmds``)."""
    if kw.get("hardware") == "auto":
        from .fit_cmds import auto_hardware_state

        catalog, state = auto_hardware_state(catalog, recipe, kw)
        return (catalog, state, *resolve_selection(catalog, recipe, state.selection))
    with refusals():
        resolved = resolve(catalog, Query(recipe.hf_id, request_from_options(kw)))
    assert resolved.selected.state is not None and resolved.ctx is not None and resolved.plan is not None
    return catalog, resolved.selected.state, resolved.ctx, resolved.plan


def _warn_architecture(catalog: Catalog, recipe: Recipe, plan: Any) -> None:
    """Architecture-aware warnings (TP vs heads, context) on stderr. A recipe without architecture
    facts has none: the memory planner that checks them is then not even imported (~10% of ``command``)."""
    if recipe_architecture(recipe) is None:
        return
    from vllm_recipes.fit.report import plan_checks

    for check in plan_checks(recipe, plan):
        click.echo(f"warning: {check.message}", err=True)


def resolve_omni_request(catalog: Catalog, recipe: Recipe, kw: dict[str, Any], vllm_release: str | None
                         ) -> tuple[OmniSelection, OmniPlan]:
    """The omni selection and plan for the options (exit 2 on a refusal, or on --vllm: vllm-omni commands are
    not linted)."""
    if vllm_release is not None:
        fail(f"{recipe.hf_id} is an omni recipe; its vllm-omni commands are not linted, so --vllm does not apply.")
    with refusals():
        resolved = resolve(catalog, Query(recipe.hf_id, request_from_options(kw)))
    assert resolved.selected.omni is not None and resolved.omni_plan is not None
    return resolved.selected.omni, resolved.omni_plan


def _omni_header(recipe: Recipe, osel: OmniSelection, kw: dict[str, Any]) -> str:
    return omni_selection_header(recipe, osel, kw.get("hardware"), kw.get("variant"), kw.get("task"),
                                 kw.get("install"))


def _omni_output(catalog: Catalog, recipe: Recipe, osel: OmniSelection, plan: OmniPlan, as_json: bool) -> None:
    from vllm_recipes.render.omni import omni_rendering_object, render_omni  # (omni recipes only)

    rendered = render_omni(catalog, recipe, osel, plan)
    if as_json:
        dump_json(omni_rendering_object(osel, plan, rendered))
    else:
        click.echo(rendered.shown)


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
    as_json = wants_json(as_json, fmt)
    catalog = load_or_exit(recipes_dir)
    recipe = find_recipe(catalog, hf_id, kw)
    if recipe.is_omni:
        osel, oplan = resolve_omni_request(catalog, recipe, kw, vllm_release)
        _header_comment(_omni_header(recipe, osel, kw), quiet or as_json)
        _omni_output(catalog, recipe, osel, oplan, as_json)
        return
    forced = check_release(vllm_release)
    catalog, state, ctx, plan = _resolved_for(catalog, recipe, kw)
    _warn_architecture(catalog, recipe, plan)
    if as_json:
        dump_json(with_vllm_lint(rendering_object(ctx, plan), ctx, plan, forced))
        return
    _header_comment(selection_header(recipe, state, ctx, plan), quiet)
    for other in other_nodes(plan):  # pools and instances printed one node at a time
        _header_comment(spell(other.text(), "cli"), quiet)
    click.echo(deployment_text(deployment_blocks(ctx, plan, state.install)))
    if not quiet:
        echo_lint(lint_plan(ctx, plan, forced=forced))


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
    as_json = wants_json(as_json, fmt)
    catalog = load_or_exit(recipes_dir)
    recipe = find_recipe(catalog, hf_id, kw)
    if recipe.is_omni:
        osel, oplan = resolve_omni_request(catalog, recipe, kw, vllm_release)
        from vllm_recipes.render.omni import explain_omni  # (omni recipes only)

        header = _omni_header(recipe, osel, kw)
        sections = explain_omni(catalog, oplan)
        lint = lints = None
    else:
        forced = check_release(vllm_release)
        catalog, state, ctx, plan = _resolved_for(catalog, recipe, kw)
        _warn_architecture(catalog, recipe, plan)
        header = selection_header(recipe, state, ctx, plan)
        sections = explain_plan(catalog, plan)
        lint = None if as_json else lint_plan(ctx, plan, forced=forced)
        lints = process_lints(ctx, plan, forced=forced) if as_json else None
    if as_json:
        dump_json(sections_json(sections) if lints is None else with_process_lint(sections_json(sections), lints))
        return
    click.echo(header)
    if len(catalog.layers) > 1:  # recipe sources beside the bundled catalog: say where things came from
        click.echo(f"recipe from {recipe.source}: {recipe.rel_path}")
        hw = getattr(getattr(state, "selection", None), "hw_id", None) if not recipe.is_omni else None
        for file, keys in catalog.hardware_origins(hw).items() if hw else ():
            click.echo(f"hardware {hw}: {', '.join(keys)} from {file}")
    for title, rows in sections:
        click.echo()
        _print_section(title, rows)
    if lint is not None:
        click.echo()
        print_lint_table(lint)


def _print_section(title: str, rows: list[ExplainRow]) -> None:
    """One process's flags and env: a table on a terminal; piped, one line per entry with only
    the flag column aligned, what it shadowed on the next (a table padded to its longest JSON
    value was 390 columns wide)."""
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

