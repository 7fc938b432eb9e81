"""Benchmark ``vllm-recipes build-api`` on a large synthetic catalog (not run in CI).

The catalog is generated from the bundled seed recipes by ``catalog_gen.py``
(each clone gets its own model ids and varies hardware overrides, VRAM,
tuning, features). Usage::

    .venv/bin/python benchmarks/bench_build_api.py [--recipes 170] [--out DIR] [--recipes-dir DIR]

Reports wall time, files/s and peak RSS for a full build (in-process, like the
CLI), then the time of an incremental rebuild after editing one recipe.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_gen import make_catalog
from vllm_recipes.api.build import build_api
from vllm_recipes.api.incremental import build_incremental, load_cache
from vllm_recipes.api.writer import diff_tree
from vllm_recipes.catalog import load_catalog


def _walk(root: Path):
    for e in os.scandir(root):
        if e.is_dir(follow_symlinks=False):
            yield from _walk(Path(e.path))
        else:
            yield e


#: Runs one build in a fresh interpreter, like the CLI, and reports what it measured as JSON.
_CHILD = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
from vllm_recipes.api.incremental import build_full, build_incremental
sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_gen import make_catalog  # noqa: E402

from vllm_recipes.api.build import build_api
from vllm_recipes.catalog import load_catalog
mode, recipes_dir, out, jobs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
jobs = None if jobs == "auto" else int(jobs)
t1 = time.perf_counter()
if mode == "full":
    res = build_full(recipes_dir, out, jobs=jobs, background_cleanup=True)
    info = {"files": res.written, "mode": res.mode}
elif mode == "full-inline":
    res = build_full(recipes_dir, out, jobs=jobs, background_cleanup=False)
    info = {"files": res.written, "mode": res.mode}
elif mode == "incremental":
    res = build_incremental(recipes_dir, out, jobs=jobs, background_cleanup=True)
    info = {"files": res.written, "mode": res.mode, "rendered": len(res.rendered)}
else:
    t = time.perf_counter()
    catalog = load_catalog(recipes_dir)
    t_load = time.perf_counter() - t
    api = build_api(catalog, jobs=jobs)
    info = {"files": len(api.files), "load": t_load}
t2 = time.perf_counter()
c = os.times()
info.update(imports=t1 - t0, build=t2 - t1, cpu=c[0] + c[1] + c[2] + c[3],
            rss_main=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            rss_worker=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
print(json.dumps(info))
"""


def _run(mode: str, recipes_dir: Path, out: Path, jobs: int | None) -> dict:
    """One build in a fresh process; ``wall`` includes interpreter start-up and imports."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, mode, str(recipes_dir), str(out),
                           "auto" if jobs is None else str(jobs)], capture_output=True, text=True, check=True)
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    info["wall"] = time.perf_counter() - t0
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipes", type=int, default=170, help="recipes to generate (default 170)")
    ap.add_argument("--recipes-dir", help="use this catalog instead of generating one")
    ap.add_argument("--out", help="output directory (default: a temp dir, on /dev/shm when present)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: auto)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (the best is reported)")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-api-"))
    shm = Path("/dev/shm")
    out_parent = Path(args.out).parent if args.out else Path(
        tempfile.mkdtemp(prefix="bench-api-out-", dir=shm if shm.is_dir() else None))
    out = Path(args.out) if args.out else out_parent / "api"
    repeat = max(1, args.repeat)
    try:
        recipes_dir = Path(args.recipes_dir) if args.recipes_dir else make_catalog(work / "catalog", args.recipes)
        n_recipes = sum(1 for _ in (recipes_dir / "models").rglob("*.y*ml"))

        def best(mode: str, fresh: bool) -> dict:
            runs = []
            for _ in range(repeat):
                if fresh and out.exists():
                    shutil.rmtree(out)
                runs.append(_run(mode, recipes_dir, out, args.jobs))
            return min(runs, key=lambda r: r["wall"])

        fresh = best("full", fresh=True)
        n = fresh["files"]
        n_bytes = sum(e.stat().st_size for e in _walk(out))
        over = best("full", fresh=False)
        inline = best("full-inline", fresh=False)
        mem = best("memory", fresh=False)
        rows: list[tuple[str, str]] = [
            ("recipes / files / bytes", f"{n_recipes} / {n:,} / {n_bytes:,}"),
            ("full build, new OUT (process wall)", f"{fresh['wall']:.3f} s = {n / fresh['wall']:,.0f} files/s"),
            ("  of which imports / build", f"{fresh['imports']:.3f} / {fresh['build']:.3f} s "
             f"(build alone {n / fresh['build']:,.0f} files/s), cpu {fresh['cpu']:.2f} s"),
            ("  peak RSS main / largest worker", f"{fresh['rss_main']:.0f} / {fresh['rss_worker']:.0f} MB"),
            ("full build over an existing API", f"{over['wall']:.3f} s = {n / over['wall']:,.0f} files/s "
             "(old tree deleted in the background)"),
            ("  ... deleting the old tree inline", f"{inline['wall']:.3f} s = {n / inline['wall']:,.0f} files/s"),
            ("in-memory build_api (website)", f"{mem['wall']:.3f} s (load {mem['load']:.3f} s) = "
             f"{n / mem['wall']:,.0f} files/s, RSS {mem['rss_main']:.0f} MB"),
        ]

        # incremental: edit one recipe (one VRAM figure), rebuild, compare with a full build
        target = sorted((recipes_dir / "models").rglob("*.yaml"))[n_recipes // 2]
        original = target.read_text(encoding="utf-8")
        try:
            times, inproc = [], []
            for k in range(repeat):
                target.write_text(original.replace("vram_minimum_gb: ", f"vram_minimum_gb: {k + 1}", 1),
                                  encoding="utf-8")
                r = _run("incremental", recipes_dir, out, args.jobs)
                times.append(r)
                t0 = time.perf_counter()
                target.write_text(original.replace("vram_minimum_gb: ", f"vram_minimum_gb: {k + 5}", 1),
                                  encoding="utf-8")
                res = build_incremental(recipes_dir, out)
                inproc.append((time.perf_counter() - t0, res))
            r = min(times, key=lambda x: x["wall"])
            t_in, res = min(inproc, key=lambda x: x[0])
            rows.append(("incremental, 1 recipe changed (in process)",
                         f"{t_in:.3f} s ({res.mode}, {len(res.rendered)} rendered, {res.written} files written)"))
            rows.append(("  as a fresh process (imports included)",
                         f"{r['wall']:.3f} s (imports {r['imports']:.3f} s, build {r['build']:.3f} s)"))
            t0 = time.perf_counter()
            res = build_incremental(recipes_dir, out)
            rows.append(("incremental, nothing changed (in process)", f"{time.perf_counter() - t0:.3f} s ({res.mode})"))
            full = build_api(load_catalog(recipes_dir), jobs=args.jobs)
            same = not diff_tree(full.files, out)
            rows.append(("incremental output == full build", "yes" if same else "NO"))
            assert load_cache(out) is not None
        finally:
            target.write_text(original, encoding="utf-8")

        width = max(len(k) for k, _ in rows)
        print(f"{'metric'.ljust(width)}  value")
        print(f"{'-' * width}  {'-' * 40}")
        for k, v in rows:
            print(f"{k.ljust(width)}  {v}")
        print(f"(best of {repeat}; output on {out_parent}; cpus={os.cpu_count()}; "
              f"load average {os.getloadavg()[0]:.2f})")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not args.out:
            shutil.rmtree(out_parent, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
