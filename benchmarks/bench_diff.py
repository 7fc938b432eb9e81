"""Benchmark ``vllm-recipes diff`` on a large synthetic catalog (not run in CI).

The catalog is the one ``bench_build_api.py`` generates: clones of the bundled
seed recipes (many hardware overrides, PD, Mooncake, feature modes, variants)
varied a little per clone. Two scenarios, each timed end to end in process
(read both sides, load, resolve every offered selection, compare) and as a
CLI run in a fresh interpreter:

* one recipe's flag value edited (target: <= 1 s);
* a taxonomy change touching every recipe (the Rust frontend's env value; target: <= 10 s on 2 cores).

Ratios are against a full ``load_catalog`` of the same catalog measured in the
same run (the machine is noisy; the ratio is the figure to compare).

Usage::

    .venv/bin/python benchmarks/bench_diff.py [--recipes 170] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_gen import make_catalog
from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.memory import read_catalog_files
from vllm_recipes.review.compare import catalogs_for_comparison, compare_catalogs


def timed(fn):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def edit_one_recipe(root: Path) -> str:
    """Change one flag value in the first clone of the V4.1 seed; returns its path."""
    path = next(p for p in sorted((root / "models").rglob("DeepSeek-V4.1-Flash.yaml")))
    text = path.read_text()
    assert "'0.9'" in text, "seed changed: pick another value to edit"
    path.write_text(text.replace("'0.9'", "'0.85'", 1))
    return str(path.relative_to(root))


def edit_taxonomy(root: Path) -> None:
    text = (root / "taxonomy.yaml").read_text()
    assert 'VLLM_USE_RUST_FRONTEND: "1"' in text
    (root / "taxonomy.yaml").write_text(text.replace('VLLM_USE_RUST_FRONTEND: "1"', 'VLLM_USE_RUST_FRONTEND: "2"'))


def in_process(base: Path, head: Path, jobs: int | None) -> tuple[float, float, dict]:
    """``(wall s, CPU s of this process and its workers, counts)``."""
    def cpu() -> float:
        import resource

        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def run() -> dict:
        a, b = catalogs_for_comparison(read_catalog_files(base), read_catalog_files(head), str(base), str(head))
        return compare_catalogs(a, b, str(base), str(head), jobs=jobs).counts()

    c = cpu()
    wall, counts = timed(run)
    return wall, cpu() - c, counts


def cli(base: Path, head: Path, jobs: int | None) -> float:
    args = [sys.executable, "-m", "vllm_recipes", "diff", str(base), str(head), "--json"]
    if jobs:
        args += ["--jobs", str(jobs)]
    t = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipes", type=int, default=170)
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: automatic)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = make_catalog(Path(tmp) / "base", args.recipes)
        from vllm_recipes.catalog import BUNDLED_DIR

        for name in ("taxonomy.yaml", "platforms.yaml", "strategies", "kv_store"):
            src = BUNDLED_DIR / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, base / name)
        t_load, cat = timed(lambda: load_catalog(base))
        print(f"catalog: {len(cat.recipes)} recipes; baseline full load_catalog {t_load:.2f} s "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")

        one = Path(tmp) / "one"
        shutil.copytree(base, one)
        edited = edit_one_recipe(one)
        t1, cpu1, counts1 = in_process(base, one, args.jobs)
        c1 = cli(base, one, args.jobs)
        print(f"one recipe ({edited}): {t1:.2f} s in process ({t1 / t_load:.2f}x load, {cpu1:.2f} CPU s), "
              f"CLI {c1:.2f} s; "
              f"{counts1['selections_compared']} selections compared, {counts1['changes']} grouped changes")

        tax = Path(tmp) / "tax"
        shutil.copytree(base, tax)
        edit_taxonomy(tax)
        t2, cpu2, counts2 = in_process(base, tax, args.jobs)
        c2 = cli(base, tax, args.jobs)
        print(f"taxonomy (every recipe): {t2:.2f} s in process ({t2 / t_load:.2f}x load, {cpu2:.2f} CPU s, "
              f"i.e. {cpu2 / 2:.2f} s on 2 idle cores), CLI {c2:.2f} s; "
              f"{counts2['recipes_changed']}/{counts2['recipes_compared']} recipes changed, "
              f"{counts2['selections_compared']} selections compared")


if __name__ == "__main__":
    main()
