"""Release-lint benchmark: lint of one rendering, and ``validate`` with the lint on a 170-recipe catalog.

Not a test; prints figures and ratios measured in the same run (the machine is noisy).

    python benchmarks/bench_vllm_lint.py [--recipes 170] [--repeat 3]

1. every offered selection of the bundled seeds is resolved once; then the pure
   lint (``lint_tokens``, no memo) runs over each rendering's processes, against
   the release its image runs. Baseline in the same run: ``resolve`` of the same
   selections (warm plans) and ``final_tokens`` (the renderer's dedupe).
2. a generated catalog (clones of the seeds: hardware overrides, PD, Mooncake,
   modes, variants) is validated with and without the release checker.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_gen import make_catalog
from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.catalog.diagnostics import Finding
from vllm_recipes.catalog.validate import validate_catalog
from vllm_recipes.lint.deadvalues import dead_value_findings
from vllm_recipes.lint.vllm_lint import lint_tokens
from vllm_recipes.lint.vllm_plan import plan_processes, target_for
from vllm_recipes.lint.vllm_validate import dead_value_and_release_checker
from vllm_recipes.render.shell import final_tokens
from vllm_recipes.select.offered import offered_selections
from vllm_recipes.synth.resolve import resolve


def bench_one_rendering(repeat: int) -> None:
    catalog = load_catalog()
    sels = [(r, s) for r in catalog.recipes for s in offered_selections(catalog, r)]
    resolved = [resolve(catalog, r, s) for r, s in sels]
    work = []
    for ctx, plan in resolved:
        target, _notes = target_for(ctx)
        procs = [(tuple(a.value for a in final_tokens(inv)[0]), {e.key: e.value for e in env})
                 for _t, inv, env in plan_processes(plan)]
        work.append((target, procs))
    n_proc = sum(len(p) for _t, p in work)
    lint_t, resolve_t, fin_t = [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for target, procs in work:
            for toks, env in procs:
                lint_tokens(toks, env, target)
        lint_t.append((time.perf_counter() - t0) / len(work))
        t0 = time.perf_counter()
        for r, s in sels:
            resolve(catalog, r, s)
        resolve_t.append((time.perf_counter() - t0) / len(sels))
        t0 = time.perf_counter()
        for _ctx, plan in resolved:
            for _t, inv, _env in plan_processes(plan):
                final_tokens(inv)
        fin_t.append((time.perf_counter() - t0) / len(resolved))
    lt, rt, ft = (statistics.median(x) * 1e6 for x in (lint_t, resolve_t, fin_t))
    print(f"lint of one rendering      {len(work):5d} renderings ({n_proc} processes)  {lt:7.1f} us"
          f"   (target <= 50 us)")
    print(f"  baseline resolve (warm)  {rt:7.1f} us   -> lint / resolve = {lt / rt:4.2f}")
    print(f"  baseline final_tokens    {ft:7.1f} us   -> lint / final_tokens = {lt / ft:4.2f}")


def _dead_values(catalog: Catalog) -> list[Finding]:
    """The straightforward dead-value pass (every offered selection resolved and tallied)."""
    return [f for r in catalog.recipes for f in dead_value_findings(catalog, r)]


def bench_validate(n_recipes: int, repeat: int) -> None:
    """The straightforward pass with the release lint vs without it (the lint's own share; ``validate``
    itself runs the fast pass: ``bench_validate.py``)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = make_catalog(Path(tmp), n_recipes)
        base_w, base_c, with_w, with_c = [], [], [], []
        n_sel = n_found = 0
        for _ in range(repeat):
            catalog = load_catalog(str(root))
            t0, c0 = time.perf_counter(), time.process_time()
            validate_catalog(catalog, extra_checks=[_dead_values])
            base_w.append(time.perf_counter() - t0)
            base_c.append(time.process_time() - c0)
            catalog = load_catalog(str(root))
            t0, c0 = time.perf_counter(), time.process_time()
            n_found = len(validate_catalog(catalog, extra_checks=[dead_value_and_release_checker()]))
            with_w.append(time.perf_counter() - t0)
            with_c.append(time.process_time() - c0)
            n_sel = sum(1 for r in catalog.recipes for _ in offered_selections(catalog, r))
        bw, bc, ww, wc = (statistics.median(x) for x in (base_w, base_c, with_w, with_c))
        print(f"validate {n_recipes} recipes, straightforward path in one process ({n_sel} offered selections, "
              f"{n_found} findings): the lint's own share; the 10 s target is `vllm-recipes validate`'s "
              "(benchmarks/bench_validate.py)")
        print(f"  before (dead values)     {bw:6.2f} s wall {bc:6.2f} s CPU")
        print(f"  with release lint        {ww:6.2f} s wall {wc:6.2f} s CPU"
              f"   -> ratio {wc / bc:4.2f}, lint adds {(wc - bc) / n_sel * 1e6:5.1f} us CPU per selection")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipes", type=int, default=170)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bench_one_rendering(args.repeat)
    bench_validate(args.recipes, args.repeat)


if __name__ == "__main__":
    main()
