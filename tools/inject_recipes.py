"""Run the injection matrix of issue #21 (``tools/injection.py``) and print the figures.

    python tools/inject_recipes.py                  # every payload x every site x every output
    python tools/inject_recipes.py --held-out       # the held-out payloads instead
    python tools/inject_recipes.py --outputs pip,docker --sites 'model.base_env value'

Exit 1 when any case executed code, disagreed with ``--json``, changed a YAML structure or crashed.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import injection


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--held-out", action="store_true", help="use the held-out payloads")
    ap.add_argument("--outputs", default=",".join(injection.OUTPUTS))
    ap.add_argument("--sites", default="", help="comma-separated site names (default: all)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    logging.getLogger("vllm_recipes").setLevel(logging.ERROR)
    payloads = injection.HELD_OUT if args.held_out else injection.PAYLOADS
    sites = [s for s in args.sites.split(",") if s] or None
    outputs = tuple(o for o in args.outputs.split(",") if o)
    started = time.monotonic()
    bad = 0

    def show(o: injection.Outcome) -> None:
        nonlocal bad
        if not o.ok:
            bad += 1
        if args.verbose or not o.ok:
            state = "ok" if o.ok else "FAIL"
            print(f"{state:4} {o.site:36} {o.payload!r:.40} validate errors={o.validate_errors} "
                  f"refused={sorted(o.refused)}")
            for line in [*o.executions, *o.mismatches, *o.structure, *o.crashes]:
                print(f"       {line[:400]}")

    results = injection.run_matrix(payloads, sites, outputs, show)
    cases = len(results)
    print(f"\n{cases} cases ({len(payloads)} payloads x {cases // max(1, len(payloads))} sites x "
          f"{len(outputs)} outputs) in {time.monotonic() - started:.0f}s")
    for label, attr in (("executed code", "executions"), ("disagreed with --json", "mismatches"),
                        ("changed a YAML structure", "structure"), ("crashed", "crashes")):
        print(f"  {sum(1 for r in results if getattr(r, attr))} cases {label}")
    print(f"  {sum(1 for r in results if r.validate_errors)} cases refused by validate, "
          f"{sum(1 for r in results if r.refused)} refused by some rendering")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
