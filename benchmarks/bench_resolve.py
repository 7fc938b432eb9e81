"""Engine benchmark: mean resolve time over every (recipe, variant, hardware, strategy)
of a catalog, and CLI cold start. Not a test; prints figures.

    python benchmarks/bench_resolve.py [--recipes-dir DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from vllm_recipes.catalog import load_catalog
from vllm_recipes.jsvalues import get
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.defaults import listed_hardware
from vllm_recipes.select.gates import nodes_for_strategy, offered_strategies
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.resolve import resolve


def selections(catalog):  # type: ignore[no-untyped-def]
    for recipe in catalog.recipes:
        if recipe.is_omni:
            continue
        for vk, variant in recipe.variants.items():
            for hw in listed_hardware(catalog.hardware_profiles, variant, recipe.data):
                gpn = get(catalog.hardware_profiles.get(hw), "gpu_count")
                for s in offered_strategies(recipe.data):
                    dt = get(catalog.strategies.get(s), "deploy_type")
                    nodes = max(2 if dt == "multi_node" else 1, nodes_for_strategy(recipe.data, s, gpn, hw))
                    yield recipe, Selection(variant_key=vk, hw_id=hw, strategy=s, node_count=nodes,
                                            features=tuple(recipe.data.get("features", {}) or ()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipes-dir")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    catalog = load_catalog(args.recipes_dir)
    sels = list(selections(catalog))
    for label, fn in (("resolve (plan only)", lambda r, s: resolve(catalog, r, s)),
                      ("resolve + render JSON object", lambda r, s: rendering_object(*resolve(catalog, r, s)))):
        runs = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for r, s in sels:
                fn(r, s)
            runs.append((time.perf_counter() - t0) / len(sels))
        print(f"{label:30s} {len(sels):5d} selections  {statistics.median(runs) * 1e6:7.1f} us each")
    colds = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "vllm_recipes", "command", "deepseek-ai/DeepSeek-V4.1-Flash"],
                       check=True, capture_output=True, cwd=Path(__file__).resolve().parents[1])
        colds.append(time.perf_counter() - t0)
    print(f"{'CLI cold start (command V4.1)':32s} median {statistics.median(colds):.3f} s  best {min(colds):.3f} s")


if __name__ == "__main__":
    main()
