"""Builder-state benchmark: what spelling tolerance costs a page/CLI request.

Times, in one run over many realistic requests (every hardware x strategy of each
recipe, with features, PD pool modes, public advanced ids, KV offload, upper-case
ids): ``build_state`` as shipped, ``build_state`` on the already-canonical
requests with :func:`canonical_request` replaced by the identity (the cost before
this feature), and :func:`canonical_request` alone; prints the ratios. Not a test.

    python benchmarks/bench_selection.py [--recipes-dir DIR] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from unittest import mock

from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.select import page
from vllm_recipes.select.defaults import listed_hardware
from vllm_recipes.select.gates import offered_strategies
from vllm_recipes.select.page import PageRequest, build_state, canonical_request


def requests(catalog: Catalog) -> Iterator[tuple[Recipe, PageRequest]]:
    for recipe in catalog.recipes:
        if recipe.is_omni:
            continue
        feats = list(recipe.data.get("features") or ())
        for hw in listed_hardware(catalog.hardware_profiles, recipe.variants.get("default") or {}, recipe.data):
            yield recipe, PageRequest(hardware=hw)
            for s in offered_strategies(recipe.data):
                extra: dict = {}
                if s == "pd_cluster":
                    extra = {"decode_mode": "tp"}
                yield recipe, PageRequest(hardware=hw, strategy=s, features=tuple(feats), **extra)
                yield recipe, PageRequest(hardware=hw.upper(), strategy=s, advanced=("max_num_seqs_256",),
                                          kv_offload="simple", **extra)


def per_request(step: Callable[[Recipe, PageRequest], object], reqs: list[tuple[Recipe, PageRequest]]) -> float:
    """Mean seconds of ``step`` over ``reqs``."""
    t0 = time.perf_counter()
    for recipe, req in reqs:
        step(recipe, req)
    return (time.perf_counter() - t0) / len(reqs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipes-dir")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    catalog = load_catalog(args.recipes_dir)
    reqs = list(requests(catalog))
    # the same requests already spelled canonically: identical work minus the spelling step
    spelled = [(r, canonical_request(catalog, r, q)) for r, q in reqs]
    def state(recipe: Recipe, req: PageRequest) -> object:
        return build_state(catalog, recipe, req, strict=False)

    def spelling(recipe: Recipe, req: PageRequest) -> object:
        return canonical_request(catalog, recipe, req)

    per_request(state, reqs)  # warm caches
    shipped, before, alone = [], [], []
    for _ in range(args.repeat):
        shipped.append(per_request(state, reqs))
        with mock.patch.object(page, "canonical_request", lambda _c, _r, req: req):
            before.append(per_request(state, spelled))
        alone.append(per_request(spelling, reqs))
    a, b, c = min(shipped), min(before), min(alone)
    print(f"{len(reqs)} requests, best of {args.repeat}")
    print(f"build_state as shipped:                    {a * 1e6:8.1f} us/request")
    print(f"build_state without the spelling step:     {b * 1e6:8.1f} us/request")
    print(f"canonical_request alone:                   {c * 1e6:8.1f} us/request")
    print(f"ratio shipped / without:                   {a / b:8.3f}")
    print(f"spelling step share of build_state:        {c / a:8.1%}")


if __name__ == "__main__":
    main()
