"""One failing-first test per defect of the "deployments that start and serve" issue (see
test_cluster_semantics.py for the general check)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml
from deploy_helpers import deployment, export, yaml_docs

from vllm_recipes.catalog import load_catalog
from vllm_recipes.render.artifacts import ExportOptions, stdout_text
from vllm_recipes.render.export import ExportError
from vllm_recipes.render.workloads import container_install, exec_form


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _k8s(catalog, seed, **opts):
    from deploy_helpers import OPTIONS
    return yaml_docs(stdout_text(export(catalog, seed, "k8s", replace(OPTIONS, **opts))))


def test_1_lws_client_service_does_not_take_the_headless_name(catalog):
    docs = _k8s(catalog, "v41-h200-dep-2nodes")
    lws = {d["metadata"]["name"] for d in docs if d["kind"] == "LeaderWorkerSet"}
    assert lws and not lws & {d["metadata"]["name"] for d in docs if d["kind"] == "Service"}


def test_2_uv_installs_target_the_image_interpreter_or_are_skipped():
    assert container_install("uv pip install vllm-router", "vllm/vllm-openai:v0.30.0", "r") == \
        "uv pip install --system vllm-router"
    assert container_install("uv pip install 'mooncake-transfer-engine>=0.3.10'", "vllm/vllm-openai:v0.30.0",
                             "m") is None  # the CUDA image ships the KV connectors
    assert container_install('uv pip install "lmcache==0.5.1"', "vllm/vllm-openai:nightly", "l") == \
        "uv pip install --system lmcache==0.5.1"  # a pin is kept
    with pytest.raises(ExportError, match="not a `pip install`"):
        container_install("curl x | sh", "vllm/vllm-openai:nightly", "x")


def test_3_grpc_pools_are_probed_over_grpc(catalog):
    from deploy_helpers import SEEDS
    SEEDS["_grpc"] = ("deepseek-ai/DeepSeek-V4.1-Flash", {"hardware": "h200", "strategy": "pd_cluster",
                                                          "pd_router": "smg-grpc"})
    try:
        docs = _k8s(catalog, "_grpc")
        slurm = export(catalog, "_grpc", "slurm")[0].content
    finally:
        SEEDS.pop("_grpc")
    pre = next(d for d in docs if d["metadata"]["name"].endswith("-prefill") and d["kind"] == "Deployment")
    c = pre["spec"]["template"]["spec"]["containers"][0]
    assert "--grpc" in c["args"] and c["readinessProbe"]["grpc"] == {"port": 8001}
    assert 'wait_healthy "tcp://' in slurm and "8001/health" not in slurm


def test_4_vllm_config_is_a_real_yaml_file_and_env_sh_exports_the_settings(catalog):
    arts = {a.path: a for a in export(catalog, "v41-h200-dep-2nodes", "vllm-config")}
    head = arts["vllm-node-0.yaml"].content
    assert "<(" not in head and "--config vllm-node-0.yaml" in head
    assert "export HEAD_IP" in arts["vllm-node-0.env.sh"].content


def test_5_pd_dep_rpc_ports_are_fixed(catalog):
    docs = _k8s(catalog, "v41-h200-pd-dep-pools")
    settings = next((d for d in docs if d["metadata"]["name"].endswith("-settings")), {"data": {}})
    assert not [k for k in settings["data"] if k.endswith("RPC_PORT")]
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet" and d["metadata"]["name"].endswith("prefill"))
    args = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"]
    assert args[args.index("--data-parallel-rpc-port") + 1] == "13345"


def test_6_mooncake_over_rdma_gets_rdma_and_no_literal_setting(catalog):
    docs = _k8s(catalog, "v4-h200-mooncake")
    store = next(d for d in docs if d["metadata"]["name"].endswith("mooncake-store") and d["kind"] == "Deployment")
    c = store["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"]["limits"]["rdma/ib"] == 1 and c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    files = next(d for d in docs if d["metadata"]["name"].endswith("-files"))
    cfg = json.loads(files["data"]["mooncake.json"])
    assert cfg["device_name"] == "$MOONCAKE_DEVICE_NAME"  # the template; expanded at start:
    inst = next(d for d in docs if d["metadata"]["name"].endswith("vllm-1") and d["kind"] == "Deployment")
    assert "/tmp/vllm-recipes/mooncake.json MOONCAKE_DEVICE_NAME &&" in \
        inst["spec"]["template"]["spec"]["containers"][0]["command"][2]
    from vllm_recipes.render import compose
    dep = deployment(catalog, "v4-h200-mooncake")
    text = compose.render(replace(dep, processes=tuple(p for p in dep.processes if p.key in (
        "mooncake-master", "mooncake-store", "vllm-1"))), ExportOptions())[0].content
    assert "${MOONCAKE_DEVICE_NAME?" in text and "${MOONCAKE_DEVICE_NAME:?" not in text  # "" is documented


def test_7_hybrid_lb_service_selects_every_api_pod(catalog):
    svc = next(d for d in _k8s(catalog, "v41-h200-dep-2nodes") if d["kind"] == "Service")
    assert "leaderworkerset.sigs.k8s.io/worker-index" not in svc["spec"]["selector"]


def test_8_co_located_dep_runs_one_rank_per_gpu_and_one_slurm_node(catalog):
    from deploy_helpers import SEEDS
    SEEDS["_coloc"] = ("deepseek-ai/DeepSeek-V4-Flash", {"hardware": "h200", "strategy": "pd_cluster",
                                                         "prefill_nodes": 0, "decode_nodes": 0})
    try:
        dep = deployment(catalog, "_coloc")
        slurm = export(catalog, "_coloc", "slurm")[0].content
    finally:
        SEEDS.pop("_coloc")
    for p in dep.processes:
        if p.kind == "serve":
            a = list(p.argv)
            local = int(a[a.index("--data-parallel-size-local") + 1])
            assert local == len(dict(p.env)["CUDA_VISIBLE_DEVICES"].split(","))
    assert "#SBATCH --nodes=1\n" in slurm
    with pytest.raises(ExportError, match="flag with spaces"):
        exec_form(["--a b c"], "t")


def test_9_vllm_config_keys_parse_like_vllm():
    from vllm_recipes.render.vllm_config import config_mapping
    _m, mapping, _cli = config_mapping(("vllm", "serve", "m", "--chat-template-content-format=string",
                                        "--kernel-config.enable_flashinfer_autotune=False",
                                        "--attention_config.backend", "X"), "t")
    assert mapping == {"chat-template-content-format": "string",
                       "kernel-config": {"enable_flashinfer_autotune": "False"},
                       "attention-config": {"backend": "X"}}


def test_10_production_defaults(catalog):
    docs = _k8s(catalog, "v41-h200-dep-2nodes", pvc=None)
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    spec = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    c = spec["containers"][0]
    assert {"cpu", "memory", "ephemeral-storage"} <= set(c["resources"]["requests"])
    assert c["livenessProbe"]["timeoutSeconds"] >= 5
    assert c["imagePullPolicy"] == "Always"  # :nightly floats
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["dshm"]["emptyDir"]["sizeLimit"] and vols["hf-cache"]["emptyDir"]["sizeLimit"]
    with pytest.raises(ExportError, match="too long"):
        _k8s(catalog, "v41-mi355x-pd", name="a" * 55)
    station = yaml.safe_load(stdout_text(export(catalog, "v41-station-offload", "compose")))
    assert station["services"]["vllm"]["deploy"]["resources"]["reservations"]["memory"]
    lm = ExportOptions()
    assert lm.rdma == "rdma/ib"
