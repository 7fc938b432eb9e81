"""Performance-estimate benchmark (not a test; prints figures).

* one estimate (``perf_state``: resolve + fit + scheduler simulation) at several
  workload points, wall time per call;
* ``recommend`` over the bundled catalog's largest recipe with architecture facts
  (every variant x hardware x strategy x node count it offers).

Targets: an estimate <= 50 ms, recommend over a large recipe <= 2 s. Each figure is the wall time and the
process's CPU time (``time.process_time``): on a machine shared with other work the wall time measures the
queue for a core, the CPU time the work itself.

    .venv/bin/python benchmarks/bench_perf.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from vllm_recipes.catalog import load_catalog
from vllm_recipes.perf.recommend import Sla, recommend
from vllm_recipes.perf.report import perf_state
from vllm_recipes.perf.scheduler import Workload
from vllm_recipes.select.request import PageRequest
from vllm_recipes.select.state import build_state

MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"
POINTS = ((1024, 1024, 1), (1024, 1024, 64), (8192, 1024, 64), (1024, 8192, 128), (1024, 1024, 512))


def timed(fn, repeat: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median wall time and median CPU time of ``repeat`` calls, seconds."""
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    catalog = load_catalog()
    recipe = catalog.recipe(MODEL)
    assert recipe is not None
    for hw in ("h200", "b200"):
        state = build_state(catalog, recipe, PageRequest(hardware=hw), strict=True)
        for isl, osl, c in POINTS:
            w = Workload(isl, osl, concurrency=c)
            wall, cpu = timed(lambda w=w, state=state: perf_state(catalog, recipe, state, w), args.repeat)
            print(f"estimate {MODEL} {hw} isl={isl} osl={osl} c={c}: wall {wall * 1e3:.1f} ms, cpu {cpu * 1e3:.1f} ms")
    for c in (1, 64, 512):
        w = Workload(1024, 1024, concurrency=c)
        wall, cpu = timed(lambda w=w: recommend(catalog, recipe, Sla(2000, 30), w), max(1, args.repeat // 2))
        n = recommend(catalog, recipe, Sla(2000, 30), w).considered
        print(f"recommend {MODEL} c={c}: {n} configurations, wall {wall:.2f} s, cpu {cpu:.2f} s")


if __name__ == "__main__":
    main()
