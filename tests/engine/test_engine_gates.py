"""Gates and predicates (synthesis.md §3) with the seed-era selectors and per-hardware VRAM
(extensions.md §2.2, §2.4)."""

from __future__ import annotations

import pytest
from engine_helpers import recipe, render, tail

from vllm_recipes.jsvalues import is_list
from vllm_recipes.select import gates as g

B200 = {"brand": "NVIDIA", "generation": "blackwell", "arch": "sm100", "gpu_count": 8, "vram_gb": 1440}
H200 = {"brand": "NVIDIA", "generation": "hopper", "arch": "sm90", "gpu_count": 8, "vram_gb": 1128}
MI300X = {"brand": "AMD", "generation": "amd", "arch": "gfx942", "gpu_count": 8, "vram_gb": 1536}
STATION = {"brand": "NVIDIA", "generation": "blackwell", "arch": "sm103", "gpu_count": 1, "vram_gb": 252,
           "scalable": False, "restricted": True}


class TestPrecision:
    """§3.1."""

    @pytest.mark.parametrize("precision", ["nvfp4", "fp4"])
    def test_fp4_implies_nvidia_blackwell(self, precision) -> None:
        v = {"precision": precision}
        assert g.constraint(v) == {"brand": "NVIDIA", "generation": "blackwell"}
        assert g.is_precision_compatible(B200, v)
        assert not g.is_precision_compatible(H200, v)
        assert not g.is_precision_compatible(MI300X, v)
        assert not g.is_precision_compatible({}, v)

    @pytest.mark.parametrize("precision", ["fp8", "bf16", "int8", None])
    def test_other_precisions_are_unconstrained(self, precision) -> None:
        assert g.constraint({"precision": precision}) is None
        assert g.is_precision_compatible({}, {"precision": precision})

    def test_precision_hardware_overrides(self) -> None:
        v = {"precision": "nvfp4", "precision_hardware": {"brand": "AMD"}}
        assert g.is_precision_compatible(MI300X, v)
        assert not g.is_precision_compatible(B200, v)
        assert g.is_precision_compatible(H200, {"precision": "fp8", "precision_hardware": {"generation": "hopper"}})
        assert not g.is_precision_compatible(B200, {"precision_hardware": {"generation": "hopper"}})
        assert g.is_precision_compatible(B200, {"precision": "nvfp4", "precision_hardware": {}})  # {} is truthy

    def test_brand_is_case_sensitive(self) -> None:
        assert not g.is_precision_compatible(B200, {"precision_hardware": {"brand": "nvidia"}})

    def test_generation_list_not_normalized(self) -> None:
        p = {"brand": "NVIDIA", "generation": ["hopper", "blackwell"]}
        assert g.is_precision_compatible(p, {"precision": "nvfp4"})


class TestRecipeAndVariantAllowlists:
    """§3.2-§3.4 and extensions §2.2."""

    def test_meta_hardware_opt_out(self) -> None:
        r = {"meta": {"hardware": {"h200": "unsupported", "b200": "verified", "h100": "planned"}}}
        assert not g.is_hardware_supported(r, "h200")
        assert g.is_hardware_supported(r, "b200")
        assert g.is_hardware_supported(r, "h100")
        assert g.is_hardware_supported(r, "mi300x")
        assert g.is_hardware_supported({}, "h200")

    def test_variant_allowlist(self) -> None:
        assert g.is_variant_hardware_supported({}, "b200", B200)
        assert g.is_variant_hardware_supported({"supported_hardware": []}, "b200", B200)
        assert g.is_variant_hardware_supported({"supported_hardware": "b200"}, "h200", H200)  # not a list
        assert g.is_variant_hardware_supported({"supported_hardware": ["b200"]}, "b200", B200)
        assert not g.is_variant_hardware_supported({"supported_hardware": ["b200"]}, "h200", H200)

    def test_arch_selectors(self) -> None:
        v = {"supported_hardware": ["arch:sm90", "mi300x"]}
        assert g.is_variant_hardware_supported(v, "h200", H200)
        assert g.is_variant_hardware_supported(v, "mi300x", MI300X)
        assert not g.is_variant_hardware_supported(v, "b200", B200)
        assert not g.is_variant_hardware_supported({"supported_hardware": ["arch:sm90"]}, "x", {})  # no arch
        assert not g.is_variant_hardware_supported({"supported_hardware": ["arch:SM90"]}, "h200", H200)

    def test_arch_selectors_against_the_bundled_taxonomy(self, bundled) -> None:
        v = {"supported_hardware": ["arch:sm103", "arch:gfx950"]}
        hit = [hw for hw, p in bundled.hardware_profiles.items() if g.is_variant_hardware_supported(v, hw, p)]
        assert hit == ["b300", "gb300", "dgx_station_gb300", "mi350x", "mi355x"]

    def test_unknown_ids_match_nothing(self, bundled) -> None:
        v = {"supported_hardware": ["h999"]}
        assert not any(g.is_variant_hardware_supported(v, hw, p) for hw, p in bundled.hardware_profiles.items())

    def test_restricted_only_when_declared(self) -> None:
        r = {"meta": {"hardware": {"dgx_station_gb300": "unsupported"}}}
        assert g.is_listed(r, "dgx_station_gb300", STATION)  # any value declares it
        assert not g.is_listed({}, "dgx_station_gb300", STATION)
        assert g.is_listed({}, "h200", H200)


class TestFit:
    """§3.5 and extensions §2.4."""

    def test_fits_single_node(self) -> None:
        assert g.fits_single_node(H200, {"vram_minimum_gb": 1128})
        assert not g.fits_single_node(H200, {"vram_minimum_gb": 1129})
        assert g.fits_single_node(H200, {})  # missing info fits
        assert g.fits_single_node(H200, {"vram_minimum_gb": 0})
        assert g.fits_single_node({}, {"vram_minimum_gb": 99999})
        assert g.fits_single_node({"vram_gb": "1128"}, {"vram_minimum_gb": 99999})  # not a number

    def test_per_hardware_vram_budget(self) -> None:
        v = {"vram_minimum_gb": 614, "hardware_overrides": {"dgx_station_gb300": {"vram_minimum_gb": 244}}}
        assert g.effective_vram_min(v, "dgx_station_gb300") == 244
        assert g.effective_vram_min(v, "gb300") == 614
        assert g.fits_single_node(STATION, v, "dgx_station_gb300")
        assert not g.fits_single_node(STATION, v, "other")
        assert g.variant_runs_on(STATION, v, "dgx_station_gb300")
        assert not g.variant_runs_on(STATION, {"vram_minimum_gb": 614}, "dgx_station_gb300")

    def test_scalable_only_literal_false(self) -> None:
        assert g.is_scalable({})
        assert g.is_scalable({"scalable": None})
        assert g.is_scalable({"scalable": 0})
        assert not g.is_scalable({"scalable": False})

    def test_variant_runs_on(self) -> None:
        assert not g.variant_runs_on(H200, {"precision": "nvfp4"}, "h200")
        assert not g.variant_runs_on(H200, {"supported_hardware": ["b200"]}, "h200")
        assert g.variant_runs_on(H200, {"supported_hardware": ["b200"]}, None)  # no id: allowlist not checked
        assert g.variant_runs_on(H200, {"vram_minimum_gb": 99999}, "h200")  # scalable

    def test_pd_fits_single_node(self) -> None:
        assert g.pd_fits_single_node(H200, {"vram_minimum_gb": 564})
        assert not g.pd_fits_single_node(H200, {"vram_minimum_gb": 565})
        assert g.pd_fits_single_node(H200, {})
        assert not g.pd_fits_single_node({"gpu_count": 1, "vram_gb": 999}, {})
        assert not g.pd_fits_single_node({"vram_gb": 999}, {})  # gpu_count missing -> 0
        assert not g.pd_fits_single_node({"gpu_count": 8}, {"vram_minimum_gb": 1})
        assert g.pd_fits_single_node({"gpu_count": 8}, {})
        assert not g.pd_fits_single_node(None, {})
        assert not g.pd_fits_single_node(H200, None)


class TestStrategies:
    """§3.6-§3.7."""

    def test_supported_by_gate_else_membership(self) -> None:
        r = {"compatible_strategies": ["single_node_tp"],
             "strategy_hardware": {"single_node_tp": {"amd": "unsupported"},
                                   "single_node_tep": {"b200": "verified", "default": "unsupported"},
                                   "pd_cluster": {"hopper": "whatever"}}}
        assert g.is_strategy_supported_on_hardware(r, "single_node_tp", H200, "h200")
        assert not g.is_strategy_supported_on_hardware(r, "single_node_tp", MI300X, "mi300x")
        assert g.is_strategy_supported_on_hardware(r, "single_node_tep", B200, "b200")
        assert not g.is_strategy_supported_on_hardware(r, "single_node_tep", H200, "h200")
        assert g.is_strategy_supported_on_hardware(r, "pd_cluster", H200, "h200")  # any non-"unsupported"
        assert not g.is_strategy_supported_on_hardware(r, "pd_cluster", B200, "b200")  # gate absent, not listed
        assert not g.is_strategy_supported_on_hardware({}, "single_node_tp", H200, "h200")

    def test_offered_set(self) -> None:
        r = {"compatible_strategies": ["single_node_tep", "single_node_tp"],
             "strategy_hardware": {"multi_node_tp": {"b200": "verified"},
                                   "pd_cluster": {"h200": "unsupported", "b200": "supported"},
                                   "single_node_tp": {"b200": "supported"},
                                   "multi_node_dep": "supported",
                                   "multi_node_tep": {"default": "supported"}}}
        assert g.offered_strategies(r) == ["single_node_tep", "single_node_tp", "pd_cluster", "multi_node_tep"]
        assert g.offered_strategies({}) == []

    @pytest.mark.parametrize(("cfg", "key", "hw", "want"), [
        (None, "multi_node_tp", "h200", 0),
        (16, "multi_node_tp", "h200", 16),
        (16, "tep", None, 16),
        ({"multi_node_tp": 16}, "multi_node_tp", "h200", 16),
        ({"multi_node_tp": 16, "h200": {"multi_node_tp": 32}}, "multi_node_tp", "h200", 32),
        ({"multi_node_tp": 16, "h200": 8}, "multi_node_tp", "h200", 16),
        ({"h200": 24}, "single_node_dep", "h200", 24),
        ({"h200": 24}, "single_node_dep", "b200", 0),
        ({"h200": 24}, "single_node_dep", None, 0),
        ({"multi_node_dep": 12, "single_node_dep": 4}, "dep", "h200", 12),
        ({"single_node_tep": 4}, "tep", "h200", 4),
        ({"tp": 0, "multi_node_tp": 99}, "tp", "h200", 0),  # first *present*
        ({"blackwell": {"multi_node_tp": 64}}, "multi_node_tp", "b200", 0),  # exact ids only
    ])
    def test_min_gpus(self, cfg, key, hw, want) -> None:
        r = {} if cfg is None else {"strategy_min_gpus": cfg}
        assert g.min_gpus_for_strategy(r, key, hw) == want

    def test_nodes_and_reachability(self) -> None:
        r = {"strategy_min_gpus": {"multi_node_tp": 20, "single_node_tp": 9}}
        assert g.nodes_for_strategy(r, "multi_node_tp", 8, "h200") == 3
        assert g.nodes_for_strategy(r, "multi_node_tp", 4, "gb200") == 5
        assert g.nodes_for_strategy(r, "multi_node_tp", None, "x") == 3  # missing gpu_count -> 8
        assert g.nodes_for_strategy(r, "multi_node_tp", 0, "x") == 3
        assert g.nodes_for_strategy(r, "multi_node_dep", 8, "h200") == 1  # 0 -> 1
        assert not g.is_strategy_reachable(r, "multi_node_tp", "multi_node", 1, "x")  # 16 nodes x 1 GPU < 20
        assert g.is_strategy_reachable(r, "multi_node_tp", "multi_node", 2, "x")
        assert not g.is_strategy_reachable({"strategy_min_gpus": 17}, "multi_node_tp", "multi_node", 1, "x")
        assert g.is_strategy_reachable({"strategy_min_gpus": 16}, "multi_node_tp", "multi_node", 1, "x")
        assert g.is_strategy_reachable({"strategy_min_gpus": 128}, "pd_cluster", "pd_cluster", 8, "h200")
        assert not g.is_strategy_reachable(r, "single_node_tp", "single_node", 8, "h200")
        assert not g.is_strategy_reachable(r, "single_node_tp", "single_node", None, "x")  # 1 x 8 < 9
        assert g.is_strategy_reachable(r, "single_node_tp", "single_node", 16, "x")
        assert g.follower_ranks(4) == [1, 2, 3]
        assert g.follower_ranks(1) == [] and g.follower_ranks(None) == []


class TestPdPoolModes:
    """§3.8."""

    @pytest.mark.parametrize(("offered", "restrict", "want"), [
        (["single_node_tp"], None, ["tp"]),
        (["multi_node_dep", "single_node_tep", "multi_node_tp_pp"], None, ["tp", "tep", "dep"]),
        (["multi_node_tp_dp"], None, ["tp"]),
        (["pd_cluster"], None, ["tp"]),
        ([], None, ["tp"]),
        (["single_node_dep", "single_node_tep"], ["dep"], ["dep"]),
        (["single_node_dep", "single_node_tep"], ["tp"], ["tep", "dep"]),  # would be empty: ignored
        (["single_node_dep", "single_node_tp"], [], ["tp", "dep"]),
        (["my_tpx"], None, ["tp"]),  # nothing matched -> {tp}
    ])
    def test_modes(self, offered, restrict, want) -> None:
        r = {"compatible_strategies": offered}
        if restrict is not None:
            r["strategy_overrides"] = {"pd_cluster": {"pool_modes": restrict}}
        assert g.pd_pool_modes(r) == want


MODES_FEATURE = {"default_mode": "b", "modes": {
    "a": {"args": ["--a"]},
    "b": {"args": ["--b"], "variants": ["fp8"]},
    "c": {"args": ["--c"], "hardware": {"hopper": "unsupported", "b200": "unsupported"}},
    "d": {"args": ["--d"], "hardware": {"nvidia": "unsupported", "default": "unsupported"}},
}}


class TestFeatureModes:
    """§3.9-§3.10."""

    def test_allowed_modes(self) -> None:
        assert g.allowed_modes(MODES_FEATURE, "default", H200, "h200") == ["a", "d"]
        assert g.allowed_modes(MODES_FEATURE, "fp8", B200, "b200") == ["a", "b", "d"]
        assert g.allowed_modes(MODES_FEATURE, "fp8", B200, "gb200") == ["a", "b", "c", "d"]

    def test_resolution_order(self) -> None:
        v = {"default_modes": {"f": "c"}}
        assert g.resolve_mode_key(MODES_FEATURE, "f", v, "fp8", B200, "gb200", "a") == "a"  # user pick
        assert g.resolve_mode_key(MODES_FEATURE, "f", v, "fp8", B200, "gb200", None) == "c"  # variant default
        assert g.resolve_mode_key(MODES_FEATURE, "f", {}, "fp8", B200, "gb200", None) == "b"  # feature default
        assert g.resolve_mode_key(MODES_FEATURE, "f", {}, "default", B200, "gb200", None) == "a"  # first allowed
        assert g.resolve_mode_key(MODES_FEATURE, "f", v, "fp8", B200, "b200", "zzz") == "b"  # unknown pick ignored
        assert g.resolve_mode_key(MODES_FEATURE, "f", v, "fp8", B200, "b200", "c") == "b"  # disallowed pick ignored

    def test_variant_key_is_the_given_key(self) -> None:
        feat = {"modes": {"x": {"args": [], "variants": ["default"]}}}
        assert g.resolve_mode_key(feat, "f", {}, "default", H200, "h200", None) == "x"
        assert g.resolve_mode_key(feat, "f", {}, "unknown_key", H200, "h200", None) is None

    def test_not_a_map_or_nothing_allowed(self) -> None:
        assert g.resolve_mode_key({"modes": ["a"]}, "f", {}, "default", H200, "h200", None) is None
        feat = {"modes": {"x": {"args": [], "variants": ["fp8"]}}}
        assert g.resolve_mode_key(feat, "f", {}, "default", H200, "h200", None) is None

    def test_default_mode_for(self) -> None:
        assert g.default_mode_for(MODES_FEATURE) == "b"
        assert g.default_mode_for({"default_mode": "zz", "modes": {"q": {}, "r": {}}}) == "q"

    def test_feature_strategy_allowlist(self) -> None:
        assert g.is_feature_allowed_for_strategy({}, "single_node_tp")
        assert g.is_feature_allowed_for_strategy({"strategies": []}, "single_node_tp")
        assert g.is_feature_allowed_for_strategy({"strategies": ["pd_cluster"]}, "pd_cluster")
        assert not g.is_feature_allowed_for_strategy({"strategies": ["pd_cluster"]}, "single_node_tp")

    def test_conflicts(self) -> None:
        r = {"features": {"a": {"conflicts_with": ["b"]}, "b": {}, "c": {"conflicts_with": ["a"]},
                          "text_only": {}, "encoder_parallel": {}}}
        assert g.feature_conflicts(r, "a") == ["b", "c"]
        assert g.feature_conflicts(r, "b") == ["a"]
        assert g.feature_conflicts(r, "text_only") == ["encoder_parallel"]
        assert g.feature_conflicts(r, "encoder_parallel") == ["text_only"]
        assert g.feature_conflicts({}, "text_only") == ["encoder_parallel"]  # built in


class TestKvGates:
    """§3.11-§3.12."""

    def test_strategy_gate(self, bundled) -> None:
        s = bundled.strategies
        lm = bundled.kv_offload_options["lmcache"]
        simple = bundled.kv_offload_options["simple"]
        assert g.kv_offload_allowed_for_strategy(lm, "single_node_dep", s["single_node_dep"])
        assert not g.kv_offload_allowed_for_strategy(lm, "multi_node_tp", s["multi_node_tp"])
        assert g.kv_offload_allowed_for_strategy(simple, "multi_node_tp", s["multi_node_tp"])
        assert not g.kv_offload_allowed_for_strategy(simple, "pd_cluster", s["pd_cluster"])
        assert not g.kv_offload_allowed_for_strategy(simple, "kv", s["kv_store_centralized_mooncake"])
        assert not g.kv_offload_allowed_for_strategy(None, "single_node_tp", s["single_node_tp"])

    def test_recipe_gate(self, bundled) -> None:
        opts = bundled.kv_offload_options
        assert g.kv_offload_supported_for_recipe(opts["simple"], "simple", {})
        assert not g.kv_offload_supported_for_recipe(
            opts["simple"], "simple", {"kv_offload_support": {"simple": "unsupported"}})
        assert not g.kv_offload_supported_for_recipe(opts["offloading_cpu"], "offloading_cpu", {})
        assert g.kv_offload_supported_for_recipe(
            opts["offloading_cpu"], "offloading_cpu", {"kv_offload_support": {"offloading_cpu": "verified"}})
        assert not g.kv_offload_supported_for_recipe(
            opts["offloading_cpu"], "offloading_cpu", {"kv_offload_support": {"offloading_cpu": "yes"}})

    def test_brand_gate(self, bundled) -> None:
        opt = bundled.kv_offload_options["offloading_fs"]
        assert g.kv_offload_brand_supported(opt, MI300X)
        assert not g.kv_offload_brand_supported(opt, {"brand": "Intel"})
        assert not g.kv_offload_brand_supported(opt, {})
        assert g.kv_offload_brand_supported(bundled.kv_offload_options["simple"], {})

    def test_mooncake_front_end_gate(self) -> None:
        r = {"kv_cache_strategy_hardware": {"kv_store_centralized_mooncake": {"h200": "unsupported"}}}
        assert g.kv_store_offered(r, "kv_store_distributed_mooncake", H200, "h200")
        assert not g.kv_store_offered(r, "kv_store_centralized_mooncake", H200, "h200")
        assert g.kv_store_offered(r, "kv_store_centralized_mooncake", MI300X, "mi300x")
        assert not g.kv_store_offered({}, "kv_store_centralized_mooncake", STATION, "dgx_station_gb300")
        assert not g.kv_store_offered({}, "kv_store_centralized_mooncake", {"brand": "Google"}, "trillium")

    def test_gated_out_option_is_silent(self, make_catalog) -> None:
        cat = make_catalog(recipe(compatible_strategies=["single_node_tp", "multi_node_tp"]))
        base = tail(render(cat, hw_id="h200")["argv"])
        for kv, extra in (("offloading_cpu", {}), ("lmcache", {"strategy": "multi_node_tp", "node_count": 2}),
                          ("nope", {})):
            obj = render(cat, hw_id="h200", kv_offload=kv, **extra)
            argv = tail(obj.get("argv") or obj["head_argv"])
            assert "--kv-transfer-config" not in argv, kv
            assert "companions" not in obj
        assert tail(render(cat, hw_id="h200", kv_offload="offloading_cpu")["argv"]) == base

    def test_engine_composes_mooncake_anywhere(self, make_catalog) -> None:
        cat = make_catalog(recipe())
        obj = render(cat, hw_id="trillium", kv_offload="kv_store_distributed_mooncake")
        assert obj["deploy_type"] == "kv_store_lb"
        assert obj["vllm_install"] is None  # neither NVIDIA nor AMD


def test_is_list_helper_accepts_tuples() -> None:
    assert is_list(("a",)) and is_list(["a"]) and not is_list("a")
