"""``vllm-recipes fit``: will it start, how many KV tokens, how many requests at a context length.

``fit HF_ID [selection options]`` plans the exact command ``command`` would
print; ``fit --gpus N --gpu-memory GB`` (no HF_ID) searches the catalog for
every variant that starts there. ``--hardware auto`` (here and in ``command``)
detects the local GPUs.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import click

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import Architecture, ArchitectureError
from vllm_recipes.fit.hardware import (
    DetectionError,
    GpuTarget,
    HardwareError,
    custom_target,
    detected_target,
    named_target,
    profile_target,
)
from vllm_recipes.fit.memory import GIB, ProcessFit
from vllm_recipes.fit.report import (
    Check,
    FitReport,
    fit_state,
    plan_checks,
    recipe_architecture,
    report_dict,
    retarget,
    with_custom_profile,
)
from vllm_recipes.select.page import PageState

from .engine_cmds import find_recipe, resolve_request, selection_options
from .main import cli, fail, load_or_exit


def detect_target(catalog: Catalog) -> GpuTarget:
    """``--hardware auto``: the local GPUs (exit 2 when no tool is installed or it finds none)."""
    from vllm_recipes.fit.probe import NoGpuTool, detect_gpus

    try:
        tool, gpus = detect_gpus()
        return detected_target(catalog.hardware_profiles, gpus, tool)
    except NoGpuTool as exc:
        fail(f"--hardware auto: {exc}; name the hardware with --hardware, --gpu or --gpu-memory/--gpus.")
    except (DetectionError, HardwareError) as exc:
        fail(f"--hardware auto: {exc}")


def target_from_options(catalog: Catalog, kw: dict[str, Any]) -> GpuTarget | None:
    """The hardware the user named (``None``: the selection's own profile)."""
    gpu, mem, gpus = kw.pop("gpu", None), kw.pop("gpu_memory", None), kw.pop("gpus", None)
    try:
        if kw.get("hardware") == "auto":
            if gpu or mem:
                fail("--hardware auto detects the GPUs; drop --gpu / --gpu-memory.")
            kw["hardware"] = None
            return detect_target(catalog)
        if gpu:
            if kw.get("hardware"):
                fail("give either --hardware or --gpu, not both.")
            return named_target(catalog.hardware_profiles, gpu, gpus, mem)
        if mem is not None:
            if kw.get("hardware"):
                base = profile_target(catalog.hardware_profiles, kw["hardware"])
                return GpuTarget(f"Custom: {gpus or base.gpus_per_node}x {base.label.split(' (')[0]} "
                                 f"({mem:g} GB each)", mem, gpus or base.gpus_per_node, base.profile_id, True,
                                 base.brand, "--gpu-memory")
            return custom_target(mem, gpus or 1)
        if gpus is not None:
            fail("--gpus needs --gpu-memory GB or --gpu NAME.")
    except HardwareError as exc:
        fail(f"{exc}." + (f" Did you mean: {', '.join(exc.choices)}?" if exc.choices else ""))
    if kw.get("hardware") and kw["hardware"] not in catalog.hardware_profiles:
        return None  # resolve_request names the valid choices
    return None


def auto_hardware_state(catalog: Catalog, recipe: Recipe, kw: dict[str, Any]) -> tuple[Catalog, PageState]:
    """``command --hardware auto``: the detected profile, or a custom one built on the recipe default's family."""
    target = detect_target(catalog)
    if not target.custom and target.profile_id:
        kw["hardware"] = target.profile_id
        click.echo(f"# hardware: {target.label}, {target.source}", err=True)
        return catalog, resolve_request(catalog, recipe, kw)
    kw["hardware"] = None
    state = resolve_request(catalog, recipe, kw)
    custom = with_custom_profile(catalog, target, target.profile_id or state.hw_id)
    sel = retarget(custom, recipe, state.selection, bool(kw.get("strategy")))
    click.echo(f"# hardware: {target.label}, {target.source} (custom profile)", err=True)
    return custom, dataclasses.replace(state, selection=sel)


def warn_checks(checks: tuple[Check, ...]) -> None:
    """Architecture findings for ``command`` / ``explain``: warnings on stderr."""
    for c in checks:
        click.echo(f"warning: {c.message}", err=True)


def command_checks(catalog: Catalog, recipe: Recipe, plan: Any) -> None:
    warn_checks(plan_checks(catalog, recipe, plan))


def _architecture(catalog: Catalog, recipe: Recipe,
                  hf_config: str | None) -> tuple[Architecture | None, float | None]:
    """``--hf-config`` (its layers, the recipe's checkpoint facts), else the recipe's block, else the HF cache."""
    from vllm_recipes.fit.sources import (
        architecture_from_cache,
        architecture_from_file,
        checkpoint_gib_from_cache,
    )

    model_id = str(recipe.model.get("model_id") or recipe.hf_id)
    try:
        if hf_config:
            arch = architecture_from_file(hf_config)
            own = recipe_architecture(catalog, recipe)
            if own is not None:  # the config describes the layers; the recipe still knows its checkpoints
                arch = dataclasses.replace(arch, checkpoint_gib=own.checkpoint_gib, expert_fraction=own.expert_fraction,
                                           host_tables=own.host_tables)
            return arch, checkpoint_gib_from_cache(model_id)
        if not isinstance(recipe.model.get("architecture_facts"), dict):
            return architecture_from_cache(model_id), checkpoint_gib_from_cache(model_id)
    except ArchitectureError as exc:
        fail(str(exc))
    return None, None


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------

def _g(b: float) -> str:
    return f"{b / GIB:,.2f} GiB"


def _rows(p: ProcessFit) -> list[tuple[str, str]]:
    s = p.shape
    par = f"TP {s.tp} x PP {s.pp}" + (f", DP {s.dp}" if s.dp > 1 else "") + (", EP" if s.expert_parallel else "")
    tokens = f"{p.kv_tokens:,}" + ("" if p.exact else " (estimate)")
    if p.kv_tokens_bound is not None:
        tokens += f", at least {p.kv_tokens_bound:,}"
    conc = f"{p.concurrency:,}" + (f" (capped by --max-num-seqs {p.max_num_seqs})"
                                   if p.concurrency_uncapped > p.concurrency else "")
    if s.dp > 1:
        conc += f"; {p.concurrency * s.dp:,} over {s.dp} DP ranks"
    return [
        ("parallelism", par),
        ("GPU memory", f"{_g(p.gpu_memory)} x {p.utilization:g} (--gpu-memory-utilization)"),
        ("weights per GPU", _g(p.weights)),
        ("activation peak", _g(p.activation)),
        ("CUDA context + comm", _g(p.non_torch)),
        ("CUDA graphs", _g(p.cuda_graphs)),
        ("KV budget per GPU", _g(p.kv_budget)),
        ("KV bytes per token", f"{p.kv_bytes_per_token:,.1f} ({s.kv_cache_dtype}, block {p.block_size})"),
        ("KV capacity (tokens)", tokens),
        ("--max-model-len", f"{p.max_model_len:,}"),
        (f"concurrency at {p.context:,}", conc),
        ("verdict", "starts" if p.starts else "does not start"),
    ]


def print_report(r: FitReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width), soft_wrap=False)
    console.print(f"[bold]{r.hf_id}[/bold]  variant {r.variant}, strategy {r.strategy}, {r.node_count} node(s)")
    console.print(f"hardware: {r.hardware.label}" + ("  [yellow](custom profile)[/yellow]" if r.hardware.custom
                                                      else "") + f"  [{r.hardware.source}]")
    if r.architecture is not None:
        a = r.architecture
        console.print(f"architecture: {a.attention}{'' if a.exact else ' (not modelled exactly)'} - {a.source}")
    if r.checkpoint_gib is not None:
        console.print(f"checkpoint: {r.checkpoint_gib:,.2f} GiB ({r.weights_source})")
    if r.processes:
        table = Table(show_lines=False)
        table.add_column("")
        for p in r.processes:
            table.add_column(p.role)
        rows = [_rows(p) for p in r.processes]
        for i, (label, _) in enumerate(rows[0]):
            table.add_row(label, *(rw[i][1] for rw in rows))
        console.print(table)
        for p in r.processes:
            for lv in p.levers:
                console.print(f"lever ({p.role}): {lv.change} -> {lv.detail}"
                              + ("" if lv.starts else " [does not start]"))
            for n in p.notes:
                console.print(f"note ({p.role}): {n}")
    for n in r.notes:
        console.print(f"note: {n}")
    for e in (*r.errors, *(c.message for c in r.checks)):
        console.print(f"[red]error:[/red] {e}")
    console.print(f"[bold]verdict: {'starts' if r.starts else 'does not start'}[/bold]")


def _search_output(catalog: Catalog, target: GpuTarget, context: int | None, as_json: bool) -> None:
    from vllm_recipes.fit.search import search, search_dict

    res = search(catalog, target, context)
    if as_json:
        click.echo(json.dumps(search_dict(res), indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width), soft_wrap=False)
    console.print(f"hardware: {target.label}" + ("  (custom profile)" if target.custom else ""))
    table = Table()
    for col in ("model", "variant", "strategy", "weights/GPU", "KV tokens", "concurrency"
                + (f" at {context:,}" if context else " at max-model-len")):
        table.add_column(col, no_wrap=col == "model", overflow="fold")
    for h in res.hits:
        p = h.report.processes[0]
        table.add_row(h.hf_id, h.variant, h.strategy, _g(p.weights),
                      f"{h.report.kv_tokens:,}" + ("" if p.exact else " (est.)"), f"{h.score[0]:,}")
    console.print(table)
    console.print(f"{len(res.hits)} variant(s) start; {res.rejected} do not"
                  + (f"; {len(res.unknown)} recipe(s) without architecture facts" if res.unknown else ""))


@cli.command("fit")
@selection_options
@click.option("--gpu", help='GPU name, e.g. "RTX 5090" (a catalog profile when one matches).')
@click.option("--gpu-memory", type=click.FloatRange(min=0, min_open=True), help="Memory per GPU in GB (custom).")
@click.option("--gpus", type=click.IntRange(1, 64), help="Number of GPUs (with --gpu or --gpu-memory).")
@click.option("--context", type=click.IntRange(1), help="Context length for the concurrency figure "
              "(default: --max-model-len).")
@click.option("--hf-config", type=click.Path(dir_okay=False), help="A Hugging Face config.json for the "
              "architecture (default: the recipe's architecture_facts, then the local HF cache).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def fit_cmd(hf_id: str | None, recipes_dir: tuple[str, ...], context: int | None, hf_config: str | None,
            as_json: bool, **kw: Any) -> None:
    """Will HF_ID start on the hardware, with how much KV cache and concurrency? Without HF_ID: every
    recipe variant that starts on --gpus/--gpu-memory (or --gpu, --hardware)."""
    catalog = load_or_exit(recipes_dir)
    target = target_from_options(catalog, kw)
    if hf_id is None:
        if target is None:
            if not kw.get("hardware"):
                fail("name a model, or the hardware to search for (--gpus N --gpu-memory GB, --gpu, --hardware).")
            try:
                target = profile_target(catalog.hardware_profiles, kw["hardware"])
            except HardwareError as exc:
                fail(f"{exc}." + (f" Valid: {', '.join(exc.choices)}" if exc.choices else ""))
        _search_output(catalog, target, context, as_json)
        return
    recipe = find_recipe(catalog, hf_id, kw)
    if recipe.is_omni:
        fail(f"{recipe.hf_id} is an omni recipe; fit plans vLLM serve commands only.")
    strategy_given = bool(kw.get("strategy"))
    if target is not None and not target.custom and target.profile_id:
        from vllm_recipes.select.page import hardware_block_reason

        variant = recipe.variants.get(kw.get("variant") or "default") or {}
        if hardware_block_reason(catalog, recipe, variant, target.profile_id) is None:
            kw["hardware"] = target.profile_id
        else:  # not offered by the recipe: plan it as a custom profile of that family
            target = GpuTarget(target.label, target.gpu_gib, target.gpus_per_node, target.profile_id, True,
                               target.brand, target.source, notes=(f"{target.profile_id} is not offered by "
                                                                    f"{recipe.hf_id}",))
    state = resolve_request(catalog, recipe, kw)
    arch, cached = _architecture(catalog, recipe, hf_config)
    report = fit_state(catalog, recipe, state, target, arch, context=context, strategy_given=strategy_given,
                       cached_checkpoint_gib=cached)
    if as_json:
        click.echo(json.dumps(report_dict(report), indent=2))
    else:
        print_report(report)
    if not report.starts:
        raise SystemExit(1)


for _p in fit_cmd.params:  # HF_ID is optional here: without it, fit searches the catalog
    if _p.name == "hf_id":
        _p.required = False
