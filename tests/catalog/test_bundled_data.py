"""Facts carried by the bundled catalog data (src/vllm_recipes/data).

Loads the YAML with plain PyYAML (the engine's loader builds on the same
SafeLoader) and checks the values docs/reference fixes exactly. The Mooncake data is
also compared with the golden renderings in tests/golden/expected.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).resolve().parents[2] / "src" / "vllm_recipes" / "data"


#: The golden renderings shipped with the tests (tests/golden/expected).
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "expected"
assert GOLDEN.is_dir(), f"golden files missing: {GOLDEN}"


def load(rel: str):
    with open(DATA / rel, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@pytest.fixture(scope="module")
def taxonomy():
    return load("taxonomy.yaml")


@pytest.fixture(scope="module")
def strategies():
    """The merged strategy map S: strategies/ then kv_store/, files in byte order."""
    out = {}
    for sub in ("strategies", "kv_store"):
        files = sorted((DATA / sub).glob("*.yaml"), key=lambda p: os.fsencode(p.name))
        for path in files:
            doc = load(f"{sub}/{path.name}")
            out.setdefault(doc["name"], doc)
    return out


EXPECTED_PROFILES = [
    "h100", "h200", "b200", "gb200", "b300", "gb300", "dgx_station_gb300",
    "dgx_spark_gb10", "rtx_pro_6000", "rtx_pro_6000_2x", "rtx_pro_5000",
    "rtx_pro_5000_4x", "rtx_pro_6000_8x", "rtx_5090", "rtx_4090_2x", "rtx_5090_2x",
    "mi300x", "mi325x", "mi350x", "mi355x", "trillium", "ironwood", "xeon6", "xeon5",
    "arc_pro_b60", "arc_pro_b70", "ascend_950pr", "ascend_950pr_8x",
    "ascend_950dt_8x", "ascend_910c",
]

# extensions.md §1.1
EXPECTED_ARCH = {
    "h100": "sm90", "h200": "sm90",
    "b200": "sm100", "gb200": "sm100",
    "b300": "sm103", "gb300": "sm103", "dgx_station_gb300": "sm103",
    "rtx_pro_6000": "sm120", "rtx_pro_6000_2x": "sm120", "rtx_pro_6000_8x": "sm120",
    "rtx_pro_5000": "sm120", "rtx_pro_5000_4x": "sm120", "rtx_5090": "sm120",
    "rtx_5090_2x": "sm120",
    "dgx_spark_gb10": "sm121",
    "rtx_4090_2x": "sm89",
    "mi300x": "gfx942", "mi325x": "gfx942",
    "mi350x": "gfx950", "mi355x": "gfx950",
    "trillium": "tpu", "ironwood": "tpu",
    "xeon5": "x86", "xeon6": "x86",
    "arc_pro_b60": "xe2", "arc_pro_b70": "xe2",
    "ascend_950pr": "ascend950", "ascend_950pr_8x": "ascend950", "ascend_950dt_8x": "ascend950",
    "ascend_910c": "ascend910c",
}

# (brand, generation, gpu_count, vram_gb, scalable, restricted)
EXPECTED_SPECS = {
    "h100": ("NVIDIA", "hopper", 8, 640, True, False),
    "h200": ("NVIDIA", "hopper", 8, 1128, True, False),
    "b200": ("NVIDIA", "blackwell", 8, 1440, True, False),
    "gb200": ("NVIDIA", "blackwell", 4, 768, True, False),
    "b300": ("NVIDIA", "blackwell", 8, 2144, True, False),
    "gb300": ("NVIDIA", "blackwell", 4, 1152, True, False),
    "dgx_station_gb300": ("NVIDIA", "blackwell", 1, 252, False, True),
    "dgx_spark_gb10": ("NVIDIA", "blackwell", 1, 128, True, True),
    "rtx_pro_6000": ("NVIDIA", "blackwell", 1, 96, False, True),
    "rtx_pro_6000_2x": ("NVIDIA", "blackwell", 2, 192, False, True),
    "rtx_pro_5000": ("NVIDIA", "blackwell", 1, 72, False, True),
    "rtx_pro_5000_4x": ("NVIDIA", "blackwell", 4, 288, False, True),
    "rtx_pro_6000_8x": ("NVIDIA", "blackwell", 8, 768, False, True),
    "rtx_5090": ("NVIDIA", "blackwell", 1, 32, False, True),
    "rtx_4090_2x": ("NVIDIA", "ada", 2, 48, False, True),
    "rtx_5090_2x": ("NVIDIA", "blackwell", 2, 64, False, True),
    "mi300x": ("AMD", "amd", 8, 1536, True, False),
    "mi325x": ("AMD", "amd", 8, 2048, True, False),
    "mi350x": ("AMD", "amd", 8, 2304, True, False),
    "mi355x": ("AMD", "amd", 8, 2304, True, False),
    "trillium": ("Google", "tpu", 8, 256, True, True),
    "ironwood": ("Google", "tpu", 1, 192, True, True),
    "xeon6": ("Intel", "cpu", 4, 1024, True, True),
    "xeon5": ("Intel", "cpu", 4, 1024, True, True),
    "arc_pro_b60": ("Intel", "xpu", 4, 96, True, True),
    "arc_pro_b70": ("Intel", "xpu", 4, 128, True, True),
    "ascend_950pr": ("Huawei", "npu", 1, 128, False, True),
    "ascend_950pr_8x": ("Huawei", "npu", 8, 1024, True, True),
    "ascend_950dt_8x": ("Huawei", "npu", 8, 768, True, True),
    "ascend_910c": ("Huawei", "npu", 16, 1024, True, True),
}


# --- taxonomy ----------------------------------------------------------------

def test_taxonomy_top_level_order(taxonomy):
    assert list(taxonomy) == [
        "hardware_profiles", "tasks", "strategies", "kv_offload_groups", "kv_offload", "frontends",
    ]


def test_profile_order_and_count(taxonomy):
    profiles = taxonomy["hardware_profiles"]
    assert list(profiles) == EXPECTED_PROFILES
    assert len(profiles) == 30


def test_every_profile_has_the_spec_arch(taxonomy):
    profiles = taxonomy["hardware_profiles"]
    assert {k: p["arch"] for k, p in profiles.items()} == EXPECTED_ARCH


def test_profile_values_and_key_order(taxonomy):
    for hw, p in taxonomy["hardware_profiles"].items():
        brand, gen, gpus, vram, scalable, restricted = EXPECTED_SPECS[hw]
        assert (p["brand"], p["generation"], p["gpu_count"], p["vram_gb"]) == (brand, gen, gpus, vram), hw
        assert p["multi_node"] is False, hw
        # scalable is written only as `false`; restricted only as `true`
        if scalable:
            assert "scalable" not in p, hw
        else:
            assert p["scalable"] is False, hw
        if restricted:
            assert p["restricted"] is True, hw
        else:
            assert "restricted" not in p, hw
        expected_keys = ["display_name", "brand", "generation", "arch", "gpu_count", "vram_gb", "multi_node"]
        expected_keys += [] if scalable else ["scalable"]
        expected_keys += ["restricted"] if restricted else []
        expected_keys += [] if gen == "cpu" else ["device_resource"]
        expected_keys += ["description"]
        assert list(p) == expected_keys, hw
        assert isinstance(p["description"], str) and p["description"] and "\n" not in p["description"]


def test_display_names_from_catalog_facts(taxonomy):
    profiles = taxonomy["hardware_profiles"]
    assert profiles["gb200"]["display_name"] == "GB200 NVL4"
    assert profiles["dgx_station_gb300"]["display_name"] == "DGX Station (GB300)"
    assert profiles["rtx_pro_5000_4x"]["display_name"] == "RTX PRO 5000 Blackwell 4x"
    assert profiles["rtx_4090_2x"]["display_name"] == "RTX 4090"
    assert profiles["rtx_5090_2x"]["display_name"] == "RTX 5090"
    assert profiles["trillium"]["display_name"] == "TPU v6e (Trillium)"


def test_vocabularies(taxonomy):
    assert list(taxonomy["tasks"]) == ["text", "multimodal", "omni", "embedding"]
    assert [t["display_name"] for t in taxonomy["tasks"].values()] == ["Text", "Multimodal", "Omni", "Embedding"]
    assert taxonomy["strategies"] == [
        "single_node_tp", "single_node_tep", "single_node_dep", "multi_node_tp", "multi_node_tep",
        "multi_node_dep", "multi_node_tp_pp", "multi_node_tp_dp", "pd_cluster",
    ]


def test_frontends(taxonomy):
    fe = taxonomy["frontends"]
    assert list(fe) == ["python", "rust"]
    assert fe["python"]["env"] == {}
    assert fe["rust"]["env"] == {"VLLM_USE_RUST_FRONTEND": "1"}
    for entry in fe.values():
        assert list(entry) == ["display_name", "description", "env"]


def test_kv_offload_options(taxonomy):
    kv = taxonomy["kv_offload"]
    assert list(kv) == ["simple", "offloading_cpu", "offloading_fs", "lmcache"]
    fs_env = kv["offloading_fs"]["env"]
    assert fs_env == {"PYTHONHASHSEED": "0"}
    assert isinstance(fs_env["PYTHONHASHSEED"], str)
    assert kv["simple"]["args"] == [
        "--kv-transfer-config",
        '{"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both",'
        '"kv_connector_extra_config":{"cpu_bytes_to_use_per_rank":236223201280,"lazy_offload":false}}',
    ]
    assert kv["offloading_cpu"]["args"][1] == (
        '{"kv_connector":"OffloadingConnector","kv_role":"kv_both",'
        '"kv_connector_extra_config":{"cpu_bytes_to_use":549755813888,"blocks_per_chunk":4}}'
    )
    assert kv["offloading_fs"]["args"][1] == (
        '{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":'
        '{"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":34359738368,"blocks_per_chunk":4,'
        '"eviction_policy":"lru","secondary_tiers":[{"type":"fs","root_dir":"/mnt/kv_cache",'
        '"n_read_threads":32,"n_write_threads":16}]}}'
    )
    for key in ("offloading_cpu", "offloading_fs"):
        assert kv[key]["brands"] == ["NVIDIA", "AMD"]
        assert kv[key]["requires_opt_in"] is True
        assert kv[key]["group"] == "offloading"
    lm = kv["lmcache"]
    assert lm["strategies"] == ["single_node_tp", "single_node_tep", "single_node_dep"]
    assert lm["install"] == 'uv pip install "lmcache==0.5.1"'
    assert lm["companion"]["label"] == "LMCache Server"
    cmd = lm["companion"]["command"]
    assert cmd.startswith('# --port must match "lmcache.mp.port" in --kv-transfer-config.\n')
    assert cmd.endswith("  --supported-transfer-mode lmcache_driven\n")  # `|` block: trailing newline
    assert cmd.count("\n") == 18
    assert "\nlmcache server \\\n  --port 5555 \\\n" in cmd
    group = taxonomy["kv_offload_groups"]["offloading"]
    assert group["sub_row_label"] == "Offload Tiers"
    assert group["docs_url"] == "https://docs.vllm.ai/en/stable/features/kv_offloading_usage"
    assert group["tooltip"] and group["description"]


# --- strategies --------------------------------------------------------------

def test_strategy_map_order(strategies):
    # synthesis.md §1.1
    assert list(strategies) == [
        "multi_node_dep", "multi_node_tep", "multi_node_tp", "multi_node_tp_dp", "multi_node_tp_pp",
        "pd_cluster", "single_node_dep", "single_node_tep", "single_node_tp",
        "kv_store_centralized_mooncake", "kv_store_distributed_mooncake",
    ]


def test_file_names_match_names():
    for sub in ("strategies", "kv_store"):
        for path in (DATA / sub).glob("*.yaml"):
            assert load(f"{sub}/{path.name}")["name"] == path.stem


def test_serving_strategy_table(strategies):
    # synthesis.md §1.4: name -> (deploy_type, parallel_flag, parallelism, vllm_args, env)
    ifaces = {"GLOO_SOCKET_IFNAME": "$IFACE_NAME", "NCCL_SOCKET_IFNAME": "$IFACE_NAME"}
    table = {
        "multi_node_dep": ("multi_node", "--data-parallel-size", None,
                           ["--enable-expert-parallel", "--data-parallel-hybrid-lb"], ifaces),
        "multi_node_tep": ("multi_node", "--tensor-parallel-size", None, ["--enable-expert-parallel"], ifaces),
        "multi_node_tp": ("multi_node", "--tensor-parallel-size", None, None, ifaces),
        "multi_node_tp_dp": ("multi_node", "--tensor-parallel-size", "tp_dp", [], ifaces),
        "multi_node_tp_pp": ("multi_node", "--tensor-parallel-size", "tp_pp", [], ifaces),
        "pd_cluster": ("pd_cluster", "--tensor-parallel-size", None, None, None),
        "single_node_dep": ("single_node", "--data-parallel-size", None, ["--enable-expert-parallel"], None),
        "single_node_tep": ("single_node", "--tensor-parallel-size", None, ["--enable-expert-parallel"], None),
        "single_node_tp": ("single_node", "--tensor-parallel-size", None, [], None),
    }
    for name, (dt, flag, par, args, env) in table.items():
        s = strategies[name]
        assert (s["deploy_type"], s["parallel_flag"], s.get("parallelism"), s.get("vllm_args"), s.get("env")) == (
            dt, flag, par, args, env), name
        assert s["description"], name


def test_pd_cluster_roles(strategies):
    pd = strategies["pd_cluster"]
    assert pd["prefill"]["vllm_args"] == [
        "--port", "8001", "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_load_failure_policy":"fail"}',
    ]
    assert list(pd["prefill"]["env"].items()) == [
        ("NCCL_CUMEM_ENABLE", "1"), ("NCCL_MNNVL_ENABLE", "1"), ("NCCL_NVLS_ENABLE", "1"),
        ("UCX_NET_DEVICES", "all"), ("VLLM_NIXL_SIDE_CHANNEL_PORT", "5557"),
        ("VLLM_NIXL_SIDE_CHANNEL_HOST", "$PREFILL_NODE_1"),
    ]
    assert pd["decode"]["vllm_args"] == [
        "--port", "8002", "--kv-transfer-config",
        '{"kv_connector":"NixlConnector","kv_role":"kv_consumer","kv_load_failure_policy":"fail"}',
        "--compilation-config", '{"cudagraph_mode":"FULL_DECODE_ONLY"}',
    ]
    assert list(pd["decode"]["env"].items()) == [
        ("VLLM_NIXL_SIDE_CHANNEL_PORT", "5558"), ("VLLM_NIXL_SIDE_CHANNEL_HOST", "$DECODE_NODE_1"),
    ]
    for role in ("prefill", "decode"):
        assert set(pd[role]) == {"vllm_args", "env"}
    assert pd["router"] == {"policy": "round_robin"}
    # base keys in the given order, the `routers` extension last
    assert list(pd) == [
        "name", "deploy_type", "display_name", "description", "orientation", "hardware_match",
        "prefill", "decode", "parallel_flag", "router", "routers",
    ]


def test_pd_cluster_smg_router_data(strategies):
    routers = strategies["pd_cluster"]["routers"]
    assert list(routers) == ["vllm-router", "smg-grpc"]
    assert [k for k, r in routers.items() if r.get("default")] == ["vllm-router"]
    smg = routers["smg-grpc"]
    assert smg["requires_model_key"] == "smg_grpc"
    assert smg["pool"]["remove_args"] == [
        "--reasoning-parser", "--reasoning-config", "--tool-call-parser", "--enable-auto-tool-choice",
    ]
    gw = smg["gateway"]
    assert gw["mode_args"] == ["--pd-disaggregation"]
    assert gw["prefill_endpoint"].format(i=2) == "grpc://$PREFILL_NODE_2:8001"
    assert gw["decode_endpoint"].format(i=1) == "grpc://$DECODE_NODE_1:8002"
    assert (gw["prefill_flag"], gw["decode_flag"]) == ("--prefill", "--decode")
    assert gw["parser_flags"] == {"reasoning_parser": "--reasoning-parser", "tool_call_parser": "--tool-call-parser"}
    assert gw["host_port_args"] == ["--host", "$ROUTER_HOST", "--port", "$ROUTER_PORT"]


# --- kv_store ----------------------------------------------------------------

MOONCAKE_ARGS = ["--kv-transfer-config", '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}']


@pytest.mark.parametrize("name", ["kv_store_centralized_mooncake", "kv_store_distributed_mooncake"])
def test_kv_store_common(strategies, name):
    s = strategies[name]
    assert s["deploy_type"] == "kv_store_lb"
    env = s["vllm"]["env"]
    assert env == {"MOONCAKE_CONFIG_PATH": "$MOONCAKE_CONFIG_PATH", "PYTHONHASHSEED": 0}
    assert type(env["PYTHONHASHSEED"]) is int
    assert s["vllm"]["vllm_args"] == MOONCAKE_ARGS
    assert s["vllm"]["port"] == 8000
    assert s["vllm"]["install"] == {
        "nvidia": "uv pip install 'mooncake-transfer-engine>=0.3.10'",
        "amd": "uv pip install 'mooncake-transfer-engine-non-cuda>=0.3.10'",
    }
    assert s["router"] == {"policy": "cache_aware", "install": "uv pip install vllm-router", "port": 30080}
    assert s["min_vllm_version"] == "0.21.0"
    master = s["mooncake_master"]["command"]
    assert not master.endswith("\n") and master.endswith("  -logtostderr")
    assert s["mooncake_master"]["description"]
    assert s["mooncake_vllm_config"]["note"]
    prefill = s["pd"]["prefill"]["args"][1]
    decode = s["pd"]["decode"]["args"][1]
    assert '"kv_role":"kv_producer"' in prefill and '"kv_role":"kv_consumer"' in decode
    assert prefill.replace("kv_producer", "kv_consumer") == decode


def test_kv_store_differences(strategies):
    c = strategies["kv_store_centralized_mooncake"]
    d = strategies["kv_store_distributed_mooncake"]
    assert (c["default_instances"], d["default_instances"]) == (2, 1)
    assert (c["order"], d["order"]) == (2, 1)
    assert "mooncake_store_config" in c and "mooncake_store_config" not in d
    assert c["mooncake_master"]["command"].splitlines()[0] == (
        "# Reachable by every instance and the store as $MOONCAKE_MASTER_IP:50051.")
    assert d["mooncake_master"]["command"].splitlines()[0] == "# Reachable by every instance as $MOONCAKE_MASTER_IP:50051."
    assert c["mooncake_vllm_config"]["template"]["global_segment_size"] == 0
    assert d["mooncake_vllm_config"]["template"]["global_segment_size"] == "100GB"


# --- golden renderings ---------------------------------------------------------

def _expected(rel: str):
    path = GOLDEN / "deepseek-ai" / "DeepSeek-V4.1-Flash" / "strategies" / rel
    return json.loads(path.read_text(encoding="utf-8"))


def test_centralized_mooncake_matches_golden(strategies):
    exp = _expected("kv_store_centralized_mooncake.json")
    s = strategies["kv_store_centralized_mooncake"]
    assert s["mooncake_master"]["command"] == exp["master"]["command"]
    store = s["mooncake_store_config"]
    assert store["command"] == exp["store"]["command"]
    assert json.dumps(store["config"]) == json.dumps(exp["store"]["config"])  # key order too
    assert json.dumps(s["mooncake_vllm_config"]["template"]) == json.dumps(exp["mooncake_config"])
    assert s["router"]["install"] == exp["router"]["install"]
    assert s["router"]["port"] == exp["router"]["port"]
    assert s["vllm"]["install"]["nvidia"] == exp["vllm_install"]
    assert s["min_vllm_version"] == exp["kv_min_vllm_version"]
    for key, value in s["vllm"]["env"].items():
        assert exp["env"][key] == value and type(exp["env"][key]) is type(value)


def test_distributed_mooncake_matches_golden(strategies):
    exp = _expected("kv_store_distributed_mooncake.json")
    s = strategies["kv_store_distributed_mooncake"]
    assert s["mooncake_master"]["command"] == exp["master"]["command"]
    assert exp["store"] is None
    assert json.dumps(s["mooncake_vllm_config"]["template"]) == json.dumps(exp["mooncake_config"])
    assert s["vllm"]["install"]["nvidia"] == exp["vllm_install"]


def test_pd_cluster_matches_golden(strategies):
    exp = _expected("pd_cluster.json")
    pd = strategies["pd_cluster"]
    assert exp["router_config"] == pd["router"]
    for role in ("prefill", "decode"):
        argv = exp[role]["argv"]
        args = pd[role]["vllm_args"]
        start = argv.index(args[0])
        assert argv[start:start + len(args)] == args, role
        env_items = list(exp[role]["env"].items())
        role_items = list(pd[role]["env"].items())
        start = env_items.index(role_items[0])
        assert env_items[start:start + len(role_items)] == role_items, role


# --- platforms -----------------------------------------------------------------

def test_platforms():
    doc = load("platforms.yaml")
    assert list(doc) == ["platforms"]
    ps = {p["id"]: p for p in doc["platforms"]}
    assert list(ps) == ["modal", "sagemaker"]
    assert ps["modal"]["name"] == "Modal"
    assert ps["modal"]["url"] == "https://modal.com/docs/examples/vllm_inference"
    assert ps["modal"]["install"].splitlines() == ["pip install modal", "modal setup"]
    assert ps["sagemaker"]["name"] == "AWS SageMaker"
    assert ps["sagemaker"]["url"] == "https://docs.vllm.ai/en/latest/examples/deployment/sagemaker-entrypoint/"
    assert ps["sagemaker"]["install"].splitlines() == [
        "# Dockerfile",
        "FROM vllm/vllm-openai:latest",
        "COPY sagemaker-entrypoint.sh /app/",
        "RUN chmod +x /app/sagemaker-entrypoint.sh",
        'ENTRYPOINT ["/app/sagemaker-entrypoint.sh"]',
    ]
