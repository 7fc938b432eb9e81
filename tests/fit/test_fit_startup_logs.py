"""The planner against published vLLM start-up figures (``data/startup_logs.yaml``, with their sources).

Three questions per entry: does the KV pool arithmetic turn the published budget into the published
token count (exact, vLLM's own rules); is the planned KV budget within 15% of the published one; is the
verdict right. Known misses are strict xfails that name the gap, so a fix shows up as an XPASS.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from vllm_recipes.catalog import Catalog
from vllm_recipes.fit.architecture import Architecture, recipe_architecture
from vllm_recipes.fit.hardware import reported_gib
from vllm_recipes.fit.memory import GIB, ProcessFit, ProcessShape, fit_process, kv_bytes_per_token
from vllm_recipes.fit.report import FitReport, fit_state
from vllm_recipes.fit.sources import architecture_from_file
from vllm_recipes.select.request import PageRequest
from vllm_recipes.select.state import build_state

DATA = Path(__file__).parent / "data"
LOGS: list[dict[str, Any]] = yaml.safe_load((DATA / "startup_logs.yaml").read_text())
BY_ID = {e["id"]: e for e in LOGS}
#: entries the planner can be run on (an architecture is readable here: a config.json in data/ or a recipe)
PLANNED = [e for e in LOGS if "not_planned" not in e]

#: entries whose budget the planner misses by more than 15%, and why (strict: a fix must remove them)
BUDGET_MISSES = {
    "deepseek-v4.1-flash-mi300x-tp2": "vLLM reported -13.51 GiB; the plan leaves ~16 GiB: ~30 GiB of start-up "
                                      "memory on ROCm that the 0.33 sources read do not explain (the vision "
                                      "tower's profiling uses AITER / flash attention there: no L x L matrix)",
}
#: entries whose verdict the planner gets wrong
VERDICT_MISSES = {
    "deepseek-v4.1-flash-mi300x-tp2": BUDGET_MISSES["deepseek-v4.1-flash-mi300x-tp2"],
}


def _shape(flags: dict[str, Any]) -> ProcessShape:
    return ProcessShape(tp=flags.get("tp", 1), dcp=flags.get("dcp", 1),
                        max_num_batched_tokens=flags.get("max_num_batched_tokens"))


def plan(entry: dict[str, Any], catalog: Catalog) -> ProcessFit:
    """The planner's answer for one entry: a config.json entry through ``fit_process``, a recipe entry
    through the same path as ``vllm-recipes fit`` (its rendered command)."""
    gpu = reported_gib(entry["gpu"], entry["gpu_gib"])
    if "model" in entry:
        arch = architecture_from_file(DATA / entry["model"])
        return fit_process(arch, entry["checkpoint_gib"], gpu, _shape(entry["flags"]), release=entry["release"],
                           gpu_name=entry["gpu"], gpus_available=entry["gpus"], levers=False)
    return _recipe_fit(entry, catalog).processes[0]


def _recipe_fit(entry: dict[str, Any], catalog: Catalog) -> FitReport:
    recipe = catalog.recipe(entry["recipe"])
    hw = {"H200": "h200", "MI300X": "mi300x"}[entry["gpu"]]
    args = ["--tensor-parallel-size", str(entry["flags"]["tp"])]
    if "max_num_batched_tokens" in entry["flags"]:
        args += ["--max-num-batched-tokens", str(entry["flags"]["max_num_batched_tokens"])]
    state = build_state(catalog, recipe, PageRequest(hardware=hw, extra_args=tuple(args)))
    return fit_state(catalog, recipe, state, arch=recipe_architecture(recipe), release=entry["release"])


def _error(entry: dict[str, Any], p: ProcessFit) -> float:
    """Relative error of the planned KV budget against the published one (or the one the tokens imply)."""
    published = entry.get("kv_budget_gib")
    if published is None:
        published = entry["kv_tokens"] * p.kv_bytes_per_token / GIB  # bytes per token are per rank (/ DCP)
    return (p.kv_budget / GIB - published) / abs(published)


def test_every_entry_has_a_source_and_the_fields_a_plan_needs() -> None:
    assert len(LOGS) >= 10 and len({e["id"] for e in LOGS}) == len(LOGS)
    for e in LOGS:
        assert e["source_url"].startswith("https://") and e["source"] and e["published"], e["id"]
        assert {"gpu", "gpu_gib", "gpus", "release", "flags", "starts"} <= set(e), e["id"]
        if "not_planned" in e:
            assert "hf_model" in e and e["not_planned"], e["id"]
        else:
            assert ("model" in e) != ("recipe" in e), e["id"]


def test_published_lines_agree_with_one_another() -> None:
    """Where a source prints two of the four lines, vLLM's own arithmetic links them: "Maximum concurrency"
    is the KV tokens over max-model-len (the Ascend V0 log: 35,064 blocks x 128 / 32,768 = 136.97x); and
    every published figure appears in the quoted lines as printed."""
    for e in LOGS:
        text = " ".join(e["published"]).replace(",", "")
        for key in ("kv_tokens", "kv_blocks", "weights_gib", "kv_budget_gib", "max_concurrency"):
            if key in e:
                assert str(e[key]) in text, (e["id"], key)
        if "kv_blocks" in e and "max_concurrency" in e:
            tokens = e["kv_blocks"] * e["flags"]["block_size"]
            assert round(tokens / e["flags"]["max_model_len"], 2) == e["max_concurrency"], e["id"]


def test_published_tokens_follow_from_the_budget_with_vllms_arithmetic() -> None:
    """Kimi-K2 (MLA, 61 x 576 x 2 B = 70,272 B per token) on H200 TP8: the budget implied by 715,072 tokens,
    fed back through the pool arithmetic, gives the same tokens; with DCP 8 vLLM 0.11 multiplies the
    tokens by 8 (5,721,088 published: the same budget within 4 blocks)."""
    arch: Architecture = architecture_from_file(DATA / "kimi_k2.json")
    e = BY_ID["kimi-k2-thinking-8xh200-tp8"]
    shape = ProcessShape(tp=8)
    per_token = kv_bytes_per_token(arch, shape)
    assert per_token == 70_272
    budget = e["kv_tokens"] * per_token
    f = fit_process(arch, e["checkpoint_gib"], 139.6, replace(shape, kv_cache_memory_bytes=budget), release="0.11")
    assert f.kv_tokens == e["kv_tokens"]
    dcp = BY_ID["kimi-k2-thinking-8xh200-tp8-dcp8"]
    g = fit_process(arch, e["checkpoint_gib"], 139.6, replace(shape, dcp=8, kv_cache_memory_bytes=budget),
                    release="0.11")
    assert g.kv_tokens == 8 * e["kv_tokens"]
    assert abs(dcp["kv_tokens"] - g.kv_tokens) <= 4 * 16 * 8


@pytest.mark.parametrize("entry_id", [e["id"] for e in PLANNED if "kv_budget_gib" in e or "kv_tokens" in e])
def test_kv_budget_within_15_percent(entry_id: str, catalog: Catalog) -> None:
    e = BY_ID[entry_id]
    error = abs(_error(e, plan(e, catalog)))
    if entry_id in BUDGET_MISSES:
        assert error > 0.15, f"{entry_id} is within 15% now: drop it from BUDGET_MISSES"
        pytest.xfail(BUDGET_MISSES[entry_id])
    assert error <= 0.15


@pytest.mark.parametrize("entry_id", [e["id"] for e in PLANNED])
def test_verdict(entry_id: str, catalog: Catalog) -> None:
    e = BY_ID[entry_id]
    got = plan(e, catalog).starts
    if entry_id in VERDICT_MISSES:
        assert got != e["starts"], f"{entry_id} is right now: drop it from VERDICT_MISSES"
        pytest.xfail(VERDICT_MISSES[entry_id])
    assert got == e["starts"]


def test_summary_of_the_budget_errors(catalog: Catalog) -> None:
    """The figures the report quotes: median and worst budget error over the entries with a budget."""
    errors = {e["id"]: _error(e, plan(e, catalog)) for e in PLANNED if "kv_budget_gib" in e or "kv_tokens" in e}
    fine = [abs(v) for k, v in errors.items() if k not in BUDGET_MISSES]
    # issue 24 asks for a 5% median; the planner is at 5.9% (docs/decisions-fit.md, section 9)
    assert statistics.median(fine) <= 0.06 and max(fine) <= 0.15, errors
