"""Seed selections and the small simulators the deploy-target tests share.

The simulators stand in for what runs the artifacts: Kubernetes' ``$(VAR)``
expansion, a shell (real ``/bin/sh`` with a ``vllm`` stub on PATH that prints
its argv as JSON), Slurm (``srun``/``scontrol`` stubs that record job steps).
The expected values are the plan's argv (the JSON rendering the golden tests
pin) with each placeholder replaced by what it means in the simulated
cluster, written out here independently of the renderers.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from vllm_recipes.catalog import Catalog
from vllm_recipes.render.export import ExportOptions, deployment_for, export_artifacts
from vllm_recipes.render.shell import is_placeholder
from vllm_recipes.render.workloads import Deployment, Process, instantiate
from vllm_recipes.select.page import PageRequest, PageState, build_state

V4 = "deepseek-ai/DeepSeek-V4-Flash"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"

#: name -> (recipe, page request): the issue's four golden selections first, then the other shapes
SEEDS: dict[str, tuple[str, dict[str, Any]]] = {
    "v41-gb200-tp2": (V41, {}),
    "v41-h200-dep-2nodes": (V41, {"hardware": "h200", "strategy": "multi_node_dep", "nodes": 2}),
    "v41-mi355x-pd": (V41, {"hardware": "mi355x", "strategy": "pd_cluster"}),
    "v4-h200-mooncake": (V4, {"hardware": "h200", "kv_offload": "kv_store_centralized_mooncake"}),
    "v41-h200-pd-dep-pools": (V41, {"hardware": "h200", "strategy": "pd_cluster", "prefill_nodes": 2,
                                    "decode_nodes": 2, "prefill_mode": "dep", "decode_mode": "dep"}),
    "v41-h200-pd-colocated": (V41, {"hardware": "h200", "strategy": "pd_cluster", "prefill_nodes": 0,
                                    "decode_nodes": 0}),
    "v41-h200-tp-2nodes": (V41, {"hardware": "h200", "strategy": "multi_node_tp", "nodes": 2}),
    "v41-h200-tep-2nodes": (V41, {"hardware": "h200", "strategy": "multi_node_tep", "nodes": 2}),
    "v4-h200-dep-2nodes-pip": (V4, {"hardware": "h200", "strategy": "multi_node_dep", "nodes": 2}),
    "v4-h200-mooncake-dep-instances": (V4, {"hardware": "h200", "strategy": "multi_node_dep", "nodes": 2,
                                            "kv_offload": "kv_store_centralized_mooncake"}),
    "v41-station-offload": (V41, {"hardware": "dgx_station_gb300"}),  # --cpu-offload-params takes two values
    "v41-b200-dep-3nodes": (V41, {"hardware": "b200", "strategy": "multi_node_dep", "nodes": 3}),
}
GOLDEN = ("v41-gb200-tp2", "v41-h200-dep-2nodes", "v41-mi355x-pd", "v4-h200-mooncake")
OPTIONS = ExportOptions(namespace="serving", pvc="hf-cache")


def state_for(catalog: Catalog, seed: str) -> tuple[Any, PageState]:
    hf, req = SEEDS[seed]
    recipe = catalog.recipe(hf)
    return recipe, build_state(catalog, recipe, PageRequest(**req), strict=True)


def export(catalog: Catalog, seed: str, target: str, options: ExportOptions = OPTIONS) -> list[Any]:
    from dataclasses import replace

    recipe, st = state_for(catalog, seed)
    return export_artifacts(catalog, recipe, st.selection, target, replace(options, install=st.install),
                            co_located=st.pd_co_located)


def deployment(catalog: Catalog, seed: str) -> Deployment:
    recipe, st = state_for(catalog, seed)
    return deployment_for(catalog, recipe, st.selection, st.install, st.pd_co_located)[2]


def yaml_docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


# --- placeholder meanings -------------------------------------------------------------------

def fill(text: str, meaning: Mapping[str, str]) -> str:
    """``$NAME`` / ``${NAME}`` -> ``meaning[NAME]`` for each declared placeholder (every one must have a
    meaning); any other ``$WORD`` is data and stays as it is."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return meaning[name] if is_placeholder(name) else m.group(0)

    return re.sub(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))", one, text)


def rank_argv(p: Process, rank: int) -> tuple[str, ...]:
    """The plan's argv of node ``rank`` of ``p`` (rank 0: the head / leader)."""
    return p.argv if rank == 0 else p.worker_argvs[rank - 1]


def rank_env(p: Process, rank: int) -> tuple[tuple[str, str], ...]:
    return p.env if rank == 0 else p.worker_envs[rank - 1]


#: the fixed data-parallel RPC port of each PD pool (a pod / node has its own ports)
RPC = {"PREFILL_DP_RPC_PORT": "13345", "DECODE_DP_RPC_PORT": "13346"}


def vllm_view(argv: Sequence[str]) -> dict[str, Any]:
    """What vLLM's parser makes of a ``vllm serve`` argv, written out here from its documented rules:
    ``--flag=value`` splits at ``=``, ``_`` is ``-`` in a flag name up to its first ``.``, ``--a.b v``
    sets key ``b`` of JSON flag ``a``, JSON values compare as data. Flag -> value(s)."""
    out: dict[str, Any] = {}
    i, rest = 0, list(argv[3:])
    while i < len(rest):
        flag = rest[i]
        assert flag.startswith("--"), flag
        if "=" in flag:
            flag, _, v = flag.partition("=")
            values = [v]
            i += 1
        else:
            values = []
            i += 1
            while i < len(rest) and not rest[i].startswith("-"):
                values.append(rest[i])
                i += 1
        name = flag[2:]
        head, dot, tail = name.partition(".")
        name = head.replace("_", "-") + dot + tail
        if dot:
            try:
                val: Any = json.loads(values[0])
            except ValueError:
                val = values[0]
            node = out.setdefault(head.replace("_", "-"), {})
            keys = tail.split(".")
            for k in keys[:-1]:
                node = node.setdefault(k, {})
            node[keys[-1]] = val
            continue
        parsed: list[Any] = []
        for v in values:
            try:
                parsed.append(json.loads(v) if v[:1] in "{[" else v)
            except ValueError:
                parsed.append(v)
        out[name] = True if not parsed else parsed[0] if len(parsed) == 1 else parsed
    return {"model": argv[2], **{k: (str(v) if isinstance(v, int) and not isinstance(v, bool) else v)
                                 for k, v in out.items()}}


def k8s_meaning(dep: Deployment, base: str, p: Process, rank: int) -> dict[str, str]:
    """What each placeholder is in the simulated cluster, seen from node ``rank`` of ``p``."""
    single = len(dep.processes) == 1
    out: dict[str, str] = {"HEAD_IP": "LEADER", "ROUTER_HOST": "0.0.0.0", **RPC}
    for q in dep.processes:
        wl = base if single else f"{base}-{q.key}"
        if q.pool:
            for k in range(1, max(q.nodes, 1) + 1):
                if q is p:
                    own = "LEADER" if q.nodes > 1 else "PODIP"
                    out[f"{q.pool}{k}"] = own if k == 1 else "PODIP" if k == rank + 1 else f"{wl}-0-{k - 1}.{wl}"
                else:
                    out[f"{q.pool}{k}"] = wl if q.nodes == 1 else f"{wl}-0.{wl}" if k == 1 else f"{wl}-0-{k - 1}.{wl}"
        if q.key.startswith("vllm-"):  # a multi-node instance is reached at its leader pod (DP RPC too)
            out[f"VLLM_INSTANCE_{q.key[5:]}"] = wl if q.nodes == 1 else f"{wl}-0.{wl}"
        if q.key == "router":
            out["ROUTER_PORT"] = str(q.port)
        if q.key == "mooncake-master":
            out["MOONCAKE_MASTER_IP"] = wl
        for f in q.files:  # a file with user settings in it is expanded into /tmp/vllm-recipes at start
            user = [n for n in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", f.content)
                    if is_placeholder(n) and n != "MOONCAKE_MASTER_IP"]
            out[f.path_var] = f"/tmp/vllm-recipes/{f.name}" if user else f"/etc/vllm-recipes/{f.name}"
    return out


class Settings(dict):  # type: ignore[type-arg]
    """Any other placeholder: the value the user writes into the settings ConfigMap."""

    def __missing__(self, key: str) -> str:
        return f"<{key}>"


# --- Kubernetes expansion -------------------------------------------------------------------

def k8s_expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: ``$$`` -> ``$``, known ``$(VAR)`` -> value, the rest unchanged."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i):
            j = text.find(")", i)
            name = text[i + 2:j] if j > 0 else ""
            if j > 0 and name in env:
                out.append(env[name])
                i = j + 1
            else:
                out.append("$(")
                i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def container_env(c: dict[str, Any], settings: Mapping[str, str], cluster: Mapping[str, str]) -> dict[str, str]:
    """A container's environment as the kubelet builds it (envFrom, then env in order, with expansion)."""
    env: dict[str, str] = dict(cluster)
    for ref in c.get("envFrom", ()):
        assert ref["configMapRef"]["name"].endswith("-settings")
        env.update(settings)
    for item in c.get("env", ()):
        if "value" in item:
            env[item["name"]] = k8s_expand(item["value"], env)
        elif "fieldRef" in item.get("valueFrom", {}):
            assert item["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
            env[item["name"]] = cluster["POD_IP"]
        else:
            assert item["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
    return env


def stub_dir(tmp: Path) -> Path:
    """A PATH directory whose ``vllm``, ``vllm-router`` and ``python3`` print their argv as JSON."""
    d = tmp / "bin"
    d.mkdir(exist_ok=True)
    for name in ("vllm", "vllm-router", "mooncake_master", "lmcache", "python3"):
        f = d / name
        f.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                     "print(json.dumps({'argv': [os.path.basename(sys.argv[0]), *sys.argv[1:]], "
                     "'env': dict(os.environ)}))\n")
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    uv = d / "uv"
    uv.write_text("#!/bin/sh\nexit 0\n")
    uv.chmod(0o755)
    return d


def run_shell(script: str, env: Mapping[str, str], stubs: Path) -> list[str]:
    """Run ``script`` with ``/bin/sh -c`` under the stubs; the argv it execs."""
    return run_shell_full(script, env, stubs)[0]


def run_shell_full(script: str, env: Mapping[str, str], stubs: Path) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of the process ``script`` execs."""
    full = {"PATH": f"{stubs}:/usr/bin:/bin", **env}
    out = subprocess.run(["/bin/sh", "-c", script], env=full, capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["argv"], got["env"]


def container_argv(c: dict[str, Any], env: Mapping[str, str], stubs: Path) -> list[str]:
    """The argv a container execs: exec form expanded by Kubernetes, shell forms run through a shell."""
    command = [k8s_expand(t, env) for t in c.get("command", ())]
    args = [k8s_expand(t, env) for t in c.get("args", ())]
    if command[:2] == ["/bin/sh", "-c"]:
        if len(command) == 2:  # the worker script form
            return run_shell(args[0], env, stubs)
        script = command[2]
        assert script.endswith('exec "$0" "$@"'), script
        return [*command[3:], *args]
    return [*command, *args]


def instantiate_env(p: Process, rank: int) -> tuple[tuple[str, str], ...]:
    return tuple((k, instantiate((v,), rank, p.pool)[0]) for k, v in p.worker_env) if rank else p.env


def chmod_x(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def env_without(keys: Sequence[str]) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in keys}
