"""The full ``build-api`` against its write floor, plus per-selection engine costs (not run in CI).

One run measures, interleaved so machine noise hits all of them alike:

* **build**: ``build_full`` in a fresh interpreter, exactly as the CLI runs it
  (default worker count), into a new directory on ``/dev/shm``;
* **floor**: the very same files written from memory by one process (``mkdir``
  + ``open``/``write``/``close`` per file) into a new directory on ``/dev/shm``:
  what any builder must pay at least;
* **fresh resolve + render**: ``resolve`` + ``rendering_object`` per selection,
  every (recipe, variant, hardware, strategy) of the catalog once, caches
  emptied first (what a build does per rendering);
* **repeated selection**: the same selections again (the website's case: the
  answer comes from the engine's bounded caches).

The catalog is generated from the bundled seeds (``catalog_gen.py``: hardware
overrides, PD, Mooncake, feature modes, promoted variants). Usage::

    .venv/bin/python benchmarks/bench_build_floor.py [--recipes 170] [--repeat 5] [--jobs N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_resolve import selections
from catalog_gen import make_catalog
from vllm_recipes.catalog import load_catalog
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.resolve import resolve

try:  # absent in versions before the bounded selection cache (run against an older tree for a baseline)
    from vllm_recipes.catalog.memo import SELECTION_LIMIT
except ImportError:
    SELECTION_LIMIT = 4096

_CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
from vllm_recipes.api.incremental import build_full
t1 = time.perf_counter()
jobs = None if sys.argv[3] == "auto" else int(sys.argv[3])
res = build_full(sys.argv[1], sys.argv[2], jobs=jobs)
t2 = time.perf_counter()
c = os.times()
print(json.dumps({"files": res.written, "imports": t1 - t0, "build": t2 - t1, "cpu": c[0] + c[1] + c[2] + c[3]}))
"""


def run_build(recipes_dir: Path, out: Path, jobs: int | None, src: str | None = None) -> dict[str, float]:
    """One full build in a fresh interpreter; ``src``: another tree's ``src`` (a same-run baseline)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(recipes_dir), str(out),
                           "auto" if jobs is None else str(jobs)], capture_output=True, text=True, check=True,
                          env=env)
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    info["wall"] = time.perf_counter() - t0
    return info


def read_tree(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for dirpath, _dirs, names in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for n in names:
            p = n if rel == "." else f"{rel}/{n}"
            if not n.startswith("."):
                with open(os.path.join(dirpath, n), "rb") as fh:
                    files[p] = fh.read()
    return files


def write_floor(files: dict[str, bytes], dest: Path) -> float:
    """The floor: write ``files`` into the new directory ``dest`` from memory, plainly."""
    t0 = time.perf_counter()
    os.mkdir(dest)
    base = os.fspath(dest) + "/"
    made: set[str] = set()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for path, data in files.items():
        i = path.rfind("/")
        if i > 0 and path[:i] not in made:
            os.makedirs(base + path[:i], exist_ok=True)
            made.add(path[:i])
        fd = os.open(base + path, flags, 0o666)
        os.write(fd, data)
        os.close(fd)
    return time.perf_counter() - t0


def engine_costs(recipes_dir: Path, repeat: int) -> tuple[int, float, float]:
    """Median µs per selection: fresh (caches emptied) and repeated resolve + render.

    "Repeated" replays a working set of selections that fits the engine's bounded
    per-selection cache (a busy website's hot set), after one pass that fills it.
    """
    catalog = load_catalog(recipes_dir)
    sels = list(selections(catalog))
    hot = sels[: SELECTION_LIMIT // 4]  # two answers (plan, rendering) per selection
    fresh, again = [], []

    def run(batch: list[tuple[Any, Selection]]) -> float:
        t0 = time.perf_counter()
        for r, s in batch:
            try:
                rendering_object(*resolve(catalog, r, s))
            except Exception:  # a selection the engine refuses costs what it costs
                continue
        return (time.perf_counter() - t0) / len(batch) * 1e6

    for _ in range(repeat):
        catalog.memo.clear()
        fresh.append(run(sels))
        run(hot)
        again.append(run(hot))
    return len(sels), statistics.median(fresh), statistics.median(again)


@contextlib.contextmanager
def bench_dirs(prefix: str, recipes_dir: str | None, n_recipes: int) -> Iterator[tuple[Path, Path]]:
    """``(catalog, output root on /dev/shm)``: the given catalog or a generated one; removed after."""
    work = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    outs = Path(tempfile.mkdtemp(prefix=f"{prefix}-out-", dir=shm))
    try:
        yield (Path(recipes_dir) if recipes_dir else make_catalog(work / "catalog", n_recipes)), outs
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(outs, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipes", type=int, default=170)
    ap.add_argument("--recipes-dir", help="use this catalog instead of generating one")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved build/floor pairs (best of each)")
    ap.add_argument("--jobs", type=int, default=None, help="build worker processes (default: as the CLI)")
    ap.add_argument("--baseline-src", help="another tree's src/ to build too, interleaved (same-run baseline)")
    args = ap.parse_args(argv)
    with bench_dirs("bench-floor", args.recipes_dir, args.recipes) as (recipes_dir, outs):
        builds, floors, bases = [], [], []
        files: dict[str, bytes] = {}
        for k in range(max(1, args.repeat)):
            b = run_build(recipes_dir, outs / f"api{k}", args.jobs)
            builds.append(b)
            if not files:
                files = read_tree(outs / f"api{k}")
            shutil.rmtree(outs / f"api{k}")
            if args.baseline_src:
                bases.append(run_build(recipes_dir, outs / f"base{k}", args.jobs, args.baseline_src))
                shutil.rmtree(outs / f"base{k}")
            floors.append(write_floor(files, outs / f"floor{k}"))
            shutil.rmtree(outs / f"floor{k}")
        best = min(builds, key=lambda x: x["wall"])
        floor = min(floors)
        n_sel, fresh_us, again_us = engine_costs(recipes_dir, 3)
        n_recipes = sum(1 for _ in (recipes_dir / "models").rglob("*.yaml"))
        rows = [
            ("recipes / files / MB", f"{n_recipes} / {len(files):,} / {sum(map(len, files.values())) / 1e6:.1f}"),
            ("build, process wall (best)", f"{best['wall']:.3f} s (imports {best['imports']:.3f} s, "
                                           f"build {best['build']:.3f} s, cpu {best['cpu']:.2f} s)"),
            ("write floor, one process (best)", f"{floor:.3f} s"),
            ("RATIO build wall / floor", f"{best['wall'] / floor:.2f}x  (cpu {best['cpu'] / floor:.2f}x; build alone {best['build'] / floor:.2f}x; "
                                         f"median pair {statistics.median(b['wall'] for b in builds) / statistics.median(floors):.2f}x)"),
        ]
        if bases:
            base = min(bases, key=lambda x: x["wall"])
            rows += [
                ("baseline build, process wall (best)", f"{base['wall']:.3f} s (cpu {base['cpu']:.2f} s; "
                                                        f"{base['wall'] / floor:.2f}x the floor)"),
                ("RATIO build / baseline", f"wall {best['wall'] / base['wall']:.2f}, "
                                           f"cpu {best['cpu'] / base['cpu']:.2f}"),
            ]
        rows += [
            ("selections", f"{n_sel:,}"),
            ("fresh resolve + render", f"{fresh_us:.1f} us / selection"),
            ("repeated selection", f"{again_us:.2f} us / selection"),
        ]
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            print(f"{k.ljust(width)}  {v}")
        print(f"(repeat {args.repeat}; cpus={os.cpu_count()}; load average {os.getloadavg()[0]:.2f})")
        return 0


if __name__ == "__main__":
    sys.exit(main())
