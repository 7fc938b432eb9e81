"""Fit benchmark (not a test; prints figures): one selection's fit, and the reverse search.

* ``fit_plan`` on an already resolved plan (the arithmetic, shape extraction and levers),
  next to ``resolve`` of the same selections, measured in the same run;
* ``search`` (every variant x single-node strategy) over a generated catalog of clones
  of the seed recipes (hardware overrides, PD, Mooncake, modes, variants), next to the
  bare resolves the search performs, measured in the same run.

    .venv/bin/python benchmarks/bench_fit.py [--recipes 170] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_resolve import selections
from catalog_gen import make_catalog
from vllm_recipes.catalog import load_catalog
from vllm_recipes.fit.hardware import custom_target, profile_target
from vllm_recipes.fit.memory import fit_process
from vllm_recipes.fit.report import (
    CUSTOM_ID,
    fit_plan,
    recipe_architecture,
    with_custom_profile,
)
from vllm_recipes.fit.search import search
from vllm_recipes.select.defaults import default_features
from vllm_recipes.select.selection import Selection
from vllm_recipes.select.state import candidate_strategies
from vllm_recipes.synth.resolve import resolve


def bench_one(repeat: int) -> None:
    catalog = load_catalog()
    sels = list(selections(catalog))
    plans = [(r, *resolve(catalog, r, s)) for r, s in sels]
    targets = {hw: profile_target(catalog.hardware_profiles, hw) for hw in {s.hw_id for _, s in sels}}
    archs = {r.hf_id: recipe_architecture(r) for r, _ in sels}
    fits, resolves = [], []
    for _ in range(repeat):
        fit_process.cache_clear()  # each fit computed, not read back from fit_process's LRU
        t0 = time.perf_counter()
        for r, ctx, plan in plans:
            fit_plan(r, ctx, plan, targets[ctx.sel.hw_id], archs[r.hf_id], context=131072)
        fits.append((time.perf_counter() - t0) / len(plans))
        t0 = time.perf_counter()
        for r, s in sels:
            resolve(catalog, r, s)
        resolves.append((time.perf_counter() - t0) / len(sels))
    f, rv = statistics.median(fits), statistics.median(resolves)
    print(f"fit one selection (plan resolved)  {len(plans):5d} selections  {f * 1e6:7.1f} us"
          f"   resolve (warm) {rv * 1e6:7.1f} us   fit/resolve {f / rv:5.2f}")


def _bare_resolves(cat, target) -> int:  # type: ignore[no-untyped-def]
    """The resolves a search performs, without the fits (the baseline)."""
    count = 0
    for r in cat.recipes:
        for vk in r.variants:
            for s in candidate_strategies(cat, r, CUSTOM_ID, 1):
                resolve(cat, r, Selection(vk, CUSTOM_ID, s, 1, tuple(default_features(r.data, CUSTOM_ID, vk))))
                count += 1
    return count


def bench_search(n: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_catalog(Path(tmp), n)
        catalog = load_catalog(root)
        print(f"generated catalog: {len(catalog.recipes)} recipes, "
              f"{sum(len(r.variants) for r in catalog.recipes)} variants")
        for target in (custom_target(141, 8), custom_target(32, 2), custom_target(80, 8)):
            cold, warm, bare_cold, bare_warm = [], [], [], []
            for _ in range(repeat):
                fresh = load_catalog(root)  # nothing kept: the custom catalog and its layer plans
                fit_process.cache_clear()
                t0 = time.perf_counter()
                res = search(fresh, target, 131072)
                cold.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                fit_process.cache_clear()
                search(fresh, target, 131072)  # the custom catalog's layer plans warm, every fit computed
                warm.append(time.perf_counter() - t0)
                cat = with_custom_profile(load_catalog(root), target, "h100")
                t0 = time.perf_counter()
                count = _bare_resolves(cat, target)
                bare_cold.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                _bare_resolves(cat, target)
                bare_warm.append(time.perf_counter() - t0)
            c, w = statistics.median(cold), statistics.median(warm)
            bc, bw = statistics.median(bare_cold), statistics.median(bare_warm)
            print(f"search {target.label:30s} {len(res.hits):4d} hits  cold {c * 1e3:7.1f} ms  warm {w * 1e3:7.1f} ms"
                  f" | all {count} resolves: cold {bc * 1e3:7.1f} ms  warm {bw * 1e3:7.1f} ms"
                  f" | search/resolves cold {c / bc:4.2f} warm {w / bw:4.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipes", type=int, default=170)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    bench_one(args.repeat)
    bench_search(args.recipes, args.repeat)


if __name__ == "__main__":
    main()
