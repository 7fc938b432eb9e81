"""Kubernetes 1.33 manifests: Deployments, LeaderWorkerSets v1, Services and ConfigMaps, one object per file.

A placeholder becomes a value, an env var Kubernetes or LWS provides, or a key of the ``<name>-settings``
ConfigMap. LWS workers with a rank token (``--data-parallel-start-rank``) run through ``/bin/sh -c`` for the
arithmetic, the rest in exec form (docs/decisions-deploy.md).
"""

from __future__ import annotations

import math
import re
from typing import Any

from .artifacts import (
    FILES_MOUNT,
    MEDIA_YAML,
    Artifact,
    ExportOptions,
    check_name,
    container_image,
    default_name,
    dump,
    entrypoint,
    escape_dollars,
    fixed_value,
    header,
    script_command,
    shell_command,
    used_placeholders,
    whole_json_values,
)
from .docker import HF_CACHE
from .shell import inherits, literal, placeholders, quote, rewrite, shell_ref, shell_word, substitute
from .workloads import SELF, Deployment, ExportError, Process, RankTerm, container_install, install_note

KUBERNETES_VERSION = "1.33"
LWS_API = "leaderworkerset.x-k8s.io/v1"
HF_TOKEN_SECRET = "hf-token"
#: the docker run security flags of each brand (synthesis §9), as pod settings
BRAND_SECURITY: dict[str, dict[str, Any]] = {
    "amd": {"pod": {"supplementalGroups": [44]},  # the `video` group of ROCm hosts (docker --group-add video)
            "container": {"seccompProfile": {"type": "Unconfined"}}},
    "tpu": {"pod": {}, "container": {"privileged": True}},
}
PROBE_PERIOD_S = 10
#: a probe answer slower than this fails it; liveness restarts the whole LWS group, so it is generous
PROBE_TIMEOUT_S = 5
#: memory-backed /dev/shm (NCCL, vLLM's shared-memory broadcast), counted in the pod's memory request
SHM_GIB = 16
#: where config files with user settings are written, expanded, at container start
RUNTIME_FILES = "/tmp/vllm-recipes"
#: characters the controllers add to a name: StatefulSet pods' ``controller-revision-hash`` label is
#: ``<statefulset>-<10 chars>``, LWS pod hostnames ``<lws>-<group>-<worker>`` (our client Service's
#: ``-api`` is shorter)
REVISION_SUFFIX = 11
LWS_SUFFIX = len("-0-15")
API_SUFFIX = "-api"
#: expands the user's settings inside a JSON config file from the container's environment, string by
#: string (values never change the file's structure): only the placeholders named after the two paths
#: (``$NAME`` or ``${NAME}``); any other ``$WORD`` in the file is data
EXPAND_JSON = ("import json,os,re,sys\n"
               "names = set(sys.argv[3:])\n"
               "def s(m): n = m.group(1) or m.group(2); return os.environ.get(n, m.group(0)) if n in names else m.group(0)\n"
               "def f(v): return re.sub(r'\\$(?:\\{([A-Za-z_][A-Za-z0-9_]*)\\}|([A-Za-z_][A-Za-z0-9_]*))', s, v) "
               "if isinstance(v, str) else {k: f(x) for k, x in v.items()} if isinstance(v, dict) else "
               "[f(x) for x in v] if isinstance(v, list) else v\n"
               'json.dump(f(json.load(open(sys.argv[1]))), open(sys.argv[2], "w"), indent=2)')


class Names:
    """Object names and the placeholder bindings that depend on them."""

    def __init__(self, dep: Deployment, opts: ExportOptions) -> None:
        self.dep = dep
        self.base = check_name(opts.name or default_name(dep.model_id), "--name")
        check_name(opts.namespace, "--namespace")
        self.single = len(dep.processes) == 1
        self.by_key = {p.key: p for p in dep.processes}
        self.files = dep.files
        #: config files with user settings left in them: expanded at container start into RUNTIME_FILES
        self.expanded: set[str] = {f.path_var for q in dep.processes for f in q.files
                         if any(self.bind(q, n) is None for n in placeholders(f.content))}
        for q in dep.processes:
            if q.kind == "companion":
                continue
            wl = self.workload(q)
            longest = len(wl) + REVISION_SUFFIX + (LWS_SUFFIX if q.nodes > 1 else 0)
            if longest > 63:
                raise ExportError(f"--name {self.base!r} is too long: {wl!r} plus the suffixes Kubernetes and "
                                  f"LeaderWorkerSet add makes {longest} characters (at most 63); use a --name of "
                                  f"at most {len(self.base) - (longest - 63)} characters.")

    def service(self, p: Process) -> str:
        """The client Service of ``p``: the LWS controller owns the headless Service named like the LWS
        (pod DNS ``<lws>-<group>[-<worker>].<lws>``), so an LWS's own Service has another name."""
        wl = self.workload(p)
        return wl + API_SUFFIX if p.nodes > 1 else wl

    def workload(self, p: Process) -> str:
        return self.base if self.single else f"{self.base}-{p.key}"

    def node_address(self, p: Process, index: int) -> str:
        """DNS name of node ``index`` (1-based) of ``p`` seen from another pod of the namespace."""
        wl = self.workload(p)
        if p.nodes <= 1:
            return wl
        return f"{wl}-0.{wl}" if index == 1 else f"{wl}-0-{index - 1}.{wl}"

    def bind(self, p: Process, name: str) -> tuple[str, bool] | None:
        """``(value, is_env_ref)`` for a placeholder inside process ``p``, or ``None`` (a user setting)."""
        if name == SELF:  # the pod's own address, the group leader's, another pool's / instance's node
            return "POD_IP", True
        if name == "HEAD_IP" and p.nodes > 1:
            return "LWS_LEADER_ADDRESS", True
        node = self.dep.node_of(name)
        if node is not None:
            owner, idx = node
            if owner is p and idx == 1 and owner.pool and name.startswith(owner.pool):
                return ("LWS_LEADER_ADDRESS", True) if p.nodes > 1 else ("POD_IP", True)
            return self.node_address(owner, idx), False
        if (value := fixed_value(self.dep, name)) is not None:
            return value, False
        if name == "MOONCAKE_MASTER_IP" and "mooncake-master" in self.by_key:
            return self.service(self.by_key["mooncake-master"]), False
        if name in self.files:  # where a config file is mounted (expanded at start when it holds settings)
            return f"{RUNTIME_FILES if name in self.expanded else FILES_MOUNT}/{self.files[name].name}", False
        return None

    def exec_text(self, p: Process, text: str) -> str:
        """One argv token or env value for exec form: bound values inline, env references as ``$(NAME)``,
        everything else data (``$`` escaped)."""
        def one(name: str, _written: str) -> str:
            b = self.bind(p, name)
            return f"$({name})" if b is None else f"$({b[0]})" if b[1] else escape_dollars(b[0])

        return rewrite(text, one, escape_dollars)

    def shell_text(self, p: Process, text: str) -> str:
        """``text`` as one shell word inside ``p``'s container (env references double-quoted)."""
        def one(name: str) -> str:
            b = self.bind(p, name)
            return shell_ref(name) if b is None else shell_ref(b[0]) if b[1] else quote(b[0])

        return shell_word(text, one)

    def file_text(self, p: Process, content: str) -> str:
        """A config file with the placeholders the cluster fills written in; user settings stay as ``$NAME``."""
        def one(name: str) -> str | None:
            b = self.bind(p, name)
            return None if b is None or b[1] else b[0]

        return substitute(content, one)


def _prelude(p: Process, names: Names, image: str, env: tuple[tuple[str, str], ...]) -> list[str]:
    """Shell commands the container runs before exec'ing its process: the install step (when the image
    lacks the packages), config files expanded with the user's settings, env values that extend the
    image's own search paths (``LD_PRELOAD=/lib.so:$LD_PRELOAD``; Kubernetes cannot expand those)."""
    install = container_install(p.install, image, p.title)
    out = [install] if install else []
    # a file of one name has one content (the plan's one Mooncake config), so equal files are one
    for f in dict.fromkeys(f for q in names.dep.processes for f in q.files if f.path_var in names.expanded
                           and (f in p.files or f.path_var in _names_in(p))):
        settings = dict.fromkeys(n for n in placeholders(f.content) if names.bind(p, n) is None)
        out.append(" ".join(["mkdir -p", RUNTIME_FILES, "&& python3 -c", literal(EXPAND_JSON), f"{FILES_MOUNT}/{f.name}",
                             f"{RUNTIME_FILES}/{f.name}", *settings]))
    return out + [f"export {k}={names.shell_text(p, v)}" for k, v in env if inherits(v)]


def _env(p: Process, names: Names, env: tuple[tuple[str, str], ...], settings: str | None) -> dict[str, Any]:
    refs_pod_ip = any(f"${SELF}" in v for _, v in env) or any(
        names.bind(p, n) == ("POD_IP", True) for n in _names_in(p))
    items: list[dict[str, Any]] = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}] if refs_pod_ip else []
    if p.kind == "serve":
        items.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": HF_TOKEN_SECRET, "key": "token",
                                                                          "optional": True}}})
    # an env value that extends a search path is set by the prelude's shell instead
    items += [{"name": k, "value": names.exec_text(p, v)} for k, v in env if not inherits(v)]
    env_from = [{"configMapRef": {"name": settings}}] if settings else []
    return {k: v for k, v in (("envFrom", env_from), ("env", items)) if v}


def _names_in(p: Process) -> frozenset[str]:
    """Placeholder names in ``p``'s argv and env (head and worker template)."""
    texts = [*p.argv, *(v for _, v in p.env), *(t for t in p.worker_argv if isinstance(t, str)),
             *(v for _, v in p.worker_env)]
    return frozenset(n for t in texts for n in placeholders(t))


def _probes(p: Process, timeout_s: int) -> dict[str, Any]:
    """Startup (the engine's ready budget), readiness and liveness checks in the protocol ``p`` serves:
    HTTP ``/health``, or gRPC health (``vllm serve --grpc`` registers ``grpc.health.v1``); the Mooncake
    master and other TCP servers by a TCP connect."""
    if p.port is None:
        return {}
    if p.kind in ("serve", "router"):
        check: dict[str, Any] = {"grpc": {"port": p.port}} if p.protocol == "grpc" else \
            {"httpGet": {"path": "/health", "port": p.port}}
    else:
        check = {"tcpSocket": {"port": p.port}}

    def probe(period_s: int, failures: int) -> dict[str, Any]:
        return {**check, "periodSeconds": period_s, "timeoutSeconds": PROBE_TIMEOUT_S, "failureThreshold": failures}

    return {"startupProbe": probe(PROBE_PERIOD_S, max(1, math.ceil(timeout_s / PROBE_PERIOD_S))),
            "readinessProbe": probe(PROBE_PERIOD_S, 3), "livenessProbe": probe(30, 3)}


def _resources(p: Process, dep: Deployment, opts: ExportOptions) -> dict[str, Any]:
    """Requests that match the process (CPU, host memory incl. /dev/shm and offload pools, cache disk)
    and limits for the devices it uses (accelerators, one RDMA NIC)."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if p.cpu:
        requests["cpu"] = str(p.cpu)
    mounts_cache = p.kind in ("serve", "companion")
    if p.memory_gib:
        requests["memory"] = f"{p.memory_gib + (SHM_GIB if mounts_cache else 0)}Gi"
    if mounts_cache and not opts.pvc and dep.model_gib and p.kind == "serve":
        requests["ephemeral-storage"] = f"{cache_gib(dep)}Gi"
    if p.gpus:
        resource = dep.profile.get("device_resource")
        if not isinstance(resource, str) or not resource:
            raise ExportError(f"hardware profile {dep.hw_id!r} declares no device_resource, so the manifest "
                              "cannot request its accelerators; add `device_resource: <vendor>/<name>` to it "
                              "in taxonomy.yaml.")
        limits[resource] = p.gpus
    if p.rdma and opts.rdma_resource:
        limits[opts.rdma_resource] = 1
    return {k: v for k, v in (("requests", requests), ("limits", limits)) if v}


def cache_gib(dep: Deployment) -> int:
    """Disk for the model cache: the checkpoint plus 10% (tokenizer, config, partial downloads)."""
    return math.ceil(dep.model_gib * 1.1)


def pull_policy(image: str) -> str:
    """``IfNotPresent`` for an image pinned by digest or release tag; ``Always`` for a floating tag
    (``nightly``, ``latest``), so every pod of a group runs the same build."""
    if "@sha256:" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else "latest"
    return "IfNotPresent" if re.fullmatch(r"v?\d+\.\d+(\.\d+)?([.+-][0-9A-Za-z.+-]*)?", tag) else "Always"


def _port_name(p: Process) -> str:
    return "grpc" if p.protocol == "grpc" else "rpc" if p.kind == "mooncake" else "http"


def _command(p: Process, names: Names, image: str, env: tuple[tuple[str, str], ...], worker: bool) -> dict[str, Any]:
    """``command``/``args``: a worker's rank script, a companion's script, else the exec form of the argv
    (behind a shell prelude when something must run first)."""
    prelude = _prelude(p, names, image, env)
    if worker and any(isinstance(t, RankTerm) for t in p.worker_argv):
        script = "exec " + shell_command(p.worker_argv, lambda t: names.shell_text(p, t), "LWS_WORKER_INDEX")
        sh, c, body = script_command(script, prelude)  # `sh -c` as the command, the script as its args
        return {"command": [sh, c], "args": [body]}
    argv = tuple(t for t in (p.worker_argv if worker else p.argv) if isinstance(t, str))
    command, args = entrypoint(argv, p.script, prelude, lambda t: names.exec_text(p, t))
    return {"command": command} if args is None else {"command": command, "args": args}


def _container(p: Process, names: Names, image: str, opts: ExportOptions, worker: bool,
               settings: str | None) -> dict[str, Any]:
    dep = names.dep
    env = p.worker_env if worker else p.env
    c: dict[str, Any] = {"name": p.key, "image": image, "imagePullPolicy": pull_policy(image),
                         **_command(p, names, image, env, worker), **_env(p, names, env, settings)}
    if p.port is not None:
        c["ports"] = [{"name": _port_name(p), "containerPort": p.port}]
    # shared memory and the model cache belong to the processes that load the model
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"},
                                     {"name": "hf-cache", "mountPath": HF_CACHE}] if p.kind in ("serve", "companion") else []
    if p.files or any(n in names.files for n in _names_in(p)):
        mounts.append({"name": "files", "mountPath": FILES_MOUNT, "readOnly": True})
    optional = {"resources": _resources(p, dep, opts), "volumeMounts": mounts}
    c.update({k: v for k, v in optional.items() if v})
    if not (worker and p.headless_workers):
        c.update(_probes(p, dep.ready_timeout_s))
    sec = dict(BRAND_SECURITY.get(dep.meta.brand_key, {}).get("container") or {}) if p.kind == "serve" else {}
    if p.rdma:  # RDMA registers (pins) memory: the NIC's memory regions need IPC_LOCK
        sec["capabilities"] = {"add": ["IPC_LOCK"]}
    if sec:
        c["securityContext"] = sec
    return c


def _pod(containers: list[dict[str, Any]], names: Names, opts: ExportOptions, labels: dict[str, str],
         serve: bool) -> dict[str, Any]:
    dep = names.dep
    mounted = {m["name"] for c in containers for m in c.get("volumeMounts", ())}
    cache: dict[str, Any] = {"sizeLimit": f"{cache_gib(dep)}Gi"} if dep.model_gib else {}
    every = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{SHM_GIB}Gi"}},
             {"name": "hf-cache", "persistentVolumeClaim": {"claimName": opts.pvc}} if opts.pvc
             else {"name": "hf-cache", "emptyDir": cache},
             {"name": "files", "configMap": {"name": f"{names.base}-files"}}]
    spec: dict[str, Any] = {"containers": containers}
    if volumes := [v for v in every if v["name"] in mounted]:
        spec["volumes"] = volumes
    if serve and (sec := BRAND_SECURITY.get(dep.meta.brand_key, {}).get("pod")):
        spec["securityContext"] = sec
    return {"metadata": {"labels": labels}, "spec": spec}


def _meta(name: str, opts: ExportOptions, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": opts.namespace, "labels": labels}


def _notes(dep: Deployment, opts: ExportOptions, image: str, settings: str | None, to_set: dict[str, Any]) -> list[str]:
    """What the header tells the user: versions, the token Secret, the cache, RDMA, settings, install."""
    if opts.pvc:
        cache = (f"PersistentVolumeClaim {opts.pvc!r}, mounted by every model pod at once: it must be "
                 "ReadWriteMany (NFS, CephFS, a cloud file store) unless one pod uses it")
    elif dep.model_gib:
        cache = (f"emptyDir of {cache_gib(dep)} GiB (ephemeral-storage requested; the model downloads on every "
                 "start: pass --pvc NAME, a ReadWriteMany claim, to keep it)")
    else:
        cache = "emptyDir (pass --pvc NAME, a ReadWriteMany claim, to keep downloads across restarts)"
    extra = [f"Kubernetes {KUBERNETES_VERSION}+; multi-node pools need LeaderWorkerSet ({LWS_API}).",
             f"HF_TOKEN comes from the Secret {HF_TOKEN_SECRET!r} (optional): "
             f"kubectl -n {opts.namespace} create secret generic {HF_TOKEN_SECRET} --from-literal=token=hf_...",
             "Hugging Face cache: " + cache]
    if any(p.rdma for p in dep.processes):
        extra.append(f"RDMA (NCCL/NIXL across nodes, Mooncake): each such pod requests one {opts.rdma!r} "
                     "and IPC_LOCK; name your RDMA device plugin's resource with --rdma (or --rdma none)."
                     if opts.rdma_resource else "RDMA is off (--rdma none): NCCL/NIXL fall back to TCP, Mooncake "
                     "over RDMA will not start; pods keep IPC_LOCK.")
    if settings:
        extra.append(f"Fill the ConfigMap {settings!r} with the values below.")
    if dep.install != "docker":
        extra.append(f"The page's install method is {dep.install}; Kubernetes runs the container image.")
    if empty_ok := sorted(n for n in whole_json_values(dep) if n in to_set):
        extra.append("May stay empty (the documented automatic choice): " + ", ".join(empty_ok))
    return [*extra, *install_note(dep, image)]


def _objects(dep: Deployment, names: Names, opts: ExportOptions, image: str, settings: str | None,
             to_set: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The settings and files ConfigMaps, then each process's workload and Service (companions ride along)."""
    files = {f.name: names.file_text(p, f.content) for p in dep.processes for f in p.files}
    maps = [(settings, "settings", dict.fromkeys(to_set, "")), (f"{names.base}-files", "files", files)]
    objects: list[tuple[str, dict[str, Any]]] = [
        ("configmap", {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": _meta(name, opts, _labels(names.base, part)), "data": data})
        for name, part, data in maps if name and data]
    companions = [p for p in dep.processes if p.kind == "companion"]
    for p in dep.processes:
        if p.kind != "companion":
            objects += _workload(p, names, opts, image, settings, companions if p.kind == "serve" else [])
    return objects


def render(dep: Deployment, opts: ExportOptions) -> list[Artifact]:
    names = Names(dep, opts)
    if dep.co_located:
        raise ExportError("the co-located PD layout pins prefill and decode to GPU indices of one machine; "
                          "Kubernetes schedules GPUs per pod. Export it with --to compose (or --to slurm), or "
                          "choose prefill/decode pools of whole nodes.")
    image = container_image(dep, opts)
    # user settings reach containers as env (envFrom the settings ConfigMap); the files that hold some
    # are expanded from that env when the container starts
    to_set = {n: w for n, w in used_placeholders(dep).items()
              if any(names.bind(p, n) is None for p in dep.processes
                     if n in _names_in(p) or any(n in placeholders(f.content) for f in p.files))}
    settings = f"{names.base}-settings" if to_set else None
    head = header(dep, "k8s", opts, to_set, _notes(dep, opts, image, settings, to_set))
    short = header(dep, "k8s", opts, {})  # the files after the first: provenance only
    out = [Artifact(f"{kind}-{obj['metadata']['name']}.yaml", (short if i else head) + dump(obj), MEDIA_YAML)
           for i, (kind, obj) in enumerate(_objects(dep, names, opts, image, settings, to_set))]
    kust = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "namespace": opts.namespace, "resources": [a.path for a in out]}
    out.append(Artifact("kustomization.yaml", head + dump(kust), MEDIA_YAML))
    return out


def _labels(base: str, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": base, "app.kubernetes.io/component": component,
            "app.kubernetes.io/managed-by": "vllm-recipes"}


def _workload(p: Process, names: Names, opts: ExportOptions, image: str, settings: str | None,
              sidecars: list[Process]) -> list[tuple[str, dict[str, Any]]]:
    name = names.workload(p)
    labels = _labels(names.base, p.key)
    serve = p.kind == "serve"

    def containers(worker: bool) -> list[dict[str, Any]]:
        side = [] if worker else [_container(s, names, image, opts, False, settings) for s in sidecars]
        return [*side, _container(p, names, image, opts, worker, settings)]

    out: list[tuple[str, dict[str, Any]]] = []
    if p.nodes > 1:
        out.append(("leaderworkerset", {
            "apiVersion": LWS_API, "kind": "LeaderWorkerSet", "metadata": _meta(name, opts, labels),
            "spec": {"replicas": 1, "leaderWorkerTemplate": {
                "size": p.nodes, "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _pod(containers(False), names, opts, labels, serve),
                "workerTemplate": _pod(containers(True), names, opts, labels, serve)}}}))
        # every pod that serves the API: all of them when workers run their own API server
        # (``--data-parallel-hybrid-lb``), else the leader (``--headless`` workers serve nothing)
        selector = {"leaderworkerset.sigs.k8s.io/name": name}
        if p.headless_workers:
            selector["leaderworkerset.sigs.k8s.io/worker-index"] = "0"
    else:
        out.append(("deployment", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(name, opts, labels),
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "strategy": {"type": "Recreate"},
                     "template": _pod(containers(False), names, opts, labels, serve)}}))
        selector = labels
    if p.port is not None:
        out.append(("service", {
            "apiVersion": "v1", "kind": "Service", "metadata": _meta(names.service(p), opts, labels),
            "spec": {"selector": selector, "ports": [{"name": _port_name(p), "port": p.port, "targetPort": p.port}]}}))
    return out
