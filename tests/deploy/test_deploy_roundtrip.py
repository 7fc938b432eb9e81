"""Round trips: what each artifact runs is exactly the plan's argv and env (parsed and executed, not grepped)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from deploy_helpers import (
    RPC,
    SEEDS,
    Settings,
    container_argv,
    container_env,
    deployment,
    export,
    fill,
    k8s_meaning,
    rank_argv,
    rank_env,
    run_shell_full,
    state_for,
    stub_dir,
    vllm_view,
    yaml_docs,
)

from vllm_recipes.catalog import load_catalog
from vllm_recipes.jsvalues import js_str
from vllm_recipes.render.artifacts import default_name, stdout_text
from vllm_recipes.render.export import ExportError
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.render.shell import literal
from vllm_recipes.render.vllm_config import config_argv
from vllm_recipes.synth.resolve import resolve

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    return stub_dir(tmp_path_factory.mktemp("stubs"))


def _env(env: dict) -> dict[str, str]:
    """Env values as a process sees them (the docker tab's ``-e K=V`` text)."""
    return {k: js_str(v) for k, v in env.items()}


@pytest.mark.parametrize("seed", list(SEEDS))
def test_processes_are_the_json_renderings_argv_and_env(catalog, seed):
    """The deployment every target renders holds the same argv/env as the JSON API rendering."""
    recipe, st = state_for(catalog, seed)
    ctx, plan = resolve(catalog, recipe, st.selection)
    obj = rendering_object(ctx, plan)
    dep = deployment(catalog, seed)
    procs = {p.key: p for p in dep.processes}
    if "head_argv" in obj:
        p = procs["vllm"]
        assert list(p.argv) == obj["head_argv"]
        assert [list(a) for a in p.worker_argvs] == obj["worker_argvs"]
        assert dict(p.env) == _env(obj["env"])
        assert p.nodes == obj["node_count"]
    elif "prefill" in obj:
        for role in ("prefill", "decode"):
            assert list(procs[role].argv) == obj[role]["argv"]
            assert dict(procs[role].env) == _env(obj[role]["env"])
        assert list(procs["router"].argv) == shlex.split(obj["router"]["command"].replace("\\\n", " "))
    elif "vllm_argv" in obj:
        assert list(procs["vllm-1"].argv) == obj["vllm_argv"]
        assert dict(procs["vllm-1"].env) == _env(obj["env"])
        assert len([k for k in procs if k.startswith("vllm-")]) == obj["instances"]
    else:
        assert list(procs["vllm"].argv) == obj["argv"]
        assert dict(procs["vllm"].env) == _env(obj["env"])


def test_pool_worker_ranks_come_from_re_resolving_each_rank(catalog):
    dep = deployment(catalog, "v41-h200-pd-dep-pools")
    prefill = next(p for p in dep.processes if p.key == "prefill")
    recipe, st = state_for(catalog, "v41-h200-pd-dep-pools")
    pd = dict(st.selection.pd_nodes)
    pd["prefill"] = {**pd["prefill"], "rank": 1}
    from dataclasses import replace

    ctx, plan = resolve(catalog, recipe, replace(st.selection, pd_nodes=pd))
    assert list(prefill.worker_argvs[0]) == rendering_object(ctx, plan)["prefill"]["argv"]
    assert "--data-parallel-start-rank" in prefill.worker_argvs[0]


def _workload(docs, name):
    return next(d for d in docs if d["metadata"]["name"] == name and d["kind"] in ("Deployment", "LeaderWorkerSet"))


def _pod_spec(doc, rank):
    if doc["kind"] == "Deployment":
        return doc["spec"]["template"]["spec"]
    tmpl = doc["spec"]["leaderWorkerTemplate"]
    return tmpl["leaderTemplate" if rank == 0 else "workerTemplate"]["spec"]


@pytest.mark.parametrize("seed", list(SEEDS))
def test_k8s_containers_run_the_plan_argv_and_env(catalog, seed, stubs):
    if seed == "v41-h200-pd-colocated":
        with pytest.raises(ExportError, match="co-located"):
            export(catalog, seed, "k8s")
        return
    dep = deployment(catalog, seed)
    docs = yaml_docs(stdout_text(export(catalog, seed, "k8s")))
    base = default_name(dep.model_id)
    settings = Settings()
    cm = next((d for d in docs if d["metadata"]["name"].endswith("-settings")), None)
    if cm is not None:
        settings.update({k: f"<{k}>" for k in cm["data"]})
    single = len(dep.processes) == 1
    for p in dep.processes:
        if p.kind == "companion":
            continue
        doc = _workload(docs, base if single else f"{base}-{p.key}")
        assert (doc["kind"] == "LeaderWorkerSet") == (p.nodes > 1)
        for rank in range(p.nodes):
            [c] = [c for c in _pod_spec(doc, rank)["containers"] if c["name"] == p.key]
            cluster = {"LWS_LEADER_ADDRESS": "LEADER", "LWS_WORKER_INDEX": str(rank), "POD_IP": "PODIP"}
            env = container_env(c, settings, cluster)
            meaning = Settings(k8s_meaning(dep, base, p, rank))
            assert container_argv(c, env, stubs) == [fill(t, meaning) for t in rank_argv(p, rank)], (p.key, rank)
            for k, v in rank_env(p, rank):
                if "$LD_PRELOAD" not in v:  # set by the container's shell (tests/deploy/test_deploy_one_rule.py)
                    assert env[k] == fill(v, meaning), (p.key, rank, k)
            if p.gpus:
                assert c["resources"]["limits"][dep.profile["device_resource"]] == p.gpus


def test_lws_client_service_selects_every_api_server_and_leaves_the_headless_name(catalog):
    """Hybrid-LB DEP: every node serves the API, so the Service selects every pod of the group; its
    name is not the LWS's (the controller's headless Service `<lws>` gives the pods their DNS)."""
    docs = yaml_docs(stdout_text(export(catalog, "v41-h200-dep-2nodes", "k8s")))
    svc = next(d for d in docs if d["kind"] == "Service")
    assert svc["metadata"]["name"] == "deepseek-v4-1-flash-api"
    assert svc["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": "deepseek-v4-1-flash"}
    docs_tp = yaml_docs(stdout_text(export(catalog, "v41-h200-tp-2nodes", "k8s")))
    svc_tp = next(d for d in docs_tp if d["kind"] == "Service")
    assert svc_tp["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"  # --headless workers
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"


def test_k8s_pod_settings_follow_the_plan_and_options(catalog):
    docs = yaml_docs(stdout_text(export(catalog, "v41-mi355x-pd", "k8s")))
    prefill = _workload(docs, "deepseek-v4-1-flash-prefill")["spec"]["template"]["spec"]
    [c] = prefill["containers"]
    assert c["resources"]["limits"]["amd.com/gpu"] == 8
    assert c["securityContext"] == {"seccompProfile": {"type": "Unconfined"}, "capabilities": {"add": ["IPC_LOCK"]}}
    assert prefill["securityContext"] == {"supplementalGroups": [44]}
    vols = {v["name"]: v for v in prefill["volumes"]}
    assert vols["dshm"] == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}
    assert vols["hf-cache"] == {"name": "hf-cache", "persistentVolumeClaim": {"claimName": "hf-cache"}}
    # the startup budget covers the recipe's VLLM_ENGINE_READY_TIMEOUT_S (3600 s)
    probe = c["startupProbe"]
    assert probe["httpGet"] == {"path": "/health", "port": 8001}
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 3600
    token = next(e for e in c["env"] if e["name"] == "HF_TOKEN")
    assert token["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
    assert all(d["metadata"]["namespace"] == "serving" for d in docs)


def test_mooncake_config_is_a_configmap_mounted_where_the_plan_expects_it(catalog):
    docs = yaml_docs(stdout_text(export(catalog, "v4-h200-mooncake", "k8s")))
    files = next(d for d in docs if d["metadata"]["name"].endswith("-files"))
    cfg = json.loads(files["data"]["mooncake.json"])
    assert cfg["master_server_address"] == "deepseek-v4-flash-0731-mooncake-master:50051"
    inst = _workload(docs, "deepseek-v4-flash-0731-vllm-1")["spec"]["template"]["spec"]
    [c] = inst["containers"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    # the file holds $MOONCAKE_DEVICE_NAME: expanded from the settings at container start
    assert env["MOONCAKE_CONFIG_PATH"] == "/tmp/vllm-recipes/mooncake.json"
    assert "/etc/vllm-recipes/mooncake.json /tmp/vllm-recipes/mooncake.json" in c["command"][2]
    assert {"name": "files", "mountPath": "/etc/vllm-recipes", "readOnly": True} in c["volumeMounts"]
    assert {"name": "files", "configMap": {"name": "deepseek-v4-flash-0731-files"}} in inst["volumes"]


def _compose(tmp_path, text, env):
    (tmp_path / "compose.yaml").write_text(text)
    out = subprocess.run([str(BIN / "docker-compose"), "-f", "compose.yaml", "config", "--format", "json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60,
                         env={**{k: v for k, v in os.environ.items() if k != "HF_TOKEN"}, **env})
    return out


@pytest.mark.parametrize("seed", ["v41-gb200-tp2", "v41-h200-pd-colocated"])
def test_compose_services_run_the_plan_argv_and_env(catalog, seed, tmp_path):
    dep = deployment(catalog, seed)
    text = stdout_text(export(catalog, seed, "compose"))
    user = {n: f"<{n}>" for n in ("IFACE_NAME", "PREFILL_DP_RPC_PORT", "DECODE_DP_RPC_PORT")}
    out = _compose(tmp_path, text, user)
    assert out.returncode == 0, out.stderr
    services = json.loads(out.stdout)["services"]
    meaning = Settings({"ROUTER_HOST": "0.0.0.0", **RPC})
    for p in dep.processes:
        if p.pool:
            meaning[f"{p.pool}1"] = p.key
        if p.kind == "router":
            meaning["ROUTER_PORT"] = str(p.port)
    for p in dep.processes:
        svc = services[p.key]
        entry = [t.replace("$$", "$") for t in svc["entrypoint"]]
        argv = [*entry[3:], *svc.get("command", [])] if entry[:2] == ["/bin/sh", "-c"] else [*entry, *svc["command"]]
        assert [t.replace("$$", "$") for t in argv] == [fill(t, meaning) for t in p.argv]
        env = {k: (v or "").replace("$$", "$") for k, v in svc.get("environment", {}).items()}
        for k, v in p.env:
            assert env[k] == fill(v, meaning)
        if p.kind == "router":
            assert set(svc["depends_on"]) == {"prefill", "decode"}
            assert all(d["condition"] == "service_healthy" for d in svc["depends_on"].values())


def test_compose_requires_the_placeholders_it_cannot_fill(catalog, tmp_path):
    """A user placeholder is listed in the header and required by Compose interpolation."""
    from dataclasses import replace

    from vllm_recipes.render import compose
    from vllm_recipes.render.artifacts import ExportOptions

    dep = deployment(catalog, "v41-gb200-tp2")
    [p] = dep.processes
    dep = replace(dep, processes=(replace(p, env=(*p.env, ("NCCL_SOCKET_IFNAME", "$IFACE_NAME"))),))
    [art] = compose.render(dep, ExportOptions())
    assert "#   IFACE_NAME: used by vLLM env NCCL_SOCKET_IFNAME" in art.content
    out = _compose(tmp_path, art.content, {})
    assert "required variable IFACE_NAME is missing a value" in out.stderr
    out = _compose(tmp_path, art.content, {"IFACE_NAME": "eth7"})
    assert json.loads(out.stdout)["services"]["vllm"]["environment"]["NCCL_SOCKET_IFNAME"] == "eth7"


def test_compose_gpu_reservations_follow_the_docker_flags(catalog):
    svc = yaml_docs(stdout_text(export(catalog, "v41-gb200-tp2", "compose")))[0]["services"]["vllm"]
    assert svc["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "count": 2, "capabilities": ["gpu"]}]
    assert svc["ipc"] == "host"
    assert svc["healthcheck"]["start_period"] == "3600s"


# --- Slurm -------------------------------------------------------------------------------------

#: ``srun`` records its call, then stays up (like a server step) until every expected step has started
SRUN = "#!" + sys.executable + """
import fcntl, json, os, sys, time
with open(os.environ["SRUN_LOG"], "a+") as fh:
    fcntl.flock(fh, fcntl.LOCK_EX)
    fh.write(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}) + "\\n")
    fh.seek(0)
    started = len(fh.read().splitlines())
if started < int(os.environ["EXPECTED_STEPS"]):
    time.sleep(60)
"""


def _run_sbatch(tmp_path: Path, script: str, nodes: int, stubs: Path, user: dict[str, str],
                steps: int) -> list[dict]:
    bin_ = tmp_path / "sbin"
    bin_.mkdir()
    (bin_ / "srun").write_text(SRUN)
    (bin_ / "scontrol").write_text("#!/bin/sh\n" + "".join(f"echo node{i}\n" for i in range(nodes)))
    (bin_ / "curl").write_text("#!/bin/sh\nexit 0\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    (tmp_path / "job.sbatch").write_text(script)
    log = tmp_path / "srun.log"
    env = {"PATH": f"{bin_}:{stubs}:/usr/bin:/bin", "SRUN_LOG": str(log), "SLURM_JOB_NODELIST": "node[0-9]",
           "SLURM_JOB_ID": "42", "SLURM_SUBMIT_DIR": str(tmp_path), "HOME": str(tmp_path),
           "EXPECTED_STEPS": str(steps), **user}
    out = subprocess.run(["bash", str(tmp_path / "job.sbatch")], env=env, capture_output=True, text=True,
                         timeout=60)
    assert "a job step exited" in out.stderr, out.stderr
    return [json.loads(ln) for ln in log.read_text().splitlines()]


def _nodelist(argv: list[str]) -> list[str]:
    return next(a.split("=", 1)[1] for a in argv if a.startswith("--nodelist=")).split(",")


@pytest.mark.parametrize("seed", list(SEEDS))
def test_slurm_steps_run_the_plan_argv_and_env(catalog, seed, tmp_path, stubs):
    dep = deployment(catalog, seed)
    [art] = export(catalog, seed, "slurm")
    total = dep.machines
    user = {n: f"<{n}>" for n in ("IFACE_NAME", "PREFILL_DP_RPC_PORT", "DECODE_DP_RPC_PORT", "MOONCAKE_DEVICE_NAME",
                                  "MOONCAKE_STORE_DEVICE_NAME")}
    steps = [p for p in dep.processes if p.kind in ("companion", "mooncake")] + \
        [p for p in dep.processes if p.kind == "serve"] + [p for p in dep.processes if p.kind == "router"]
    calls = _run_sbatch(tmp_path, art.content, total, stubs, user, len(steps))
    # steps start concurrently; put the recorded calls back in script order (identical step texts, such as
    # two Mooncake instances, start on increasing nodes)
    calls.sort(key=lambda c: (art.content.index(literal(c["argv"][-1])), _nodelist(c["argv"])))
    assert len(calls) == len(steps)
    serve_nodes: dict[str, list[str]] = {}
    for p, call in zip(steps, calls, strict=True):
        serve_nodes[p.key] = _nodelist(call["argv"])
    meaning = Settings(user)
    meaning.update({"HEAD_IP": "node0", "ROUTER_HOST": "0.0.0.0", "MOONCAKE_MASTER_IP": "node0", **RPC})
    for p in dep.processes:
        if p.pool:
            for k, host in enumerate(serve_nodes[p.key], start=1):
                meaning[f"{p.pool}{k}"] = host
        if p.key.startswith("vllm-"):
            meaning[f"VLLM_INSTANCE_{p.key[5:]}"] = serve_nodes[p.key][0]
        if p.kind == "router":
            meaning["ROUTER_PORT"] = str(p.port)
        for f in p.files:
            meaning[f.path_var] = f"{tmp_path}/{default_name(dep.model_id)}-42/{f.name}"
    for p, call in zip(steps, calls, strict=True):
        argv = call["argv"]
        assert argv[-3:-1] == ["bash", "-c"]
        script = argv[-1]
        sc = subprocess.run([str(BIN / "shellcheck"), "-s", "bash", "-"], input=script, capture_output=True,
                            text=True)
        assert sc.returncode == 0, sc.stdout
        if dep.install == "docker":
            assert any(a.startswith("--container-image=") for a in argv)
        for rank, host in enumerate(_nodelist(argv)):
            env = {**call["env"], "SLURM_NODEID": str(rank), "SLURM_PROCID": str(rank)}
            stub_env = {**env, "PATH": f"{tmp_path}/hn:{env['PATH']}"}
            (tmp_path / "hn").mkdir(exist_ok=True)
            (tmp_path / "hn" / "hostname").write_text(f"#!/bin/sh\necho {host}\n")
            (tmp_path / "hn" / "hostname").chmod(0o755)
            if p.script is not None:
                continue
            got, env_out = run_shell_full(script, stub_env, stubs)
            assert got == [fill(t, meaning) for t in rank_argv(p, rank)], (p.key, rank)
            for k, v in rank_env(p, rank):
                assert env_out[k] == fill(v, meaning), (p.key, rank, k)
    files = {f.name: f for p in dep.processes for f in p.files}
    for name in files:
        written = json.loads((tmp_path / f"{default_name(dep.model_id)}-42" / name).read_text())
        assert written == json.loads(fill(files[name].content, meaning))


# --- vllm serve --config ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", list(SEEDS))
def test_vllm_config_reads_back_to_the_plan_argv(catalog, seed, tmp_path):
    dep = deployment(catalog, seed)
    arts = {a.path: a for a in export(catalog, seed, "vllm-config")}
    for p in dep.processes:
        if p.kind != "serve":
            continue
        for rank in range(p.nodes):
            stem = p.key if p.nodes == 1 else f"{p.key}-node-{rank}"
            mapping = yaml.safe_load(arts[f"{stem}.yaml"].content)
            script = arts[f"{stem}.env.sh"].content
            # the script refuses to run until each placeholder it lists is set
            user = {n: f"<{n}>" for n in re.findall(r': "\$\{([A-Z_][A-Z0-9_]*):?\?', script)}
            # the Run line: flags holding a placeholder stay on the command line, after --config
            run = re.search(r"^# Run: \. \./\S+ && (.*)$", script, re.M).group(1)
            cli = [fill(t, Settings(user)) for t in shlex.split(run.replace('"${', "$").replace('}"', ""))]
            i = cli.index("--config")
            got = config_argv(p.argv[2], mapping, tuple(cli[i + 2:]))
            assert vllm_view(got) == vllm_view([fill(t, Settings({**user, **RPC})) for t in rank_argv(p, rank)])
            env_sh = tmp_path / f"{stem}.env.sh"
            env_sh.write_text(script)
            out = subprocess.run(["sh", "-c", '. "$0" && env -0', str(env_sh)], capture_output=True,
                                 env={"PATH": "/usr/bin:/bin", **user}, text=True)
            assert out.returncode == 0, out.stderr
            env = dict(x.split("=", 1) for x in out.stdout.split("\0") if "=" in x)
            for k, v in rank_env(p, rank):
                assert env[k] == fill(v, Settings(user)), (stem, k)


def test_json_flags_become_nested_mappings(catalog):
    arts = {a.path: a for a in export(catalog, "v41-gb200-tp2", "vllm-config")}
    mapping = yaml.safe_load(arts["vllm.yaml"].content)
    assert mapping["attention-config"] == {"backend": "FLASHINFER_MLA_SPARSE_DSV41", "indexer_kv_dtype": "mxfp4",
                                           "indexer_sparse_logits": True}
    assert mapping["enable-auto-tool-choice"] is True
    assert mapping["tensor-parallel-size"] == 2
