"""Builder-state benchmark: what spelling tolerance (ids in any case, the public site's
advanced ids) costs a page / CLI / API request.

In one run, over realistic requests (every hardware x offered strategy of each
recipe, with features, PD pool modes, advanced presets and KV offload), times
``build_state``:

* on canonical requests with :func:`canonical_request` replaced by the identity
  (the cost before this feature),
* on the same canonical requests as shipped (what a link the page wrote costs),
* on the same requests re-spelled (upper-case ids, public advanced ids),

and :func:`canonical_request` alone on the re-spelled requests; prints the ratios.
Not a test.

    python benchmarks/bench_selection.py [--recipes-dir DIR] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from unittest import mock

from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.select import state as state_module
from vllm_recipes.select.defaults import listed_hardware
from vllm_recipes.select.gates import offered_strategies
from vllm_recipes.select.state import PageRequest, build_state, canonical_request

Requests = list[tuple[Recipe, PageRequest]]


def requests(catalog: Catalog) -> Iterator[tuple[Recipe, PageRequest]]:
    for recipe in catalog.recipes:
        if recipe.is_omni:
            continue
        feats = tuple(recipe.data.get("features") or ())
        for hw in listed_hardware(catalog.hardware_profiles, recipe.variants.get("default") or {}, recipe.data):
            yield recipe, PageRequest(hardware=hw)
            for s in offered_strategies(recipe.data):
                pools = {"decode_mode": "tp"} if s == "pd_cluster" else {}
                yield recipe, PageRequest(hardware=hw, strategy=s, features=feats, **pools)
                yield recipe, PageRequest(hardware=hw, strategy=s, advanced=("max_seqs_256",), kv_offload="simple",
                                          **pools)


def respelled(req: PageRequest) -> PageRequest:
    """The same request as a user might type it or the public site link it."""
    return replace(req, hardware=req.hardware and req.hardware.upper(), strategy=req.strategy and req.strategy.upper(),
                   advanced=tuple("max_num_seqs_256" if a == "max_seqs_256" else a for a in req.advanced))


def per_request(step: Callable[[Recipe, PageRequest], object], reqs: Requests) -> float:
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
    plain = list(requests(catalog))
    typed = [(r, respelled(q)) for r, q in plain]

    def state(recipe: Recipe, req: PageRequest) -> object:
        return build_state(catalog, recipe, req, strict=False)

    def spelling(recipe: Recipe, req: PageRequest) -> object:
        return canonical_request(catalog, recipe, req)

    per_request(state, plain)  # warm caches
    before, shipped, retyped, alone = [], [], [], []
    for _ in range(args.repeat):
        with mock.patch.object(state_module, "canonical_request", lambda _c, _r, req: req):
            before.append(per_request(state, plain))
        shipped.append(per_request(state, plain))
        retyped.append(per_request(state, typed))
        alone.append(per_request(spelling, typed))
    b, s, t, a = (min(x) * 1e6 for x in (before, shipped, retyped, alone))
    print(f"{len(plain)} requests, best of {args.repeat} (us per request)")
    print(f"build_state, canonical ids, no spelling step: {b:8.1f}")
    print(f"build_state, canonical ids, as shipped:       {s:8.1f}   ratio {s / b:.3f}")
    print(f"build_state, re-spelled ids, as shipped:      {t:8.1f}   ratio {t / b:.3f}")
    print(f"canonical_request alone, re-spelled ids:      {a:8.1f}   share {a / t:.1%}")


if __name__ == "__main__":
    main()
