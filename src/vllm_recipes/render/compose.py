"""A Docker Compose file for single-machine selections: one service per process.

The accelerator settings are the Docker tab's flags as Compose keys. A placeholder the file cannot fill is a
required variable (``${IFACE_NAME:?...}``), so ``docker compose up`` stops naming it instead of starting with
an empty value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .artifacts import (
    FILES_MOUNT,
    MEDIA_YAML,
    Artifact,
    ExportOptions,
    container_image,
    dump,
    entrypoint,
    escape_dollars,
    fixed_value,
    header,
    required,
    used_placeholders,
    whole_json_values,
)
from .docker import HF_CACHE_VOLUME
from .shell import INHERITED, inherits, placeholders, rewrite, shell_word
from .workloads import Deployment, ExportError, Process, container_install, install_note

HEALTH_INTERVAL_S = 10


class Binder:
    def __init__(self, dep: Deployment) -> None:
        self.dep = dep
        self.files = dep.files
        #: set, but may be empty (Compose's ``${X?}``): the documented automatic value of a config field
        self.empty_ok = whole_json_values(dep)

    def bind(self, name: str) -> str | None:
        """A pool's first node, an instance or the Mooncake master is its service; a file is mounted."""
        node = self.dep.node_of(name)
        if node is not None:
            return node[0].key if node[1] == 1 else None
        if name == "MOONCAKE_MASTER_IP" and any(p.key == "mooncake-master" for p in self.dep.processes):
            return "mooncake-master"
        if name in self.files:
            return f"{FILES_MOUNT}/{self.files[name].name}"
        return fixed_value(self.dep, name)

    def text(self, value: str) -> str:
        """A value for the Compose file: bound placeholders filled, the rest required variables."""
        def one(name: str, written: str) -> str:
            b = self.bind(name)
            return escape_dollars(b) if b is not None else escape_dollars(written) if name in INHERITED \
                else required(name, self.empty_ok, f"set {name}, see the header")

        return rewrite(value, one, escape_dollars)


#: ``docker run`` flag -> (Compose service key, how its value is kept): ``list`` appends, ``value``
#: sets, ``true`` sets ``True`` (the flag takes no value), ``gpus`` reserves the GPUs
DOCKER_FLAGS: dict[str, tuple[str, str]] = {
    "--gpus": ("deploy", "gpus"),
    "--device": ("devices", "list"),
    "--security-opt": ("security_opt", "list"),
    "--group-add": ("group_add", "list"),
    "-v": ("volumes", "list"),
    "--network": ("network_mode", "value"),
    "--shm-size": ("shm_size", "value"),
    "--privileged": ("privileged", "true"),
}


def _devices(flags: Sequence[str], gpus: int, pinned: bool) -> dict[str, Any]:
    """The Docker tab's accelerator flags as Compose service keys."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(flags):
        flag, eq, value = flags[i].partition("=")
        if flag not in DOCKER_FLAGS:
            raise ExportError(f"docker flag {flag!r} has no Compose equivalent here; use `vllm-recipes command`.")
        key, how = DOCKER_FLAGS[flag]
        if how != "true" and not eq:  # the value is the next token
            value = flags[i + 1] if i + 1 < len(flags) else ""
            i += 1
        i += 1
        if how == "gpus":
            out[key] = {"resources": {"reservations": {"devices": [
                {"driver": "nvidia", "count": "all" if pinned or not gpus else gpus, "capabilities": ["gpu"]}]}}}
        elif how == "list":
            out.setdefault(key, []).append(value)
        else:
            out[key] = True if how == "true" else value
    return out


def _entrypoint(p: Process, b: Binder, image: str) -> dict[str, Any]:
    """``entrypoint``/``command``, run by a shell in the container first when something must precede it:
    the install step the image needs, env values that extend the image's own search paths (Compose
    would fill ``$LD_PRELOAD`` from the host's)."""
    install = container_install(p.install, image, p.title)
    prelude = [install] if install else []
    prelude += [f"export {k}={shell_word(v)}" for k, v in p.env if inherits(v)]
    head, args = entrypoint(p.argv, p.script, prelude, b.text)
    return {"entrypoint": head} if args is None else {"entrypoint": head, "command": args}


def _service(p: Process, b: Binder, dep: Deployment, image: str) -> dict[str, Any]:
    svc: dict[str, Any] = {"image": image, **_entrypoint(p, b, image)}
    env = {"HF_TOKEN": "${HF_TOKEN:-}"} if p.kind == "serve" else {}
    env |= {k: b.text(v) for k, v in p.env if not inherits(v)}
    if env:
        svc["environment"] = env
    if p.port is not None:
        svc["ports"] = [f"{p.port}:{p.port}"]
    svc["ipc"] = "host"
    volumes = [HF_CACHE_VOLUME, "vllm-cache:/root/.cache/vllm"]
    if p.kind == "serve":
        pinned = any(k == "CUDA_VISIBLE_DEVICES" for k, _ in p.env)
        dev = _devices(dep.meta.gpu_flags_argv, p.gpus, pinned)
        volumes += dev.pop("volumes", [])
        svc.update(dev)
    svc["volumes"] = volumes
    files = [f for f in b.files.values() if any(f.path_var in placeholders(t) for t in (*p.argv, *(v for _, v in p.env)))]
    files += [f for f in p.files if f not in files]
    if files:
        svc["configs"] = [{"source": f.name, "target": f"{FILES_MOUNT}/{f.name}"} for f in files]
    if p.port is not None and p.kind in ("serve", "router"):
        # ``/health`` over HTTP; a TCP connect for a gRPC server (the image has no gRPC health client)
        probe = f"import urllib.request; urllib.request.urlopen('http://localhost:{p.port}/health', timeout=5)" \
            if p.protocol == "http" else f"import socket; socket.create_connection(('localhost', {p.port}), timeout=5)"
        svc["healthcheck"] = {"test": ["CMD", "python3", "-c", probe], "interval": f"{HEALTH_INTERVAL_S}s",
                              "timeout": "10s", "retries": 3, "start_period": f"{dep.ready_timeout_s}s"}
    # RDMA NICs (with IPC_LOCK and no memlock limit to register memory for them), CPU and memory requests
    if p.rdma:
        svc.setdefault("devices", []).append("/dev/infiniband:/dev/infiniband")
        svc["cap_add"] = ["IPC_LOCK"]
        svc["ulimits"] = {"memlock": -1}
    if p.cpu or p.memory_gib:
        reservations = svc.setdefault("deploy", {}).setdefault("resources", {}).setdefault("reservations", {})
        if p.cpu:
            reservations["cpus"] = str(p.cpu)
        if p.memory_gib:
            reservations["memory"] = f"{p.memory_gib}g"
    return svc


def _depends_on(p: Process, dep: Deployment, companions: list[str]) -> dict[str, Any]:
    """A router starts once every vLLM service is healthy; vLLM after its companions and Mooncake started."""
    if p.kind == "router":
        return {q.key: {"condition": "service_healthy"} for q in dep.processes if q.kind == "serve"}
    if p.kind == "serve":
        return {k: {"condition": "service_started"}
                for k in [*companions, *(q.key for q in dep.processes if q.kind == "mooncake")]}
    return {}


def _notes(dep: Deployment, image: str, b: Binder, to_set: dict[str, Any]) -> list[str]:
    extra = ["Run: docker compose up -d (Compose v2.23+; HF_TOKEN is read from your environment)."]
    if empty_ok := sorted(n for n in b.empty_ok if n in to_set):
        extra.append("May be set empty (the documented automatic choice): " + ", ".join(empty_ok))
    return [*extra, *install_note(dep, image)]


def render(dep: Deployment, opts: ExportOptions) -> list[Artifact]:
    if dep.machines > 1:
        raise ExportError(f"Compose runs on one machine and this selection spans {dep.machines} nodes; "
                          "use --to k8s or --to slurm (or the co-located PD layout: --prefill-nodes 0 "
                          "--decode-nodes 0).")
    image = container_image(dep, opts)
    b = Binder(dep)
    services: dict[str, Any] = {}
    companions = [p.key for p in dep.processes if p.kind == "companion"]
    for p in dep.processes:
        svc = _service(p, b, dep, image)
        if companions and p.kind in ("serve", "companion"):
            # companions are reached on localhost (`lmcache server --port ...`): share the host network
            svc.pop("ports", None)
            svc["network_mode"] = "host"
        if deps := _depends_on(p, dep, companions):
            svc["depends_on"] = deps
        services[p.key] = svc
    doc: dict[str, Any] = {**({"name": opts.name} if opts.name else {}), "services": services,
                           "volumes": {"vllm-cache": {}}}
    if files := {f.name: f for p in dep.processes for f in p.files}:
        doc["configs"] = {name: {"content": b.text(f.content)} for name, f in files.items()}
    to_set = {n: w for n, w in used_placeholders(dep).items() if b.bind(n) is None}
    return [Artifact("compose.yaml", header(dep, "compose", opts, to_set, _notes(dep, image, b, to_set)) + dump(doc),
                     MEDIA_YAML)]
