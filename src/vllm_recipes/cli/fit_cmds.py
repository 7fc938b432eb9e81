"""``vllm-recipes fit``: will the command ``command`` prints start, how many KV tokens, how many requests
at a context length; without HF_ID, every variant that starts on the given GPUs."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import click

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.architecture import ArchitectureError
from vllm_recipes.fit.hardware import GpuTarget, HardwareError, profile_target
from vllm_recipes.fit.memory import GIB, ProcessFit
from vllm_recipes.fit.report import EXIT_CODES, FitReport, report_dict
from vllm_recipes.select.options import spell
from vllm_recipes.select.state import PageState
from vllm_recipes.service import Query, QueryError

from .main import cli, fail, failing, load_or_exit, refusals
from .options import (
    PositiveSize,
    find_recipe,
    gpu_options,
    hf_config_option,
    offline_option,
    request_from_options,
    resolve_request,
    selection_options,
)
from .output import dump_json, json_option

if TYPE_CHECKING:
    from vllm_recipes.service.fit import KnownFacts


def _with_valid(exc: HardwareError) -> str:
    return f"{exc}." + (f" Valid: {', '.join(exc.choices)}" if exc.choices else "")


def detect_target(catalog: Catalog) -> GpuTarget:
    """``--hardware auto``: the local GPUs (exit 2 when no tool is installed or it finds none)."""
    from vllm_recipes.fit.hardware import DetectionError, detected_target
    from vllm_recipes.fit.probe import NoGpuTool, detect_gpus

    try:
        tool, gpus = detect_gpus()
        return detected_target(catalog.hardware_profiles, gpus, tool)
    except NoGpuTool as exc:
        fail(f"--hardware auto: {exc}; name the hardware with --hardware, --gpu or --gpu-memory/--gpus.")
    except (DetectionError, HardwareError) as exc:
        fail(f"--hardware auto: {exc}")


def target_from_options(catalog: Catalog, kw: dict[str, Any]) -> GpuTarget | None:
    """The hardware the user named (``None``: the selection's own profile): ``--hardware auto`` the local GPUs,
    else :func:`vllm_recipes.service.fit.fit_target` of the options (the site's rule)."""
    gpu, mem, gpus = kw.pop("gpu", None), kw.pop("gpu_memory", None), kw.pop("gpus", None)
    hardware = kw.get("hardware")
    if hardware == "auto":
        if gpu or mem:
            fail("--hardware auto detects the GPUs; drop --gpu / --gpu-memory.")
        kw["hardware"] = None
        return detect_target(catalog)
    from vllm_recipes.service.fit import fit_target

    def say(exc: QueryError) -> str:
        return spell(exc.template, "cli") + (f" Did you mean: {', '.join(exc.choices)}?" if exc.choices else "")

    with failing(QueryError, say=say):
        return fit_target(catalog, gpu, mem, gpus, hardware)


def auto_hardware_state(catalog: Catalog, recipe: Recipe, kw: dict[str, Any]) -> tuple[Catalog, PageState]:
    """``command --hardware auto``: the detected profile, or a custom one built on the recipe default's family."""
    from vllm_recipes.fit.report import retarget, with_custom_profile

    target = detect_target(catalog)
    if not target.custom and target.profile_id:
        kw["hardware"] = target.profile_id
        click.echo(f"# hardware: {target.label}, {target.source}", err=True)
        return catalog, resolve_request(catalog, recipe, kw)
    kw["hardware"] = None
    state = resolve_request(catalog, recipe, kw)
    custom = with_custom_profile(catalog, target, target.profile_id or state.selection.hw_id)
    sel = retarget(custom, recipe, state.selection, bool(kw.get("strategy")))
    click.echo(f"# hardware: {target.label}, {target.source} (custom profile)", err=True)
    return custom, dataclasses.replace(state, selection=sel)


def gather_facts(recipe: Recipe, variant_key: str, hf_config: str | None, offline: bool,
                 need_checkpoint: bool = True) -> KnownFacts:
    """The model's facts, the Hub's when online (exit 2 for an unreadable config.json)."""
    from vllm_recipes.service.fit import known_facts

    with failing(ArchitectureError):
        return known_facts(recipe, variant_key, hf_config=hf_config, online=not offline,
                           need_checkpoint=need_checkpoint)


def _g(b: float) -> str:
    return f"{b / GIB:,.2f} GiB"


def _rows(p: ProcessFit) -> list[tuple[str, str]]:
    s = p.shape
    par = f"TP {s.tp} x PP {s.pp}" + (f", DP {s.dp}" if s.dp > 1 else "") + (", EP" if s.expert_parallel else "") \
        + (f", DCP {s.dcp}" if s.dcp > 1 else "")
    tokens = f"{p.kv_tokens:,}" + ("" if p.exact else " (estimate)")
    if p.kv_tokens_bound is not None:
        tokens += f", at least {p.kv_tokens_bound:,}"
    if p.kv_groups > 1:
        tokens += f"; {p.kv_tokens_per_group:,} per group of {p.kv_groups}"
    conc = f"{p.concurrency:,}" + (f" (capped by --max-num-seqs {p.max_num_seqs})"
                                   if p.concurrency_uncapped > p.concurrency else "")
    if s.dp > 1:
        conc += f"; {p.concurrency * s.dp:,} over {s.dp} DP ranks"
    peak = "sampler warm-up" if p.sampler > p.forward else "forward pass"
    if p.moe_workspace:
        peak += f" + MoE workspace {_g(p.moe_workspace)}"
    return [
        ("parallelism", par),
        ("GPU memory", f"{_g(p.gpu_memory)} x {p.utilization:g} (--gpu-memory-utilization)"),
        ("weights per GPU", _g(p.weights)),
        ("profiling peak", f"{_g(p.activation)} ({peak}; {p.max_num_batched_tokens:,} batched tokens, "
                           f"{p.max_num_seqs:,} sequences)"),
        ("non-torch memory", _g(p.non_torch)),
        ("CUDA graphs", _g(p.cuda_graphs) + ("" if p.cuda_graphs else " (not subtracted)")),
        ("KV budget per GPU", _g(p.kv_budget)),
        ("KV bytes per token", f"{p.kv_bytes_per_token:,.1f} ({s.kv_cache_dtype}, block {p.block_size})"),
        ("KV capacity (tokens)", tokens),
        ("--max-model-len", f"{p.max_model_len:,}" + (f" (needs {_g(p.kv_needed)} of KV)" if p.kv_needed else "")),
        ("max concurrency (vLLM log)", f"{p.concurrency_at_max_len:,.2f}x at {p.max_model_len:,}"),
        (f"concurrency at {p.context:,}", conc),
        ("verdict", "starts" if p.starts else f"does not start ({_FAILURES.get(p.failure, p.failure)})"),
    ]


_FAILURES = {"weights": "the weights exceed the requested memory",
             "no_kv_memory": "no memory left for the KV cache",
             "max_model_len": "one request of --max-model-len does not fit"}


#: what to do when a fact is missing (the CLI may name its own flags; the page never does)
_HINTS = (
    ("architecture", "hint: add model.architecture_facts to the recipe, pass --hf-config PATH (a config.json), "
                     "or run once online so the Hub's config.json is cached"),
    ("checkpoint size", "hint: pass --weights-gib GIB, or run once online so the checkpoint's safetensors "
                        "metadata is cached"),
)


def print_report(r: FitReport) -> None:
    """Model, selection, hardware, architecture, checkpoint and the release whose rules apply; one column
    per process, then each process's levers and notes; the verdict."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width), soft_wrap=False)
    console.print(f"[bold]{r.hf_id}[/bold]  variant {r.variant}, strategy {r.strategy}, {r.node_count} node(s)")
    console.print(f"hardware: {r.hardware.label}" + ("  [yellow](custom profile)[/yellow]" if r.hardware.custom
                                                      else "") + f"  [{r.hardware.source}]")
    if (a := r.architecture) is not None:
        console.print(f"architecture: {a.attention}{'' if a.exact else ' (not modelled exactly)'} - {a.source}")
    if r.checkpoint_gib is not None:
        console.print(f"checkpoint: {r.checkpoint_gib:,.2f} GiB ({r.weights_source})")
    console.print(f"vLLM {r.release} memory rules")
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
            console.print(f"lever ({p.role}): {lv.change} -> {lv.detail}" + ("" if lv.starts else " [does not start]"))
        for n in p.notes:
            console.print(f"note ({p.role}): {n}")
    for n in r.notes:
        console.print(f"note: {n}")
    for e in (*r.errors, *r.checks):
        console.print(f"[red]error:[/red] {e}" if not r.missing else f"unknown: {e}")
    hint = next((h for missing, h in _HINTS if missing in r.missing), None)
    if hint:
        console.print(hint)
    console.print(f"[bold]verdict: {r.verdict}[/bold]")


def _search_output(catalog: Catalog, target: GpuTarget, context: int | None, as_json: bool) -> None:
    from vllm_recipes.fit.search import cached_architectures, cached_checkpoints, search, search_dict

    res = search(catalog, target, context, cached_architectures(catalog), cached_checkpoints(catalog))
    if as_json:
        dump_json(search_dict(res), ensure_ascii=True)
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
@gpu_options
@click.option("--context", type=click.IntRange(1), help="Context length for the concurrency figure "
              "(default: --max-model-len).")
@hf_config_option
@click.option("--weights-gib", type=PositiveSize("GiB"),
              help="Checkpoint size in GiB (default: the recipe's facts, then the checkpoint's safetensors metadata).")
@click.option("--vllm", "vllm_release", metavar="VERSION", help="Plan with this vLLM release's memory rules "
              "(e.g. 0.11; default: the release the command runs).")
@offline_option
@json_option
def fit_cmd(hf_id: str | None, recipes_dir: tuple[str, ...], context: int | None, hf_config: str | None,
            weights_gib: float | None, vllm_release: str | None, offline: bool, as_json: bool, **kw: Any) -> None:
    """Will HF_ID start on the hardware, with how much KV cache and concurrency? Without HF_ID: every
    recipe variant that starts on --gpus/--gpu-memory (or --gpu, --hardware).

    Exit status: 0 starts, 1 does not start, 3 unknown (the model's architecture or checkpoint size is
    not known yet), 2 bad input."""
    from vllm_recipes.fit.vllm_rules import parse_release
    from vllm_recipes.service.fit import command_release, fit_report

    if vllm_release is not None and parse_release(vllm_release) is None:
        fail(f"--vllm {vllm_release!r}: expected a release like 0.11 or 0.11.2")
    catalog = load_or_exit(recipes_dir)
    target = target_from_options(catalog, kw)
    if hf_id is None:  # the GPUs a reverse search is for: the options', else the --hardware profile
        if target is None and not kw.get("hardware"):
            fail("name a model, or the hardware to search for (--gpus N --gpu-memory GB, --gpu, --hardware).")
        with failing(HardwareError, say=_with_valid):
            target = target or profile_target(catalog.hardware_profiles, kw["hardware"])
        _search_output(catalog, target, context, as_json)
        return
    recipe = find_recipe(catalog, hf_id, kw)
    if recipe.is_omni:  # not one vllm serve process: nothing the planner can size
        reason = f"{recipe.hf_id} is a vLLM-Omni pipeline; fit plans vllm serve processes only"
        if as_json:
            dump_json({"model": recipe.hf_id, "verdict": "unknown", "starts": False, "missing": ["vllm serve process"],
                       "errors": [reason], "processes": []}, ensure_ascii=True)
        else:
            click.echo(f"unknown: {reason}\nverdict: unknown")
        raise SystemExit(EXIT_CODES["unknown"])

    def facts(selected: Recipe, variant_key: str) -> KnownFacts:  # --weights-gib stands in for the checkpoint
        return gather_facts(selected, variant_key, hf_config, offline, need_checkpoint=weights_gib is None)

    with refusals(), failing(HardwareError, say=_with_valid):  # (HardwareError: no usable profile for the selection)
        report = fit_report(catalog, Query(recipe.hf_id, request_from_options(kw)), target, context=context,
                            facts=facts, release=vllm_release or command_release, weights_gib=weights_gib)
    if as_json:
        dump_json(report_dict(report), ensure_ascii=True)
    else:
        print_report(report)
    raise SystemExit(EXIT_CODES[report.verdict])


# HF_ID is optional here: without it, fit searches the catalog
next(p for p in fit_cmd.params if p.name == "hf_id").required = False
