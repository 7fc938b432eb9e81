"""``vllm-recipes command`` and ``vllm-recipes explain``: exact commands and why each flag is there.

Both name what they resolved in one line (``render/header.py``): ``command`` writes
it to stderr as a ``#`` comment, so stdout stays exactly the command (safe to pipe
or paste); ``explain`` uses it as the title of its tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.lint.vllm_plan import lint_plan, process_lints, with_process_lint, with_vllm_lint
from vllm_recipes.render.deployment import deployment_blocks, deployment_text
from vllm_recipes.render.explain import explain_plan, sections_json
from vllm_recipes.render.header import omni_selection_header, selection_header
from vllm_recipes.render.omni import explain_omni, omni_rendering_object, render_omni
from vllm_recipes.render.others import other_nodes
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.aliases import canonical
from vllm_recipes.select.omni import OmniSelection, resolve_omni_tasks, select_omni
from vllm_recipes.select.options import spell
from vllm_recipes.select.page import PageRequest, PageState, SelectionError, build_state
from vllm_recipes.synth.omni import OmniPlan, resolve_omni
from vllm_recipes.synth.resolve import resolve

from .main import cli, fail, find_or_exit, load_or_exit, recipes_dir_option
from .output import dump_json, json_option, print_table
from .vllm_cmds import check_release, echo_lint, print_lint_table, vllm_option


def _parse_mode(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = []
    for v in values:
        f, sep, m = v.partition("=")
        if not sep:
            f, sep, m = v.partition(":")
        if not sep or not f or not m:
            raise click.UsageError(f"--mode expects FEATURE=MODE, got {v!r}")
        out.append((f, m))
    return tuple(out)


def selection_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options shared by ``command`` and ``explain`` (ui.md URL parameters)."""
    opts = [
        click.option("--hardware", help="Hardware profile id (default: the recipe's default); "
                     "'auto' detects the local GPUs."),
        click.option("--variant", help="Variant key (default: default)."),
        click.option("--strategy", help="Serving strategy id (default: the recommendation)."),
        click.option("--nodes", type=click.IntRange(1, 16), help="Node count for multi-node strategies."),
        click.option("--feature", "add_features", multiple=True, help="Enable a feature (repeatable)."),
        click.option("--no-feature", "remove_features", multiple=True, help="Disable a feature (repeatable)."),
        click.option("--mode", "modes", multiple=True, help="Feature mode as FEATURE=MODE (repeatable)."),
        click.option("--advanced", multiple=True, help="Advanced tuning option id (repeatable)."),
        click.option("--arg", "extra_args", multiple=True, help="Extra argument token appended as advanced args."),
        click.option("--kv-offload", help="KV offload option or Mooncake deployment id."),
        click.option("--kv-instances", type=click.IntRange(1, 16), help="Mooncake instance count."),
        click.option("--kv-instance", type=click.IntRange(0, 15), help="Mooncake instance to render (0-based)."),
        click.option("--prefill-nodes", type=click.IntRange(0, 16), help="PD prefill pool nodes (0 and "
                     "--decode-nodes 0: co-located half-node layout)."),
        click.option("--decode-nodes", type=click.IntRange(0, 16), help="PD decode pool nodes."),
        click.option("--prefill-mode", help="PD prefill pool mode (tp, tep, dep)."),
        click.option("--decode-mode", help="PD decode pool mode (tp, tep, dep)."),
        click.option("--prefill-rank", type=click.IntRange(0, 15), help="PD prefill node to render."),
        click.option("--decode-rank", type=click.IntRange(0, 15), help="PD decode node to render."),
        click.option("--frontend", help="OpenAI-compatible frontend (python, rust)."),
        click.option("--router", "pd_router", help="PD router (vllm-router, smg-grpc)."),
        click.option("--install", type=click.Choice(["pip", "docker"], case_sensitive=False),
                     help="Install / run method."),
        click.option("--task", help="Omni task key."),
        recipes_dir_option,
        click.argument("hf_id"),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


_fail = fail
_load = load_or_exit


def find_recipe(catalog: Catalog, hf_id: str, kw: dict[str, Any]) -> Recipe:
    """Recipe by hf_id, or by a variant's own model id (which then selects that variant)."""
    recipe, vk = find_or_exit(catalog, hf_id)
    if vk is not None:
        kw["variant"] = kw.get("variant") or vk
    return recipe


def resolve_request(catalog: Catalog, recipe: Recipe, kw: dict[str, Any]) -> PageState:
    pn, dn = kw.get("prefill_nodes"), kw.get("decode_nodes")
    if (pn == 0) != (dn == 0) and pn is not None and dn is not None:
        _fail("--prefill-nodes 0 asks for the co-located layout; pass --decode-nodes 0 too.")
    req = PageRequest(
        hardware=kw.get("hardware"), variant=kw.get("variant"), strategy=kw.get("strategy"), nodes=kw.get("nodes"),
        add_features=tuple(kw.get("add_features") or ()), remove_features=tuple(kw.get("remove_features") or ()),
        fmode=_parse_mode(tuple(kw.get("modes") or ())), advanced=tuple(kw.get("advanced") or ()),
        extra_args=tuple(kw.get("extra_args") or ()), kv_offload=kw.get("kv_offload"),
        kv_instances=kw.get("kv_instances"), kv_instance=kw.get("kv_instance"),
        prefill_nodes=pn, decode_nodes=dn, prefill_mode=kw.get("prefill_mode"),
        decode_mode=kw.get("decode_mode"), prefill_rank=kw.get("prefill_rank"), decode_rank=kw.get("decode_rank"),
        frontend=kw.get("frontend"), install=kw.get("install"), pd_router=kw.get("pd_router"), task=kw.get("task"),
    )
    try:
        return build_state(catalog, recipe, req, strict=True)
    except SelectionError as exc:
        _fail(exc.text("cli"))


def _state_for(catalog: Catalog, recipe: Recipe, kw: dict[str, Any]) -> tuple[Catalog, PageState]:
    """The builder state; ``--hardware auto`` detects the local GPUs (see ``fit_cmds``)."""
    if kw.get("hardware") == "auto":
        from .fit_cmds import auto_hardware_state

        return auto_hardware_state(catalog, recipe, kw)
    return catalog, resolve_request(catalog, recipe, kw)


def _warn_architecture(catalog: Catalog, recipe: Recipe, plan: Any) -> None:
    """Architecture-aware warnings (TP vs heads, PP vs layers, context) on stderr."""
    from .fit_cmds import command_checks

    command_checks(catalog, recipe, plan)


OMNI_ONLY_OPTIONS = ("hardware", "variant", "task", "install", "frontend")


def resolve_omni_request(catalog: Catalog, recipe: Recipe, kw: dict[str, Any]) -> tuple[OmniSelection, OmniPlan]:
    given = [k for k, v in kw.items() if k not in OMNI_ONLY_OPTIONS and v not in (None, (), False)]
    if given:
        _fail(f"{recipe.hf_id} is an omni recipe; it takes --hardware, --variant, --task and --install only "
              f"(got --{given[0].replace('_', '-')}).")
    hw, vk, task, install = (kw.get(k) for k in ("hardware", "variant", "task", "install"))
    hw = hw and canonical(hw, catalog.hardware_profiles)
    vk = vk and canonical(vk, recipe.variants)
    task = task and canonical(task, [t.key for t in resolve_omni_tasks(recipe.data)])
    try:
        osel = select_omni(catalog, recipe, hw, vk, task, install)
    except SelectionError as exc:
        _fail(exc.text("cli"))
    return osel, resolve_omni(catalog, recipe, osel.variant_key, osel.task, osel.hw_id)


def _omni_header(recipe: Recipe, osel: OmniSelection, kw: dict[str, Any]) -> str:
    return omni_selection_header(recipe, osel, kw.get("hardware"), kw.get("variant"), kw.get("task"),
                                 kw.get("install"))


def _omni_output(catalog: Catalog, recipe: Recipe, osel: OmniSelection, plan: OmniPlan, as_json: bool) -> None:
    rendered = render_omni(catalog, recipe, osel, plan)
    if as_json:
        dump_json(omni_rendering_object(osel, plan, rendered))
    else:
        click.echo(rendered.shown)


def _header_comment(text: str, quiet: bool) -> None:
    """The resolved selection on stderr, as a shell comment (harmless if pasted with the command)."""
    if not quiet:
        click.echo(f"# {text}", err=True)


def _no_vllm_for_omni(recipe: Recipe, vllm_release: str | None) -> None:
    if vllm_release is not None:
        _fail(f"{recipe.hf_id} is an omni recipe; its vllm-omni commands are not linted, so --vllm does not apply.")


@cli.command("command")
@selection_options
@json_option
@vllm_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"], case_sensitive=False), default=None,
              help="Same as --json when 'json' (kept for scripts).")
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
    as_json = as_json or fmt == "json"
    if fmt == "text" and as_json:
        _fail("--format text and --json contradict each other; give one of them.")
    catalog = _load(recipes_dir)
    recipe = find_recipe(catalog, hf_id, kw)
    if recipe.is_omni:
        _no_vllm_for_omni(recipe, vllm_release)
        osel, oplan = resolve_omni_request(catalog, recipe, kw)
        _header_comment(_omni_header(recipe, osel, kw), quiet or as_json)
        _omni_output(catalog, recipe, osel, oplan, as_json)
        return
    forced = check_release(vllm_release)
    catalog, state = _state_for(catalog, recipe, kw)
    ctx, plan = resolve(catalog, recipe, state.selection)
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
def explain_cmd(hf_id: str, recipes_dir: tuple[str, ...], as_json: bool, vllm_release: str | None = None,
                **kw: Any) -> None:
    """Show every final flag and env var with its layer, file:line and what it shadowed.

    Layers and their order: docs/reference/synthesis.md. A last table lists the
    release-lint findings.
    """
    catalog = _load(recipes_dir)
    recipe = find_recipe(catalog, hf_id, kw)
    if recipe.is_omni:
        _no_vllm_for_omni(recipe, vllm_release)
        osel, oplan = resolve_omni_request(catalog, recipe, kw)
        header = _omni_header(recipe, osel, kw)
        sections = explain_omni(catalog, oplan)
        lint = lints = None
    else:
        forced = check_release(vllm_release)
        catalog, state = _state_for(catalog, recipe, kw)
        ctx, plan = resolve(catalog, recipe, state.selection)
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
        table_rows = []
        for r in rows:
            shadow = "; ".join(f"{s['value']!s} ({s['layer']}{' @ ' + s['location'] if s['location'] else ''})"
                               for s in r.shadowed)
            where = r.source["location"] or (r.source["note"] or "")
            table_rows.append([r.kind, r.name, r.value or "", r.source["layer"], where, shadow])
        click.echo()
        print_table(title, ["kind", "flag / env", "value", "layer", "from", "shadowed"], table_rows,
                    whole=(0, 1, 3))
    if lint is not None:
        click.echo()
        print_lint_table(lint)
