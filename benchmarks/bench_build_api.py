"""Benchmark ``vllm-recipes build-api`` on a large synthetic catalog (not run in CI).

The catalog is made by cloning the bundled seed recipes under many org names
(each clone gets its own model ids, so promotions do not collide) and varying
them a little (dropped variants, other VRAM sizes, a restricted-hardware
opt-in). Usage::

    .venv/bin/python benchmarks/bench_build_api.py [--recipes 170] [--out DIR] [--recipes-dir DIR]

Reports wall time, files/s and peak RSS for a full build (in-process, like the
CLI), then the time of an incremental rebuild after editing one recipe.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

from vllm_recipes.api.build import build_api
from vllm_recipes.api.incremental import build_full, build_incremental, load_cache
from vllm_recipes.api.writer import diff_tree
from vllm_recipes.catalog import BUNDLED_DIR, load_catalog


def make_catalog(dest: Path, n_recipes: int = 170) -> Path:
    """Write ``n_recipes`` recipe files (clones of the seeds) under ``dest/models``."""
    seeds = sorted((BUNDLED_DIR / "models").rglob("*.yaml"))
    docs = [(p.stem, yaml.safe_load(p.read_text(encoding="utf-8"))) for p in seeds]
    models = dest / "models"
    i = 0
    while i < n_recipes:
        org = f"org{i // len(docs):03d}"
        for stem, doc in docs:
            if i >= n_recipes:
                break
            d = _vary(doc, org, i)
            out = models / org / f"{stem}.yaml"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(yaml.safe_dump(d, sort_keys=False, allow_unicode=True), encoding="utf-8")
            i += 1
    return dest


def _vary(doc: dict, org: str, i: int) -> dict:
    import copy

    d = copy.deepcopy(doc)
    d["meta"]["title"] = f"{d['meta'].get('title', '')} ({org})"
    model = d.get("model") or {}
    if isinstance(model.get("model_id"), str):
        model["model_id"] = f"{org}/{model['model_id'].split('/', 1)[1]}"
    for vk, v in list((d.get("variants") or {}).items()):
        mid = v.get("model_id") if isinstance(v, dict) else None
        if isinstance(mid, str) and "/" in mid:
            src_org, name = mid.split("/", 1)
            v["model_id"] = f"{org}-{src_org}/{name}"
        if i % 3 == 1 and vk not in ("default",) and len(d["variants"]) > 2:
            # drop a variant here and there (and every feature-mode reference to it)
            del d["variants"][vk]
            for f in (d.get("features") or {}).values():
                for m in ((f or {}).get("modes") or {}).values():
                    if isinstance(m, dict) and isinstance(m.get("variants"), list) and vk in m["variants"]:
                        m["variants"].remove(vk)
                        if not m["variants"]:
                            m.pop("variants")
    default = (d.get("variants") or {}).get("default")
    if isinstance(default, dict) and isinstance(default.get("vram_minimum_gb"), int) and i % 4 == 2:
        default["vram_minimum_gb"] = default["vram_minimum_gb"] * 3  # multi-node on smaller GPUs
    return d


def _walk(root: Path):
    for e in os.scandir(root):
        if e.is_dir(follow_symlinks=False):
            yield from _walk(Path(e.path))
        else:
            yield e


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _children_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipes", type=int, default=170, help="recipes to generate (default 170)")
    ap.add_argument("--recipes-dir", help="use this catalog instead of generating one")
    ap.add_argument("--out", help="output directory (default: a temp dir, on /dev/shm when present)")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: auto)")
    ap.add_argument("--repeat", type=int, default=3, help="full builds to time (best is reported)")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-api-"))
    shm = Path("/dev/shm")
    out_parent = Path(args.out).parent if args.out else Path(
        tempfile.mkdtemp(prefix="bench-api-out-", dir=shm if shm.is_dir() else None))
    out = Path(args.out) if args.out else out_parent / "api"
    try:
        if args.recipes_dir:
            recipes_dir = Path(args.recipes_dir)
        else:
            recipes_dir = make_catalog(work / "catalog", args.recipes)

        rows: list[tuple[str, str]] = []
        t0 = time.perf_counter()
        catalog = load_catalog(recipes_dir)
        t_load = time.perf_counter() - t0
        rows.append(("recipes", str(len(catalog.recipes))))
        rows.append(("load catalog", f"{t_load:.3f} s"))

        best = None
        for _ in range(max(1, args.repeat)):
            if out.exists():
                shutil.rmtree(out)
            c0, t0 = os.times(), time.perf_counter()
            res = build_full(recipes_dir, out, jobs=args.jobs)
            wall, c1 = time.perf_counter() - t0, os.times()
            cpu = sum(c1[:4]) - sum(c0[:4])
            if best is None or wall < best[0]:
                best = (wall, cpu, res)
        assert best is not None
        wall, cpu, res = best
        n_files = res.written
        n_bytes = sum(e.stat().st_size for e in _walk(out))
        rows += [
            ("files", f"{n_files:,}"),
            ("bytes", f"{n_bytes:,}"),
            ("full build, fresh OUT: wall", f"{wall:.3f} s (cpu {cpu:.2f} s)"),
            ("full build, fresh OUT: files/s", f"{n_files / wall:,.0f}"),
        ]
        t0 = time.perf_counter()
        build_full(recipes_dir, out, jobs=args.jobs, background_cleanup=True)
        t_over = time.perf_counter() - t0
        rows.append(("full build over an existing API (CLI)", f"{t_over:.3f} s ({n_files / t_over:,.0f} files/s)"))
        t0 = time.perf_counter()
        build_full(recipes_dir, out, jobs=args.jobs, background_cleanup=False)
        t_sync = time.perf_counter() - t0
        rows.append(("  ... deleting the old tree inline", f"{t_sync:.3f} s ({n_files / t_sync:,.0f} files/s)"))
        # the in-memory builder the website uses (catalog load, then build_api)
        t0 = time.perf_counter()
        catalog = load_catalog(recipes_dir)
        t1 = time.perf_counter()
        api = build_api(catalog, jobs=args.jobs)
        t2 = time.perf_counter()
        rows.append(("in-memory build_api (load + build)", f"{t1 - t0:.3f} + {t2 - t1:.3f} s "
                     f"({len(api.files) / (t2 - t0):,.0f} files/s)"))
        del api
        rows.append(("peak RSS (main / largest worker)", f"{_peak_rss_mb():.0f} / {_children_peak_rss_mb():.0f} MB"))

        # incremental: touch one recipe (its guide and one VRAM figure), rebuild, compare with full
        target = sorted((recipes_dir / "models").rglob("*.yaml"))[len(catalog.recipes) // 2]
        original = target.read_text(encoding="utf-8")
        try:
            target.write_text(original.replace("vram_minimum_gb: ", "vram_minimum_gb: 1", 1), encoding="utf-8")
            t0 = time.perf_counter()
            inc = build_incremental(recipes_dir, out)
            t_inc = time.perf_counter() - t0
            rows.append(("incremental (1 recipe changed)", f"{t_inc:.3f} s ({inc.mode}, "
                         f"{len(inc.rendered)} re-rendered, {inc.written} written)"))
            t0 = time.perf_counter()
            inc2 = build_incremental(recipes_dir, out)
            rows.append(("incremental (nothing changed)", f"{time.perf_counter() - t0:.3f} s ({inc2.mode})"))
            full = build_api(load_catalog(recipes_dir), jobs=args.jobs)
            same = not diff_tree(full.files, out)
            rows.append(("incremental == full", "yes" if same else "NO"))
            assert load_cache(out) is not None
        finally:
            target.write_text(original, encoding="utf-8")

        width = max(len(k) for k, _ in rows)
        print(f"{'metric'.ljust(width)}  value")
        print(f"{'-' * width}  {'-' * 30}")
        for k, v in rows:
            print(f"{k.ljust(width)}  {v}")
        print(f"(output on {out_parent}, cpus={os.cpu_count()})")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not args.out:
            shutil.rmtree(out_parent, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
