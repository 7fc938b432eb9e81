"""``vllm-recipes validate`` of a generated catalog, as the CLI runs it, against the straightforward path.

Not a test; prints figures and ratios measured in the same run (the machine is noisy).

    python benchmarks/bench_validate.py [--recipes 170] [--repeat 1] [--no-baseline] [--against OTHER/src]

Each variant runs in a fresh interpreter (imports, catalog load and all), interleaved:

- ``cli``: ``vllm-recipes validate --recipes-dir DIR`` (the fast pass, recipes over
  the usable cores; the issue's target is <= 10 s wall on 2 cores);
- ``fast, 1 process``: the same checks with the pass kept in one process (what the
  algorithm gains without the second core);
- ``straightforward``: dead values and the release lint with every offered
  selection resolved and each of its processes finalized, tallied and linted
  (``dead_value_and_release_checker``, what ``validate`` ran before), one process.

Wall and CPU (the child's user + system) are reported, and the findings of every
variant must be the same list (compared by digest).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_gen import make_catalog

_RUN = """
import hashlib, sys
from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.validate import validate_catalog
from vllm_recipes.lint.validate_pass import validate_pass_checker
from vllm_recipes.lint.vllm_validate import dead_value_and_release_checker
root, mode = sys.argv[1], sys.argv[2]
check = validate_pass_checker(workers=1) if mode == "fast1" else dead_value_and_release_checker()
found = validate_catalog(load_catalog(root), extra_checks=[check])
print(len(found), hashlib.sha256(repr([f.to_dict() for f in found]).encode()).hexdigest())
"""

_CLI_DIGEST = """
import hashlib, json, sys
found = json.load(sys.stdin)
print(len(found), hashlib.sha256(repr(found).encode()).hexdigest())
"""


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(cmd: list[str], src: str | None = None) -> tuple[float, float, str]:
    env = None if src is None else {**os.environ, "PYTHONPATH": src}
    c0, t0 = _child_cpu(), time.perf_counter()
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env).stdout
    return time.perf_counter() - t0, _child_cpu() - c0, out


def _cli(root: Path, src: str | None = None) -> tuple[float, float, str]:
    """The CLI as a user runs it; the digest is of its JSON findings in the same order (file paths as shown).
    ``src``: another tree's ``src`` directory to run instead of the installed package."""
    wall, cpu, out = _timed([sys.executable, "-m", "vllm_recipes", "validate", "--recipes-dir", str(root), "--json"],
                            src)
    digest = subprocess.run([sys.executable, "-c", _CLI_DIGEST], input=out, capture_output=True, text=True,
                            check=True).stdout.strip()
    return wall, cpu, digest


def _counts(root: Path) -> tuple[int, int]:
    """Offered selections and the ones the fast pass keeps (the rest are equivalent to an earlier one; of the
    kept ones, KV options, other feature sets and second stores are derived from an earlier plan)."""
    from vllm_recipes.catalog import load_catalog
    from vllm_recipes.lint.deadvalues import offered_selections
    from vllm_recipes.lint.validate_pass import _Equivalence

    catalog = load_catalog(str(root))
    offered = resolved = 0
    for recipe in catalog.recipes:
        eq = _Equivalence(catalog, recipe)
        keys = set()
        for sel in offered_selections(catalog, recipe):
            offered += 1
            keys.add(eq.key(sel))
        resolved += len(keys)
    return offered, resolved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipes", type=int, default=170)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-baseline", action="store_true", help="skip the straightforward path (slow)")
    ap.add_argument("--against", metavar="SRC", help="also run the CLI of another tree's src directory (e.g. a "
                    "worktree of main), interleaved, and report the ratios")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_catalog(Path(tmp), args.recipes)
        offered, resolved = _counts(root)
        print(f"validate {args.recipes} recipes: {offered} offered selections, {resolved} kept by the fast pass "
              f"({resolved / offered:.0%}; the rest are equivalent to an earlier one)")
        runs: dict[str, list[tuple[float, float]]] = {"cli": [], "against": [], "fast1": [], "straight": []}
        digests: dict[str, set[str]] = {k: set() for k in runs}
        for i in range(args.repeat):
            for kind in (("cli", "against") if i % 2 == 0 else ("against", "cli")):
                if kind == "against" and not args.against:
                    continue
                wall, cpu, digest = _cli(root, args.against if kind == "against" else None)
                runs[kind].append((wall, cpu))
                digests[kind].add(digest)
            for mode in ("fast1", *(() if args.no_baseline else ("straight",))):
                wall, cpu, out = _timed([sys.executable, "-c", _RUN, str(root), mode])
                runs[mode].append((wall, cpu))
                digests[mode].add(out.strip())
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items() if v}
        labels = {"cli": "cli (fast pass, workers)", "against": "cli of --against tree", "fast1": "fast pass, 1 process",
                  "straight": "straightforward"}
        for k, (w, c) in med.items():
            ratio = f"   wall / straightforward {w / med['straight'][0]:5.3f}" if "straight" in med else ""
            print(f"  {labels[k]:26s} {w:6.2f} s wall {c:6.2f} s CPU{ratio}")
        w, _c = med["cli"]
        print(f"  target: <= 10 s wall on 2 cores -> {'met' if w <= 10 else 'NOT met'} ({w:.2f} s)")
        if "against" in med:
            print(f"  cli / --against tree: wall {w / med['against'][0]:.3f}, CPU {med['cli'][1] / med['against'][1]:.3f} "
                  f"(min of each: wall {min(x for x, _ in runs['cli']) / min(x for x, _ in runs['against']):.3f}, "
                  f"CPU {min(c for _, c in runs['cli']) / min(c for _, c in runs['against']):.3f})")
        counts = {k: {d.split()[0] for d in v} for k, v in digests.items() if v}
        print(f"  findings per variant: {counts}")
        same = {d.split()[1] for k, v in digests.items() if k not in ("cli", "against") for d in v}
        print(f"  same findings (fast 1 process vs straightforward): {len(same) == 1}")
        if digests["against"]:
            print(f"  same JSON output as the --against tree: {digests['cli'] == digests['against']}")


if __name__ == "__main__":
    main()
