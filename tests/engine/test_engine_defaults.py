"""Defaults (synthesis.md §4): default hardware, compatible list, variant fallback, strategy
recommendation, single-node TP, default features and modes."""

from __future__ import annotations

import pytest
from engine_helpers import recipe, render, tail

from vllm_recipes.select import defaults as d


def _prof(bundled):
    return bundled.hardware_profiles


class TestDefaultHardware:
    """§4.1."""

    def test_author_default_when_compatible(self, bundled) -> None:
        r = {"meta": {"default_hardware": "mi300x"}}
        assert d.pick_default_hardware(_prof(bundled), {}, r) == "mi300x"

    def test_author_default_ignored_when_not_compatible(self, bundled) -> None:
        p = _prof(bundled)
        assert d.pick_default_hardware(p, {}, {"meta": {"default_hardware": "mi300x",
                                                        "hardware": {"mi300x": "unsupported"}}}) == "h200"
        assert d.pick_default_hardware(p, {"precision": "nvfp4"}, {"meta": {"default_hardware": "mi300x"}}) == "b200"
        # restricted and undeclared
        assert d.pick_default_hardware(p, {}, {"meta": {"default_hardware": "dgx_station_gb300"}}) == "h200"
        assert d.pick_default_hardware(p, {}, {"meta": {"default_hardware": "dgx_station_gb300",
                                                        "hardware": {"dgx_station_gb300": "verified"}}}) \
            == "dgx_station_gb300"
        assert d.pick_default_hardware(p, {}, {"meta": {"default_hardware": "h999"}}) == "h200"

    def test_blackwell_constraint_b200_then_gb200(self, bundled) -> None:
        p = _prof(bundled)
        v = {"precision": "nvfp4"}
        assert d.pick_default_hardware(p, v, {}) == "b200"
        assert d.pick_default_hardware(p, v, {"meta": {"hardware": {"b200": "unsupported"}}}) == "gb200"
        both = {"meta": {"hardware": {"b200": "unsupported", "gb200": "unsupported"}}}
        assert d.pick_default_hardware(p, v, both) == "b300"  # brand rank, then id
        assert d.pick_default_hardware(p, {"precision_hardware": {"generation": "blackwell"}},
                                       {"meta": {"hardware": {"b200": "unsupported"}}}) == "gb200"

    def test_h200_fallback(self, bundled) -> None:
        assert d.pick_default_hardware(_prof(bundled), {}, {}) == "h200"
        assert d.pick_default_hardware(_prof(bundled), {"supported_hardware": ["arch:sm90"]}, {}) == "h200"

    @pytest.mark.parametrize(("allow", "declared", "want"), [
        (["mi325x", "mi300x", "h100"], {}, "h100"),  # NVIDIA first
        (["mi325x", "mi300x"], {}, "mi300x"),  # then by id
        (["trillium", "mi355x"], {"trillium": "verified"}, "mi355x"),  # AMD before other brands
        (["trillium", "xeon6", "ascend_910c"], {"trillium": "v", "xeon6": "v", "ascend_910c": "v"}, "ascend_910c"),
        (["trillium", "h100"], {}, "h100"),  # undeclared restricted dropped
    ])
    def test_brand_sort(self, bundled, allow, declared, want) -> None:
        r = {"meta": {"hardware": declared}}
        assert d.pick_default_hardware(_prof(bundled), {"supported_hardware": allow}, r) == want

    def test_nothing_compatible_gives_h200(self, bundled) -> None:
        p = _prof(bundled)
        assert d.pick_default_hardware(p, {"supported_hardware": ["h999"]}, {}) == "h200"
        assert d.pick_default_hardware(p, {"precision": "nvfp4", "supported_hardware": ["h100"]}, {}) == "h200"

    def test_locale_order_puts_underscore_before_digits(self) -> None:
        """§4.1 step 6: JS ``localeCompare`` (ICU) sorts ``_`` before digits."""
        profiles = {"acc1": {"brand": "Acme"}, "acc_1": {"brand": "Acme"}, "acc2": {"brand": "Acme"}}
        assert d.pick_default_hardware(profiles, {}, {}) == "acc_1"
        profiles = {"b9": {"brand": "AMD"}, "b_x": {"brand": "AMD"}, "zz": {"brand": "NVIDIA"}}
        assert d.pick_default_hardware(profiles, {}, {}) == "zz"
        assert d.pick_default_hardware({k: v for k, v in profiles.items() if k != "zz"}, {}, {}) == "b_x"


class TestCompatibleHardware:
    """§4.2 and the JSON API list (§11.2)."""

    def test_taxonomy_order_without_restricted_filter(self, bundled) -> None:
        v = {"supported_hardware": ["arch:sm103", "mi300x", "h100"]}
        assert d.list_compatible_hardware(_prof(bundled), v, {}) == [
            "h100", "b300", "gb300", "dgx_station_gb300", "mi300x"]

    def test_unsupported_and_precision(self, bundled) -> None:
        r = {"meta": {"hardware": {"b300": "unsupported"}}}
        v = {"precision": "fp4", "supported_hardware": ["arch:sm103", "mi300x", "h100"]}
        assert d.list_compatible_hardware(_prof(bundled), v, r) == ["gb300", "dgx_station_gb300"]

    def test_listed_default_first(self, bundled) -> None:
        r = {"meta": {"default_hardware": "mi300x", "hardware": {"rtx_5090": "verified"}}}
        v = {"supported_hardware": ["h100", "h200", "rtx_5090", "rtx_pro_6000", "mi300x"]}
        assert d.listed_hardware(_prof(bundled), v, r) == ["mi300x", "h100", "h200", "rtx_5090"]


class TestFittingVariant:
    """§4.3."""

    def test_largest_fitting_stable(self, bundled) -> None:
        r = {"variants": {
            "default": {"vram_minimum_gb": 200},
            "a": {"vram_minimum_gb": 40},
            "b": {"vram_minimum_gb": 80},
            "c": {"vram_minimum_gb": 80},
            "nv": {"vram_minimum_gb": 90, "precision": "nvfp4"},
            "only_h": {"vram_minimum_gb": 95, "supported_hardware": ["h200"]},
            "unsized": {},
        }}
        p = _prof(bundled)
        assert d.pick_fitting_variant(r, p["rtx_pro_6000"], "rtx_pro_6000") == "nv"  # blackwell, 90 <= 96
        assert d.pick_fitting_variant(r, p["rtx_4090_2x"], "rtx_4090_2x") == "a"  # ada 48 GB
        assert d.pick_fitting_variant(r, p["rtx_5090"], "rtx_5090") == "unsized"  # 32 GB: only missing data fits
        r2 = {"variants": {k: v for k, v in r["variants"].items() if k not in ("nv", "unsized")}}
        assert d.pick_fitting_variant(r2, p["rtx_pro_6000"], "rtx_pro_6000") == "b"  # tie keeps declaration order
        assert d.pick_fitting_variant(r2, p["rtx_5090"], "rtx_5090") is None

    def test_scalable_profiles_run_everything(self, bundled) -> None:
        r = {"variants": {"small": {"vram_minimum_gb": 10}, "huge": {"vram_minimum_gb": 9000}}}
        assert d.pick_fitting_variant(r, _prof(bundled)["h100"], "h100") == "huge"

    def test_per_hardware_budget_counts(self, bundled) -> None:
        r = {"variants": {
            "big": {"vram_minimum_gb": 600, "hardware_overrides": {"dgx_station_gb300": {"vram_minimum_gb": 240}}},
            "mid": {"vram_minimum_gb": 245},
        }}
        assert d.pick_fitting_variant(r, _prof(bundled)["dgx_station_gb300"], "dgx_station_gb300") == "mid"
        r["variants"]["mid"]["vram_minimum_gb"] = 230
        assert d.pick_fitting_variant(r, _prof(bundled)["dgx_station_gb300"], "dgx_station_gb300") == "big"


ALL_STRATEGIES = ["single_node_tp", "single_node_tep", "single_node_dep", "multi_node_tp", "multi_node_tep",
                  "multi_node_dep", "pd_cluster"]


class TestRecommendStrategy:
    """§4.4."""

    def test_explicit_default(self) -> None:
        r = {"compatible_strategies": ALL_STRATEGIES, "default_strategy": "single_node_tep"}
        assert d.recommend_strategy(r, 1) == "single_node_tep"
        assert d.recommend_strategy(r, 2) == "multi_node_tep"  # sibling replacement

    def test_sibling_missing_falls_through(self) -> None:
        r = {"compatible_strategies": ["single_node_tep", "multi_node_dep", "multi_node_tp"],
             "default_strategy": "single_node_tep"}
        assert d.recommend_strategy(r, 2) == "multi_node_tp"
        r["compatible_strategies"] = ["single_node_tep", "multi_node_dep"]
        assert d.recommend_strategy(r, 3) == "multi_node_dep"
        r["compatible_strategies"] = ["single_node_tep", "multi_node_tp_pp"]
        assert d.recommend_strategy(r, 2) == "single_node_tep"  # step 3 misses, offered[0]

    def test_multi_and_pd_defaults_kept(self) -> None:
        r = {"compatible_strategies": ALL_STRATEGIES, "default_strategy": "multi_node_dep"}
        assert d.recommend_strategy(r, 1) == "multi_node_dep"
        r["default_strategy"] = "pd_cluster"
        assert d.recommend_strategy(r, 1) == d.recommend_strategy(r, 4) == "pd_cluster"

    def test_default_not_offered_is_ignored(self) -> None:
        r = {"compatible_strategies": ["single_node_dep", "single_node_tp"], "default_strategy": "single_node_tep"}
        assert d.recommend_strategy(r, 1) == "single_node_tp"

    def test_fallbacks(self) -> None:
        assert d.recommend_strategy({"compatible_strategies": ["multi_node_tep", "multi_node_dep"]}, 2) \
            == "multi_node_dep"
        assert d.recommend_strategy({"compatible_strategies": ["single_node_dep", "single_node_tp"]}, 2) \
            == "single_node_tp"
        assert d.recommend_strategy({"compatible_strategies": ["single_node_dep"]}, 1) == "single_node_dep"
        assert d.recommend_strategy({}, 1) == "single_node_tp"
        assert d.recommend_strategy({"strategy_hardware": {"pd_cluster": {"b200": "supported"}}}, 1) == "pd_cluster"


class TestSingleNodeTp:
    """§4.5."""

    def tp(self, bundled, hw, variant=None, so_tp=None, strategy="single_node_tp"):
        r = {"strategy_overrides": {"single_node_tp": {"tp": so_tp}}} if so_tp is not None else {}
        return d.resolve_single_node_tp(r, variant or {}, _prof(bundled).get(hw, {}), strategy, hw)

    def test_other_strategies_use_the_node(self, bundled) -> None:
        assert self.tp(bundled, "h200", {"tp": 2}, strategy="single_node_tep") == 8
        assert self.tp(bundled, "gb200", {"tp": 2}, strategy="multi_node_tp") == 4
        assert self.tp(bundled, "h200", {"tp": 2}, strategy="whatever") == 8

    def test_variant_tp_clamped(self, bundled) -> None:
        assert self.tp(bundled, "h200", {"tp": 2}) == 2
        assert self.tp(bundled, "gb200", {"tp": 8}) == 4
        assert self.tp(bundled, "h200", {"tp": {"hopper": 16}}) == 8

    def test_cpu_not_clamped(self, bundled) -> None:
        assert self.tp(bundled, "xeon6", {"tp": {"xeon6": 8}}) == 8
        assert self.tp(bundled, "xeon6", so_tp=6) == 6

    def test_variant_before_strategy_override(self, bundled) -> None:
        assert self.tp(bundled, "h200", {"tp": 2}, so_tp=4) == 2
        assert self.tp(bundled, "h200", {"tp": {"b200": 2}}, so_tp={"default": 4}) == 4
        assert self.tp(bundled, "h200", {}, so_tp=16) == 8

    @pytest.mark.parametrize("bad", [0, -2, "2", None, {"default": "4"}, {"default": 0}])
    def test_non_positive_or_non_numbers_ignored(self, bundled, bad) -> None:
        assert self.tp(bundled, "h200", {"tp": bad, "vram_minimum_gb": 10}) == 1

    @pytest.mark.parametrize(("vram", "want"), [(10, 1), (141, 1), (141.5, 8), (300, 8), (None, 8), (0, 8)])
    def test_auto_fit_is_binary(self, bundled, vram, want) -> None:
        assert self.tp(bundled, "h200", {"vram_minimum_gb": vram}) == want

    def test_auto_fit_without_data(self, bundled) -> None:
        assert self.tp(bundled, "nope", {"vram_minimum_gb": 10}) == 1  # unknown hardware: gpuCount 1
        assert d.resolve_single_node_tp({}, {"vram_minimum_gb": 10}, {"gpu_count": 4}, "single_node_tp", "x") == 4

    def test_auto_fit_uses_the_per_hardware_budget(self, bundled) -> None:
        v = {"vram_minimum_gb": 300, "hardware_overrides": {"h200": {"vram_minimum_gb": 100}}}
        assert self.tp(bundled, "h200", v) == 1
        assert self.tp(bundled, "h100", v) == 8

    def test_in_the_command(self, make_catalog) -> None:
        cat = make_catalog(recipe(variants={"default": {"vram_minimum_gb": 150}},
                                  compatible_strategies=["single_node_tp", "single_node_tep", "single_node_dep"]))
        assert tail(render(cat, hw_id="b200")["argv"]) == ["--tensor-parallel-size", "1"]
        assert tail(render(cat, hw_id="h200")["argv"]) == ["--tensor-parallel-size", "8"]
        assert tail(render(cat, hw_id="h200", strategy="single_node_dep")["argv"]) == ["--enable-expert-parallel",
                                                                                  "--data-parallel-size", "8"]
        assert tail(render(cat, hw_id="h200", strategy="unknown")["argv"]) == ["--tensor-parallel-size", "8"]


FEATURE_RECIPE = {
    "features": {"a": {}, "b": {}, "c": {}, "d": {"modes": {"x": {"args": []}}}},
    "opt_in_features": ["b", "d"],
    "hardware_opt_in_features": {"mi300x": ["a"], "h200": ["c"]},
    "variants": {"default": {}, "fast": {"default_modes": {"d": "x", "b": "y"}}},
}


class TestDefaultFeatures:
    """§4.6-§4.7."""

    def test_declaration_order_minus_opt_ins(self) -> None:
        assert d.default_features(FEATURE_RECIPE, "b200", "default") == ["a", "c"]
        assert d.default_features(FEATURE_RECIPE, "mi300x", "default") == ["c"]
        assert d.default_features(FEATURE_RECIPE, "h200", "default") == ["a"]

    def test_default_modes_force_on(self) -> None:
        assert d.default_features(FEATURE_RECIPE, "b200", "fast") == ["a", "b", "c", "d"]
        assert d.default_features(FEATURE_RECIPE, "mi300x", "fast") == ["b", "c", "d"]

    def test_no_fallback_for_unknown_variant_key(self) -> None:
        r = dict(FEATURE_RECIPE, variants={"default": {"default_modes": {"d": "x"}}})
        assert d.default_features(r, "b200", "default") == ["a", "c", "d"]
        assert d.default_features(r, "b200", "other") == ["a", "c"]

    def test_default_mode_resolution_in_the_engine(self, make_catalog) -> None:
        feat = {"default_mode": "b", "modes": {"a": {"args": ["--m", "a"]}, "b": {"args": ["--m", "b"]},
                                                "c": {"args": ["--m", "c"], "variants": ["v2"]}}}
        cat = make_catalog(recipe(features={"f": feat},
                                  variants={"default": {}, "v2": {"default_modes": {"f": "c"}}}))
        assert tail(render(cat, features=["f"])["argv"])[-1] == "b"
        assert tail(render(cat, features=["f"], variant_key="v2")["argv"])[-1] == "c"
        assert tail(render(cat, features=["f"], feature_modes={"f": "a"})["argv"])[-1] == "a"
        assert tail(render(cat, features=["f"], feature_modes={"f": "c"})["argv"])[-1] == "b"  # not for default

    def test_first_of_duplicate_mode_picks_wins(self, make_catalog) -> None:
        """``--mode`` repeats and ``fmode=f:a,f:b`` parses: the engine honours the first pick, like the page."""
        feat = {"modes": {"a": {"args": ["--m", "a"]}, "b": {"args": ["--m", "b"]}}}
        cat = make_catalog(recipe(features={"f": feat}))
        assert tail(render(cat, features=["f"], feature_modes=(("f", "a"), ("f", "b")))["argv"])[-1] == "a"
        assert tail(render(cat, features=["f"], feature_modes=(("f", "b"), ("f", "a")))["argv"])[-1] == "b"
