"""Long fuzz run: mutated real recipes through ``validate``, ``build-api`` and the web app (not run in CI).

Usage::

    .venv/bin/python tools/fuzz_recipes.py [--minutes 20] [--files N] [--seed 0] [--no-server] [--work DIR]
                                           [--seeds-dir RECIPES_DIR]

Each file is one to five mutations of a real recipe (see ``tools/fuzzlib.py``: hostile shell/YAML values,
huge and non-finite derived counts, ...), run through validate, build-api, command (pip, docker, PD),
show, fit, export (k8s, compose, slurm, vllm-config) and the web app.
Prints, at the end, the figures the hardening issue asks for: files tried,
tracebacks, hangs (> --limit seconds in one step), server answers >= 500 and
files written outside the output directory - all of which must be 0 - plus how
many files validation rejected (and were therefore skipped) and the slowest step.
Failing seeds are printed as they happen, so ``--seed N --files 1`` replays one.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzzlib


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=20.0, help="time budget (default 20)")
    ap.add_argument("--files", type=int, default=0, help="stop after this many files (0: no limit)")
    ap.add_argument("--seed", type=int, default=0, help="first seed; file i uses seed + i")
    ap.add_argument("--limit", type=float, default=30.0, help="seconds one step may take before it is a hang")
    ap.add_argument("--no-server", action="store_true", help="skip the web app step (3x faster)")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temp dir)")
    ap.add_argument("--seeds-dir", type=Path, default=None,
                    help="mutate the recipes of this recipes directory (default: the bundled ones)")
    args = ap.parse_args()
    logging.getLogger("vllm_recipes").setLevel(logging.ERROR)
    seeds = fuzzlib.seeds(args.seeds_dir)
    work = args.work or Path(tempfile.mkdtemp(prefix="fuzz-recipes-"))
    end = time.monotonic() + args.minutes * 60
    tried = tracebacks = hangs = server_errors = outside = rejected = built = 0
    slowest = (0.0, -1)
    i = args.seed
    while time.monotonic() < end and (not args.files or tried < args.files):
        rng = random.Random(i)
        rel, text = seeds[i % len(seeds)]
        mutated = fuzzlib.mutate(text, rng)
        o = fuzzlib.run_one(mutated, work / "run", rng, rel=rel, server=not args.no_server, limit=args.limit)
        tried += 1
        tracebacks += len(o.tracebacks)
        hangs += len(o.hangs)
        server_errors += len(o.server_errors)
        outside += len(o.outside_writes)
        rejected += o.validate_errors
        built += o.built
        slowest = max(slowest, (o.slowest, i))
        if not o.ok:
            print(f"seed {i}: tracebacks={o.tracebacks} hangs={o.hangs} 5xx={o.server_errors} "
                  f"outside={o.outside_writes}", flush=True)
        if tried % 50 == 0:
            print(f"... {tried} files", file=sys.stderr, flush=True)
        i += 1
    print(f"files tried:            {tried} (seeds {args.seed}..{i - 1})")
    print(f"tracebacks:             {tracebacks}")
    print(f"hangs (> {args.limit:g} s):        {hangs}")
    print(f"server answers >= 500:  {server_errors}{' (server step skipped)' if args.no_server else ''}")
    print(f"writes outside OUT:     {outside}")
    print(f"rejected by validate:   {rejected} (skipped by build-api/serve)")
    print(f"build-api exit 0:       {built}")
    print(f"slowest step:           {slowest[0]:.1f} s (seed {slowest[1]})")
    return 1 if tracebacks or hangs or server_errors or outside else 0


if __name__ == "__main__":
    sys.exit(main())
