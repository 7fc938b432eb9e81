"""Crash safety of ``build-api`` (not run in CI): SIGKILL, concurrent builds, full and read-only destinations.

Usage::

    .venv/bin/python tools/fault_harness.py [--trials 100] [--recipes 6] [--work DIR]

1. **SIGKILL**: two generated catalogs A and B (clones of the bundled recipes
   with different contents). OUT holds A's API with its ``llms.txt`` and
   ``llms-full.txt``; a ``build-api`` of B is killed with SIGKILL at a random
   moment (uniform over 1.2x one build's time, so some land after it ends);
   OUT must then be exactly A's or B's whole tree, llms files included, and the
   next build must produce exactly B's. Repeated ``--trials`` times.
2. **Concurrency**: two ``build-api`` processes (A and B) into one OUT at once:
   OUT must end as exactly one of the two trees, with no temporary leftovers.
3. **Full / read-only destination**: OUT on a small tmpfs (``mount -t tmpfs``,
   needs root; otherwise reported as not run) - a build that does not fit, and
   one on the remounted read-only filesystem, must exit 1 with a one-line error
   and leave the old tree intact.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from catalog_gen import make_catalog  # noqa: E402
from vllm_recipes.api.build import build_api  # noqa: E402
from vllm_recipes.api.llms import LLMS_FULL_TXT, LLMS_TXT, llms_files  # noqa: E402
from vllm_recipes.api.writer import list_tree  # noqa: E402
from vllm_recipes.catalog import load_catalog  # noqa: E402
from vllm_recipes.catalog.usable import usable_catalog  # noqa: E402

CLI = [sys.executable, "-m", "vllm_recipes"]


def snapshot(out: Path) -> dict[str, bytes]:
    return {p: (out / p).read_bytes() for p in list_tree(out)} if out.is_dir() else {}


def expected(recipes: Path) -> dict[str, bytes]:
    """What ``build-api`` publishes: the API and the llms files."""
    catalog = load_catalog(recipes)
    tree = {**build_api(catalog, jobs=1, strict=False).files, **llms_files(usable_catalog(catalog)[0])}
    assert LLMS_TXT in tree and LLMS_FULL_TXT in tree
    return tree


def build(recipes: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "build-api", str(out), "--recipes-dir", str(recipes), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def leftovers(out: Path) -> list[str]:
    return [n for n in os.listdir(out.parent) if n.startswith((f".{out.name}.build-", f".{out.name}.old-"))]


def describe(tree: dict[str, bytes], old: dict[str, bytes], new: dict[str, bytes]) -> str:
    """How a tree differs from the old and the new one (files equal to each, in neither, missing)."""
    as_old = sum(old.get(p) == v for p, v in tree.items())
    as_new = sum(new.get(p) == v for p, v in tree.items())
    neither = sorted(p for p, v in tree.items() if old.get(p) != v and new.get(p) != v)
    missing = sorted(set(old) & set(new) - set(tree))
    return (f"{len(tree)} files: {as_old} as old, {as_new} as new, {len(neither)} in neither {neither[:3]}, "
            f"{len(missing)} missing {missing[:3]}")


def classify(tree: dict[str, bytes], a: dict[str, bytes], b: dict[str, bytes]) -> str:
    return "old" if tree == a else "new" if tree == b else "MIXED"


def make_pair(work: Path, n: int) -> tuple[Path, Path]:
    a = make_catalog(work / "A", n)
    b = work / "B"
    shutil.copytree(a, b)
    import yaml

    for i, p in enumerate(sorted((b / "models").rglob("*.yaml"))):
        if i % 2 == 0:  # change half the recipes (a new guide text) and drop one
            d = yaml.safe_load(p.read_text(encoding="utf-8"))
            d["guide"] = f"Changed {i}."
            p.write_text(yaml.safe_dump(d, sort_keys=False, allow_unicode=True), encoding="utf-8")
    sorted((b / "models").rglob("*.yaml"))[-1].unlink()
    return a, b


def sigkill_trials(a: Path, b: Path, work: Path, trials: int,
                   trees: dict[str, dict[str, bytes]], duration: float) -> dict[str, int]:
    """Kill a build of one catalog over the other's tree; the recovery build is the next trial's old tree
    (the direction alternates: B over A, then A over B)."""
    out = work / "full" / "api"
    out.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(15)
    counts = {"old": 0, "new": 0, "MIXED": 0, "recovered": 0, "leftover_after_recovery": 0}
    subprocess.run([*CLI, "build-api", str(out), "--recipes-dir", str(a)], check=True, capture_output=True)
    names = {a: "A", b: "B"}
    for k in range(trials):
        old, new = (a, b) if k % 2 == 0 else (b, a)
        proc = build(new, out)
        killed_at = rng.uniform(0.0, 1.2 * duration)
        time.sleep(killed_at)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        tree = snapshot(out)
        verdict = classify(tree, trees[names[old]], trees[names[new]])
        counts[verdict] += 1
        if verdict == "MIXED":
            print(f"  trial {k}: MIXED after {killed_at:.2f} s: " + describe(tree, trees[names[old]], trees[names[new]]),
                  flush=True)
        done = subprocess.run([*CLI, "build-api", str(out), "--recipes-dir", str(new)], capture_output=True)
        after = snapshot(out)
        if done.returncode == 0 and after == trees[names[new]]:
            counts["recovered"] += 1
        else:
            print(f"  trial {k}: not recovered: exit {done.returncode}, {describe(after, trees[names[new]], {})}; "
                  f"stderr {done.stderr.decode(errors='replace')[-300:]!r}", flush=True)
        time.sleep(0.2)  # the detached cleanup of the replaced tree
        counts["leftover_after_recovery"] += bool(leftovers(out))
    return counts


def concurrent_trials(a: Path, b: Path, work: Path, trees: dict[str, dict[str, bytes]], n: int = 5) -> dict[str, int]:
    out = work / "conc" / "api"
    out.parent.mkdir(parents=True, exist_ok=True)
    counts = {"A": 0, "B": 0, "MIXED": 0, "failed": 0}
    for i in range(n):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        p1, p2 = build(first, out), build(second, out)
        rc = (p1.wait(), p2.wait())
        if rc != (0, 0):
            counts["failed"] += 1
        tree = snapshot(out)
        verdict = "A" if tree == trees["A"] else "B" if tree == trees["B"] else "MIXED"
        counts[verdict] += 1
        if verdict == "MIXED":
            print(f"  concurrent {i}: MIXED: vs A {describe(tree, trees['A'], trees['B'])}; leftovers {leftovers(out)}",
                  flush=True)
    return counts


def tmpfs_trials(a: Path, b: Path, work: Path, trees: dict[str, dict[str, bytes]]) -> str:
    mnt = work / "small"
    mnt.mkdir()
    size = sum(len(v) for v in trees["A"].values())
    # room for A and its cache, not for a second copy of the tree (the atomic build needs one)
    opt = f"size={max(size * 3 // 2, 1 << 20)}"
    if subprocess.run(["mount", "-t", "tmpfs", "-o", opt, "tmpfs", str(mnt)], capture_output=True).returncode:
        return "tmpfs not permitted here: not run (tests/api/test_api_hardening.py simulates ENOSPC/EROFS)"
    lines = []
    try:
        out = mnt / "api"
        subprocess.run([*CLI, "build-api", str(out), "--recipes-dir", str(a)], check=True,
                       capture_output=True)
        for label in ("full (ENOSPC)", "read-only (EROFS)"):
            if label.startswith("read-only"):
                subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
            old = snapshot(out)
            r = subprocess.run([*CLI, "build-api", str(out), "--recipes-dir", str(b)],
                               capture_output=True, text=True)
            err = r.stderr.strip().splitlines()
            clean = r.returncode == 1 and "Traceback" not in r.stderr and len(err) >= 1
            intact = snapshot(out) == old
            lines.append(f"{label}: exit {r.returncode}, clean error={clean}, old tree intact={intact}, "
                         f"leftovers={leftovers(out)}; stderr: {err[-1] if err else ''}")
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
    return "\n  ".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--recipes", type=int, default=6)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--skip-extras", action="store_true", help="only the SIGKILL trials")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="fault-harness-"))
    a, b = make_pair(work, args.recipes)
    trees = {"A": expected(a), "B": expected(b)}
    t = time.perf_counter()
    subprocess.run([*CLI, "build-api", str(work / "probe"), "--recipes-dir", str(b)], check=True,
                   capture_output=True)
    duration = time.perf_counter() - t
    print(f"catalog: {args.recipes} recipes, A {len(trees['A'])} files, B {len(trees['B'])} files; "
          f"one CLI build of B takes {duration:.2f} s (kills land uniformly in [0, that])")
    bad = 0
    t = time.perf_counter()
    c = sigkill_trials(a, b, work, args.trials, trees, duration)
    bad += c["MIXED"] + (args.trials - c["recovered"])
    print(f"SIGKILL x{args.trials} during builds: old tree {c['old']}, new tree {c['new']}, MIXED {c['MIXED']} "
          f"(llms files included); next build recovered {c['recovered']}/{args.trials}; leftovers after "
          f"recovery {c['leftover_after_recovery']} ({time.perf_counter() - t:.0f} s)")
    if args.skip_extras:
        shutil.rmtree(work, ignore_errors=True)
        return 1 if bad else 0
    c2 = concurrent_trials(a, b, work, trees)
    bad += c2["MIXED"] + c2["failed"]
    print(f"two concurrent builds into one OUT x5: ended as A {c2['A']}, B {c2['B']}, MIXED {c2['MIXED']}, "
          f"failed {c2['failed']}")
    print("small tmpfs:\n  " + tmpfs_trials(a, b, work, trees))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
