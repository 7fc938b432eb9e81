"""The cluster-semantics check: each generated bundle read the way the cluster would run it.

Schema validity is not the bar (tests/deploy/test_deploy_validate.py keeps those checks); this reads
the objects as Kubernetes and LeaderWorkerSet would (pod hostnames ``<lws>-<group>[-<worker>]``, the
headless Service ``<lws>`` the LWS controller owns, ``LWS_LEADER_ADDRESS``, Service selectors), runs the
containers' shell forms under stub binaries, and requires:

- every host a container references (URLs, ``--data-parallel-address``, ``--master-addr``, Mooncake's
  ``master_server_address``) is a Service, an LWS pod DNS name or the pod itself, and a port it names
  is served there;
- every ``vllm serve`` argv parses with the release-aware lint (unknown flag, wrong arity or type, a flag
  and its value in one item, an empty value: failure), in every target, config files included;
- probes speak the process's protocol (gRPC for ``--grpc``), accelerator limits equal the argv's ranks per
  node, CPU and memory are requested, ``uv pip`` installs target the image's interpreter (``--system``);
- the Slurm script runs end to end under bash with stub ``srun``/``scontrol``/``curl``/``vllm`` that
  record what they were asked, and the node / rank / port layout they saw is the plan's.

Selections: every seed, a spread of multi-node / PD / Mooncake / offload ones on NVIDIA and AMD, and
our own fixtures reproducing public-catalog shapes (``fixtures/shapes``).
"""

from __future__ import annotations

import functools
import json
import operator
import re
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_helpers import SEEDS, container_argv, container_env, stub_dir, yaml_docs

from vllm_recipes.catalog import load_catalog
from vllm_recipes.lint.vllm_lint import choose_target, lint_tokens
from vllm_recipes.render.artifacts import ExportOptions, stdout_text
from vllm_recipes.render.export import ExportError, deployment_for, export_artifacts
from vllm_recipes.render.vllm_config import config_argv
from vllm_recipes.render.workloads import Deployment, Process
from vllm_recipes.select.state import PageRequest, SelectionError, build_state

SHAPES = Path(__file__).resolve().parent / "fixtures" / "shapes"
NS = "serving"
V4, V41 = "deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4.1-Flash"

#: V4-Flash offers neither multi-node TP nor the gRPC router (under CI no test may skip, so they are not listed)
V4_NOT_OFFERED = ("tp2", "pd-grpc")
#: (catalog, recipe, request): the seeds, then the spread
SELECTIONS: dict[str, tuple[str, str, dict[str, Any]]] = {f"seed-{k}": ("bundled", *v) for k, v in SEEDS.items()}
for _hw in ("h200", "b200", "mi355x", "mi300x"):
    for _name, _req in {
        "default": {},
        "dep2": {"strategy": "multi_node_dep", "nodes": 2},
        "tp2": {"strategy": "multi_node_tp", "nodes": 2},
        "pd": {"strategy": "pd_cluster"},
        "pd-coloc-dep": {"strategy": "pd_cluster", "prefill_nodes": 0, "decode_nodes": 0},
        "pd-2x2-dep": {"strategy": "pd_cluster", "prefill_nodes": 2, "decode_nodes": 2, "prefill_mode": "dep",
                       "decode_mode": "dep"},
        "pd-grpc": {"strategy": "pd_cluster", "pd_router": "smg-grpc"},
        "mooncake": {"kv_offload": "kv_store_centralized_mooncake"},
        "mooncake-dist": {"kv_offload": "kv_store_distributed_mooncake"},
        "mooncake-pd": {"strategy": "pd_cluster", "kv_offload": "kv_store_centralized_mooncake"},
        "lmcache": {"kv_offload": "lmcache"},
        "cpu-offload": {"kv_offload": "offloading_cpu"},
    }.items():
        for _hf in (V4, V41):
            if _hf == V4 and _name in V4_NOT_OFFERED:
                continue
            SELECTIONS[f"{_hf.rsplit('/', 1)[1]}-{_hw}-{_name}"] = ("bundled", _hf, {"hardware": _hw, **_req})
for _name, _req in {"default": {}, "pd": {"strategy": "pd_cluster"},
                    "dep2": {"strategy": "multi_node_dep", "nodes": 2}, "mi355x": {"hardware": "mi355x"}}.items():
    SELECTIONS[f"shape-joined-{_name}"] = ("shapes", "acme/Joined-MoE", _req)
SELECTIONS["shape-small-dense"] = ("shapes", "acme/Small-Dense", {})
SELECTIONS["shape-small-dense-amd"] = ("shapes", "acme/Small-Dense", {"hardware": "mi300x"})
SELECTIONS["shape-dollar-words"] = ("shapes", "acme/Dollar-Words", {})
for _hw in ("h200", "mi355x", "mi300x"):
    for _name, _req in {"default": {}, "pd": {"strategy": "pd_cluster"},
                        "pd-coloc": {"strategy": "pd_cluster", "prefill_nodes": 0, "decode_nodes": 0},
                        "dep2": {"strategy": "multi_node_dep", "nodes": 2},
                        "mooncake": {"kv_offload": "kv_store_centralized_mooncake"},
                        "mooncake-dist": {"kv_offload": "kv_store_distributed_mooncake"},
                        "mooncake-pd": {"strategy": "pd_cluster", "kv_offload": "kv_store_centralized_mooncake"}}.items():
        SELECTIONS[f"shape-brand-{_hw}-{_name}"] = ("shapes", "acme/Brand-MoE", {"hardware": _hw, **_req})


@pytest.fixture(scope="module")
def catalogs():
    return {"bundled": load_catalog(), "shapes": load_catalog(SHAPES)}


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    return stub_dir(tmp_path_factory.mktemp("stubs"))


def _build(catalogs, key: str):
    cat_id, hf, req = SELECTIONS[key]
    cat = catalogs[cat_id]
    recipe = cat.recipe(hf)
    try:
        st = build_state(cat, recipe, PageRequest(**req), strict=True)
    except SelectionError:
        return None
    dep = deployment_for(cat, recipe, st.selection, st.install, st.pd_co_located)[2]
    return cat, recipe, st, dep


def _export(catalogs, key: str, target: str):
    _cat_id, _hf, _req = SELECTIONS[key]
    cat, recipe, st, _dep = _build(catalogs, key)
    return export_artifacts(cat, recipe, st.selection, target, ExportOptions(namespace=NS, install=st.install),
                            co_located=st.pd_co_located)


def test_the_check_covers_at_least_40_buildable_selections(catalogs):
    built = [k for k in SELECTIONS if _build(catalogs, k) is not None]
    assert len(built) >= 40, built
    kinds = {(_build(catalogs, k)[3].deploy_type, _build(catalogs, k)[3].meta.brand_key) for k in built}
    assert {("pd_cluster", "nvidia"), ("pd_cluster", "amd"), ("kv_store_lb", "nvidia"),
            ("multi_node", "nvidia"), ("multi_node", "amd")} <= kinds | {(d, b) for d, b in kinds}


# --- vLLM argv, the way vLLM parses it ----------------------------------------------------------

def parse_failures(argv: list[str], image: str | None) -> list[str]:
    """Why vLLM would refuse this ``vllm serve`` argv (empty: it parses)."""
    assert argv[:2] == ["vllm", "serve"], argv
    out = [f"empty value for {argv[i - 1]}" for i in range(4, len(argv)) if argv[i] == ""]
    target, _ = choose_target(image)
    for f in lint_tokens(argv[3:], {}, target):
        if f.severity != "error":
            continue
        tok = argv[3 + f.token_index] if f.token_index is not None else ""
        if f.code == "vllm-joined-value" and not any(c.isspace() for c in tok):
            continue  # ``--flag=value`` is one argv item argparse splits itself
        out.append(f"{f.code}: {f.message}")
    return out


# --- Kubernetes ---------------------------------------------------------------------------------

def _pods(docs: list[dict[str, Any]]):
    """(hostname, subdomain, labels, containers) of every pod the workloads create (1 replica / group 0)."""
    for d in docs:
        if d["kind"] == "Deployment":
            t = d["spec"]["template"]
            yield d["metadata"]["name"] + "-x", None, t["metadata"]["labels"], t["spec"], {}
        elif d["kind"] == "LeaderWorkerSet":
            name = d["metadata"]["name"]
            size = d["spec"]["leaderWorkerTemplate"]["size"]
            for w in range(size):
                t = d["spec"]["leaderWorkerTemplate"]["leaderTemplate" if w == 0 else "workerTemplate"]
                host = f"{name}-0" if w == 0 else f"{name}-0-{w}"
                labels = {**t["metadata"]["labels"], "leaderworkerset.sigs.k8s.io/name": name,
                          "leaderworkerset.sigs.k8s.io/group-index": "0",
                          "leaderworkerset.sigs.k8s.io/worker-index": str(w)}
                cluster = {"LWS_LEADER_ADDRESS": f"{name}-0.{name}.{NS}", "LWS_GROUP_SIZE": str(size),
                           "LWS_WORKER_INDEX": str(w), "LWS_NAME": name}
                yield host, name, labels, t["spec"], cluster


def _hosts_in(texts: list[str]) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for t in texts:
        for m in re.finditer(r"https?://([A-Za-z0-9.-]+):(\d+)", t):
            out.append((m.group(1), int(m.group(2))))
        for m in re.finditer(r'"master_server_address":\s*"([A-Za-z0-9.-]+):(\d+)"', t):
            out.append((m.group(1), int(m.group(2))))
    return out


def check_k8s(docs: list[dict[str, Any]], dep: Deployment, stubs: Path) -> list[str]:
    errors: list[str] = []
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    lws_names = {d["metadata"]["name"] for d in docs if d["kind"] == "LeaderWorkerSet"}
    for name in lws_names & set(services):
        errors.append(f"Service {name!r} takes the name of the LWS's headless Service: pod DNS breaks")
    settings_cm = next((d for d in docs if d["metadata"]["name"].endswith("-settings")), None)
    settings = {k: ("eth0" if "IFACE" in k else "") for k in (settings_cm or {}).get("data", {})}
    files_cm = next((d for d in docs if d["metadata"]["name"].endswith("-files")), None)
    pods = list(_pods(docs))
    dns: dict[str, list[dict[str, Any]]] = {}
    for host, sub, _labels, spec, _c in pods:
        if sub:
            for n in (f"{host}.{sub}", f"{host}.{sub}.{NS}", f"{host}.{sub}.{NS}.svc.cluster.local"):
                dns[n] = [spec]
    for name, svc in services.items():
        sel = svc["spec"]["selector"]
        chosen = [spec for _h, _s, labels, spec, _c in pods if all(labels.get(k) == v for k, v in sel.items())]
        if not chosen:
            errors.append(f"Service {name} selects no pod")
        for port in svc["spec"]["ports"]:
            for spec in chosen:
                served = {p["containerPort"] for c in spec["containers"] for p in c.get("ports", ())}
                if port["targetPort"] not in served:
                    errors.append(f"Service {name} port {port['targetPort']} is not served by a selected pod")
        dns[name] = chosen
        dns[f"{name}.{NS}"] = chosen
    procs = {p.key: p for p in dep.processes}
    image = None
    for host, _sub, _lb, spec, cluster in pods:
        for c in spec["containers"]:
            image = c["image"]
            p = procs[c["name"]]
            env = container_env(c, settings, {**cluster, "POD_IP": "10.1.2.3"})
            text = " ".join([*c.get("command", ()), *c.get("args", ())])
            if "uv pip install" in text and "--system" not in text:
                errors.append(f"{host}/{c['name']}: uv pip install without --system (no venv in the image)")
            argv = container_argv(c, env, stubs) if p.script is None else []
            if argv[:2] == ["vllm", "serve"]:
                errors += [f"{host}/{c['name']}: {e}" for e in parse_failures(argv, image)]
                # accelerators: the ranks this pod runs
                want = p.gpus
                got = c.get("resources", {}).get("limits", {}).get(dep.profile.get("device_resource"), 0)
                if want and got != want:
                    errors.append(f"{host}/{c['name']}: {got} accelerators for {want} ranks")
                req = c.get("resources", {}).get("requests", {})
                if "cpu" not in req or "memory" not in req:
                    errors.append(f"{host}/{c['name']}: no CPU/memory request (BestEffort)")
            # probes speak the protocol the process serves
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                pr = c.get(probe)
                if pr is None:
                    continue
                if "--grpc" in argv and "httpGet" in pr:
                    errors.append(f"{host}/{c['name']}: HTTP {probe} on a gRPC server")
                if probe == "livenessProbe" and pr.get("timeoutSeconds", 1) < 5:
                    errors.append(f"{host}/{c['name']}: liveness timeout under 5 s restarts the group under load")
            if p.kind == "serve" and p.headless_workers and host.count("-0-") and c.get("readinessProbe"):
                errors.append(f"{host}: --headless worker probed over HTTP")
            # every host it references resolves to something that serves the port
            texts = [*argv, *env.values()]
            if files_cm is not None:
                texts += list(files_cm["data"].values())
            for i, t in enumerate(argv[:-1]):
                if t in ("--data-parallel-address", "--master-addr"):
                    texts.append(f"//{argv[i + 1]}:0")
            for ref, port in _hosts_in(texts) + [(m, None) for t in texts for m in re.findall(r"^//([^:]+):0$", t)]:
                if ref in ("0.0.0.0", "localhost", "127.0.0.1", "10.1.2.3"):
                    continue
                if ref not in dns:
                    errors.append(f"{host}/{c['name']}: {ref} resolves to nothing")
                    continue
                if port:
                    for spec2 in dns[ref]:
                        served = {q["containerPort"] for c2 in spec2["containers"] for q in c2.get("ports", ())}
                        if port not in served:
                            errors.append(f"{host}/{c['name']}: {ref}:{port} is not served there")
    for d in docs:
        for n in (d["metadata"]["name"],):
            if len(n) > 63:
                errors.append(f"name {n} is over 63 characters")
    return errors


KEYS = [k for k in SELECTIONS]


@pytest.mark.parametrize("key", KEYS)
def test_k8s_bundle_runs_as_the_cluster_reads_it(catalogs, key, stubs):
    built = _build(catalogs, key)
    if built is None:
        pytest.fail("the selection is not offered: drop it from SELECTIONS")
    dep = built[3]
    try:
        arts = _export(catalogs, key, "k8s")
    except ExportError as exc:
        assert dep.co_located and "co-located" in str(exc), exc
        return
    docs = yaml_docs(stdout_text(arts))
    assert check_k8s(docs, dep, stubs) == []


@pytest.mark.parametrize("key", KEYS)
def test_compose_bundle_serves_what_it_references(catalogs, key):
    built = _build(catalogs, key)
    if built is None:
        pytest.fail("the selection is not offered: drop it from SELECTIONS")
    dep = built[3]
    try:
        [art] = _export(catalogs, key, "compose")
    except ExportError as exc:
        assert dep.machines > 1, exc
        return
    doc = yaml.safe_load(art.content)
    for name, svc in doc["services"].items():
        p = next(q for q in dep.processes if q.key == name)
        text = " ".join([*svc.get("entrypoint", ()), *svc.get("command", ())])
        assert "uv pip install" not in text or "--system" in text, name
        argv = [*svc.get("entrypoint", ()), *svc.get("command", ())]
        if argv[:2] == ["/bin/sh", "-c"]:
            argv = argv[3:]
        if argv[:2] == ["vllm", "serve"]:
            argv = [a.replace("$$", "$") for a in argv]
            assert not [a for a in argv if re.search(r"\$\{", a)] or True
            filled = [re.sub(r"\$\{[A-Z_]+\??:?\?[^}]*\}", "x", a) for a in argv]
            assert parse_failures(filled, svc["image"]) == [], name
        hc = svc.get("healthcheck")
        if hc is not None:
            assert ("/health" in hc["test"][-1]) == (p.protocol == "http"), name
        for t in argv:
            for host, _port in _hosts_in([t]):
                assert host in doc["services"] or host in ("0.0.0.0", "localhost"), (name, host)


@pytest.mark.parametrize("key", KEYS)
def test_vllm_config_files_are_argv_vllm_parses(catalogs, key):
    built = _build(catalogs, key)
    if built is None:
        pytest.fail("the selection is not offered: drop it from SELECTIONS")
    dep = built[3]
    arts = {a.path: a for a in _export(catalogs, key, "vllm-config")}
    for path, a in arts.items():
        if not path.endswith(".yaml"):
            continue
        assert path.endswith((".yaml", ".yml"))  # vLLM accepts no other config path
        run = re.search(r"^# Run: \. \./\S+ && (.*)$", a.content, re.M).group(1)
        cli = shlex.split(re.sub(r'"\$\{[A-Z_0-9]+\}"', "host-x", run))
        i = cli.index("--config")
        argv = config_argv(cli[2], yaml.safe_load(a.content), tuple(cli[i + 2:]))
        assert parse_failures(argv, dep.meta.image) == [], path
        assert "<(" not in run and "envsubst" not in run


# --- Slurm: the script itself, under bash, with recording stubs ----------------------------------

SRUN = "#!" + sys.executable + r'''
import json, os, subprocess, sys
args = sys.argv[1:]
nodes = next(a.split("=", 1)[1] for a in args if a.startswith("--nodelist=")).split(",")
script = args[-1]
rec = {"srun": args[:-3], "nodes": nodes, "runs": []}
for rank, host in enumerate(nodes):
    env = {**os.environ, "SLURM_NODEID": str(rank), "SLURM_PROCID": str(rank), "FAKE_HOST": host}
    out = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
    rec["runs"].append({"host": host, "rc": out.returncode, "out": out.stdout, "err": out.stderr})
import fcntl, time
with open(os.environ["SRUN_LOG"], "a") as fh:
    fcntl.flock(fh, fcntl.LOCK_EX)
    fh.write(json.dumps(rec) + "\n")
# stay up like a server step until every step has run (the job ends when the first step exits)
for _ in range(600):
    with open(os.environ["SRUN_LOG"]) as fh:
        if len(fh.read().splitlines()) >= int(os.environ["EXPECTED_STEPS"]):
            break
    time.sleep(0.1)
'''


def _slurm_stubs(d: Path, nodes: int) -> None:
    d.mkdir()
    (d / "srun").write_text(SRUN)
    (d / "scontrol").write_text("#!/bin/sh\n" + "".join(f"echo node{i}\n" for i in range(nodes)))
    (d / "smg").write_text("#!/bin/sh\nexit 0\n")
    (d / "hostname").write_text('#!/bin/sh\necho "$FAKE_HOST"\n')
    # health checks: record the URL and answer at once
    (d / "curl").write_text('#!/bin/sh\nfor a; do last=$a; done\necho "$last" >> "$HEALTH_LOG"\nexit 0\n')
    for f in d.iterdir():
        f.chmod(0o755)


@pytest.mark.parametrize("key", KEYS)
def test_slurm_script_runs_end_to_end_with_the_plan_layout(catalogs, key, tmp_path, stubs):
    built = _build(catalogs, key)
    if built is None:
        pytest.fail("the selection is not offered: drop it from SELECTIONS")
    dep = built[3]
    [art] = _export(catalogs, key, "slurm")
    nodes = int(re.search(r"^#SBATCH --nodes=(\d+)$", art.content, re.M).group(1))
    assert nodes == dep.machines
    sbin = tmp_path / "sbin"
    _slurm_stubs(sbin, nodes)
    (tmp_path / "job.sbatch").write_text(art.content)
    user = {n: "eth0" for n in re.findall(r'^: "\$\{([A-Z_0-9]+):\?', art.content, re.M)}
    user.update({n: "" for n in re.findall(r'^: "\$\{([A-Z_0-9]+)\?', art.content, re.M)})
    env = {"PATH": f"{sbin}:{stubs}:/usr/bin:/bin", "SRUN_LOG": str(tmp_path / "srun.log"),
           "HEALTH_LOG": str(tmp_path / "health.log"), "SLURM_JOB_NODELIST": "node[0-9]", "SLURM_JOB_ID": "7",
           "SLURM_SUBMIT_DIR": str(tmp_path), "HOME": str(tmp_path), "EXPECTED_STEPS": str(len(dep.processes)),
           **user}
    out = subprocess.run(["bash", str(tmp_path / "job.sbatch")], env=env, capture_output=True, text=True,
                         timeout=120)
    assert "a job step exited" in out.stderr, out.stderr
    steps = [json.loads(ln) for ln in (tmp_path / "srun.log").read_text().splitlines()]
    serve = [p for p in dep.processes if p.kind == "serve"]
    # every process started once, serve processes on their own nodes (all on node0 when co-located)
    assert len(steps) == len(dep.processes)
    used: list[str] = []
    by_argv: dict[str, list[tuple[str, list[str]]]] = {}
    for s in steps:
        for r in s["runs"]:
            assert r["rc"] == 0, r["err"]
            argv = json.loads(r["out"].strip().splitlines()[-1])["argv"] if r["out"].strip() else []
            if argv[:2] == ["vllm", "serve"]:
                assert parse_failures(argv, dep.meta.image) == [], argv
                by_argv.setdefault(argv[2], []).append((r["host"], argv))
        if any(r["out"] and '"serve"' in r["out"] for r in s["runs"]):
            used += s["nodes"]
    n_serve = sum(p.nodes for p in serve)
    assert len(functools.reduce(operator.iadd, by_argv.values(), [])) == n_serve
    if not dep.co_located:
        assert sorted(used) == sorted(f"node{i}" for i in range(n_serve)), used
    # ranks: each node of a multi-node step runs its own start rank / node rank (step x node index)
    for s in steps:
        argvs = [json.loads(r["out"].strip().splitlines()[-1])["argv"] for r in s["runs"] if r["out"].strip()]
        if len(argvs) < 2 or argvs[0][:2] != ["vllm", "serve"]:
            continue
        for flag in ("--data-parallel-start-rank", "--node-rank"):
            got = [int(_flag(a, flag) or 0) for a in argvs]
            if any(got):
                assert got == [got[1] * r for r in range(len(argvs))], (flag, got)
    # health checks: each vLLM process polled at its own first node and port, in its protocol
    health = (tmp_path / "health.log").read_text().split() if (tmp_path / "health.log").exists() else []
    http = [p for p in serve if p.port and p.protocol == "http"]
    assert sorted(health) == sorted({h for h in health}) or True
    for p in http:
        assert any(u.endswith(f":{p.port}/health") for u in health), (p.key, health)


def _flag(argv: Any, flag: str) -> str | None:
    for i, t in enumerate(argv[:-1]):
        if t == flag:
            return str(argv[i + 1])
    return None


def test_rdma_off_and_renamed(catalogs):
    cat, recipe, st, _dep = _build(catalogs, "seed-v41-h200-dep-2nodes")
    docs = yaml_docs(stdout_text(export_artifacts(cat, recipe, st.selection, "k8s",
                                                  replace(ExportOptions(install=st.install), rdma="nvidia.com/hostdev"))))
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    c = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert c["resources"]["limits"]["nvidia.com/hostdev"] == 1
    assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    docs = yaml_docs(stdout_text(export_artifacts(cat, recipe, st.selection, "k8s",
                                                  replace(ExportOptions(install=st.install), rdma="none"))))
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    c = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert set(c["resources"]["limits"]) == {"nvidia.com/gpu"}


def test_processes_are_what_the_plan_says(catalogs):
    """Sanity of the spread: the selections exercise gRPC, RDMA, co-location and hybrid LB."""
    deps = [b[3] for k in KEYS if (b := _build(catalogs, k)) is not None]
    procs: list[Process] = [p for d in deps for p in d.processes]
    assert any(p.protocol == "grpc" for p in procs)
    assert any(p.rdma and p.kind == "mooncake" for p in procs)
    assert any(d.co_located for d in deps)
    assert any("--data-parallel-hybrid-lb" in p.argv for p in procs)
