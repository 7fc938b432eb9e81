"""A resolved plan as scheduler-neutral processes: what every deploy target renders.

A :class:`Process` holds the argv and env exactly as ``vllm-recipes command`` prints them (none derived here)
plus what a scheduler needs. A multi-node one also holds a worker template (:class:`RankTerm`, :data:`SELF`),
checked against every worker rank so a target never prints a worker command the plan does not.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vllm_recipes.catalog.architecture_facts import checkpoint_for, checkpoint_sizes, host_tables
from vllm_recipes.jsvalues import get, is_number, js_str
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import EnvValue, Invocation, KvStorePlan, MultiNodePlan, PdPlan, Plan, SinglePlan

from .docker import DockerMeta
from .rendering import meta_for
from .shell import placeholders, render_invocation, router_text, shell_join

#: placeholder of a worker's own network address in a worker template (written by us, never by a recipe)
SELF = "NODE_SELF_ADDRESS"
#: flags whose value is ``step x node rank`` on a worker (vLLM semantics, not recipe data)
RANK_FLAGS = ("--data-parallel-start-rank", "--node-rank")
DEFAULT_PORT = 8000
DEFAULT_READY_TIMEOUT_S = 1800
#: CPU cores and GiB of host memory requested per accelerator of a vLLM process (tokenizer and API
#: threads, the engine core, pinned staging buffers), plus what its flags put in host memory
CPU_PER_GPU = 4
MEMORY_GIB_PER_GPU = 16
#: requests of the small processes (router, Mooncake master)
SMALL_CPU, SMALL_MEMORY_GIB = 2, 4
#: packages the stock CUDA ``vllm/vllm-openai`` image already ships (vLLM's kv_connectors
#: requirements: the image is built with them), so a container needs no runtime install of them
IMAGE_SHIPS: dict[str, frozenset[str]] = {
    "vllm/vllm-openai": frozenset({"mooncake-transfer-engine", "nixl", "lmcache"}),
}
_GIB = 1 << 30
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)


class ExportError(ValueError):
    """A selection a deploy target cannot express; the message says why and what to do instead."""


@dataclass(frozen=True)
class RankTerm:
    """A worker token equal to ``step * rank`` (rank: the node's index in its group, leader = 0)."""

    step: int

    def at(self, rank: int) -> str:
        return str(self.step * rank)


Token = str | RankTerm


@dataclass(frozen=True)
class ConfigFile:
    """A file a process reads: the env var the plan names for its path, a file name, the content."""

    path_var: str
    name: str
    content: str


@dataclass(frozen=True)
class Process:
    """One process (or one group of identical-shape node processes) of a deployment."""

    #: DNS-label-safe id, unique in the deployment (``vllm``, ``prefill``, ``router``, ``vllm-2``)
    key: str
    #: ``serve`` (vLLM), ``router``, ``mooncake`` or ``companion``
    kind: str
    title: str
    #: rank-0 argv (the head on multi-node), placeholders as ``$NAME``
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    nodes: int = 1
    worker_argv: tuple[Token, ...] = ()
    worker_env: tuple[tuple[str, str], ...] = ()
    port: int | None = None
    #: accelerators per node (0: none)
    gpus: int = 0
    #: the pool placeholder prefix of this process's node addresses (``PREFILL_NODE_``), if any
    pool: str | None = None
    #: a script run with ``sh -c`` instead of an exec argv (companion commands)
    script: str | None = None
    files: tuple[ConfigFile, ...] = ()
    #: a shell command that must run before the process (``uv pip install vllm-router``), if any
    install: str | None = None
    #: ``http`` or ``grpc`` (``vllm serve --grpc`` serves gRPC on ``--port``): what a health check speaks
    protocol: str = "http"
    #: CPU cores and GiB of host memory the process needs on each node (requests; 0: none)
    cpu: int = 0
    memory_gib: int = 0
    #: whether it moves data over RDMA NICs (NCCL/NIXL across nodes, Mooncake ``protocol: rdma``)
    rdma: bool = False
    #: argv of every worker rank 1..nodes-1, as the plan gives them (for checks and round trips)
    worker_argvs: tuple[tuple[str, ...], ...] = field(default=(), compare=False)
    worker_envs: tuple[tuple[tuple[str, str], ...], ...] = field(default=(), compare=False)

    def node(self, rank: int) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        """Argv and env of node ``rank`` (0: the head; others from the worker template)."""
        if rank == 0:
            return self.argv, self.env
        env = tuple((k, instantiate((v,), rank, self.pool)[0]) for k, v in self.worker_env)
        return instantiate(self.worker_argv, rank, self.pool), env

    @property
    def headless_workers(self) -> bool:
        """Workers started with ``--headless`` serve no HTTP (no health probe on them)."""
        return "--headless" in self.worker_argv


@dataclass(frozen=True)
class Deployment:
    """Every process of one selection plus the facts targets need about where it runs."""

    hf_id: str
    model_id: str
    deploy_type: str
    processes: tuple[Process, ...]
    meta: DockerMeta
    profile: dict[str, Any]
    hw_id: str
    install: str
    co_located: bool
    ready_timeout_s: int
    #: GiB of the model checkpoint (the download a cache volume must hold); 0 when unknown
    model_gib: int = 0

    @property
    def files(self) -> dict[str, ConfigFile]:
        """Every config file of the deployment by the env var that names its path."""
        return {f.path_var: f for p in self.processes for f in p.files}

    @property
    def machines(self) -> int:
        """Nodes the deployment occupies: each serve process owns its nodes, unless PD is co-located on one."""
        return 1 if self.co_located else sum(p.nodes for p in self.processes if p.kind == "serve")

    def node_of(self, name: str) -> tuple[Process, int] | None:
        """The process and 1-based node a node-address placeholder names (``PREFILL_NODE_2``: node 2 of
        the prefill pool; ``VLLM_INSTANCE_3``: Mooncake instance 3)."""
        for p in self.processes:
            if p.pool and name.startswith(p.pool) and name[len(p.pool):].isdigit():
                return p, int(name[len(p.pool):])
            if name.startswith("VLLM_INSTANCE_") and p.key == f"vllm-{name[14:]}":
                return p, 1
        return None


def env_items(env: Sequence[EnvValue]) -> tuple[tuple[str, str], ...]:
    return tuple((e.key, js_str(e.value)) for e in env)


def _values(argv: Sequence[Token], flag: str) -> list[str]:
    """The token after each occurrence of ``flag``."""
    return [str(argv[i + 1]) for i in range(len(argv) - 1) if argv[i] == flag]


def _flag_int(argv: Sequence[str], flag: str, default: int | None = None) -> int | None:
    return next((int(v) for v in _values(argv, flag) if v.isdigit()), default)


def gpus_per_node(argv: Sequence[str], nodes: int, node_gpus: int) -> int:
    """Accelerators one node of this process uses, read from its parallel sizes (capped by the node)."""
    tp = _flag_int(argv, "--tensor-parallel-size") or 1
    pp = _flag_int(argv, "--pipeline-parallel-size") or 1
    dp_local = _flag_int(argv, "--data-parallel-size-local")
    dp = _flag_int(argv, "--data-parallel-size") or 1
    world = tp * pp * dp_local if dp_local else -(-(tp * pp * dp) // max(nodes, 1))
    return min(world, node_gpus) if node_gpus > 0 else world


def exec_form(argv: Sequence[str], title: str) -> tuple[str, ...]:
    """``argv`` for exec-form targets; a flag item with whitespace is refused (the plan already splits a
    ``"--flag value"`` recipe item in two: what is left cannot be passed as one argv item vLLM parses)."""
    for t in argv:
        if t.startswith("--") and any(c.isspace() for c in t):
            raise ExportError(f"{title}: argument {t!r} is a flag with spaces in one token; vLLM cannot parse it "
                              "as one argv item. Write the flag and its value as separate tokens in the recipe.")
    return tuple(argv)


def size_gib(value: Any) -> float:
    """``500GB`` / ``4GB`` / ``1073741824`` (Mooncake sizes, bytes when bare) -> GiB; 0 when unreadable."""
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int | float):
        return float(value) / _GIB
    m = _SIZE.match(str(value))
    if not m:
        return 0.0
    unit = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": _GIB, "T": 1 << 40}[m.group(2).upper()]
    return float(m.group(1)) * unit / _GIB


def _num_flag(argv: Sequence[str], flag: str) -> float:
    """The first value of ``flag`` as a number (0 when absent or not a number)."""
    with contextlib.suppress(IndexError, ValueError):
        return float(_values(argv, flag)[0])
    return 0.0


def host_memory_gib(argv: Sequence[str], gpus: int, recipe: Any = None) -> int:
    """GiB of host memory a vLLM process pins or fills on one node because of its flags: weight and KV
    offload (``--cpu-offload-gb`` and ``--swap-space`` per GPU, ``--kv-offloading-size``, a KV connector's
    ``cpu_bytes_to_use``) and the recipe's host-memory tables when their flag is on (engram CPU offload)."""
    ranks = max(gpus, 1)
    gib = (_num_flag(argv, "--cpu-offload-gb") + _num_flag(argv, "--swap-space")) * ranks
    gib += _num_flag(argv, "--kv-offloading-size")
    config = next((v for v in _values(argv, "--kv-transfer-config") if v.startswith("{")), "{}")
    with contextlib.suppress(ValueError):
        config = json.loads(config)
    extra = config.get("kv_connector_extra_config") if isinstance(config, dict) else None
    if isinstance(extra, dict):
        gib += size_gib(extra.get("cpu_bytes_to_use") or 0)
    for t in host_tables(get(_facts(recipe), "host_tables")):
        if any(argv[i] == t.flag and t.marker in argv[i + 1] for i in range(len(argv) - 1)):
            gib += t.gib
    return math.ceil(gib)


def _uses_rdma(config: Any) -> bool:
    return isinstance(config, dict) and str(config.get("protocol") or "").lower() == "rdma"


def container_install(install: str | None, image: str, title: str) -> str | None:
    """The install step as it must run inside ``image`` (``uv pip install --system``: the vLLM images have
    no virtual environment); ``None`` when the image ships every package. Refuses anything but a plain
    ``[uv] pip install`` (a recipe value never runs as shell)."""
    if not install:
        return None
    try:
        words = shlex.split(install, comments=True)
    except ValueError as exc:
        raise ExportError(f"{title}: install step {install!r} is not one command ({exc}).") from None
    if words[:3] == ["uv", "pip", "install"]:
        head, rest = ["uv", "pip", "install", "--system"], words[3:]
    elif words[:2] == ["pip", "install"] or words[:4] == ["python3", "-m", "pip", "install"]:
        head, rest = ["python3", "-m", "pip", "install"], words[2:] if words[0] == "pip" else words[4:]
    else:
        raise ExportError(f"{title}: install step {install!r} is not a `pip install`; a container target "
                          "cannot run it. Use `vllm-recipes command` and install it yourself.")
    rest = [w for w in rest if w != "--system"]
    reqs = [w for w in rest if not w.startswith("-")]
    repo = image.rsplit(":", 1)[0].removeprefix("docker.io/") if ":" in image.rsplit("/", 1)[-1] else image
    ships = IMAGE_SHIPS.get(repo, frozenset())
    names = [re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in reqs]
    if reqs and len(reqs) == len(rest) and all(n in ships for n in names) and not any("==" in r for r in reqs):
        return None
    return shell_join([*head, *rest])


def install_note(dep: Deployment, image: str) -> list[str]:
    """The header line naming each process's install step inside ``image`` (or that the image ships it);
    none when no process installs anything."""
    installs = [(p.title, container_install(p.install, image, p.title)) for p in dep.processes if p.install]
    return ["Install steps in the container: " + "; ".join(
        f"{t}: {i}" if i else f"{t}: none, {image} ships the packages" for t, i in installs)] if installs else []


def split_command(text: str) -> tuple[str, ...]:
    """A router / Mooncake command as printed (``\\``-continued lines) -> argv."""
    return tuple(shlex.split(text.replace("\\\n", " "), comments=True))


def _generalize(argv: Sequence[str], rank: int, pool: str | None) -> tuple[Token, ...]:
    """Worker argv at ``rank`` -> template: rank flags become :class:`RankTerm`, own address :data:`SELF`."""
    out: list[Token] = []
    for i, t in enumerate(argv):
        if i > 0 and argv[i - 1] in RANK_FLAGS and t.isdigit() and int(t) % rank == 0:
            out.append(RankTerm(int(t) // rank))
        else:
            out.append(_self_address(t, rank, pool))
    return tuple(out)


def _self_address(value: str, rank: int, pool: str | None) -> str:
    return value if pool is None else re.sub(rf"\${pool}{rank + 1}(?![0-9])", f"${SELF}", value)


def instantiate(template: Sequence[Token], rank: int, pool: str | None) -> tuple[str, ...]:
    """A worker template at ``rank``, own address written back as the pool placeholder."""
    own = f"${pool}{rank + 1}" if pool else f"${SELF}"
    return tuple(t.at(rank) if isinstance(t, RankTerm) else t.replace(f"${SELF}", own) for t in template)


def _with_workers(proc: Process, workers: Sequence[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]) -> Process:
    """Attach the worker template of ranks 1..n, verified against every rank's own argv and env."""
    if not workers:
        return proc
    argv1, env1 = workers[0]
    out = replace(proc, worker_argv=_generalize(argv1, 1, proc.pool),
                  worker_env=tuple((k, _self_address(v, 1, proc.pool)) for k, v in env1),
                  worker_argvs=tuple(a for a, _ in workers), worker_envs=tuple(e for _, e in workers))
    for rank, worker in enumerate(workers, start=1):
        if out.node(rank) != worker:
            raise ExportError(f"{proc.title}: node {rank} differs from node 1 in more than its rank and address, "
                              "so one worker template cannot express it; use `vllm-recipes command` per node.")
    return out


Resolver = Callable[[dict[str, Any]], tuple[Ctx, Plan]]


def serve_argv(inv: Invocation, title: str = "vLLM") -> tuple[str, ...]:
    """The exec-form argv of one ``vllm serve`` invocation (``render_invocation``'s)."""
    return exec_form(render_invocation(inv)[1], title)


def _serve(ctx: Ctx, key: str, title: str, inv: Invocation, env: Sequence[EnvValue], nodes: int = 1,
           pool: str | None = None) -> Process:
    argv = serve_argv(inv, title)
    node_gpus = int(ctx.profile.get("gpu_count") or 0) if ctx.profile.get("generation") != "cpu" else 0
    gpus = gpus_per_node(argv, nodes, node_gpus) if node_gpus else 0
    return Process(key, "serve", title, argv, env_items(env), nodes=nodes,
                   port=_flag_int(argv, "--port", DEFAULT_PORT), gpus=gpus, pool=pool,
                   protocol="grpc" if "--grpc" in argv else "http", cpu=CPU_PER_GPU * max(gpus, 1),
                   memory_gib=MEMORY_GIB_PER_GPU * max(gpus, 1) + host_memory_gib(argv, gpus, ctx.recipe),
                   rdma=nodes > 1 or pool is not None)


def _companions(plan: SinglePlan) -> list[Process]:
    return [Process(f"companion-{i}" if len(plan.companions) > 1 else "companion", "companion", c.label,
                    ("sh", "-c", c.command), script=c.command, cpu=SMALL_CPU,
                    memory_gib=SMALL_MEMORY_GIB + math.ceil(_num_flag(split_command(c.command), "--l1-size-gb")))
            for i, c in enumerate(plan.companions, start=1)]


def _router(lines: Sequence[str], port: int | None, install: str) -> Process:
    argv = split_command(router_text(lines))
    return Process("router", "router", "Router", argv, port=port or DEFAULT_PORT, install=install or None,
                   cpu=SMALL_CPU, memory_gib=SMALL_MEMORY_GIB)


def _mooncake(master: dict[str, Any], store: dict[str, Any] | None, install: str | None) -> list[Process]:
    """Mooncake master and store processes; the shared client config travels with the vLLM processes."""
    argv = split_command(str(master.get("command") or ""))
    port = next((int(m[1]) for t in argv if (m := re.fullmatch(r"-+rpc_port=(\d+)", t))), None)
    out = [Process("mooncake-master", "mooncake", "Mooncake master", argv, port=port, install=install,
                   cpu=SMALL_CPU, memory_gib=SMALL_MEMORY_GIB)]
    if store is not None:
        cfg = store.get("config")
        files = () if cfg is None else (ConfigFile("MOONCAKE_STORE_CONFIG_PATH", "mooncake-store.json",
                                                   json.dumps(cfg, indent=2, ensure_ascii=False)),)
        pool = size_gib(cfg.get("global_segment_size")) + size_gib(cfg.get("local_buffer_size")) \
            if isinstance(cfg, dict) else 0.0
        out.append(Process("mooncake-store", "mooncake", "Mooncake store", split_command(str(store.get("command") or "")),
                           files=files, install=install, cpu=SMALL_CPU,
                           memory_gib=SMALL_MEMORY_GIB + math.ceil(pool), rdma=_uses_rdma(cfg)))
    return out


def _mooncake_client(proc: Process, config: Any) -> Process:
    """A vLLM process that is a Mooncake client: its config file, the host memory each GPU lends the pool
    (``global_segment_size``) plus the local buffer, and RDMA when the config says so."""
    if not isinstance(config, dict):
        return proc
    pool = size_gib(config.get("global_segment_size")) * max(proc.gpus, 1) + size_gib(config.get("local_buffer_size"))
    text = json.dumps(config, indent=2, ensure_ascii=False)
    return replace(proc, files=(ConfigFile("MOONCAKE_CONFIG_PATH", "mooncake.json", text),),
                   memory_gib=proc.memory_gib + math.ceil(pool), rdma=proc.rdma or _uses_rdma(config))


def _facts(recipe: Any) -> Any:
    return get(get(recipe, "model"), "architecture_facts")


def model_gib(ctx: Ctx) -> int:
    """The checkpoint's size in GiB: the recipe's ``architecture_facts.checkpoint_gib`` (of the selected
    variant), else the variant's ``vram_minimum_gb`` (an upper bound: weights plus room); 0 when neither
    is known."""
    declared = checkpoint_for(checkpoint_sizes(get(_facts(ctx.recipe), "checkpoint_gib")), ctx.sel.variant_key)
    for v in (declared, ctx.variant.get("vram_minimum_gb")):
        if is_number(v) and 0 < v < 1e6:
            return math.ceil(v)
    return 0


def _pd_processes(ctx: Ctx, plan: PdPlan, resolve_at: Resolver, co_located: bool) -> list[Process]:
    """Mooncake (when the pools share a store), the prefill and decode pools, the router."""
    procs = _mooncake(plan.mooncake.master, plan.mooncake.store, plan.mooncake.install) \
        if plan.mooncake is not None else []
    for rp in (plan.prefill, plan.decode):
        nodes = int(rp.meta.get("nodes") or 1)
        proc = _serve(ctx, rp.role, rp.role.capitalize(), rp.serve, rp.env, nodes=max(nodes, 1),
                      pool=f"{rp.role.upper()}_NODE_")
        if co_located:  # both pools on one machine: KV moves over NVLink / PCIe, not the network
            proc = replace(proc, rdma=False)
        if plan.mooncake is not None:
            proc = _mooncake_client(proc, plan.mooncake.config)
        if int(rp.meta.get("currentNode") or 0) != 0 or nodes > 1:
            proc = _pool_ranks(proc, rp.role, nodes, resolve_at)
        procs.append(proc)
    return [*procs, _router(plan.router.lines, plan.router.port, plan.router.install)]


def _processes(ctx: Ctx, plan: Plan, resolve_at: Resolver, co_located: bool) -> list[Process]:
    """Every process of ``plan``, in start order."""
    if isinstance(plan, SinglePlan):
        return [*_companions(plan), _serve(ctx, "vllm", "vLLM", plan.serve, plan.env)]
    if isinstance(plan, MultiNodePlan):
        head = _serve(ctx, "vllm", "vLLM", plan.head, plan.env, nodes=plan.node_count)
        return [_with_workers(head, [(serve_argv(w), head.env) for w in plan.workers])]
    if isinstance(plan, PdPlan):
        return _pd_processes(ctx, plan, resolve_at, co_located)
    # a KvStorePlan: Mooncake, its vLLM instances, the router in front of several
    router = [_router(plan.router.lines, plan.router.port, plan.router.install)] if plan.router is not None else []
    return [*_mooncake(plan.master, plan.store, plan.install), *_kv_instances(ctx, plan, resolve_at), *router]


def build_deployment(ctx: Ctx, plan: Plan, install: str, resolve_at: Resolver, co_located: bool = False,
                     hf_id: str = "") -> Deployment:
    """All processes of ``plan``; ``resolve_at(changes)`` re-resolves the selection at another rank or instance."""
    procs = _processes(ctx, plan, resolve_at, co_located)
    for p in procs:  # a recipe value may not use the name the worker template gives a node's own address
        texts = [*p.argv, *(v for _, v in p.env), *(t for a in p.worker_argvs for t in a),
                 *(v for e in p.worker_envs for _, v in e), *(f.content for f in p.files), p.script or ""]
        if any(SELF in placeholders(t) for t in texts):
            raise ExportError(f"{p.title}: a value holds ${SELF}, the name the worker template uses for a "
                              "node's own address; rename it in the recipe.")
    ready = next((int(v) for p in procs for k, v in p.env
                  if k == "VLLM_ENGINE_READY_TIMEOUT_S" and v.isdigit()), DEFAULT_READY_TIMEOUT_S)
    return Deployment(hf_id, ctx.model_id, plan.deploy_type, tuple(procs), meta_for(ctx),
                      dict(ctx.profile), ctx.hw_id, install, co_located, ready, model_gib(ctx))


def _pool_ranks(proc: Process, role: str, nodes: int, resolve_at: Resolver) -> Process:
    """A PD pool's rank-0 process plus its worker template from re-resolving ranks 1..nodes-1."""
    def role_at(rank: int) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        _c, p = resolve_at({"pd_rank": (role, rank)})
        assert isinstance(p, PdPlan)
        rp = p.prefill if role == "prefill" else p.decode
        return serve_argv(rp.serve, proc.title), env_items(rp.env)

    argv0, env0 = role_at(0)
    base = replace(proc, argv=argv0, env=env0, port=_flag_int(argv0, "--port", DEFAULT_PORT))
    return _with_workers(base, [role_at(r) for r in range(1, nodes)])


def _kv_instances(ctx: Ctx, plan: KvStorePlan, resolve_at: Resolver) -> list[Process]:
    out: list[Process] = []
    for i in range(plan.instances):
        c, p = (ctx, plan) if i == plan.current_instance else resolve_at({"kv_instance": i})
        assert isinstance(p, KvStorePlan)
        proc = _serve(c, f"vllm-{i + 1}", f"vLLM instance {i + 1}", p.vllm, p.env, nodes=1 + len(p.workers))
        proc = replace(_mooncake_client(proc, plan.mooncake_config), install=p.install or None)
        out.append(_with_workers(proc, [(serve_argv(w), proc.env) for w in p.workers]))  # none: one node
    return out
