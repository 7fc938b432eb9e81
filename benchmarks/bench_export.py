"""Deploy-target benchmark: time per selection to export each target, against resolving and
rendering the plain command text of the same selections in the same run (the ratio is what matters:
the machine is noisy). Selections: every listed hardware x offered strategy of every variant, plus
PD pools spanning nodes, the co-located PD layout and Mooncake (single- and multi-node instances).
Not a test; prints figures.

    python benchmarks/bench_export.py [--recipes-dir DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from vllm_recipes.catalog import load_catalog
from vllm_recipes.render.deployment import deployment_blocks, deployment_text
from vllm_recipes.render.export import TARGETS, ExportError, ExportOptions, export_artifacts
from vllm_recipes.select.defaults import listed_hardware
from vllm_recipes.select.gates import offered_strategies
from vllm_recipes.select.state import PageRequest, SelectionError, build_state
from vllm_recipes.synth.resolve import resolve

EXTRA = (
    {"strategy": "pd_cluster", "prefill_nodes": 2, "decode_nodes": 2, "prefill_mode": "dep", "decode_mode": "dep"},
    {"strategy": "pd_cluster", "prefill_nodes": 0, "decode_nodes": 0},
    {"kv_offload": "kv_store_centralized_mooncake"},
    {"strategy": "multi_node_dep", "nodes": 2, "kv_offload": "kv_store_centralized_mooncake"},
)


def states(catalog):  # type: ignore[no-untyped-def]
    for recipe in catalog.recipes:
        if recipe.is_omni:
            continue
        for vk, variant in recipe.variants.items():
            for hw in listed_hardware(catalog.hardware_profiles, variant, recipe.data):
                reqs = [{"strategy": s} for s in offered_strategies(recipe.data)] + list(EXTRA)
                for req in reqs:
                    try:
                        st = build_state(catalog, recipe, PageRequest(hardware=hw, variant=vk, **req))
                    except SelectionError:
                        continue
                    yield recipe, st


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipes-dir")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    catalog = load_catalog(args.recipes_dir)
    sels = list(states(catalog))
    kinds = Counter(resolve(catalog, r, st.selection)[1].deploy_type for r, st in sels)
    print(f"{len(sels)} selections: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))

    def command(r, st):  # type: ignore[no-untyped-def]
        ctx, plan = resolve(catalog, r, st.selection)
        return deployment_text(deployment_blocks(ctx, plan, st.install))

    def exporter(target: str):  # type: ignore[no-untyped-def]
        def run(r, st):  # type: ignore[no-untyped-def]
            try:
                return export_artifacts(catalog, r, st.selection, target, ExportOptions(install=st.install),
                                        co_located=st.pd_co_located)
            except ExportError:
                return None
        return run

    results: dict[str, float] = {}
    jobs = [("command text (baseline)", command)] + [(f"export --to {t}", exporter(t)) for t in TARGETS]
    for _ in range(args.repeat):  # interleave the jobs in every round so noise hits them alike
        for label, fn in jobs:
            t0 = time.perf_counter()
            for r, st in sels:
                fn(r, st)
            per = (time.perf_counter() - t0) / len(sels)
            results[label] = min(results.get(label, per), per)
    refused = {t: sum(1 for r, st in sels if exporter(t)(r, st) is None) for t in TARGETS}
    base = results["command text (baseline)"]
    for label, per in results.items():
        extra = f"  refused {refused[label.split()[-1]]}" if label.startswith("export") else ""
        print(f"{label:28s} {per * 1e6:9.1f} us/selection   x{per / base:6.1f} of the command text{extra}")


if __name__ == "__main__":
    main()
