"""Argument assembly (synthesis.md §5): layer order, strategy overrides, the REPLACE rule of
hardware overrides, advanced args, features (modes vs boolean) and the KV layers."""

from __future__ import annotations

import pytest
from engine_helpers import recipe, render, resolve_sel, tail

from vllm_recipes.synth.layers import ARG_ORDER, ENV_ORDER

SIMPLE_KV = ('{"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both","kv_connector_extra_config":'
             '{"cpu_bytes_to_use_per_rank":236223201280,"lazy_offload":false}}')
MOONCAKE_KV = '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}'
NIXL_PRODUCER = '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_load_failure_policy":"fail"}'


def layered_recipe() -> dict:
    """Every argument source carries its own flag."""
    return recipe(
        model={"model_id": "org/model", "base_args": ["--base"]},
        variants={"default": {
            "extra_args": ["--variant"],
            "hardware_overrides": {"b200": {"extra_args": ["--variant-exact"]},
                                   "blackwell": {"extra_args": ["--variant-gen"]},
                                   "hopper": {"extra_args": ["--variant-hopper"]}},
        }},
        compatible_strategies=["single_node_tp", "single_node_tep", "multi_node_tp"],
        hardware_overrides={"blackwell": {"extra_args": ["--recipe-gen"]},
                            "hopper": {"extra_args": ["--recipe-hopper"]}},
        strategy_overrides={"single_node_tep": {
            "extra_args": ["--so-extra"], "vllm_args": ["--so-vllm"],
            "hardware_overrides": {"b200": {"extra_args": ["--so-exact"]}},
        }},
        features={"feat": {"args": ["--feat"]}, "other": {"args": ["--other"]}},
    )


class TestOrder:
    """§5.1."""

    def test_every_step_in_order(self, make_catalog) -> None:
        cat = make_catalog(layered_recipe())
        argv = tail(render(cat, hw_id="b200", strategy="single_node_tep", features=["feat"],
                           advanced=["--adv"], kv_offload="simple")["argv"])
        assert argv == ["--base", "--variant", "--variant-exact", "--enable-expert-parallel",
                        "--tensor-parallel-size", "8", "--so-extra", "--so-vllm", "--recipe-gen", "--variant-gen",
                        "--so-exact", "--adv", "--feat", "--kv-transfer-config", SIMPLE_KV]

    def test_mooncake_connector_is_last(self, make_catalog) -> None:
        cat = make_catalog(layered_recipe())
        obj = render(cat, hw_id="h200", strategy="single_node_tep", features=["feat"],
                     kv_offload="kv_store_distributed_mooncake")
        assert tail(obj["vllm_argv"]) == ["--base", "--variant", "--enable-expert-parallel", "--tensor-parallel-size",
                                          "8", "--so-extra", "--so-vllm", "--recipe-hopper", "--variant-hopper",
                                          "--feat", "--kv-transfer-config", MOONCAKE_KV]

    def test_layer_tables(self) -> None:
        assert ARG_ORDER == ("base", "variant", "variant-hardware", "strategy", "parallelism", "strategy-override",
                             "hardware-overrides", "advanced", "features", "kv-option", "mooncake")
        assert ENV_ORDER == ("base", "frontend", "variant", "variant-hardware", "strategy", "kv-option", "mooncake",
                             "pd-pinning", "strategy-override", "hardware-overrides")

    def test_default_variant_extra_args_apply(self, make_catalog) -> None:
        cat = make_catalog(layered_recipe())
        assert tail(render(cat, hw_id="mi300x")["argv"])[:2] == ["--base", "--variant"]

    def test_unknown_variant_uses_default_data(self, make_catalog) -> None:
        cat = make_catalog(layered_recipe())
        assert render(cat, hw_id="mi300x", variant_key="nope")["argv"][3:5] == ["--base", "--variant"]

    def test_no_model_id_anywhere(self, make_catalog) -> None:
        data = recipe()
        data["model"] = {}
        cat = make_catalog({"org/model": data})
        assert render(cat)["command"] == "vllm serve unknown \\\n  --tensor-parallel-size 8"

    def test_variant_model_id_wins(self, make_catalog) -> None:
        cat = make_catalog(recipe(variants={"default": {}, "q": {"model_id": "org/model-q"}}))
        assert render(cat, variant_key="q")["argv"][2] == "org/model-q"


class TestStrategyOverrides:
    """§5.3."""

    def test_override_wins_by_position(self, make_catalog) -> None:
        cat = make_catalog(recipe(compatible_strategies=["single_node_dep"], strategy_overrides={
            "single_node_dep": {"extra_args": ["--data-parallel-size", "4"]}}))
        assert tail(render(cat, strategy="single_node_dep")["argv"]) == [
            "--enable-expert-parallel", "--data-parallel-size", "4"]

    def test_tp_is_not_an_argument(self, make_catalog) -> None:
        cat = make_catalog(recipe(strategy_overrides={"single_node_tp": {"tp": 2}}))
        assert tail(render(cat)["argv"]) == ["--tensor-parallel-size", "2"]
        assert tail(render(cat, strategy="single_node_tep")["argv"]) == ["--enable-expert-parallel",
                                                                          "--tensor-parallel-size", "8"]

    def test_pd_reads_role_blocks_only(self, make_catalog) -> None:
        cat = make_catalog(recipe(compatible_strategies=["single_node_tp", "pd_cluster"], strategy_overrides={
            "pd_cluster": {"extra_args": ["--top"], "vllm_args": ["--top-v"],
                           "prefill": {"extra_args": ["--p-extra"], "vllm_args": ["--p-vllm"]}},
            "single_node_tp": {"prefill": {"extra_args": ["--ignored"]}, "extra_args": ["--sn"]}}))
        pd = render(cat, strategy="pd_cluster", pd_nodes={"prefill": 1, "decode": 1})
        assert tail(pd["prefill"]["argv"]) == ["--port", "8001", "--kv-transfer-config", NIXL_PRODUCER,
                                               "--tensor-parallel-size", "8", "--p-extra", "--p-vllm"]
        assert "--top" not in pd["decode"]["argv"] and "--p-extra" not in pd["decode"]["argv"]
        assert tail(render(cat)["argv"]) == ["--tensor-parallel-size", "8", "--sn"]

    def test_unknown_strategy_still_reads_its_overrides(self, make_catalog) -> None:
        cat = make_catalog(recipe(strategy_overrides={"mystery": {"extra_args": ["--m"]}}))
        obj = render(cat, strategy="mystery", hw_id="gb200")
        assert obj["deploy_type"] == "single_node"
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "4", "--m"]


class TestHardwareOverrideReplace:
    """§5.4: a strategy generation block REPLACES the recipe and variant generation blocks."""

    def make(self, make_catalog, so_ho):
        return make_catalog(recipe(
            hardware_overrides={"blackwell": {"extra_args": ["--r-gen"], "extra_env": {"R": "1"}},
                                "nvidia": {"extra_args": ["--r-nv"], "extra_env": {"RN": "1"}}},
            variants={"default": {"hardware_overrides": {"blackwell": {"extra_args": ["--v-gen"],
                                                                       "extra_env": {"V": "1"}}}}},
            strategy_overrides={"single_node_tp": {"hardware_overrides": so_ho}}))

    def test_additive_without_strategy_block(self, make_catalog) -> None:
        obj = render(self.make(make_catalog, {"hopper": {"extra_args": ["--s-hop"]}}), hw_id="b200")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "8", "--r-gen", "--v-gen"]
        assert obj["env"] == {"R": "1", "V": "1"}

    def test_nvidia_block_when_generation_missing(self, make_catalog) -> None:
        obj = render(self.make(make_catalog, {}), hw_id="h100")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "8", "--r-nv"]
        assert obj["env"] == {"RN": "1"}

    @pytest.mark.parametrize("block", [{}, {"extra_env": {"S": "1"}}, {"extra_args": []}])
    def test_empty_or_env_only_block_replaces(self, make_catalog, block) -> None:
        obj = render(self.make(make_catalog, {"blackwell": block}), hw_id="b200")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "8"]
        assert obj["env"] == block.get("extra_env", {})

    def test_strategy_nvidia_block_replaces_on_any_nvidia_generation(self, make_catalog) -> None:
        obj = render(self.make(make_catalog, {"nvidia": {"extra_args": ["--s-nv"]}}), hw_id="b200")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "8", "--s-nv"]
        assert obj["env"] == {}

    def test_null_strategy_generation_block_falls_back_to_nvidia(self, make_catalog) -> None:
        obj = render(self.make(make_catalog, {"blackwell": None, "nvidia": {"extra_args": ["--s-nv"]}}),
                     hw_id="b200")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "8", "--s-nv"]
        obj = render(self.make(make_catalog, {"blackwell": None}), hw_id="b200")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "8", "--r-gen", "--v-gen"]

    def test_amd_has_no_nvidia_fallback(self, make_catalog) -> None:
        obj = render(self.make(make_catalog, {"nvidia": {"extra_args": ["--s-nv"]}}), hw_id="mi300x")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "8"]

    def test_exact_strategy_block_is_always_added(self, make_catalog) -> None:
        cat = self.make(make_catalog, {"blackwell": {"extra_args": ["--s-gen"]},
                                       "b200": {"extra_args": ["--s-exact"], "extra_env": {"X": "1"}},
                                       "gb200": None})
        obj = render(cat, hw_id="b200")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "8", "--s-gen", "--s-exact"]
        assert obj["env"] == {"X": "1"}
        assert tail(render(cat, hw_id="gb200")["argv"]) == ["--tensor-parallel-size", "4", "--s-gen"]

    def test_pd_role_exact_block(self, make_catalog) -> None:
        cat = make_catalog(recipe(compatible_strategies=["single_node_tp", "pd_cluster"], strategy_overrides={
            "pd_cluster": {"hardware_overrides": {"h200": {"extra_args": ["--both"]}},
                           "decode": {"hardware_overrides": {"h200": {"extra_args": ["--d-exact"],
                                                                      "extra_env": {"D": "1"}},
                                                             "hopper": {"extra_args": ["--never"]}}}}}))
        pd = render(cat, strategy="pd_cluster")
        assert pd["prefill"]["argv"][-1] == "--both"
        assert pd["decode"]["argv"][-2:] == ["--both", "--d-exact"]
        assert pd["decode"]["env"]["D"] == "1" and "D" not in pd["prefill"]["env"]


class TestFeatures:
    """§5.6 with extensions §2.3."""

    def make(self, make_catalog, **features):
        return make_catalog(recipe(features=features, compatible_strategies=["single_node_tp", "multi_node_tp"]))

    def test_order_follows_the_enabled_list(self, make_catalog) -> None:
        cat = self.make(make_catalog, a={"args": ["--a"]}, b={"args": ["--b"]})
        assert tail(render(cat, features=["b", "a"])["argv"])[2:] == ["--b", "--a"]
        assert tail(render(cat, features=["a", "zzz", "b"])["argv"])[2:] == ["--a", "--b"]

    def test_duplicates_keep_the_last_position(self, make_catalog) -> None:
        cat = self.make(make_catalog, a={"args": ["--a", "1"]}, b={"args": ["--b"]})
        assert tail(render(cat, features=["a", "b", "a"])["argv"])[2:] == ["--b", "--a", "1"]

    def test_boolean_generation_override(self, make_catalog) -> None:
        cat = self.make(make_catalog, f={"args": ["--f", "base"], "hardware_overrides": {
            "hopper": {"args": ["--f", "hopper"]}, "nvidia": {"args": ["--f", "nv"]},
            "amd": {"args": []}, "cpu": {"note": "no args key"}}})
        assert tail(render(cat, features=["f"], hw_id="h200")["argv"])[2:] == ["--f", "hopper"]
        assert tail(render(cat, features=["f"], hw_id="b200")["argv"])[2:] == ["--f", "nv"]
        assert tail(render(cat, features=["f"], hw_id="mi300x")["argv"])[2:] == []  # empty list: nothing
        assert tail(render(cat, features=["f"], hw_id="xeon6")["argv"])[2:] == ["--f", "base"]
        assert tail(render(cat, features=["f"], hw_id="trillium")["argv"])[2:] == ["--f", "base"]

    def test_boolean_exact_gpu_override(self, make_catalog) -> None:
        """extensions §2.3: exact id > generation > brand > default."""
        cat = self.make(make_catalog, f={"args": ["--f", "base"], "hardware_overrides": {
            "gb300": {"args": ["--f", "gb300"]}, "blackwell": {"args": ["--f", "bw"]},
            "default": {"args": ["--f", "dflt"]}, "intel": {"args": ["--f", "intel"]}}})
        assert tail(render(cat, features=["f"], hw_id="gb300")["argv"])[2:] == ["--f", "gb300"]
        assert tail(render(cat, features=["f"], hw_id="b300")["argv"])[2:] == ["--f", "bw"]
        assert tail(render(cat, features=["f"], hw_id="h200")["argv"])[2:] == ["--f", "dflt"]
        assert tail(render(cat, features=["f"], hw_id="xeon6")["argv"])[2:] == ["--f", "intel"]

    def test_modes_never_use_feature_args(self, make_catalog) -> None:
        cat = self.make(make_catalog, m={"args": ["--never"], "modes": {
            "x": {"args": ["--x"], "variants": ["other"]}}})
        assert tail(render(cat, features=["m"])["argv"])[2:] == []

    def test_mode_hardware_override_full_keyed(self, make_catalog) -> None:
        cat = self.make(make_catalog, m={"modes": {"x": {"args": ["--m", "x"], "hardware_overrides": {
            "b200": {"args": ["--m", "b200"]}, "blackwell": {"args": ["--m", "bw"]},
            "amd": {"note": "no args"}, "default": {"args": []}}}}})
        assert tail(render(cat, features=["m"], hw_id="b200")["argv"])[2:] == ["--m", "b200"]
        assert tail(render(cat, features=["m"], hw_id="gb200")["argv"])[2:] == ["--m", "bw"]
        assert tail(render(cat, features=["m"], hw_id="mi300x")["argv"])[2:] == ["--m", "x"]
        assert tail(render(cat, features=["m"], hw_id="h200")["argv"])[2:] == []

    def test_mode_hardware_gate(self, make_catalog) -> None:
        cat = self.make(make_catalog, m={"modes": {
            "x": {"args": ["--m", "x"], "hardware": {"hopper": "unsupported"}},
            "y": {"args": ["--m", "y"], "hardware": {"amd": "unsupported"}}}})
        assert tail(render(cat, features=["m"], hw_id="h200")["argv"])[2:] == ["--m", "y"]
        assert tail(render(cat, features=["m"], hw_id="h200", feature_modes={"m": "x"})["argv"])[2:] == ["--m", "y"]
        assert tail(render(cat, features=["m"], hw_id="mi300x", feature_modes={"m": "y"})["argv"])[2:] == ["--m", "x"]

    def test_strategy_allowlist(self, make_catalog) -> None:
        cat = self.make(make_catalog, f={"args": ["--f"], "strategies": ["multi_node_tp"]})
        assert "--f" not in render(cat, features=["f"])["argv"]
        assert "--f" in render(cat, features=["f"], strategy="multi_node_tp", node_count=2)["head_argv"]

    def test_companion_features_skipped_under_mooncake(self, make_catalog) -> None:
        cat = self.make(make_catalog, c={"args": ["--c"], "companion": {"command": "run-me"}}, d={"args": ["--d"]})
        assert tail(render(cat, features=["c", "d"])["argv"])[2:] == ["--c", "--d"]
        obj = render(cat, features=["c", "d"], kv_offload="kv_store_distributed_mooncake")
        assert tail(obj["vllm_argv"])[2:] == ["--d", "--kv-transfer-config", MOONCAKE_KV]
        multi = render(cat, features=["c", "d"], strategy="multi_node_tp", node_count=2)
        assert "--c" in multi["head_argv"] and "companions" not in multi


class TestKvLayers:
    """§5.7."""

    def test_kv_option_after_features_and_wins(self, make_catalog) -> None:
        cat = make_catalog(recipe(features={"f": {"args": ["--kv-transfer-config", "{}", "--f"]}}))
        assert tail(render(cat, features=["f"], kv_offload="simple")["argv"]) == [
            "--tensor-parallel-size", "8", "--f", "--kv-transfer-config", SIMPLE_KV]

    def test_pd_mooncake_role_args_replace_nixl(self, bundled) -> None:
        pd = render(bundled, "deepseek-ai/DeepSeek-V4.1-Flash", hw_id="gb200", strategy="pd_cluster",
                    pd_nodes={"prefill": 1, "decode": 1}, kv_offload="kv_store_centralized_mooncake")
        for role, nixl in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
            argv = pd[role]["argv"]
            assert argv.count("--kv-transfer-config") == 1
            assert argv[-2] == "--kv-transfer-config"
            assert argv[-1].startswith('{"kv_connector":"MultiConnector"') and nixl in argv[-1]

    def test_taxonomy_option_gated_out_under_pd(self, make_catalog) -> None:
        cat = make_catalog(recipe(compatible_strategies=["pd_cluster"]))
        pd = render(cat, strategy="pd_cluster", kv_offload="simple")
        assert pd["prefill"]["argv"].count("--kv-transfer-config") == 1
        assert NIXL_PRODUCER in pd["prefill"]["argv"]

    def test_kv_option_env(self, make_catalog) -> None:
        cat = make_catalog(recipe(kv_offload_support={"offloading_fs": "verified"}))
        ctx, plan = resolve_sel(cat, kv_offload="offloading_fs")
        assert [(e.key, e.value) for e in plan.env] == [("PYTHONHASHSEED", "0")]
        assert ctx.kv_opt is not None
        assert render(cat, kv_offload="offloading_fs", hw_id="xeon6")["env"] == {}  # brand gate
