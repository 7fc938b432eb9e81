"""Environment assembly (synthesis.md §6, extensions §2.1): merge order with in-place
replacement, frontend env, PD pinning, the NVL4 filter and the per-rank rewrite."""

from __future__ import annotations

from engine_helpers import recipe, render, resolve_sel

PD_ROLE_ENV_KEYS = ["NCCL_CUMEM_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_NVLS_ENABLE", "UCX_NET_DEVICES",
                    "VLLM_NIXL_SIDE_CHANNEL_PORT", "VLLM_NIXL_SIDE_CHANNEL_HOST"]


def env_recipe(**extra) -> dict:
    """Each env source sets its own key and overwrites ``SHARED``."""
    data = recipe(
        model={"model_id": "org/model", "base_env": {"SHARED": "base", "BASE": "1"}},
        variants={"default": {"extra_env": {"VAR": "1", "SHARED": "variant"},
                              "hardware_overrides": {"h200": {"extra_env": {"VEXACT": "1"}},
                                                     "hopper": {"extra_env": {"VGEN": "1", "SHARED": "vgen"}}}}},
        hardware_overrides={"hopper": {"extra_env": {"RGEN": "1"}}},
        compatible_strategies=["single_node_tp", "multi_node_tp", "pd_cluster"],
        strategy_overrides={
            "multi_node_tp": {"env": {"SOENV": "1"}, "extra_env": {"SOEXTRA": "1", "GLOO_SOCKET_IFNAME": "eth9"},
                              "hardware_overrides": {"h200": {"extra_env": {"SOEXACT": "1"}}}},
            "pd_cluster": {"env": {"SOENV": "1", "CUDA_VISIBLE_DEVICES": "7"}, "extra_env": {"NEVER": "1"},
                           "prefill": {"env": {"ROLE": "p"}},
                           "decode": {"hardware_overrides": {"h200": {"extra_env": {"DEXACT": "1"}}}}},
        },
    )
    data.update(extra)
    return data


class TestMergeOrder:
    def test_multi_node(self, make_catalog) -> None:
        cat = make_catalog(env_recipe())
        env = render(cat, strategy="multi_node_tp", node_count=2, kv_offload="kv_store_distributed_mooncake")["env"]
        assert list(env.items()) == [
            ("SHARED", "vgen"), ("BASE", "1"),  # base_env keeps its position when later layers overwrite
            ("VAR", "1"), ("VEXACT", "1"),  # variant, variant exact
            ("GLOO_SOCKET_IFNAME", "eth9"), ("NCCL_SOCKET_IFNAME", "$IFACE_NAME"),  # strategy env (so.extra_env wins)
            ("MOONCAKE_CONFIG_PATH", "$MOONCAKE_CONFIG_PATH"), ("PYTHONHASHSEED", 0),  # mooncake
            ("SOENV", "1"), ("SOEXTRA", "1"),  # so.env then so.extra_env (no role)
            ("RGEN", "1"), ("VGEN", "1"),  # recipe then variant generation
            ("SOEXACT", "1"),
        ]

    def test_pd_roles(self, make_catalog) -> None:
        cat = make_catalog(env_recipe())
        pd = render(cat, strategy="pd_cluster", pd_nodes={"prefill": 1, "decode": 2})
        # h200 is not NVL4: NCCL_CUMEM/MNNVL/NVLS and UCX_NET_DEVICES are filtered out.
        assert list(pd["prefill"]["env"].items()) == [
            ("SHARED", "vgen"), ("BASE", "1"), ("VAR", "1"), ("VEXACT", "1"),
            ("VLLM_NIXL_SIDE_CHANNEL_PORT", "5557"), ("VLLM_NIXL_SIDE_CHANNEL_HOST", "$PREFILL_NODE_1"),
            ("CUDA_VISIBLE_DEVICES", "7"),  # pinning, then so.env overwrites in place
            ("SOENV", "1"), ("ROLE", "p"), ("RGEN", "1"), ("VGEN", "1"),
        ]
        assert list(pd["decode"]["env"].items()) == [
            ("SHARED", "vgen"), ("BASE", "1"), ("VAR", "1"), ("VEXACT", "1"),
            ("VLLM_NIXL_SIDE_CHANNEL_PORT", "5558"), ("VLLM_NIXL_SIDE_CHANNEL_HOST", "$DECODE_NODE_1"),
            ("CUDA_VISIBLE_DEVICES", "7"), ("GLOO_SOCKET_IFNAME", "$IFACE_NAME"),
            ("NCCL_SOCKET_IFNAME", "$IFACE_NAME"), ("SOENV", "1"), ("RGEN", "1"), ("VGEN", "1"), ("DEXACT", "1"),
        ]
        assert pd["env"] == {}

    def test_values_are_not_transformed(self, make_catalog) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model",
                                         "base_env": {"N": 3, "F": 0.5, "B": True, "S": "$HOME x"}}))
        env = render(cat)["env"]
        assert env == {"N": 3, "F": 0.5, "B": True, "S": "$HOME x"}


class TestFrontendEnv:
    """extensions §2.1."""

    def test_right_after_base_env(self, make_catalog) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model", "default_frontend": "rust",
                                         "base_env": {"A": "1", "B": "2"}},
                                  variants={"default": {"extra_env": {"C": "3"}}}))
        obj = render(cat)
        assert obj["frontend"] == "rust"
        assert list(obj["env"].items()) == [("A", "1"), ("B", "2"), ("VLLM_USE_RUST_FRONTEND", "1"), ("C", "3")]
        assert render(cat, frontend="python")["env"] == {"A": "1", "B": "2", "C": "3"}

    def test_later_layers_override_in_place(self, make_catalog) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model", "default_frontend": "rust", "base_env": {"A": "1"}},
                                  hardware_overrides={"hopper": {"extra_env": {"VLLM_USE_RUST_FRONTEND": "0"}}}))
        assert list(render(cat)["env"].items()) == [("A", "1"), ("VLLM_USE_RUST_FRONTEND", "0")]

    def test_base_env_key_keeps_its_position(self, make_catalog) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model", "default_frontend": "rust",
                                         "base_env": {"VLLM_USE_RUST_FRONTEND": "0", "A": "1"}}))
        assert list(render(cat)["env"].items()) == [("VLLM_USE_RUST_FRONTEND", "1"), ("A", "1")]

    def test_absent_default_is_python(self, make_catalog) -> None:
        cat = make_catalog(recipe())
        obj = render(cat)
        assert obj["frontend"] == "python" and obj["env"] == {}
        assert render(cat, frontend="rust")["env"] == {"VLLM_USE_RUST_FRONTEND": "1"}


class TestPdPinning:
    """§6.2."""

    def make(self, make_catalog, **kw):
        return make_catalog(recipe(compatible_strategies=["pd_cluster"], **kw))

    def test_co_located_halves(self, make_catalog) -> None:
        pd = render(self.make(make_catalog), strategy="pd_cluster", hw_id="gb200")
        assert pd["prefill"]["env"]["CUDA_VISIBLE_DEVICES"] == "0,1"
        assert pd["decode"]["env"]["CUDA_VISIBLE_DEVICES"] == "2,3"
        assert "GLOO_SOCKET_IFNAME" not in pd["prefill"]["env"]

    def test_single_gpu_co_located_sets_nothing(self, make_catalog) -> None:
        pd = render(self.make(make_catalog), strategy="pd_cluster", hw_id="nope")
        assert "CUDA_VISIBLE_DEVICES" not in pd["prefill"]["env"]

    def test_whole_node_pools(self, make_catalog) -> None:
        cat = self.make(make_catalog)
        pd = render(cat, strategy="pd_cluster", hw_id="h200", node_count=2)  # legacy: one node per role
        assert pd["prefill"]["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
        assert "NCCL_SOCKET_IFNAME" not in pd["decode"]["env"]
        pd = render(cat, strategy="pd_cluster", hw_id="h200", pd_nodes={"prefill": {"nodes": 3}, "decode": 0})
        assert list(pd["prefill"]["env"])[-3:] == ["CUDA_VISIBLE_DEVICES", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"]
        assert pd["decode"]["env"]["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"

    def test_existing_key_keeps_position(self, make_catalog) -> None:
        cat = self.make(make_catalog, model={"model_id": "org/model",
                                             "base_env": {"CUDA_VISIBLE_DEVICES": "9", "A": "1"}})
        pd = render(cat, strategy="pd_cluster", hw_id="gb200")
        assert list(pd["prefill"]["env"].items())[:2] == [("CUDA_VISIBLE_DEVICES", "0,1"), ("A", "1")]


class TestNvl4Filter:
    """§6.3."""

    def test_filtered_everywhere_but_gb200_gb300(self, make_catalog) -> None:
        cat = make_catalog(recipe(
            model={"model_id": "org/model", "base_env": {"UCX_NET_DEVICES": "mlx5", "KEEP": "1"}},
            compatible_strategies=["pd_cluster", "single_node_tp"],
            strategy_overrides={"pd_cluster": {"env": {"VLLM_USE_NCCL_SYMM_MEM": "1"}}}))
        for hw in ("h200", "b200", "mi300x"):
            env = render(cat, strategy="pd_cluster", hw_id=hw)["prefill"]["env"]
            assert not {"VLLM_USE_NCCL_SYMM_MEM", "NCCL_CUMEM_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_NVLS_ENABLE",
                        "UCX_NET_DEVICES"} & set(env), hw
            assert env["KEEP"] == "1"
        for hw in ("gb200", "gb300"):
            env = render(cat, strategy="pd_cluster", hw_id=hw)["prefill"]["env"]
            assert list(env)[:7] == ["UCX_NET_DEVICES", "KEEP", *PD_ROLE_ENV_KEYS[:3], "VLLM_NIXL_SIDE_CHANNEL_PORT",
                                     "VLLM_NIXL_SIDE_CHANNEL_HOST"]
            assert env["UCX_NET_DEVICES"] == "all" and env["VLLM_USE_NCCL_SYMM_MEM"] == "1"

    def test_never_applied_outside_pd(self, make_catalog) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model", "base_env": {"NCCL_CUMEM_ENABLE": "1"}}))
        assert render(cat, hw_id="h200")["env"] == {"NCCL_CUMEM_ENABLE": "1"}


class TestRankRewrite:
    """§6.4."""

    def make(self, make_catalog, modes=None):
        so = {"pd_cluster": {"pool_modes": modes}} if modes else {}
        return make_catalog(recipe(compatible_strategies=["single_node_tp", "single_node_dep", "pd_cluster"],
                                   strategy_overrides=so,
                                   model={"model_id": "org/model", "base_env": {"PEER": "$DECODE_NODE_1",
                                                                                "NOT": "x$DECODE_NODE_1"}}))

    def test_dep_followers_point_at_their_node(self, make_catalog) -> None:
        pd = render(self.make(make_catalog), strategy="pd_cluster",
                    pd_nodes={"prefill": 1, "decode": {"nodes": 2, "rank": 1, "parallelism": "dep"}})
        env = pd["decode"]["env"]
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$DECODE_NODE_2"
        assert env["PEER"] == "$DECODE_NODE_2" and env["NOT"] == "x$DECODE_NODE_1"
        assert next(iter(env)) == "PEER"  # positions unchanged
        assert pd["prefill"]["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$PREFILL_NODE_1"

    def test_tp_followers_keep_node_1(self, make_catalog) -> None:
        pd = render(self.make(make_catalog), strategy="pd_cluster",
                    pd_nodes={"prefill": 1, "decode": {"nodes": 2, "rank": 1, "parallelism": "tp"}})
        assert pd["decode"]["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$DECODE_NODE_1"

    def test_rank_not_clamped(self, make_catalog) -> None:
        pd = render(self.make(make_catalog), strategy="pd_cluster",
                    pd_nodes={"prefill": 1, "decode": {"nodes": 2, "rank": 5, "parallelism": "dep"}})
        assert pd["decode"]["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$DECODE_NODE_6"
        argv = pd["decode"]["argv"]
        assert argv[argv.index("--data-parallel-start-rank") + 1] == "8"  # args clamp to the last node
        assert pd["decode"]["currentNode"] == 1

    def test_parallelism_not_snapped(self, make_catalog) -> None:
        """pool_modes only allow tp: args snap to a TP pool, the env rewrite still sees dep."""
        _ctx, plan = resolve_sel(self.make(make_catalog, modes=["tp"]), strategy="pd_cluster",
                                pd_nodes={"prefill": 1, "decode": {"nodes": 2, "rank": 1, "parallelism": "dep"}})
        env = {e.key: e.value for e in plan.decode.env}
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$DECODE_NODE_2"
        args = [a.value for a in plan.decode.serve.args]
        assert "--data-parallel-size" not in args and "--node-rank" in args
        assert plan.decode.meta["parallelism"] == "dep"
