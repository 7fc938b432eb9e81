"""The builder's selection (``select.state.build_state``) against synthesis.md §4.8 rule by rule.

§4.8 gives the page's initial state (table) and the URL overrides (paragraph after it);
ui.md "URL state" / "Command builder rows" and extensions.md add the rest. Every test
writes a small purpose-built recipe to ``<tmp>/models/org/model.yaml``; taxonomy,
strategies and kv stores come from the bundled catalog (a test that needs a changed
strategy copies the bundled ones first). ``strict`` (CLI, ``/api/resolve``) refuses what it
cannot honour with a :class:`SelectionError` naming the valid choices; lenient (the page)
drops the parameter and keeps a notice.

Bundled profiles used below (gpu_count / vram_gb): h200 8/1128, b200 8/1440, gb200 4/768,
rtx_pro_6000_8x 8/768 non-scalable restricted, dgx_station_gb300 1/252 non-scalable
restricted, arc_pro_b60 (xpu) restricted, xeon6 (cpu) restricted, trillium (Google) restricted.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.catalog.loader import BUNDLED_DIR
from vllm_recipes.select.advanced import ADVANCED_OPTIONS
from vllm_recipes.select.gates import is_strategy_supported_on_hardware, offered_strategies
from vllm_recipes.select.selection import Selection
from vllm_recipes.select.state import (
    PageRequest,
    PageState,
    SelectionError,
    build_state,
    hardware_choices,
)
from vllm_recipes.synth.resolve import resolve

HF = "org/model"
ALL_STRATS = ["single_node_tp", "single_node_tep", "single_node_dep", "multi_node_tp", "multi_node_tep",
              "multi_node_dep", "pd_cluster"]


def recipe(**keys: Any) -> dict[str, Any]:
    """A minimal recipe with ``keys`` merged on top."""
    out: dict[str, Any] = {
        "meta": {"title": "Model"},
        "model": {"model_id": HF},
        "variants": {"default": {"precision": "bf16"}},
        "compatible_strategies": ["single_node_tp"],
    }
    out.update(keys)
    return out


def feature(*args: str, **keys: Any) -> dict[str, Any]:
    return {"description": "x", "args": list(args) or ["--x"], **keys}


def sel(**kw: Any) -> Selection:
    """The expected selection; unnamed fields are the page defaults."""
    kw.setdefault("hw_id", "h200")
    for k in ("features", "feature_modes", "advanced"):
        if k in kw:
            kw[k] = tuple(kw[k])
    return Selection(**kw)


def pd(prefill: tuple[int, str], decode: tuple[int, str] | None = None, ranks: tuple[int, int] = (0, 0)) -> dict:
    decode = decode or prefill
    return {"prefill": {"nodes": prefill[0], "rank": ranks[0], "parallelism": prefill[1]},
            "decode": {"nodes": decode[0], "rank": ranks[1], "parallelism": decode[1]}}


Build = Callable[..., PageState]


@pytest.fixture
def catalog_for(tmp_path: Path, recipe_writer: Callable[[Path, str, object], Path]) -> Callable[..., Catalog]:
    counter = iter(range(10_000))

    def make(data: dict[str, Any], strategy_patch: dict[str, dict[str, Any]] | None = None) -> Catalog:
        root = tmp_path / f"c{next(counter)}"
        recipe_writer(root, HF, data)
        if strategy_patch:
            shutil.copytree(BUNDLED_DIR / "strategies", root / "strategies")
            for name, patch in strategy_patch.items():
                f = root / "strategies" / f"{name}.yaml"
                doc = yaml.safe_load(f.read_text(encoding="utf-8"))
                for k, v in patch.items():
                    doc[k] = {**doc.get(k, {}), **v} if isinstance(v, dict) else v
                f.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return load_catalog(root)

    return make


@pytest.fixture
def page(catalog_for: Callable[..., Catalog]) -> Build:
    """``page(recipe_dict, strict=True, **PageRequest fields) -> PageState``."""

    def build(data: dict[str, Any], *, strict: bool = True, strategy_patch: dict | None = None,
              **req: Any) -> PageState:
        c = catalog_for(data, strategy_patch)
        r = c.recipe(HF)
        assert r is not None
        state = build_state(c, r, PageRequest(**req), strict=strict)
        if strict:
            assert state.notices == ()
        return state

    return build


@pytest.fixture
def refused(page: Build) -> Callable[..., SelectionError]:
    """Strict build that must refuse; returns the error."""

    def run(data: dict[str, Any], **req: Any) -> SelectionError:
        with pytest.raises(SelectionError) as exc:
            page(data, **req)
        return exc.value

    return run


def lenient(page: Build, data: dict[str, Any], n_notices: int = 1, **req: Any) -> PageState:
    state = page(data, strict=False, **req)
    assert len(state.notices) == n_notices, state.notices
    return state


# --- variant ---------------------------------------------------------------------------------


class TestVariant:
    def test_default_variant_even_when_declared_later(self, page: Build) -> None:
        r = recipe(variants={"big": {"precision": "bf16"}, "default": {"precision": "bf16"}})
        assert page(r).selection == sel()

    def test_url_variant(self, page: Build) -> None:
        r = recipe(variants={"default": {"precision": "bf16"}, "fp8": {"precision": "fp8"}})
        assert page(r, variant="fp8").selection == sel(variant_key="fp8")

    def test_unknown_variant(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        r = recipe(variants={"default": {"precision": "bf16"}, "fp8": {"precision": "fp8"}})
        err = refused(r, variant="nope")
        assert (err.param, err.choices) == ("variant", ["default", "fp8"])
        assert lenient(page, r, variant="nope").selection == sel()


# --- §4.1 default hardware ---------------------------------------------------------------------


class TestDefaultHardware:
    @pytest.mark.parametrize(("variant", "meta", "want"), [
        ({"precision": "bf16"}, {}, "h200"),
        # §4.1 step 4: the implied NVIDIA Blackwell constraint -> b200, then gb200
        ({"precision": "nvfp4"}, {}, "b200"),
        ({"precision": "fp4"}, {"hardware": {"b200": "unsupported"}}, "gb200"),
        ({"precision": "bf16", "precision_hardware": {"brand": "NVIDIA", "generation": "blackwell"}}, {}, "b200"),
        # Blackwell constraint without b200/gb200: brand rank then id (b300 < gb300)
        ({"precision": "nvfp4"}, {"hardware": {"b200": "unsupported", "gb200": "unsupported"}}, "b300"),
        # step 6: h200 unsupported -> NVIDIA first, ids ascending (b200 < b300 < gb200 < ... < h100)
        ({"precision": "bf16"}, {"hardware": {"h200": "unsupported"}}, "b200"),
        ({"precision": "bf16", "precision_hardware": {"brand": "AMD"}}, {}, "mi300x"),
        ({"precision": "bf16", "supported_hardware": ["arch:gfx950"]}, {}, "mi350x"),
        ({"precision": "bf16", "supported_hardware": ["h100", "mi355x"]}, {}, "h100"),
        # restricted profiles count only when declared (§3.4)
        ({"precision": "bf16", "supported_hardware": ["xeon6", "mi325x"]}, {}, "mi325x"),
        ({"precision": "bf16", "supported_hardware": ["xeon6", "mi325x"]}, {"hardware": {"xeon6": "verified"}},
         "mi325x"),
        ({"precision": "bf16", "supported_hardware": ["xeon6"]}, {"hardware": {"xeon6": "verified"}}, "xeon6"),
        # step 7: nothing compatible -> h200 anyway
        ({"precision": "bf16", "supported_hardware": ["xeon6"]}, {}, "h200"),
        # step 3: meta.default_hardware when compatible
        ({"precision": "bf16"}, {"default_hardware": "b300"}, "b300"),
        ({"precision": "nvfp4"}, {"default_hardware": "gb300"}, "gb300"),
        ({"precision": "nvfp4"}, {"default_hardware": "h100"}, "b200"),  # precision-incompatible
        ({"precision": "bf16"}, {"default_hardware": "b300", "hardware": {"b300": "unsupported"}}, "h200"),
        ({"precision": "bf16"}, {"default_hardware": "rtx_pro_6000_8x"}, "h200"),  # restricted, undeclared
        ({"precision": "bf16"}, {"default_hardware": "rtx_pro_6000_8x", "hardware": {"rtx_pro_6000_8x": "verified"}},
         "rtx_pro_6000_8x"),
        ({"precision": "bf16", "supported_hardware": ["h100"]}, {"default_hardware": "b300"}, "h100"),
        ({"precision": "bf16"}, {"default_hardware": "no_such_gpu"}, "h200"),
    ])
    def test_pick(self, page: Build, variant: dict, meta: dict, want: str) -> None:
        r = recipe(variants={"default": variant}, meta={"title": "Model", **meta})
        assert page(r).selection.hw_id == want

    def test_default_hardware_is_per_selected_variant(self, page: Build) -> None:
        r = recipe(variants={"default": {"precision": "bf16"}, "fp4": {"precision": "nvfp4"}})
        assert page(r, variant="fp4").selection == sel(variant_key="fp4", hw_id="b200")


class TestUrlHardware:
    """§4.8: ``?hardware=`` is accepted only if precision-compatible, not unsupported and variant-allowed."""

    R = recipe(meta={"title": "Model", "hardware": {"h100": "unsupported", "rtx_pro_6000_8x": "verified"}},
               variants={"default": {"precision": "bf16", "supported_hardware": ["arch:sm90", "arch:sm100",
                                                                                  "rtx_pro_6000_8x", "mi300x"]},
                         "fp4": {"precision": "nvfp4"}})

    @pytest.mark.parametrize("hw", ["h200", "b200", "gb200", "mi300x", "rtx_pro_6000_8x"])
    def test_accepted(self, page: Build, hw: str) -> None:
        assert page(self.R, hardware=hw).selection == sel(hw_id=hw)

    @pytest.mark.parametrize(("hw", "why"), [
        ("h100", "unsupported"),
        ("b300", "does not list"),  # sm103: outside the variant's allowlist
        ("mi325x", "does not list"),
        ("dgx_station_gb300", "restricted"),  # ui.md: restricted profiles only when the recipe declares them
        ("no_such_gpu", "unknown"),
    ])
    def test_refused(self, page: Build, refused: Callable[..., SelectionError], hw: str, why: str) -> None:
        err = refused(self.R, hardware=hw)
        assert err.param == "hardware" and why in err.message
        assert err.choices == ["h200", "b200", "gb200", "rtx_pro_6000_8x", "mi300x"]
        st_ = lenient(page, self.R, hardware=hw)
        assert st_.selection == sel() and why in st_.notices[0]

    def test_precision_incompatible_falls_back_to_the_variants_default(
            self, page: Build, refused: Callable[..., SelectionError]) -> None:
        err = refused(self.R, variant="fp4", hardware="h200")
        assert err.param == "hardware" and "precision" in err.message
        assert err.choices == ["b200", "gb200", "b300", "gb300", "rtx_pro_6000_8x"]
        assert lenient(page, self.R, variant="fp4", hardware="h200").selection == sel(variant_key="fp4", hw_id="b200")


# --- §4.3 variant fallback on non-scalable hardware --------------------------------------------


class TestVariantFallback:
    """rtx_pro_6000_8x: 768 GB, not scalable. pickFittingVariant = largest fitting, stable."""

    R = recipe(
        meta={"title": "Model", "hardware": {"rtx_pro_6000_8x": "verified"}},
        variants={
            "default": {"precision": "bf16", "vram_minimum_gb": 1000},
            "amd_only": {"precision": "bf16", "vram_minimum_gb": 700, "precision_hardware": {"brand": "AMD"}},
            "h200_only": {"precision": "bf16", "vram_minimum_gb": 650, "supported_hardware": ["h200"]},
            "small": {"precision": "bf16", "vram_minimum_gb": 100},
            "mid": {"precision": "bf16", "vram_minimum_gb": 500},
            "mid2": {"precision": "bf16", "vram_minimum_gb": 500},
        },
        compatible_strategies=["single_node_tp", "multi_node_tp"],
    )

    def test_url_hardware_switches_to_the_largest_fitting_variant(self, page: Build) -> None:
        assert page(self.R, hardware="rtx_pro_6000_8x").selection == sel(variant_key="mid", hw_id="rtx_pro_6000_8x")

    def test_default_hardware_switches_too(self, page: Build) -> None:
        r = {**self.R, "meta": {**self.R["meta"], "default_hardware": "rtx_pro_6000_8x"}}
        assert page(r).selection == sel(variant_key="mid", hw_id="rtx_pro_6000_8x")

    def test_features_and_install_follow_the_fallen_back_variant(self, page: Build) -> None:
        r = {**self.R, "features": {"a": feature(), "spec": feature(modes={"m": {"args": ["--m"]}})},
             "opt_in_features": ["spec"]}
        r["variants"] = {**r["variants"], "default": {**r["variants"]["default"], "default_modes": {"spec": "m"}},
                         "mid": {**r["variants"]["mid"],
                                 "hardware_overrides": {"rtx_pro_6000_8x": {"install": {"pip": False}}}}}
        st_ = page(r, hardware="rtx_pro_6000_8x")
        # §11.3 step 10 semantics: defaultFeaturesFor(recipe, hw, <fallen-back key>) -> spec no longer forced
        assert st_.selection.features == ("a",)
        assert (st_.install, st_.install_tabs) == ("docker", ("docker",))

    @pytest.mark.parametrize("vk", ["small", "mid", "mid2"])
    def test_a_pinned_fitting_variant_stays(self, page: Build, vk: str) -> None:
        assert page(self.R, hardware="rtx_pro_6000_8x", variant=vk).selection == sel(variant_key=vk,
                                                                                     hw_id="rtx_pro_6000_8x")

    def test_a_pinned_variant_that_does_not_fit(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        err = refused(self.R, hardware="rtx_pro_6000_8x", variant="default")
        assert err.param == "variant"
        assert err.choices == ["small", "mid", "mid2"]  # fitting variants, declaration order
        st_ = lenient(page, self.R, hardware="rtx_pro_6000_8x", variant="default")
        assert st_.selection == sel(variant_key="mid", hw_id="rtx_pro_6000_8x")

    def test_per_hardware_vram_budget_fits(self, page: Build) -> None:
        """extensions §2.4: the effective vram_minimum_gb on that profile decides the fit."""
        r = {**self.R, "variants": {**self.R["variants"], "default": {
            "precision": "bf16", "vram_minimum_gb": 1000,
            "hardware_overrides": {"rtx_pro_6000_8x": {"vram_minimum_gb": 700}}}}}
        assert page(r, hardware="rtx_pro_6000_8x").selection == sel(hw_id="rtx_pro_6000_8x")

    def test_scalable_hardware_never_falls_back(self, page: Build) -> None:
        r = {**self.R, "variants": {**self.R["variants"], "default": {"precision": "bf16", "vram_minimum_gb": 2000}}}
        assert page(r).selection == sel(strategy="multi_node_tp", node_count=2)

    def test_nothing_fits(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        r = {**self.R, "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 1000}}}
        assert refused(r, hardware="rtx_pro_6000_8x").param == "variant"
        # lenient keeps the only variant on the non-scalable profile, at one node
        st_ = page(r, strict=False, hardware="rtx_pro_6000_8x")
        assert st_.selection == sel(hw_id="rtx_pro_6000_8x")


# --- nodeCount ---------------------------------------------------------------------------------------


BIG = {"default": {"precision": "bf16", "vram_minimum_gb": 2000}}  # > one h200 node (1128 GB)


class TestNodeCount:
    def test_fits_one_node(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "multi_node_tp"],
                   variants={"default": {"precision": "bf16", "vram_minimum_gb": 1000}})
        assert page(r).selection == sel()

    def test_no_multi_node_or_pd_offered(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "single_node_tep"], variants=BIG)
        assert page(r).selection == sel(node_count=1)

    def test_does_not_fit_two_nodes(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "multi_node_tep", "multi_node_dep"], variants=BIG)
        # recommendStrategy(nodeCount 2): multi_node_tp not offered -> multi_node_dep before multi_node_tep
        assert page(r).selection == sel(strategy="multi_node_dep", node_count=2)

    def test_fit_uses_the_per_hardware_budget(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "multi_node_tp"],
                   variants={"default": {"precision": "bf16", "vram_minimum_gb": 2000,
                                         "hardware_overrides": {"h200": {"vram_minimum_gb": 900}}}})
        assert page(r).selection == sel()
        assert page(r, hardware="b200").selection == sel(hw_id="b200", strategy="multi_node_tp", node_count=2)

    def test_pd_cluster_alone_counts_as_multi(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "pd_cluster"], variants=BIG)
        # nodeCount 2 drops single_node_tp; pd_cluster is kept at any node count
        st_ = page(r)
        assert st_.selection == sel(strategy="pd_cluster", node_count=2, pd_nodes=pd((2, "tp")))
        assert st_.candidates == ("pd_cluster",)

    def test_non_scalable_is_one_node(self, page: Build) -> None:
        r = recipe(meta={"title": "Model", "hardware": {"rtx_pro_6000_8x": "verified"}},
                   compatible_strategies=["single_node_tp", "multi_node_tp"], variants=BIG)
        st_ = page(r, strict=False, hardware="rtx_pro_6000_8x")
        assert st_.selection == sel(hw_id="rtx_pro_6000_8x")

    @pytest.mark.parametrize(("floors", "hw", "want"), [
        ({"multi_node_tp": 32}, "h200", 4),  # ceil(32 / 8)
        ({"multi_node_tp": 32}, "gb200", 8),  # gb200 has 4 GPUs per node
        ({"multi_node_tp": 12}, "h200", 2),  # needed 2 is not above 2
        # "tp" is a pool-mode key: minGpusFromBlock(cfg, "multi_node_tp") never reads it
        ({"tp": 24}, "h200", 2),
        ({"h200": {"multi_node_tp": 24}}, "h200", 3),  # exact GPU block
        ({"h200": {"multi_node_tp": 24}}, "b200", 2),
        (24, "h200", 3),  # a number applies to every strategy
    ])
    def test_reconcile_to_the_gpu_floor(self, page: Build, floors: Any, hw: str, want: int) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "multi_node_tp"], variants=BIG, strategy_min_gpus=floors)
        assert page(r, hardware=hw).selection == sel(hw_id=hw, strategy="multi_node_tp", node_count=want)

    def test_reconcile_never_above_16_nodes(self, page: Build) -> None:
        # the only multi-node strategy needs 25 nodes: unreachable, no candidate; active = rec, nodeCount kept
        r = recipe(compatible_strategies=["multi_node_tp"], variants=BIG, strategy_min_gpus={"multi_node_tp": 200})
        st_ = page(r, strict=False)
        assert st_.candidates == ()
        assert st_.selection == sel(strategy="multi_node_tp", node_count=2)

    def test_no_reconcile_for_pd_cluster(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "pd_cluster"], default_strategy="pd_cluster",
                   strategy_min_gpus={"pd_cluster": 64})
        assert page(r).selection == sel(strategy="pd_cluster", pd_nodes=pd((1, "tp")))


# --- candidate strategies / active strategy --------------------------------------------------------


class TestStrategies:
    def test_candidates_filter(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "bogus", "kv_store_centralized_mooncake",
                                          "single_node_tep", "multi_node_tp", "pd_cluster"],
                   strategy_min_gpus={"single_node_tep": 16})
        st_ = page(r)
        # unknown id, kv store, multi-node at 1 node and an unreachable floor are dropped; pd_cluster is kept
        assert st_.candidates == ("single_node_tp", "pd_cluster")
        st2 = page({**r, "variants": BIG})
        assert st2.candidates == ("multi_node_tp", "pd_cluster")
        assert st2.selection == sel(strategy="multi_node_tp", node_count=2)

    def test_unreachable_pd_cluster_is_not_a_candidate(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "pd_cluster"], strategy_min_gpus={"pd_cluster": 200})
        assert page(r).candidates == ("single_node_tp",)

    def test_opt_in_strategy_is_offered(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp"],
                   strategy_hardware={"single_node_tep": {"b200": "supported"}}, default_strategy="single_node_tep")
        # offered everywhere, supported only on b200 (keyed gate), so only b200 makes it active
        assert page(r).candidates == ("single_node_tp", "single_node_tep")
        assert page(r).selection == sel()
        assert page(r, hardware="b200").selection == sel(hw_id="b200", strategy="single_node_tep")

    def test_recommendation_when_candidate_and_supported(self, page: Build) -> None:
        r = recipe(compatible_strategies=ALL_STRATS, default_strategy="single_node_dep")
        st_ = page(r)
        assert st_.selection == sel(strategy="single_node_dep")
        assert st_.recommended_strategy == "single_node_dep"

    def test_recommendation_unsupported_takes_the_first_supported_candidate(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tep", "single_node_tp"], default_strategy="single_node_tep",
                   strategy_hardware={"single_node_tep": {"hopper": "unsupported"}})
        assert page(r).selection == sel(strategy="single_node_tp")
        assert page(r, hardware="b200").selection == sel(hw_id="b200", strategy="single_node_tep")

    def test_multi_node_default_at_one_node(self, page: Build) -> None:
        r = recipe(compatible_strategies=["multi_node_tp", "single_node_tep", "single_node_tp"],
                   default_strategy="multi_node_tp")
        # recommendStrategy returns the multi-node default at nodeCount 1; not a candidate there
        assert page(r).selection == sel(strategy="single_node_tep")
        assert page({**r, "variants": BIG}).selection == sel(strategy="multi_node_tp", node_count=2)

    def test_single_node_default_gets_its_multi_node_sibling(self, page: Build) -> None:
        r = recipe(compatible_strategies=ALL_STRATS, default_strategy="single_node_tep", variants=BIG)
        assert page(r).selection == sel(strategy="multi_node_tep", node_count=2)

    def test_no_supported_candidate_takes_the_first_candidate(self, page: Build) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "single_node_tep"], default_strategy="single_node_tep",
                   strategy_hardware={"single_node_tp": {"h200": "unsupported"},
                                      "single_node_tep": {"nvidia": "unsupported"}})
        st_ = page(r)
        assert st_.selection == sel(strategy="single_node_tp")
        assert st_.recommended_strategy == "single_node_tp"

    def test_no_candidate_takes_the_recommendation(self, page: Build) -> None:
        r = recipe(compatible_strategies=["multi_node_tp"])
        st_ = page(r)
        assert st_.candidates == ()
        assert st_.selection == sel(strategy="multi_node_tp")


class TestUrlStrategy:
    R = recipe(compatible_strategies=["single_node_tp", "single_node_tep", "multi_node_tp", "multi_node_dep",
                                      "pd_cluster"],
               strategy_hardware={"single_node_tep": {"b200": "unsupported"}},
               strategy_min_gpus={"multi_node_dep": 24, "multi_node_tp": 200},
               meta={"title": "Model", "hardware": {"rtx_pro_6000_8x": "verified"}})

    def test_single_node(self, page: Build) -> None:
        assert page(self.R, strategy="single_node_tep").selection == sel(strategy="single_node_tep")
        big = {**self.R, "variants": BIG}
        assert page(big, strategy="single_node_tep").selection == sel(strategy="single_node_tep")

    def test_multi_node_without_nodes_gets_its_floor(self, page: Build) -> None:
        assert page(self.R, strategy="multi_node_dep").selection == sel(strategy="multi_node_dep", node_count=3)

    def test_pd_cluster(self, page: Build) -> None:
        # pool mode "tp" resolves its floor through multi_node_tp (200 GPUs, unreachable) -> "tep"
        assert page(self.R, strategy="pd_cluster").selection == sel(strategy="pd_cluster", pd_nodes=pd((1, "tep")))

    @pytest.mark.parametrize(("strategy", "hw", "why", "choices"), [
        ("kv_store_centralized_mooncake", "h200", "not offered",
         ["single_node_tp", "single_node_tep", "multi_node_tp", "multi_node_dep", "pd_cluster"]),
        ("single_node_dep", "h200", "not offered",
         ["single_node_tp", "single_node_tep", "multi_node_tp", "multi_node_dep", "pd_cluster"]),
        ("nope", "h200", "not offered",
         ["single_node_tp", "single_node_tep", "multi_node_tp", "multi_node_dep", "pd_cluster"]),
        ("single_node_tep", "b200", "not supported",
         ["single_node_tp", "multi_node_tp", "multi_node_dep", "pd_cluster"]),
        ("multi_node_tp", "h200", "more GPUs", ["single_node_tp", "single_node_tep", "multi_node_dep", "pd_cluster"]),
        ("multi_node_dep", "rtx_pro_6000_8x", "cannot scale", ["single_node_tp", "single_node_tep"]),
        ("pd_cluster", "rtx_pro_6000_8x", "cannot scale", ["single_node_tp", "single_node_tep"]),
    ])
    def test_refused(self, page: Build, refused: Callable[..., SelectionError], strategy: str, hw: str, why: str,
                     choices: list[str]) -> None:
        err = refused(self.R, strategy=strategy, hardware=hw)
        assert err.param == "strategy" and why in err.message
        assert err.choices == choices
        # lenient: ignored (a kv_store id too, §4.8) -> the page default
        assert lenient(page, self.R, strategy=strategy, hardware=hw).selection == page(self.R, hardware=hw).selection

    @pytest.mark.parametrize(("strategy", "nodes", "want_nodes"), [
        ("single_node_tp", 2, 1),
        ("multi_node_dep", 1, 3),
    ])
    def test_contradicting_nodes(self, page: Build, refused: Callable[..., SelectionError], strategy: str,
                                 nodes: int, want_nodes: int) -> None:
        assert refused(self.R, strategy=strategy, nodes=nodes).param == "nodes"
        st_ = lenient(page, self.R, strategy=strategy, nodes=nodes)
        assert st_.selection == sel(strategy=strategy, node_count=want_nodes)


class TestUrlNodes:
    R = recipe(compatible_strategies=["single_node_tp", "multi_node_tp", "multi_node_dep"])

    def test_multi_node(self, page: Build) -> None:
        st_ = page(self.R, nodes=3)
        assert st_.selection == sel(strategy="multi_node_tp", node_count=3)
        assert st_.candidates == ("multi_node_tp", "multi_node_dep")
        assert page(self.R, nodes=3, strategy="multi_node_dep").selection == sel(strategy="multi_node_dep",
                                                                                 node_count=3)

    def test_one_node_when_the_model_does_not_fit(self, page: Build) -> None:
        assert page({**self.R, "variants": BIG}, nodes=1).selection == sel()

    @pytest.mark.parametrize("nodes", [0, 17])
    def test_range(self, page: Build, refused: Callable[..., SelectionError], nodes: int) -> None:
        assert refused(self.R, nodes=nodes).param == "nodes"
        assert lenient(page, self.R, nodes=nodes).selection == sel()

    def test_non_scalable(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        r = {**self.R, "meta": {"title": "Model", "hardware": {"rtx_pro_6000_8x": "verified"}}}
        assert refused(r, nodes=2, hardware="rtx_pro_6000_8x").param == "nodes"
        st_ = lenient(page, r, nodes=2, hardware="rtx_pro_6000_8x")
        assert st_.selection == sel(hw_id="rtx_pro_6000_8x")


class TestNodeCountFollowsTheStrategy:
    """Fixed in page.py: a node count (URL or reconcile) that no strategy can use.

    §4.8: the reconcile raises nodeCount to the active strategy's GPU floor (<= 16), and the
    URL's ``nodes`` only replaces the initial value, so the floor applies to it too; a node
    count the offered strategies cannot run on is an unusable parameter (ui.md: the
    Multi-node pill is disabled when no multi-node strategy is offered).
    """

    R = recipe(compatible_strategies=["single_node_tp", "multi_node_tp"], strategy_min_gpus={"multi_node_tp": 32})

    def test_url_nodes_without_a_multi_node_strategy(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        assert refused(recipe(), nodes=2).param == "nodes"
        assert lenient(page, recipe(), nodes=2).selection == sel()

    def test_url_nodes_without_a_supported_strategy_there(
            self, page: Build, refused: Callable[..., SelectionError]) -> None:
        r = recipe(compatible_strategies=["single_node_tp", "multi_node_tp", "pd_cluster"],
                   strategy_hardware={"multi_node_tp": {"hopper": "unsupported"},
                                      "pd_cluster": {"nvidia": "unsupported"}})
        assert refused(r, nodes=2).param == "nodes"
        assert lenient(page, r, nodes=2).selection == sel()
        assert page(r, nodes=2, hardware="mi300x").selection == sel(hw_id="mi300x", strategy="multi_node_tp",
                                                                   node_count=2)

    @pytest.mark.parametrize("nodes", [2, 3])
    def test_url_nodes_below_the_floor(self, page: Build, refused: Callable[..., SelectionError], nodes: int) -> None:
        err = refused(self.R, nodes=nodes)
        assert err.param == "nodes" and "at least 4" in err.message
        assert err.choices == [str(n) for n in range(4, 17)]
        assert lenient(page, self.R, nodes=nodes).selection == sel(strategy="multi_node_tp", node_count=4)
        err = refused(self.R, nodes=nodes, strategy="multi_node_tp")
        assert err.param == "nodes"
        st_ = lenient(page, self.R, nodes=nodes, strategy="multi_node_tp")
        assert st_.selection == sel(strategy="multi_node_tp", node_count=4)

    @pytest.mark.parametrize("nodes", [4, 5, 16])
    def test_url_nodes_at_or_above_the_floor(self, page: Build, nodes: int) -> None:
        assert page(self.R, nodes=nodes).selection == sel(strategy="multi_node_tp", node_count=nodes)

    def test_reconcile_recomputes_the_active_strategy(self, page: Build) -> None:
        # every strategy needs 16 GPUs: no candidate at 1 node, so the recommendation (single_node_tp)
        # drives the reconcile to 2 nodes; at 2 nodes the active strategy is multi_node_tp, not a
        # single-node strategy running "on 2 nodes"
        r = recipe(compatible_strategies=["single_node_tp", "multi_node_tp"], strategy_min_gpus=16)
        st_ = page(r)
        assert st_.selection == sel(strategy="multi_node_tp", node_count=2)
        assert (st_.candidates, st_.recommended_strategy) == (("multi_node_tp",), "multi_node_tp")


# --- features and modes ------------------------------------------------------------------------------


FEATS = recipe(
    compatible_strategies=["single_node_tp", "single_node_tep"],
    features={
        "a": feature(),
        "b": feature(modes={"m1": {"args": ["--m1"]}, "m2": {"args": ["--m2"]}}),
        "c": feature(),
        "text_only": feature(),
        "encoder_parallel": feature(),
        "x": feature(conflicts_with=["a"]),
        "tep_only": feature(strategies=["single_node_tep"]),
    },
    opt_in_features=["b", "text_only", "x", "tep_only"],
    hardware_opt_in_features={"h200": ["c"]},
    variants={"default": {"precision": "bf16"}, "forced": {"precision": "bf16", "default_modes": {"b": "m2"}}},
)


class TestFeatures:
    def test_default_features(self, page: Build) -> None:
        """§4.6: declaration order, minus recipe and per-hardware opt-ins, plus variant-forced ones."""
        assert page(FEATS).selection.features == ("a", "encoder_parallel")
        assert page(FEATS, hardware="b200").selection.features == ("a", "c", "encoder_parallel")
        st_ = page(FEATS, variant="forced")
        assert st_.selection.features == ("a", "b", "encoder_parallel")
        assert st_.default_features == ("a", "b", "encoder_parallel")

    def test_url_list_keeps_its_order(self, page: Build) -> None:
        assert page(FEATS, features=("c", "b", "a", "c")).selection.features == ("c", "b", "a")
        assert page(FEATS, features=()).selection.features == ()

    def test_url_list_unknown(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        err = refused(FEATS, features=("a", "zz"))
        assert (err.param, err.choices) == ("features", list(FEATS["features"]))
        assert lenient(page, FEATS, features=("zz", "c")).selection.features == ("c",)

    @pytest.mark.parametrize(("features", "kept"), [
        (("text_only", "c", "encoder_parallel"), ("text_only", "c")),  # built-in pair (extensions §2.7)
        (("a", "x"), ("a",)),  # declared on x, applies both ways
        (("x", "a"), ("x",)),
    ])
    def test_url_list_conflicts(self, page: Build, refused: Callable[..., SelectionError], features: tuple,
                                kept: tuple) -> None:
        assert refused(FEATS, features=features).param == "features"
        assert lenient(page, FEATS, features=features).selection.features == kept

    def test_toggle_on_appends_and_switches_conflicts_off(self, page: Build) -> None:
        assert page(FEATS, add_features=("b",)).selection.features == ("a", "encoder_parallel", "b")
        assert page(FEATS, add_features=("text_only",)).selection.features == ("a", "text_only")
        assert page(FEATS, add_features=("x",)).selection.features == ("encoder_parallel", "x")
        # already on: stays where it is
        assert page(FEATS, add_features=("a",)).selection.features == ("a", "encoder_parallel")
        assert page(FEATS, remove_features=("a",)).selection.features == ("encoder_parallel",)

    def test_toggling_both_of_a_pair_is_refused(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        assert refused(FEATS, add_features=("text_only", "encoder_parallel")).param == "feature"
        st_ = page(FEATS, strict=False, add_features=("text_only", "encoder_parallel"))
        assert st_.selection.features == ("a", "encoder_parallel")  # last toggle wins
        assert st_.notices

    def test_feature_not_allowed_for_the_strategy(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        err = refused(FEATS, add_features=("tep_only",))
        assert (err.param, err.choices) == ("feature", ["single_node_tep"])
        # lenient keeps it (the engine skips it, §3.10) and says so
        st_ = lenient(page, FEATS, add_features=("tep_only",))
        assert st_.selection.features == ("a", "encoder_parallel", "tep_only")
        ok = page(FEATS, add_features=("tep_only",), strategy="single_node_tep")
        assert ok.selection.features == ("a", "encoder_parallel", "tep_only")


MODES = recipe(
    features={
        "spec": feature(default_mode="m2", modes={
            "m1": {"args": ["--m1"]},
            "m2": {"args": ["--m2"], "hardware": {"blackwell": "unsupported"}},
            "m3": {"args": ["--m3"], "variants": ["other"]},
            "m4": {"args": ["--m4"], "hardware": {"b300": "unsupported"}},
        }),
        "plain": feature(),
    },
    variants={"default": {"precision": "bf16"}, "other": {"precision": "bf16", "default_modes": {"spec": "m4"}}},
)


class TestModes:
    @pytest.mark.parametrize(("hw", "variant", "want"), [
        ("h200", None, "m2"),  # feature default_mode
        ("b200", None, "m1"),  # default_mode unsupported on blackwell -> first allowed
        ("h200", "other", "m4"),  # the variant's default_modes
        ("b300", "other", "m1"),  # ... unless that mode is gated on the exact GPU
    ])
    def test_default_modes(self, page: Build, hw: str, variant: str | None, want: str) -> None:
        st_ = page(MODES, hardware=hw, variant=variant)
        assert st_.default_modes == {"spec": want}
        assert st_.selection.feature_modes == ()  # defaults are what the engine resolves anyway (§4.7)

    def test_fmode(self, page: Build) -> None:
        assert page(MODES, fmode=(("spec", "m4"),)).selection.feature_modes == (("spec", "m4"),)
        assert page(MODES, fmode=(("spec", "m3"),), variant="other").selection.feature_modes == (("spec", "m3"),)

    @pytest.mark.parametrize(("fmode", "hw", "choices"), [
        (("spec", "m3"), "h200", ["m1", "m2", "m4"]),  # variant allowlist
        (("spec", "m2"), "b200", ["m1", "m4"]),  # generation gate
        (("spec", "zz"), "h200", ["m1", "m2", "m4"]),
        (("plain", "m1"), "h200", ["spec"]),  # no modes
        (("zz", "m1"), "h200", ["spec"]),
    ])
    def test_fmode_refused(self, page: Build, refused: Callable[..., SelectionError], fmode: tuple, hw: str,
                           choices: list[str]) -> None:
        err = refused(MODES, fmode=(fmode,), hardware=hw)
        assert (err.param, err.choices) == ("fmode", choices)
        assert lenient(page, MODES, fmode=(fmode,), hardware=hw).selection.feature_modes == ()

    def test_two_modes_of_one_feature_are_refused(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        # ``--mode spec=m1 --mode spec=m4`` (or ``fmode=spec:m1,spec:m4``) asks for two things at once:
        # strict refuses naming the modes; the page keeps the first with a notice; a repeat is one pick
        err = refused(MODES, fmode=(("spec", "m1"), ("spec", "m4")))
        assert (err.param, err.choices) == ("fmode", ["m1", "m2", "m4"])
        assert "spec=m1 and spec=m4 contradict each other" in str(err)
        assert lenient(page, MODES, fmode=(("spec", "m1"), ("spec", "m4"))).selection.feature_modes == (("spec", "m1"),)
        assert page(MODES, fmode=(("spec", "m4"), ("spec", "m4"))).selection.feature_modes == (("spec", "m4"),)


# --- advanced ---------------------------------------------------------------------------------------


ADV_ARGS = {o.id: o.args for o in ADVANCED_OPTIONS}


class TestAdvanced:
    R = recipe(compatible_strategies=["single_node_tp", "single_node_tep", "single_node_dep", "multi_node_dep"])

    def test_presets_in_request_order(self, page: Build) -> None:
        st_ = page(self.R, advanced=("gpu_mem_095", "max_batched_8k"), extra_args=("--foo", "1"))
        assert st_.selection.advanced == (("gpu_mem_095", ("--gpu-memory-utilization", "0.95")),
                                          ("max_batched_8k", ("--max-num-batched-tokens", "8192")),
                                          ("arg", ("--foo", "1")))
        assert page(self.R).selection.advanced == ()

    @pytest.mark.parametrize(("opt", "model", "strategy", "ok"), [
        ("dcp_8", {}, None, False),
        ("dcp_8", {"supports_dcp": True}, None, True),
        ("no_flashinfer_autotune", {}, None, False),
        ("no_flashinfer_autotune", {"flashinfer_autotune": True}, None, True),
        ("ep_weight_filter", {}, None, False),
        ("ep_weight_filter", {}, "single_node_tep", True),
        ("ep_weight_filter", {}, "multi_node_dep", True),
        ("max_seqs_256", {}, None, True),
        ("max_model_len_auto", {}, None, True),
        ("nope", {}, None, False),
    ])
    def test_availability(self, page: Build, refused: Callable[..., SelectionError], opt: str, model: dict,
                          strategy: str | None, ok: bool) -> None:
        r = {**self.R, "model": {"model_id": HF, **model}}
        if ok:
            assert page(r, advanced=(opt,), strategy=strategy).selection.advanced == ((opt, ADV_ARGS[opt]),)
        else:
            err = refused(r, advanced=(opt,), strategy=strategy)
            assert err.param == "advanced" and opt not in err.choices
            assert lenient(page, r, advanced=(opt,), strategy=strategy).selection.advanced == ()


# --- KV offload ---------------------------------------------------------------------------------------


KV = recipe(
    compatible_strategies=["single_node_tp", "multi_node_tp", "pd_cluster"],
    meta={"title": "Model", "hardware": {"arc_pro_b60": "verified", "xeon6": "verified", "trillium": "verified",
                                         "rtx_pro_6000_8x": "verified"}},
    kv_offload_support={"offloading_cpu": "verified"},
)


class TestKvOffload:
    @pytest.mark.parametrize(("kv", "hw", "strategy"), [
        ("simple", "h200", None),
        ("simple", "xeon6", None),  # the XPU gate is about generation xpu only
        ("simple", "trillium", None),
        ("simple", "h200", "multi_node_tp"),
        ("offloading_cpu", "h200", None),  # requires_opt_in + verified
        ("offloading_cpu", "mi300x", None),
        ("lmcache", "h200", None),
        ("kv_store_centralized_mooncake", "h200", None),
        ("kv_store_distributed_mooncake", "mi300x", "multi_node_tp"),
        ("kv_store_centralized_mooncake", "h200", "pd_cluster"),  # Mooncake composes with PD
    ])
    def test_accepted(self, page: Build, kv: str, hw: str, strategy: str | None) -> None:
        st_ = page(KV, kv_offload=kv, hardware=hw, strategy=strategy)
        assert st_.selection.kv_offload == kv and st_.selection.kv_instances is None

    @pytest.mark.parametrize(("kv", "hw", "strategy", "recipe_keys"), [
        ("simple", "arc_pro_b60", None, {}),  # UI-only XPU gate (§3.11)
        ("kv_store_centralized_mooncake", "arc_pro_b60", None, {}),
        ("simple", "h200", "pd_cluster", {}),  # taxonomy options never with PD
        ("lmcache", "h200", "multi_node_tp", {}),  # option strategies allowlist
        ("offloading_fs", "h200", None, {}),  # requires_opt_in, not verified
        ("offloading_cpu", "h200", None, {"kv_offload_support": {"offloading_cpu": "supported"}}),
        ("simple", "h200", None, {"kv_offload_support": {"simple": "unsupported"}}),
        ("offloading_cpu", "trillium", None, {}),  # brands NVIDIA/AMD
        ("kv_store_centralized_mooncake", "trillium", None, {}),  # kv store brand gate
        ("kv_store_centralized_mooncake", "rtx_pro_6000_8x", None, {}),  # not scalable
        ("kv_store_centralized_mooncake", "h200", None,
         {"kv_cache_strategy_hardware": {"kv_store_centralized_mooncake": {"h200": "unsupported"}}}),
        ("nope", "h200", None, {}),
    ])
    def test_refused(self, page: Build, refused: Callable[..., SelectionError], kv: str, hw: str,
                     strategy: str | None, recipe_keys: dict) -> None:
        r = {**KV, **recipe_keys}
        err = refused(r, kv_offload=kv, hardware=hw, strategy=strategy)
        assert err.param == "kv_offload" and kv not in err.choices
        assert lenient(page, r, kv_offload=kv, hardware=hw, strategy=strategy).selection.kv_offload is None

    def test_xpu_offers_nothing(self, refused: Callable[..., SelectionError]) -> None:
        assert refused(KV, kv_offload="simple", hardware="arc_pro_b60").choices == []

    @pytest.mark.parametrize("off", ["off", ""])
    def test_off(self, page: Build, off: str) -> None:
        assert page(KV, kv_offload=off).selection.kv_offload is None

    @pytest.mark.parametrize(("count", "current", "want"), [
        (3, None, {"count": 3, "current": 0}),
        (16, 15, {"count": 16, "current": 15}),
        (1, None, {"count": 1, "current": 0}),
        (None, 1, {"count": None, "current": 1}),  # topology default: 2 instances (centralized)
    ])
    def test_instances(self, page: Build, count: int | None, current: int | None, want: dict) -> None:
        st_ = page(KV, kv_offload="kv_store_centralized_mooncake", kv_instances=count, kv_instance=current)
        assert st_.selection.kv_instances == want

    @pytest.mark.parametrize(("kv", "count", "current", "param"), [
        ("kv_store_centralized_mooncake", 0, None, "kv_instances"),
        ("kv_store_centralized_mooncake", 17, None, "kv_instances"),
        ("kv_store_centralized_mooncake", 3, 3, "kv_instance"),
        ("kv_store_centralized_mooncake", None, 2, "kv_instance"),  # default 2 instances: 0..1
        ("kv_store_distributed_mooncake", None, 1, "kv_instance"),  # default 1 instance
    ])
    def test_instances_refused(self, page: Build, refused: Callable[..., SelectionError], kv: str,
                               count: int | None, current: int | None, param: str) -> None:
        assert refused(KV, kv_offload=kv, kv_instances=count, kv_instance=current).param == param
        st_ = lenient(page, KV, kv_offload=kv, kv_instances=count, kv_instance=current)
        assert st_.selection.kv_offload == kv


# --- PD pools ------------------------------------------------------------------------------------------


PD = recipe(compatible_strategies=["single_node_tp", "single_node_tep", "multi_node_dep", "pd_cluster"],
            default_strategy="pd_cluster")


def pd_recipe(*, so: dict | None = None, **keys: Any) -> dict[str, Any]:
    out = {**PD, **keys}
    if so is not None:
        out["strategy_overrides"] = {"pd_cluster": so}
    return out


class TestPdDefaults:
    def test_only_when_pd_cluster_is_active(self, page: Build) -> None:
        st_ = page(PD)
        assert st_.selection == sel(strategy="pd_cluster", pd_nodes=pd((1, "tp")))
        assert st_.default_pd == pd((1, "tp"))
        other = page(PD, strategy="single_node_tp")
        assert other.selection == sel() and other.default_pd is None

    @pytest.mark.parametrize(("so", "hw", "want"), [
        ({"prefill": {"nodes": 3}}, "h200", ((3, "tp"), (1, "tp"))),
        ({"decode": {"nodes": {"h200": 2, "default": 5}}}, "h200", ((1, "tp"), (2, "tp"))),
        ({"decode": {"nodes": {"h200": 2, "default": 5}}}, "b200", ((1, "tp"), (5, "tp"))),
        ({"decode": {"nodes": {"h200": "2", "default": 5}}}, "h200", ((1, "tp"), (5, "tp"))),  # not a number
        ({"decode": {"nodes": {"b200": 2}}}, "h200", ((1, "tp"), (1, "tp"))),
        ({"prefill": {"nodes": "3"}}, "h200", ((1, "tp"), (1, "tp"))),
    ])
    def test_nodes_from_overrides(self, page: Build, so: dict, hw: str, want: tuple) -> None:
        assert page(pd_recipe(so=so), hardware=hw).selection.pd_nodes == pd(*want)

    @pytest.mark.parametrize(("vram", "hw", "nodes"), [
        (2000, "h200", 2),  # ceil(2000 / 1128)
        (3000, "h200", 3),
        (3000, "b200", 3),  # ceil(3000 / 1440)
        (1000, "h200", 1),
        (2000, "gb200", 3),  # ceil(2000 / 768)
    ])
    def test_nodes_from_vram(self, page: Build, vram: int, hw: str, nodes: int) -> None:
        r = pd_recipe(variants={"default": {"precision": "bf16", "vram_minimum_gb": vram}})
        st_ = page(r, hardware=hw)
        assert st_.selection.pd_nodes == pd((nodes, "tp"))

    def test_override_nodes_win_over_vram(self, page: Build) -> None:
        r = pd_recipe(so={"prefill": {"nodes": 1}}, variants={"default": {"precision": "bf16", "vram_minimum_gb": 3000}})
        assert page(r).selection.pd_nodes == pd((1, "tp"), (3, "tp"))

    def test_parallelism(self, page: Build) -> None:
        r = pd_recipe(so={"prefill": {"parallelism": "dep"}, "decode": {"parallelism": "tep"}})
        assert page(r).selection.pd_nodes == pd((1, "dep"), (1, "tep"))

    def test_parallelism_from_the_strategy_file(self, page: Build) -> None:
        patch = {"pd_cluster": {"prefill": {"parallelism": "tep"}, "decode": {"parallelism": "dep"}}}
        assert page(PD, strategy_patch=patch).selection.pd_nodes == pd((1, "tep"), (1, "dep"))
        r = pd_recipe(so={"decode": {"parallelism": "tp"}})
        assert page(r, strategy_patch=patch).selection.pd_nodes == pd((1, "tep"), (1, "tp"))

    def test_parallelism_clamped_to_pool_modes(self, page: Build) -> None:
        r = pd_recipe(so={"prefill": {"parallelism": "dep"}, "decode": {"parallelism": "pp"}},
                      compatible_strategies=["single_node_tep", "multi_node_dep", "pd_cluster"])
        # pool modes [tep, dep]: an unknown mode takes the first one
        assert page(r).selection.pd_nodes == pd((1, "dep"), (1, "tep"))
        r = pd_recipe(so={"prefill": {"parallelism": "dep"}, "pool_modes": ["tep"]})
        assert page(r).selection.pd_nodes == pd((1, "tep"), (1, "tep"))
        r = pd_recipe(so={"prefill": {"parallelism": "dep"}}, compatible_strategies=["single_node_tp", "pd_cluster"])
        assert page(r).selection.pd_nodes == pd((1, "tp"))

    def test_parallelism_clamped_to_reachable_modes(self, page: Build) -> None:
        r = pd_recipe(so={"prefill": {"parallelism": "dep"}, "decode": {"parallelism": "tep"}},
                      strategy_min_gpus={"dep": 200, "tp": 200})
        # dep needs 25 nodes: first reachable mode is tep (tp is unreachable too)
        assert page(r).selection.pd_nodes == pd((1, "tep"), (1, "tep"))
        r = pd_recipe(strategy_min_gpus={"tp": 200, "tep": 200, "dep": 200})
        # nothing reachable -> "tp", then raised to its floor (25 nodes; the default has no cap)
        assert page(r).selection.pd_nodes == pd((25, "tp"))

    def test_nodes_raised_to_the_mode_floor(self, page: Build) -> None:
        r = pd_recipe(so={"prefill": {"parallelism": "dep", "nodes": 2}}, strategy_min_gpus={"multi_node_dep": 24})
        # pool mode "dep" resolves through multi_node_dep: 24 GPUs -> 3 nodes of 8
        assert page(r).selection.pd_nodes == pd((3, "dep"), (1, "tp"))
        assert page(r, hardware="gb200").selection.pd_nodes == pd((6, "dep"), (1, "tp"))


class TestPdUrl:
    R = pd_recipe(strategy_min_gpus={"multi_node_dep": 24})

    def test_pool_nodes_modes_ranks(self, page: Build) -> None:
        st_ = page(self.R, prefill_nodes=4, decode_nodes=2, prefill_rank=3, decode_rank=1)
        assert st_.selection.pd_nodes == pd((4, "tp"), (2, "tp"), ranks=(3, 1))
        assert st_.default_pd == pd((1, "tp"))

    def test_mode_raises_nodes_to_its_floor(self, page: Build) -> None:
        st_ = page(self.R, prefill_mode="dep", decode_mode="tep")
        assert st_.selection.pd_nodes == pd((3, "dep"), (1, "tep"))
        st_ = page(self.R, prefill_mode="dep", prefill_nodes=5)
        assert st_.selection.pd_nodes == pd((5, "dep"), (1, "tp"))

    @pytest.mark.parametrize(("req", "param"), [
        ({"prefill_nodes": 17}, "prefill_nodes"),
        ({"decode_nodes": 0}, "decode_nodes"),
        ({"prefill_mode": "pp"}, "prefill_mode"),
        ({"decode_rank": 1}, "decode_rank"),  # decode has 1 node: rank 0 only
        ({"prefill_nodes": 2, "prefill_rank": 2}, "prefill_rank"),
    ])
    def test_refused(self, page: Build, refused: Callable[..., SelectionError], req: dict, param: str) -> None:
        assert refused(self.R, **req).param == param
        st_ = lenient(page, self.R, **req)
        assert st_.selection.strategy == "pd_cluster"

    def test_mode_choices(self, refused: Callable[..., SelectionError]) -> None:
        r = pd_recipe(compatible_strategies=["single_node_tp", "multi_node_dep", "pd_cluster"])
        assert refused(r, prefill_mode="tep").choices == ["tp", "dep"]

    def test_co_located(self, page: Build) -> None:
        st_ = page(self.R, prefill_nodes=0, decode_nodes=0)
        assert st_.pd_co_located
        assert st_.selection == sel(strategy="pd_cluster", pd_nodes=None)

    def test_pool_options_need_pd_cluster(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        assert refused(self.R, strategy="single_node_tp", prefill_nodes=2).param == "strategy"
        assert lenient(page, self.R, strategy="single_node_tp", decode_mode="dep").selection == sel()

    def test_router(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        smg = {**self.R, "model": {"model_id": HF, "smg_grpc": {"reasoning_parser": "r", "tool_call_parser": "t"}}}
        assert page(smg, pd_router="smg-grpc").selection.pd_router == "smg-grpc"
        assert page(self.R, pd_router="vllm-router").selection.pd_router == "vllm-router"
        assert refused(self.R, pd_router="smg-grpc").choices == ["vllm-router"]
        assert refused(smg, pd_router="smg-grpc", strategy="single_node_tp").choices == []


# --- frontend, install, task --------------------------------------------------------------------------------


class TestFrontendInstall:
    def test_frontend(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        r = recipe(model={"model_id": HF, "default_frontend": "rust"})
        assert page(r).selection.frontend is None  # None = the recipe default (resolved by the engine)
        assert page(r, frontend="python").selection.frontend == "python"
        err = refused(r, frontend="go")
        assert (err.param, err.choices) == ("frontend", ["python", "rust"])
        assert lenient(page, r, frontend="go").selection.frontend is None

    INST = recipe(
        model={"model_id": HF, "install": {"pip": False}},
        variants={"default": {"precision": "bf16", "hardware_overrides": {
            "b200": {"install": {"pip": {"command": "uv pip install vllm"}}},
            "b300": {"install": {"docker": False, "pip": {"command": "uv pip install vllm"}}}}}},
    )

    @pytest.mark.parametrize(("hw", "tabs"), [
        ("h200", ("docker",)),
        ("b200", ("pip", "docker")),  # extensions §2.5: merged over model.install
        ("b300", ("pip",)),
    ])
    def test_tabs_follow_per_hardware_install(self, page: Build, hw: str, tabs: tuple) -> None:
        st_ = page(self.INST, hardware=hw)
        assert (st_.install_tabs, st_.install) == (tabs, tabs[0])

    def test_default_tabs(self, page: Build) -> None:
        st_ = page(recipe())
        assert (st_.install_tabs, st_.install) == (("pip", "docker"), "pip")
        assert page(recipe(), install="docker").install == "docker"

    @pytest.mark.parametrize(("hw", "install"), [("h200", "pip"), ("b300", "docker"), ("h200", "apt")])
    def test_install_refused(self, page: Build, refused: Callable[..., SelectionError], hw: str,
                             install: str) -> None:
        err = refused(self.INST, hardware=hw, install=install)
        assert err.param == "install" and install not in err.choices
        st_ = lenient(page, self.INST, hardware=hw, install=install)
        assert st_.install == st_.install_tabs[0]

    def test_task_is_for_omni_recipes(self, page: Build, refused: Callable[..., SelectionError]) -> None:
        assert refused(recipe(), task="t2i").param == "task"
        assert lenient(page, recipe(), task="t2i").selection == sel()


# --- property: any request over the bundled seeds ------------------------------------------------------------


_SEEDS: list[Any] = []


def _seeds() -> tuple[Catalog, list[Recipe]]:
    if not _SEEDS:
        c = load_catalog()
        _SEEDS.extend([c, [r for r in c.recipes if not r.is_omni]])
    return _SEEDS[0], _SEEDS[1]


def _request_strategy() -> st.SearchStrategy[PageRequest]:
    c, recipes = _seeds()
    variants = [*sorted({k for r in recipes for k in r.variants}), "nope"]
    feats = [*sorted({f for r in recipes for f in r.data.get("features") or {}}), "nope"]
    modes = [*sorted({m for r in recipes for f in (r.data.get("features") or {}).values()
                      for m in f.get("modes") or {}}), "nope"]
    kv = [*c.kv_offload_options, *(k for k, s in c.strategies.items() if s.get("deploy_type") == "kv_store_lb"),
          "off", "", "nope"]
    small = st.integers(0, 17)

    def opt(values: Any) -> st.SearchStrategy[Any]:
        return st.one_of(st.none(), st.sampled_from(list(values)) if not isinstance(values, st.SearchStrategy)
                         else values)

    def subset(values: list[str]) -> st.SearchStrategy[tuple[str, ...]]:
        return st.lists(st.sampled_from(values), max_size=4).map(tuple)

    return st.builds(
        PageRequest,
        hardware=opt([*c.hardware_profiles, "nope"]),
        variant=opt(variants),
        strategy=opt([*c.strategies, "nope"]),
        nodes=opt(small),
        features=st.one_of(st.none(), subset(feats)),
        add_features=subset(feats),
        remove_features=subset(feats),
        fmode=st.lists(st.tuples(st.sampled_from(feats), st.sampled_from(modes)), max_size=3).map(tuple),
        advanced=subset([o.id for o in ADVANCED_OPTIONS] + ["nope"]),
        extra_args=subset(["--foo", "1"]),
        kv_offload=opt(kv),
        kv_instances=opt(small),
        kv_instance=opt(small),
        prefill_nodes=opt(small),
        decode_nodes=opt(small),
        prefill_mode=opt(["tp", "tep", "dep", "pp"]),
        decode_mode=opt(["tp", "tep", "dep", "pp"]),
        prefill_rank=opt(small),
        decode_rank=opt(small),
        frontend=opt(["python", "rust", "go"]),
        install=opt(["pip", "docker", "apt"]),
        pd_router=opt(["vllm-router", "smg-grpc", "nginx"]),
        task=opt(["t2i"]),
    )


def _check(c: Catalog, r: Recipe, state: PageState) -> None:
    s = state.selection
    variant = r.variants[s.variant_key]
    assert s.hw_id in hardware_choices(c, r, variant)
    assert s.strategy in offered_strategies(r.data)
    assert is_strategy_supported_on_hardware(r.data, s.strategy, c.hardware_profiles[s.hw_id], s.hw_id)
    assert 1 <= s.node_count <= 16
    resolve(c, r, s)


PROPERTY = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(data=st.data())
def test_lenient_always_builds_a_valid_selection(data: st.DataObject) -> None:
    c, recipes = _seeds()
    r = c.recipe(data.draw(st.sampled_from([x.hf_id for x in recipes])))
    assert r is not None
    req = data.draw(_request_strategy())
    _check(c, r, build_state(c, r, req, strict=False))


@PROPERTY
@given(data=st.data())
def test_strict_builds_a_valid_selection_or_refuses(data: st.DataObject) -> None:
    c, recipes = _seeds()
    r = c.recipe(data.draw(st.sampled_from([x.hf_id for x in recipes])))
    assert r is not None
    req = data.draw(_request_strategy())
    try:
        state = build_state(c, r, req, strict=True)
    except SelectionError:
        return
    assert state.notices == ()
    _check(c, r, state)


def test_remembered_default_hardware_is_the_rule_and_follows_a_changed_catalog() -> None:
    import dataclasses

    from vllm_recipes.catalog.yamlsource import FrozenDict
    from vllm_recipes.select.defaults import pick_default_hardware
    from vllm_recipes.select.state import default_hardware

    catalog = load_catalog(BUNDLED_DIR)
    for recipe in catalog.recipes:
        for vk, variant in recipe.variants.items():
            want = pick_default_hardware(catalog.hardware_profiles, variant, recipe.data)
            assert default_hardware(catalog, recipe, vk) == want
    # in a catalog made from this one without h200, the default moves
    recipe = next(r for r in catalog.recipes if default_hardware(catalog, r, "default") == "h200")
    profiles = FrozenDict((k, v) for k, v in catalog.hardware_profiles.items() if k != "h200")
    fewer = dataclasses.replace(catalog, taxonomy=FrozenDict({**catalog.taxonomy, "hardware_profiles": profiles}))
    moved = default_hardware(fewer, recipe, "default")
    assert moved != "h200" and moved == pick_default_hardware(profiles, recipe.variants["default"], recipe.data)
