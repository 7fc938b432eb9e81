"""Where a full ``build-api`` spends its time, per phase, next to the write floor (not run in CI).

One process, one run: the catalog is loaded, the whole API is built in memory
with one worker (``build_api(jobs=1)``) while each phase's own time is
accumulated (nested phases are subtracted from their callers), and then the
floor is measured: the very same files written from memory into a new
directory on ``/dev/shm``. Every figure is printed as seconds, as a share of
the build and as a multiple of the floor, so the ratio survives a noisy machine.
The CLI builds with one worker per core; divide the engine phases by the
worker count for its wall time. Usage::

    .venv/bin/python benchmarks/bench_build_phases.py [--recipes 170] [--recipes-dir DIR]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vllm_recipes.api.build as build_mod
import vllm_recipes.api.tree as tree_mod
from bench_build_floor import bench_dirs, write_floor
from vllm_recipes.catalog import load_catalog

#: (module, function, phase): the functions whose own time (callees subtracted) makes a phase.
PHASES = (
    (build_mod, "recipe_errors", "validate recipes"),
    (build_mod, "render_for_hardware", "gates and defaults (per hardware)"),
    (tree_mod, "rendering_hardware_key", "hardware keys (shared renderings)"),
    (tree_mod, "resolve", "resolve (context, layers, plan, env)"),
    (tree_mod, "rendering_object", "render objects (text, argv, docker)"),
    (tree_mod, "with_vllm_lint", "release lint"),
    (build_mod, "_encode_fast", "JSON encoding (orjson)"),
    (build_mod, "encode", "JSON encoding (json.dumps)"),
    (build_mod, "build_recipe", "recipe files (assembly)"),
    (build_mod, "assemble", "merge, models.json"),
)


def instrument() -> tuple[dict[str, float], dict[str, int], Callable[[], None]]:
    """Wrap every phase function with an exclusive timer; returns totals, counts and an undo."""
    own: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    stack: list[float] = []
    clock = time.perf_counter
    saved: list[tuple[Any, str, Any]] = []

    def wrap(mod: Any, name: str, label: str) -> None:
        fn = getattr(mod, name)
        saved.append((mod, name, fn))

        def timed(*a: Any, **k: Any) -> Any:
            t0 = clock()
            stack.append(0.0)
            try:
                return fn(*a, **k)
            finally:
                spent = clock() - t0
                inner = stack.pop()
                own[label] += spent - inner
                calls[label] += 1
                if stack:
                    stack[-1] += spent
        setattr(mod, name, timed)

    for mod, name, label in PHASES:
        wrap(mod, name, label)

    def undo() -> None:
        for mod, name, fn in saved:
            setattr(mod, name, fn)
    return own, calls, undo


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipes", type=int, default=170)
    ap.add_argument("--recipes-dir", help="use this catalog instead of generating one")
    args = ap.parse_args(argv)
    with bench_dirs("bench-phases", args.recipes_dir, args.recipes) as (recipes_dir, outs):
        t0 = time.perf_counter()
        catalog = load_catalog(recipes_dir)
        load = time.perf_counter() - t0
        own, calls, undo = instrument()
        gc_spent = [0.0, 0.0]  # start of the running collection, total

        def on_gc(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                gc_spent[0] = time.perf_counter()
            else:
                gc_spent[1] += time.perf_counter() - gc_spent[0]
        gc.callbacks.append(on_gc)
        try:
            t0 = time.perf_counter()
            api = build_mod.build_api(catalog, jobs=1)
            build = time.perf_counter() - t0
        finally:
            undo()
            gc.callbacks.remove(on_gc)
        # in-process only: the first collection after the build scans every object it made
        # (build workers of the CLI never collect)
        own["cyclic GC after the build (in-process only)"] = gc_spent[1]
        calls["cyclic GC after the build (in-process only)"] = 1
        floor = min(write_floor(api.files, outs / f"floor{k}") for k in range(3))
        rows: list[tuple[str, float, str]] = [("load catalog (YAML, models)", load, "")]
        for label, spent in sorted(own.items(), key=lambda kv: -kv[1]):
            rows.append((label, spent, f"{calls[label]:,} calls, {spent / calls[label] * 1e6:.1f} us each"))
        rest = build - sum(own.values())
        rows.append(("other build work (walk, trees, warnings)", rest, ""))
        total = load + build
        width = max(len(r[0]) for r in rows)
        print(f"{len(api.files):,} files, {sum(map(len, api.files.values())) / 1e6:.1f} MB; "
              f"write floor {floor:.3f} s (best of 3, /dev/shm)")
        print(f"{'phase'.ljust(width)}  {'s':>7}  {'share':>6}  {'x floor':>7}")
        for label, spent, note in rows:
            print(f"{label.ljust(width)}  {spent:7.3f}  {spent / total:6.1%}  {spent / floor:7.2f}  {note}")
        print(f"{'TOTAL (one process)'.ljust(width)}  {total:7.3f}  {1:6.1%}  {total / floor:7.2f}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
