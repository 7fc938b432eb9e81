"""``vllm-recipes perf`` (how fast will this selection serve?) and ``recommend`` (which selections
meet an SLA): estimates of the calibrated model (docs/decisions-perf-model.md), with their error."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from vllm_recipes.catalog import Recipe
from vllm_recipes.fit.architecture import Architecture, ArchitectureError
from vllm_recipes.perf.architecture import ComputeFacts
from vllm_recipes.perf.report import PerfReport, expected_error, perf_state, report_dict
from vllm_recipes.perf.scheduler import Workload
from vllm_recipes.service.perf import WORKLOAD, require_serve, sla, workload
from vllm_recipes.service.query import check_hardware

from .fit_cmds import gather_facts, target_from_options
from .main import cli, failing, load_or_exit, recipes_dir_option, refusals
from .options import (
    find_recipe,
    gpu_options,
    hf_config_option,
    offline_option,
    resolve_request,
    selection_options,
)
from .output import dump_json, json_option


def workload_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--isl``/``--osl``/``--concurrency``/``--rate`` from the one workload table and ``--num-prompts``, given
    to the command as one ``load`` (the service checks them, as it does the URL's and the MCP tools')."""
    @functools.wraps(fn)
    def with_load(*args: Any, num_prompts: int | None, **kw: Any) -> Any:
        given = {}
        for name in WORKLOAD:  # (taken out of kw: they reach the command as the one load)
            given[name] = kw.pop(name)
        with refusals():
            load = workload(given, num_prompts or 0)
        return fn(*args, load=load, **kw)

    with_load = click.option("--num-prompts", type=click.IntRange(1, 100_000), help="Requests to simulate (default: "
                             "10 x concurrency, at least 50, at most 1000 + 2 x concurrency; 200 with --rate).")(with_load)
    for name, p in reversed(WORKLOAD.items()):
        bound = f"1-{p.hi:,}" if p.kind == "integer" else f"more than 0, up to {p.hi:,}"
        help = f"{p.help} [{bound}{'; required' if p.required else ''}]"
        with_load = click.option(f"--{name}", metavar="INTEGER" if p.kind == "integer" else "FLOAT", help=help)(with_load)
    return with_load


def facts_for(recipe: Recipe, hf_config: str | None, offline: bool, variant_key: str = "default"
              ) -> tuple[Architecture | None, ComputeFacts | None, float | None]:
    """Architecture and checkpoint (as ``fit`` finds them), exact compute facts when a config.json is given
    or cached."""
    from vllm_recipes.perf.sources import config_facts

    found = gather_facts(recipe, variant_key, hf_config, offline)
    for note in found.notes:  # why a fact is missing (an unreachable Hub, a gated repository)
        click.echo(f"note: {note}", err=True)
    got = None
    if hf_config or not isinstance(recipe.model.get("architecture_facts"), dict):
        with failing(ArchitectureError):
            got = config_facts(hf_config, recipe.model_repo)
    return found.arch, got[1] if got is not None else None, found.cached_gib


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def error_line() -> str:
    e = expected_error()
    if not e:
        return "expected error: not calibrated"
    parts = [f"{k.upper() if k != 'output_tok_s_per_gpu' else 'tok/s/GPU'} {_pct(v['median'])} (p90 {_pct(v['p90'])})"
             for k, v in e.items()]
    return "expected error (median |error|, leave-one-model-out): " + ", ".join(parts)


def print_report(r: PerfReport) -> None:
    w = r.workload
    click.echo(f"{r.hf_id}  variant {r.variant}, strategy {r.strategy}, {r.nodes} node(s), {r.hardware}")
    load = f"rate {w.rate:g} req/s" if w.rate else f"concurrency {w.concurrency}"
    click.echo(f"workload: ISL {w.isl:,}, OSL {w.osl:,}, {load}, {w.prompts():,} requests")
    e = r.estimate
    if e is not None and r.known:
        click.echo("ESTIMATE" + ("" if r.calibrated else " (GPU family not calibrated)") + f" - {error_line()}")
        ttft_bound = "queueing" if e.queueing else e.prefill_bound
        rows = [
            ("TTFT", f"{e.ttft_ms:,.1f} ms  (bound: {ttft_bound})"),
            ("TPOT", f"{e.tpot_ms:,.2f} ms  ({e.tok_s_per_user:,.1f} tok/s per user; bound: {e.decode_bound})"),
            ("output tok/s", f"{e.output_tok_s_total:,.0f} total, {e.output_tok_s_per_gpu:,.1f} per GPU "
                             f"({e.gpus} GPUs, {e.replicas} replica(s))"),
            ("running batch", f"mean {e.running_mean:,.1f}, peak {e.running_peak}, at most {e.running_cap} "
                              "(KV capacity, --max-num-seqs)"),
        ]
        for role, pe in r.pools:
            figure = f"TTFT {pe.ttft_ms:,.1f} ms" if role == "prefill" else f"TPOT {pe.tpot_ms:,.2f} ms"
            rows.append((f"{role} pool", f"{figure}, {pe.gpus} GPUs"))
        for k, v in rows:
            click.echo(f"  {k:<14} {v}")
    for n in r.notes:
        click.echo(f"note: {n}")
    for err in r.errors:
        click.echo(f"unknown: {err}")
    click.echo(f"measure it: {r.bench_command}")


@cli.command("perf")
@selection_options
@workload_options
@gpu_options
@hf_config_option
@click.option("--vllm", "vllm_release", metavar="X.Y", help="The vLLM release you will run (said against the "
              "calibrated releases).")
@offline_option
@json_option
def perf_cmd(hf_id: str, recipes_dir: tuple[str, ...], load: Workload, hf_config: str | None,
             vllm_release: str | None, offline: bool, as_json: bool, **kw: Any) -> None:
    """Estimated TTFT, TPOT and throughput of HF_ID's command at --isl/--osl and --concurrency (or --rate)."""
    catalog = load_or_exit(recipes_dir)
    target = target_from_options(catalog, kw)
    recipe = find_recipe(catalog, hf_id, kw)
    with refusals():
        require_serve(recipe)
    state = resolve_request(catalog, recipe, kw)
    arch, facts, cached = facts_for(recipe, hf_config, offline, state.selection.variant_key)
    report = perf_state(catalog, recipe, state, load, target=target, arch=arch, facts=facts,
                        strategy_given=bool(kw.get("strategy")), cached_checkpoint_gib=cached, vllm=vllm_release)
    if as_json:
        dump_json(report_dict(report), ensure_ascii=True)
    else:
        print_report(report)
    if not report.known:
        raise SystemExit(1)


@cli.command("recommend")
@click.argument("hf_id")
@recipes_dir_option
@workload_options
@click.option("--ttft-ms", metavar="FLOAT", help="TTFT target (ms). [required]")
@click.option("--tpot-ms", metavar="FLOAT", help="TPOT target (ms). [required]")
@click.option("--hardware", "hardware", multiple=True, help="Only these hardware profiles (repeatable).")
@hf_config_option
@offline_option
@json_option
def recommend_cmd(hf_id: str, recipes_dir: tuple[str, ...], load: Workload, ttft_ms: str | None, tpot_ms: str | None,
                  hardware: tuple[str, ...], hf_config: str | None, offline: bool, as_json: bool) -> None:
    """The recipe's offered configurations that meet --ttft-ms and --tpot-ms, fewest GPUs first."""
    from vllm_recipes.perf.recommend import recommend, recommendation_dict, selection_command

    with refusals():
        target = sla({"ttft_ms": ttft_ms, "tpot_ms": tpot_ms})
    catalog = load_or_exit(recipes_dir)
    recipe = find_recipe(catalog, hf_id, {})
    with refusals():
        check_hardware(catalog, hardware)
    arch, facts, _ = facts_for(recipe, hf_config, offline)
    rec = recommend(catalog, recipe, target, load, hardware=hardware, arch=arch, facts=facts)
    if as_json:
        dump_json(recommendation_dict(rec), ensure_ascii=True)
        raise SystemExit(0 if rec.meeting else 1)
    click.echo(f"{rec.hf_id}: TTFT <= {target.ttft_ms:g} ms, TPOT <= {target.tpot_ms:g} ms at ISL {load.isl:,} / "
               f"OSL {load.osl:,}, " + (f"rate {load.rate:g} req/s" if load.rate else f"concurrency {load.concurrency}")
               + f" - {rec.considered} configuration(s) considered (ESTIMATE; {error_line()})")
    for c in rec.meeting:
        e = c.report.estimate
        assert e is not None
        click.echo(f"  meets  {c.gpus:>3} GPUs  {c.report.hardware}, {c.report.variant}, {c.report.strategy}, "
                   f"{c.report.nodes} node(s): TTFT {e.ttft_ms:,.0f} ms, TPOT {e.tpot_ms:,.1f} ms, "
                   f"{e.output_tok_s_per_gpu:,.0f} tok/s/GPU")
        click.echo(f"         {selection_command(c.report)}")
    if not rec.meeting:
        click.echo("none meets it.")
        if rec.closest is not None:
            c = rec.closest
            e = c.report.estimate
            assert e is not None
            limits = ", ".join(f"{k.upper()} x{v:.2f} of the target (bound: "
                               f"{(('queueing' if e.queueing else e.prefill_bound) if k == 'ttft' else e.decode_bound)})"
                               for k, v in c.misses)
            click.echo(f"closest: {c.gpus} GPUs {c.report.hardware}, {c.report.variant}, {c.report.strategy}: "
                       f"TTFT {e.ttft_ms:,.0f} ms, TPOT {e.tpot_ms:,.1f} ms - misses {limits}")
    if rec.unknown:
        click.echo(f"{len(rec.unknown)} configuration(s) without an estimate: {rec.unknown[0].errors[0]}")
    raise SystemExit(0 if rec.meeting else 1)
