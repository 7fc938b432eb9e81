"""Output shapes (synthesis.md §8) and their JSON-API rendering objects (json-api.md §8)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from engine_helpers import HF, recipe, render, resolve_sel, tail, write_catalog

from vllm_recipes.catalog import BUNDLED_DIR
from vllm_recipes.synth.plan import KvStorePlan, PdPlan, SinglePlan

ALL = ["single_node_tp", "single_node_tep", "single_node_dep", "multi_node_tp", "multi_node_tep",
       "multi_node_dep", "multi_node_tp_pp", "multi_node_tp_dp", "pd_cluster"]
MOONCAKE_KV = '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}'


def shaped(**kw) -> dict:
    kw.setdefault("compatible_strategies", ALL)
    return recipe(**kw)


class TestSingle:
    """§8.1 and json-api §8.6."""

    def test_keys(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()))
        assert list(obj) == ["hardware", "strategy", "variant", "node_count", "deploy_type", "env", "docker_image",
                             "frontend", "command", "argv", "docker_command", "docker_argv"]
        assert obj["deploy_type"] == "single_node"

    def test_multi_node_strategy_at_one_node(self, make_catalog) -> None:
        cat = make_catalog(shaped(features={"c": {"args": ["--c"], "companion": {"command": "x"}}}))
        for n in (1, 0, -3):
            obj = render(cat, strategy="multi_node_dep", node_count=n, hw_id="gb200", features=["c"])
            assert obj["deploy_type"] == "multi_node"
            assert tail(obj["argv"]) == ["--enable-expert-parallel", "--data-parallel-hybrid-lb",
                                         "--data-parallel-size", "4", "--c"]
            assert obj["companions"][0]["feature"] == "c"
        obj = render(cat, strategy="multi_node_tp_pp", hw_id="gb200")
        assert tail(obj["argv"]) == ["--tensor-parallel-size", "4"]

    def test_feature_companions(self, make_catalog) -> None:
        cat = make_catalog(shaped(features={
            "a": {"args": ["--a"], "companion": {"command": "run a\n\n  "}},
            "b": {"args": ["--b"], "companion": {"label": "B server", "description": "Start first.",
                                                 "command": "run b"}},
            "c": {"args": ["--c"], "companion": {"command": "run c"}, "strategies": ["single_node_tep"]},
            "d": {"args": ["--d"], "companion": {"label": "no command"}},
        }))
        obj = render(cat, features=["b", "a", "c", "d", "a"])
        assert obj["companions"] == [
            {"feature": "b", "label": "B server", "description": "Start first.", "command": "run b"},
            {"feature": "a", "label": "a", "description": "", "command": "run a"},
            {"feature": "a", "label": "a", "description": "", "command": "run a"},
        ]
        assert list(obj)[-1] == "companions"
        assert "companions" not in render(cat, features=["d"])

    def test_kv_companion_requires_install(self, make_catalog, bundled) -> None:
        obj = render(make_catalog(shaped()), kv_offload="lmcache", strategy="single_node_tep")
        opt = bundled.kv_offload_options["lmcache"]
        comp = opt["companion"]
        assert obj["companions"] == [{
            "feature": "kv_offload:lmcache", "label": "LMCache Server",
            "description": f"{comp['description']} Requires: uv pip install \"lmcache==0.5.1\"",
            "command": comp["command"].rstrip(),
        }]
        assert obj["companions"][0]["command"].startswith("# --port must match")

    def test_kv_companion_description_variants(self, tmp_path: Path) -> None:
        tax = yaml.safe_load((BUNDLED_DIR / "taxonomy.yaml").read_text(encoding="utf-8"))
        tax["kv_offload"]["bare"] = {"args": ["--kv-transfer-config", "{}"], "install": "pip install bare",
                                     "companion": {"command": "bare-server  \n"}}
        tax["kv_offload"]["quiet"] = {"args": [], "companion": {"command": "quiet-server", "description": "D."}}
        (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(tax, sort_keys=False), encoding="utf-8")
        cat = write_catalog(tmp_path, {HF: shaped()})
        assert render(cat, kv_offload="bare")["companions"] == [{
            "feature": "kv_offload:bare", "label": "bare", "description": "Requires: pip install bare",
            "command": "bare-server"}]
        assert render(cat, kv_offload="quiet")["companions"][0]["description"] == "D."

    def test_companions_only_in_the_single_shape(self, make_catalog) -> None:
        cat = make_catalog(shaped(features={"a": {"args": ["--a"], "companion": {"command": "run a"}}}))
        multi = render(cat, features=["a"], strategy="multi_node_tp", node_count=2)
        pd = render(cat, features=["a"], strategy="pd_cluster")
        assert "companions" not in multi and "companions" not in pd
        assert multi["head_argv"][-1] == "--a" and pd["decode"]["argv"][-1] == "--a"


class TestMultiNode:
    """§8.2 and json-api §8.3."""

    def test_keys_and_shared_env(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="multi_node_tp", node_count=3, hw_id="gb200")
        assert list(obj) == [
            "hardware", "strategy", "variant", "node_count", "deploy_type", "env", "docker_image", "frontend",
            "head_command", "worker_command", "worker_commands", "head_argv", "worker_argv", "worker_argvs",
            "head_docker_command", "worker_docker_command", "worker_docker_commands", "head_docker_argv",
            "worker_docker_argv", "worker_docker_argvs"]
        assert obj["env"] == {"GLOO_SOCKET_IFNAME": "$IFACE_NAME", "NCCL_SOCKET_IFNAME": "$IFACE_NAME"}
        assert obj["worker_command"] == obj["worker_commands"][0] and len(obj["worker_commands"]) == 2
        assert obj["worker_argv"] == obj["worker_argvs"][0]
        assert obj["worker_docker_command"] == obj["worker_docker_commands"][0]
        for d in (obj["head_docker_command"], *obj["worker_docker_commands"]):
            assert "-p 8000:8000" in d and "-e GLOO_SOCKET_IFNAME=$IFACE_NAME" in d

    def test_tp_and_tep(self, make_catalog) -> None:
        cat = make_catalog(shaped(model={"model_id": HF, "base_args": ["--b"]}, features={"f": {"args": ["--f"]}}))
        obj = render(cat, strategy="multi_node_tp", node_count=3, hw_id="gb200", features=["f"])
        assert tail(obj["head_argv"]) == ["--b", "--tensor-parallel-size", "12", "--nnodes", "3", "--node-rank", "0",
                                          "--master-addr", "$HEAD_IP", "--f"]
        assert [tail(a) for a in obj["worker_argvs"]] == [
            ["--b", "--tensor-parallel-size", "12", "--nnodes", "3", "--node-rank", str(r), "--master-addr",
             "$HEAD_IP", "--headless", "--f"] for r in (1, 2)]
        assert obj["head_command"] == ("vllm serve org/model \\\n  --b \\\n  --tensor-parallel-size 12 \\\n"
                                       "  --nnodes 3 \\\n  --node-rank 0 \\\n  --master-addr $HEAD_IP \\\n  --f")
        obj = render(cat, strategy="multi_node_tep", node_count=2, hw_id="h200")
        assert tail(obj["worker_argv"]) == ["--b", "--enable-expert-parallel", "--tensor-parallel-size", "16",
                                            "--nnodes", "2", "--node-rank", "1", "--master-addr", "$HEAD_IP",
                                            "--headless"]

    def test_tp_pp(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="multi_node_tp_pp", node_count=2, hw_id="h200")
        assert tail(obj["head_argv"]) == ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2",
                                          "--nnodes", "2", "--node-rank", "0", "--master-addr", "$HEAD_IP"]
        assert tail(obj["worker_argv"]) == ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2",
                                            "--nnodes", "2", "--node-rank", "1", "--master-addr", "$HEAD_IP",
                                            "--headless"]

    def test_tp_dp(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="multi_node_tp_dp", node_count=3, hw_id="gb300")
        assert tail(obj["head_argv"]) == ["--tensor-parallel-size", "4", "--data-parallel-size", "3",
                                          "--data-parallel-size-local", "1", "--data-parallel-address", "$HEAD_IP"]
        assert [tail(a)[-2:] for a in obj["worker_argvs"]] == [["--data-parallel-start-rank", "1"],
                                                                ["--data-parallel-start-rank", "2"]]

    def test_dep(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="multi_node_dep", node_count=3, hw_id="gb200")
        head = ["--enable-expert-parallel", "--data-parallel-hybrid-lb", "--data-parallel-size", "12",
                "--data-parallel-size-local", "4", "--data-parallel-address", "$HEAD_IP"]
        assert tail(obj["head_argv"]) == head
        assert [tail(a) for a in obj["worker_argvs"]] == [[*head, "--data-parallel-start-rank", str(4 * r)]
                                                          for r in (1, 2)]

    def test_dep_start_rank_from_the_dp_local_override(self, make_catalog) -> None:
        """§14: the start rank takes the *last* value in vllm_args + extra_args (+ HO) order, while the
        emitted value is the last in emission order (extra_args, then vllm_args)."""
        cat = make_catalog(shaped(strategy_overrides={"multi_node_dep": {
            "vllm_args": ["--data-parallel-size-local", "1"],
            "extra_args": ["--data-parallel-size-local", "3"],
        }}))
        obj = render(cat, strategy="multi_node_dep", node_count=3, hw_id="gb300")
        assert tail(obj["head_argv"]) == ["--enable-expert-parallel", "--data-parallel-hybrid-lb",
                                          "--data-parallel-size", "12", "--data-parallel-address", "$HEAD_IP",
                                          "--data-parallel-size-local", "1"]
        assert tail(obj["worker_argvs"][1]) == ["--enable-expert-parallel", "--data-parallel-hybrid-lb",
                                                "--data-parallel-size", "12", "--data-parallel-address", "$HEAD_IP",
                                                "--data-parallel-start-rank", "6", "--data-parallel-size-local", "1"]

    @pytest.mark.parametrize(("overrides", "rank2"), [
        ({"hardware_overrides": {"blackwell": {"extra_args": ["--data-parallel-size-local", "2"]},
                                 "gb300": {"extra_args": ["--data-parallel-size-local", "1"]}}}, "2"),
        ({"hardware_overrides": {"nvidia": {"extra_args": ["--data-parallel-size-local", "3"]}}}, "6"),
        ({"extra_args": ["--data-parallel-size-local", "x"]}, "NaN"),
        ({"extra_args": ["--data-parallel-size-local"]}, "NaN"),
        ({"extra_args": ["--data-parallel-size-local", ""]}, "0"),
    ])
    def test_dep_start_rank_sources(self, make_catalog, overrides, rank2) -> None:
        cat = make_catalog(shaped(strategy_overrides={"multi_node_dep": overrides}))
        argv = render(cat, strategy="multi_node_dep", node_count=3, hw_id="gb300")["worker_argvs"][1]
        assert argv[argv.index("--data-parallel-start-rank") + 1] == rank2

    def test_recipe_and_feature_dp_local_do_not_count(self, make_catalog) -> None:
        cat = make_catalog(shaped(hardware_overrides={"blackwell": {"extra_args": ["--data-parallel-size-local", "1"]}},
                                  features={"f": {"args": ["--data-parallel-size-local", "2"]}}))
        argv = render(cat, strategy="multi_node_dep", node_count=2, hw_id="gb300", features=["f"])["worker_argv"]
        assert argv[argv.index("--data-parallel-start-rank") + 1] == "4"
        assert argv[-2:] == ["--data-parallel-size-local", "2"]


PD_PREFILL = ["--port", "8001", "--kv-transfer-config",
              '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_load_failure_policy":"fail"}']
PD_DECODE = ["--port", "8002", "--kv-transfer-config",
             '{"kv_connector":"NixlConnector","kv_role":"kv_consumer","kv_load_failure_policy":"fail"}',
             "--compilation-config", '{"cudagraph_mode":"FULL_DECODE_ONLY"}']
META_KEYS = ["nodes", "parallelism", "tp", "dpLocal", "dpSize", "poolGpus", "currentNode", "startRank"]


class TestPd:
    """§8.3 and json-api §8.4."""

    def test_keys_and_router(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="pd_cluster", hw_id="h200", pd_nodes={"prefill": 1, "decode": 1})
        assert list(obj) == ["hardware", "strategy", "variant", "node_count", "deploy_type", "env", "docker_image",
                             "frontend", "prefill", "decode", "router", "router_config"]
        assert obj["env"] == {}
        assert list(obj["prefill"]) == ["command", "argv", "env", *META_KEYS, "docker_command", "docker_argv"]
        assert "-p 8001:8001" in obj["prefill"]["docker_command"]
        assert obj["decode"]["docker_argv"][6:8] == ["-p", "8002:8002"]
        assert obj["router"] == {"command": (
            "vllm-router --policy round_robin \\\n    --vllm-pd-disaggregation \\\n"
            "    --prefill http://$PREFILL_NODE_1:8001 \\\n    --decode http://$DECODE_NODE_1:8002 \\\n"
            "    --host $ROUTER_HOST \\\n    --port $ROUTER_PORT \\\n    --intra-node-data-parallel-size 1"),
            "install": "uv pip install vllm-router"}
        assert obj["router_config"] == {"policy": "round_robin"}

    def test_co_located(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="pd_cluster", hw_id="h200")
        assert tail(obj["prefill"]["argv"]) == [*PD_PREFILL, "--tensor-parallel-size", "4"]
        assert tail(obj["decode"]["argv"]) == [*PD_DECODE, "--tensor-parallel-size", "4"]
        assert [obj["prefill"][k] for k in META_KEYS] == [0, "tp", 4, 0, 1, 4, 0, 0]

    def test_tp_pools_across_nodes(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="pd_cluster", hw_id="gb200",
                     pd_nodes={"prefill": {"nodes": 3, "rank": 2}, "decode": {"nodes": 2, "rank": 0}})
        assert tail(obj["prefill"]["argv"]) == [*PD_PREFILL, "--tensor-parallel-size", "12", "--nnodes", "3",
                                                "--node-rank", "2", "--master-addr", "$PREFILL_NODE_1", "--headless"]
        assert tail(obj["decode"]["argv"]) == [*PD_DECODE, "--tensor-parallel-size", "8", "--nnodes", "2",
                                               "--node-rank", "0", "--master-addr", "$DECODE_NODE_1"]
        assert [obj["prefill"][k] for k in META_KEYS] == [3, "tp", 12, 0, 1, 12, 2, 0]
        assert "--prefill http://$PREFILL_NODE_1:8001 \\\n    --decode http://$DECODE_NODE_1:8002" \
            in obj["router"]["command"]

    def test_tep_pool_and_parallel_flag(self, make_catalog) -> None:
        cat = make_catalog(shaped(strategy_overrides={"pd_cluster": {
            "prefill": {"parallelism": "tep"}, "decode": {"parallel_flag": "--pp-size"}}}))
        obj = render(cat, strategy="pd_cluster", hw_id="h200", node_count=2)  # legacy: one node per role
        assert tail(obj["prefill"]["argv"]) == [*PD_PREFILL, "--tensor-parallel-size", "8", "--enable-expert-parallel"]
        assert tail(obj["decode"]["argv"]) == [*PD_DECODE, "--pp-size", "8"]
        assert obj["node_count"] == 2 and obj["prefill"]["nodes"] == 1

    def test_dep_pools(self, make_catalog) -> None:
        cat = make_catalog(shaped(strategy_overrides={"pd_cluster": {"decode": {"tp": 2}}}))
        obj = render(cat, strategy="pd_cluster", hw_id="h200",
                     pd_nodes={"prefill": {"nodes": 1, "parallelism": "dep"},
                               "decode": {"nodes": 3, "rank": 2, "parallelism": "dep"}})
        assert tail(obj["prefill"]["argv"]) == [
            *PD_PREFILL, "--data-parallel-size", "8", "--data-parallel-size-local", "8",
            "--data-parallel-start-rank", "0", "--data-parallel-address", "$PREFILL_NODE_1",
            "--data-parallel-rpc-port", "$PREFILL_DP_RPC_PORT", "--enable-expert-parallel"]
        assert tail(obj["decode"]["argv"]) == [
            *PD_DECODE, "--tensor-parallel-size", "2", "--data-parallel-size", "12", "--data-parallel-size-local",
            "4", "--data-parallel-start-rank", "8", "--data-parallel-address", "$DECODE_NODE_1",
            "--data-parallel-rpc-port", "$DECODE_DP_RPC_PORT", "--data-parallel-hybrid-lb",
            "--enable-expert-parallel"]
        assert [obj["decode"][k] for k in META_KEYS] == [3, "dep", 2, 4, 12, 24, 2, 8]
        assert [obj["prefill"][k] for k in META_KEYS] == [1, "dep", 1, 8, 8, 8, 0, 0]
        assert obj["router"]["command"] == (
            "vllm-router --policy round_robin \\\n    --vllm-pd-disaggregation \\\n"
            "    --prefill http://$PREFILL_NODE_1:8001 \\\n    --decode http://$DECODE_NODE_1:8002 \\\n"
            "    --decode http://$DECODE_NODE_2:8002 \\\n    --decode http://$DECODE_NODE_3:8002 \\\n"
            "    --host $ROUTER_HOST \\\n    --port $ROUTER_PORT \\\n    --intra-node-data-parallel-size 8")
        assert obj["decode"]["env"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "$DECODE_NODE_3"

    def test_dep_co_located_uses_half_the_node(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="pd_cluster", hw_id="gb200",
                     pd_nodes={"prefill": {"parallelism": "dep"}, "decode": {"parallelism": "dep"}})
        argv = obj["prefill"]["argv"]
        # ranks = the GPUs the pool owns: half of gb200's 4 (docs/decisions.md, co-located PD DEP; #23 item 8)
        assert argv[argv.index("--data-parallel-size-local") + 1] == "2"
        assert [obj["prefill"][k] for k in META_KEYS] == [0, "dep", 1, 2, 2, 2, 0, 0]

    def test_router_intra_dp_pin(self, make_catalog) -> None:
        cat = make_catalog(shaped(strategy_overrides={"pd_cluster": {"router": {"intra_node_data_parallel_size": 0}}}))
        obj = render(cat, strategy="pd_cluster", pd_nodes={"prefill": {"parallelism": "dep", "nodes": 2}})
        assert obj["router"]["command"].endswith("--intra-node-data-parallel-size 0")
        assert obj["router"]["command"].count("--prefill http://") == 2

    def test_snapped_pool_mode_keeps_meta_and_router_unsnapped(self, make_catalog) -> None:
        cat = make_catalog(shaped(compatible_strategies=["single_node_tp", "pd_cluster"]))
        obj = render(cat, strategy="pd_cluster", hw_id="h200",
                     pd_nodes={"prefill": 1, "decode": {"nodes": 2, "parallelism": "dep"}})
        assert "--data-parallel-size" not in obj["decode"]["argv"]
        assert tail(obj["decode"]["argv"]) == [*PD_DECODE, "--tensor-parallel-size", "16", "--nnodes", "2",
                                               "--node-rank", "0", "--master-addr", "$DECODE_NODE_1"]
        assert obj["decode"]["parallelism"] == "dep"
        assert obj["router"]["command"].count("--decode http://") == 2

    def test_role_tp_zero(self, make_catalog) -> None:
        """§14: args divide by 0 (Infinity); roleMeta uses tp 1."""
        cat = make_catalog(shaped(strategy_overrides={"pd_cluster": {"decode": {"tp": 0, "parallelism": "dep"}}}))
        obj = render(cat, strategy="pd_cluster", hw_id="h200", pd_nodes={"prefill": 1, "decode": 1})
        argv = tail(obj["decode"]["argv"])
        i = argv.index("--tensor-parallel-size")
        assert argv[i:i + 8] == ["--tensor-parallel-size", "0", "--data-parallel-size", "Infinity",
                                 "--data-parallel-size-local", "Infinity", "--data-parallel-start-rank", "NaN"]
        assert obj["decode"]["tp"] == 1 and obj["decode"]["dpLocal"] == 8


MASTER_CENTRAL_FIRST = "# Reachable by every instance and the store as $MOONCAKE_MASTER_IP:50051."


class TestMooncake:
    """§8.4 and json-api §8.5."""

    def test_single_instance_distributed(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), kv_offload="kv_store_distributed_mooncake", hw_id="h200")
        assert list(obj) == [
            "hardware", "strategy", "variant", "node_count", "deploy_type", "env", "docker_image", "frontend",
            "serving_strategy", "kv_min_vllm_version", "instances", "vllm_command", "vllm_argv",
            "vllm_worker_command", "vllm_worker_commands", "vllm_worker_argv", "vllm_worker_argvs",
            "vllm_worker_docker_command", "vllm_worker_docker_argv", "vllm_worker_docker_commands",
            "vllm_worker_docker_argvs", "vllm_install", "vllm_docker_command", "vllm_docker_argv", "master", "store",
            "router", "mooncake_config", "mooncake_config_note"]
        assert (obj["strategy"], obj["serving_strategy"], obj["instances"]) == \
            ("kv_store_distributed_mooncake", "single_node_tp", 1)
        assert obj["store"] is None and obj["router"] is None
        assert obj["vllm_worker_command"] is None and obj["vllm_worker_argvs"] is None
        assert obj["vllm_command"] == ("vllm serve org/model \\\n  --tensor-parallel-size 8 \\\n"
                                       f"  --kv-transfer-config '{MOONCAKE_KV}'")
        assert obj["env"] == {"MOONCAKE_CONFIG_PATH": "$MOONCAKE_CONFIG_PATH", "PYTHONHASHSEED": 0}
        assert obj["vllm_install"] == "uv pip install 'mooncake-transfer-engine>=0.3.10'"
        assert obj["kv_min_vllm_version"] == "0.21.0"
        assert obj["master"]["command"].startswith("# Reachable by every instance as $MOONCAKE_MASTER_IP:50051.")

    def test_instance_counts(self, make_catalog) -> None:
        cat = make_catalog(shaped())
        central = "kv_store_centralized_mooncake"
        assert render(cat, kv_offload=central)["instances"] == 2
        for raw, want in ((3, 3), (3.7, 3), (0, 2), (-1, 2), ("4", 2), ({"count": 5}, 5), ({"current": 1}, 2)):
            assert render(cat, kv_offload=central, kv_instances=raw)["instances"] == want, raw
        obj = render(cat, kv_offload=central, kv_instances=3)
        assert obj["router"] == {"command": (
            "vllm-router --policy cache_aware \\\n    --backend-url http://$VLLM_INSTANCE_1:8000 \\\n"
            "    --backend-url http://$VLLM_INSTANCE_2:8000 \\\n    --backend-url http://$VLLM_INSTANCE_3:8000 \\\n"
            "    --host $ROUTER_HOST \\\n    --port $ROUTER_PORT \\\n    --cache-threshold 0.5 \\\n"
            "    --balance-abs-threshold 4 \\\n    --balance-rel-threshold 1.1"),
            "install": "uv pip install vllm-router", "port": 30080}
        assert obj["master"]["command"].startswith(MASTER_CENTRAL_FIRST)
        assert obj["store"]["command"] == \
            "python3 -m mooncake.mooncake_store_service --config $MOONCAKE_STORE_CONFIG_PATH"
        assert obj["store"]["config"]["mode"] == "standalone-store"

    @pytest.mark.parametrize(("instances", "addr", "current"), [
        ({"count": 3, "current": 2}, "$VLLM_INSTANCE_3", 2),
        ({"count": 3, "current": 9}, "$VLLM_INSTANCE_3", 2),
        ({"count": 3, "current": -4}, "$VLLM_INSTANCE_1", 0),
        ({"count": 1, "current": 0}, "$HEAD_IP", 0),
        (None, "$VLLM_INSTANCE_1", 0),
    ])
    def test_current_instance_address(self, make_catalog, instances, addr, current) -> None:
        cat = make_catalog(shaped())
        _ctx, plan = resolve_sel(cat, strategy="multi_node_tp", node_count=2, kv_offload="kv_store_centralized_mooncake",
                                kv_instances=instances)
        assert isinstance(plan, KvStorePlan)
        assert plan.current_instance == current
        obj = render(cat, strategy="multi_node_tp", node_count=2, kv_offload="kv_store_centralized_mooncake",
                     kv_instances=instances)
        assert tail(obj["vllm_argv"]) == ["--tensor-parallel-size", "16", "--nnodes", "2", "--node-rank", "0",
                                          "--master-addr", addr, "--kv-transfer-config", MOONCAKE_KV]
        assert tail(obj["vllm_worker_argv"])[6:9] == ["--master-addr", addr, "--headless"]
        assert obj["vllm_worker_commands"] == [obj["vllm_worker_command"]]
        assert obj["vllm_worker_docker_argvs"] == [obj["vllm_worker_docker_argv"]]
        assert obj["node_count"] == 2
        assert list(obj["env"]) == ["GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "MOONCAKE_CONFIG_PATH",
                                    "PYTHONHASHSEED"]

    def test_dep_instance_address(self, make_catalog) -> None:
        obj = render(make_catalog(shaped()), strategy="multi_node_dep", node_count=2, hw_id="gb200",
                     kv_offload="kv_store_centralized_mooncake", kv_instances={"count": 2, "current": 1})
        argv = obj["vllm_worker_argv"]
        assert argv[argv.index("--data-parallel-address") + 1] == "$VLLM_INSTANCE_2"

    @pytest.mark.parametrize(("hw", "install"), [
        ("mi300x", "uv pip install 'mooncake-transfer-engine-non-cuda>=0.3.10'"),
        ("b200", "uv pip install 'mooncake-transfer-engine>=0.3.10'"),
        ("xeon6", None),
        ("nope", None),
    ])
    def test_install_by_brand(self, make_catalog, hw, install) -> None:
        assert render(make_catalog(shaped()), hw_id=hw, kv_offload="kv_store_distributed_mooncake")["vllm_install"] \
            == install

    def test_pd_with_mooncake(self, make_catalog) -> None:
        cat = make_catalog(shaped())
        _ctx, plan = resolve_sel(cat, strategy="pd_cluster", hw_id="h200", kv_offload="kv_store_centralized_mooncake",
                                kv_instances=5, pd_nodes={"prefill": 1, "decode": 1})
        assert isinstance(plan, PdPlan) and plan.mooncake is not None
        assert plan.mooncake.store is not None and plan.mooncake.install.startswith("uv pip install 'mooncake")
        assert plan.mooncake.master["command"].startswith(MASTER_CENTRAL_FIRST)
        obj = render(cat, strategy="pd_cluster", hw_id="h200", kv_offload="kv_store_centralized_mooncake",
                     pd_nodes={"prefill": 1, "decode": 1})
        assert "mooncake" not in obj and obj["deploy_type"] == "pd_cluster"
        for role in ("prefill", "decode"):
            env = obj[role]["env"]
            assert list(env)[-3:] == ["MOONCAKE_CONFIG_PATH", "PYTHONHASHSEED", "CUDA_VISIBLE_DEVICES"]
            assert obj[role]["argv"][-1].startswith('{"kv_connector":"MultiConnector"')
            assert "-v $MOONCAKE_CONFIG_PATH:$MOONCAKE_CONFIG_PATH:ro" in obj[role]["docker_command"]
        _ctx, plain = resolve_sel(cat, strategy="pd_cluster", hw_id="h200")
        assert isinstance(plain, PdPlan) and plain.mooncake is None

    def test_single_shape_not_used_under_mooncake(self, make_catalog) -> None:
        _ctx, plan = resolve_sel(make_catalog(shaped()), kv_offload="kv_store_centralized_mooncake")
        assert not isinstance(plan, SinglePlan)


class TestPdRoleTpNull:
    """§14: an explicit YAML null ``tp`` in the strategy's role block still counts as "given"."""

    def catalog_with(self, tmp_path: Path, role_tp_in_strategy: bool, recipe_tp: object = "absent"):
        import shutil

        shutil.copytree(BUNDLED_DIR / "strategies", tmp_path / "strategies")
        spec_path = tmp_path / "strategies" / "pd_cluster.yaml"
        spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
        if role_tp_in_strategy:
            spec["decode"]["tp"] = None
        spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        decode = {"parallelism": "dep"}
        if recipe_tp != "absent":
            decode["tp"] = recipe_tp
        return write_catalog(tmp_path, {HF: shaped(strategy_overrides={"pd_cluster": {"decode": decode}})})

    @pytest.mark.parametrize(("in_strategy", "recipe_tp", "emitted"), [
        (True, "absent", True),
        (True, None, True),
        (False, None, False),
        (False, "absent", False),
    ])
    def test_null_tp(self, tmp_path: Path, in_strategy, recipe_tp, emitted) -> None:
        cat = self.catalog_with(tmp_path, in_strategy, recipe_tp)
        argv = tail(render(cat, strategy="pd_cluster", hw_id="h200", pd_nodes={"prefill": 1, "decode": 1})
                    ["decode"]["argv"])
        i = argv.index("--data-parallel-size")
        assert (argv[i - 2:i] == ["--tensor-parallel-size", "1"]) is emitted
        assert argv[i:i + 4] == ["--data-parallel-size", "8", "--data-parallel-size-local", "8"]
