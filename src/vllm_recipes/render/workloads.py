"""A resolved plan as scheduler-neutral processes: what every deploy target renders.

Each :class:`Process` holds the *final* argv and env of one process exactly as
``vllm-recipes command`` prints them (same dedupe, same placeholders), plus
what a scheduler needs to place it: node count, port, accelerators per node,
config files. Multi-node processes also carry a *worker template*: the argv and
env of node ``r >= 1`` with the rank-dependent tokens abstracted
(:class:`RankTerm`, the own-address placeholder :data:`SELF`). The template is
checked against every worker rank the plan (or a re-resolve at that rank)
gives, so a target can never print a worker command the plan does not.

No flag is derived here: tokens come from :func:`render_invocation` of the
plan's invocations; routers, Mooncake and companion processes are split from
the same text ``vllm-recipes command`` shows.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vllm_recipes.jsvalues import js_str
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import EnvValue, Invocation, KvStorePlan, MultiNodePlan, PdPlan, Plan, SinglePlan

from .docker import DockerMeta
from .rendering import meta_for
from .shell import render_invocation, router_text

#: placeholder of a worker's own network address in a worker template
SELF = "NODE_SELF_ADDRESS"
PLACEHOLDER = re.compile(r"\$([A-Z_][A-Z0-9_]*)")
#: flags whose value is ``step x node rank`` on a worker (vLLM semantics, not recipe data)
RANK_FLAGS = ("--data-parallel-start-rank", "--node-rank")
DEFAULT_PORT = 8000
DEFAULT_READY_TIMEOUT_S = 1800


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
    worker_env: tuple[tuple[str, Token], ...] = ()
    port: int | None = None
    #: accelerators per node (0: none)
    gpus: int = 0
    #: the pool placeholder prefix of this process's node addresses (``PREFILL_NODE_``), if any
    pool: str | None = None
    #: a script run with ``sh -c`` instead of an exec argv (companion commands)
    script: str | None = None
    files: tuple[ConfigFile, ...] = ()
    note: str = ""
    #: a shell command that must run before the process (``uv pip install vllm-router``), if any
    install: str | None = None
    #: argv of every worker rank 1..nodes-1, as the plan gives them (for checks and round trips)
    worker_argvs: tuple[tuple[str, ...], ...] = field(default=(), compare=False)
    worker_envs: tuple[tuple[tuple[str, str], ...], ...] = field(default=(), compare=False)

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
    node_count: int
    processes: tuple[Process, ...]
    meta: DockerMeta
    profile: dict[str, Any]
    hw_id: str
    install: str
    co_located: bool
    ready_timeout_s: int

    @property
    def machines(self) -> int:
        """Nodes the deployment occupies: each serve process owns its nodes, unless PD is co-located on one."""
        return 1 if self.co_located else sum(p.nodes for p in self.processes if p.kind == "serve")


def env_items(env: Sequence[EnvValue]) -> tuple[tuple[str, str], ...]:
    return tuple((e.key, js_str(e.value)) for e in env)


def placeholders(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def port_of(argv: Sequence[Token], default: int = DEFAULT_PORT) -> int:
    for i, t in enumerate(argv[:-1]):
        if t == "--port" and isinstance(argv[i + 1], str) and str(argv[i + 1]).isdigit():
            return int(str(argv[i + 1]))
    return default


def _flag_int(argv: Sequence[str], flag: str) -> int | None:
    for i, t in enumerate(argv[:-1]):
        if t == flag and argv[i + 1].isdigit():
            return int(argv[i + 1])
    return None


def gpus_per_node(argv: Sequence[str], nodes: int, node_gpus: int) -> int:
    """Accelerators one node of this process uses, read from its parallel sizes (capped by the node)."""
    tp = _flag_int(argv, "--tensor-parallel-size") or 1
    pp = _flag_int(argv, "--pipeline-parallel-size") or 1
    dp_local = _flag_int(argv, "--data-parallel-size-local")
    dp = _flag_int(argv, "--data-parallel-size") or 1
    world = tp * pp * dp_local if dp_local else -(-(tp * pp * dp) // max(nodes, 1))
    return min(world, node_gpus) if node_gpus > 0 else world


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
    if pool is None:
        return value
    return re.sub(rf"\${pool}{rank + 1}(?![0-9])", f"${SELF}", value)


def instantiate(template: Sequence[Token], rank: int, pool: str | None) -> tuple[str, ...]:
    """A worker template at ``rank``, own address written back as the pool placeholder."""
    own = f"${pool}{rank + 1}" if pool else f"${SELF}"
    return tuple(t.at(rank) if isinstance(t, RankTerm) else t.replace(f"${SELF}", own) for t in template)


def _with_workers(proc: Process, workers: Sequence[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]) -> Process:
    """Attach the worker template of ranks 1..n, verified against every rank's own argv and env."""
    if not workers:
        return proc
    argv1, env1 = workers[0]
    template = _generalize(argv1, 1, proc.pool)
    env_template = tuple((k, _generalize_env(v, 1, proc.pool)) for k, v in env1)
    for rank, (argv, env) in enumerate(workers, start=1):
        if instantiate(template, rank, proc.pool) != argv or tuple(
                (k, instantiate((v,), rank, proc.pool)[0]) for k, v in env_template) != env:
            raise ExportError(f"{proc.title}: node {rank} differs from node 1 in more than its rank and address, "
                              "so one worker template cannot express it; use `vllm-recipes command` per node.")
    return replace(proc, worker_argv=template, worker_env=env_template,
                   worker_argvs=tuple(a for a, _ in workers), worker_envs=tuple(e for _, e in workers))


def _generalize_env(value: str, rank: int, pool: str | None) -> Token:
    return _self_address(value, rank, pool)


Resolver = Callable[[dict[str, Any]], tuple[Ctx, Plan]]


def _serve(ctx: Ctx, key: str, title: str, inv: Invocation, env: Sequence[EnvValue], nodes: int = 1,
           pool: str | None = None) -> Process:
    _text, argv, _fin = render_invocation(inv)
    node_gpus = int(ctx.profile.get("gpu_count") or 0) if ctx.profile.get("generation") != "cpu" else 0
    gpus = gpus_per_node(argv, nodes, node_gpus) if node_gpus else 0
    return Process(key, "serve", title, tuple(argv), env_items(env), nodes=nodes, port=port_of(argv),
                   gpus=gpus, pool=pool)


def _ready_timeout(env: Sequence[tuple[str, str]]) -> int:
    for k, v in env:
        if k == "VLLM_ENGINE_READY_TIMEOUT_S" and v.isdigit():
            return int(v)
    return DEFAULT_READY_TIMEOUT_S


def _companions(plan: SinglePlan) -> list[Process]:
    return [Process(f"companion-{i}" if len(plan.companions) > 1 else "companion", "companion", c.label,
                    ("sh", "-c", c.command), script=c.command, note=c.description)
            for i, c in enumerate(plan.companions, start=1)]


def _router(lines: Sequence[str], port: int | None, install: str) -> Process:
    argv = split_command(router_text(lines))
    return Process("router", "router", "Router", argv, port=port or DEFAULT_PORT, install=install or None)


def _mooncake(master: dict[str, Any], store: dict[str, Any] | None, install: str | None) -> list[Process]:
    """Mooncake master and store processes; the shared client config travels with the vLLM processes."""
    out = [Process("mooncake-master", "mooncake", "Mooncake master", split_command(str(master.get("command") or "")),
                   port=_mooncake_port(master), note=str(master.get("description") or ""), install=install)]
    if store is not None:
        files: tuple[ConfigFile, ...] = ()
        if store.get("config") is not None:
            files = (ConfigFile("MOONCAKE_STORE_CONFIG_PATH", "mooncake-store.json",
                                json.dumps(store["config"], indent=2, ensure_ascii=False)),)
        out.append(Process("mooncake-store", "mooncake", "Mooncake store", split_command(str(store.get("command") or "")),
                           files=files, note=str(store.get("description") or ""), install=install))
    return out


def _mooncake_port(master: dict[str, Any]) -> int | None:
    for t in split_command(str(master.get("command") or "")):
        m = re.fullmatch(r"-+rpc_port=(\d+)", t)
        if m:
            return int(m.group(1))
    return None


def _client_config(config: Any) -> tuple[ConfigFile, ...]:
    if config is None:
        return ()
    return (ConfigFile("MOONCAKE_CONFIG_PATH", "mooncake.json", json.dumps(config, indent=2, ensure_ascii=False)),)


def build_deployment(ctx: Ctx, plan: Plan, install: str, resolve_at: Resolver, co_located: bool = False,
                     hf_id: str = "") -> Deployment:
    """All processes of ``plan``; ``resolve_at(changes)`` re-resolves the selection at another rank or instance."""
    procs: list[Process] = []
    if isinstance(plan, SinglePlan):
        procs += _companions(plan)
        procs.append(_serve(ctx, "vllm", "vLLM", plan.serve, plan.env))
    elif isinstance(plan, MultiNodePlan):
        head = _serve(ctx, "vllm", "vLLM", plan.head, plan.env, nodes=plan.node_count)
        env = env_items(plan.env)
        workers = [(tuple(render_invocation(w)[1]), env) for w in plan.workers]
        procs.append(_with_workers(head, workers))
    elif isinstance(plan, PdPlan):
        files = _client_config(plan.mooncake.config) if plan.mooncake is not None else ()
        if plan.mooncake is not None:
            procs += _mooncake(plan.mooncake.master, plan.mooncake.store, plan.mooncake.install)
        for rp in (plan.prefill, plan.decode):
            nodes = int(rp.meta.get("nodes") or 1)
            pool = f"{rp.role.upper()}_NODE_"
            proc = replace(_serve(ctx, rp.role, rp.role.capitalize(), rp.serve, rp.env, nodes=max(nodes, 1),
                                  pool=pool), files=files)
            if int(rp.meta.get("currentNode") or 0) != 0 or nodes > 1:
                proc = _pool_ranks(proc, rp.role, nodes, resolve_at)
            procs.append(proc)
        procs.append(_router(plan.router.lines, plan.router.port, plan.router.install))
    elif isinstance(plan, KvStorePlan):
        procs += _mooncake(plan.master, plan.store, plan.install)
        procs += _kv_instances(ctx, plan, resolve_at)
        if plan.router is not None:
            procs.append(_router(plan.router.lines, plan.router.port, plan.router.install))
    all_env = [kv for p in procs for kv in p.env]
    return Deployment(hf_id, ctx.model_id, plan.deploy_type, ctx.node_count, tuple(procs), meta_for(ctx),
                      dict(ctx.profile), ctx.hw_id, install, co_located, _ready_timeout(all_env))


def _pool_ranks(proc: Process, role: str, nodes: int, resolve_at: Resolver) -> Process:
    """A PD pool's rank-0 process plus its worker template from re-resolving ranks 1..nodes-1."""
    def role_at(rank: int) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        _c, p = resolve_at({"pd_rank": (role, rank)})
        assert isinstance(p, PdPlan)
        rp = p.prefill if role == "prefill" else p.decode
        return tuple(render_invocation(rp.serve)[1]), env_items(rp.env)

    argv0, env0 = role_at(0)
    base = replace(proc, argv=argv0, env=env0, port=port_of(argv0))
    return _with_workers(base, [role_at(r) for r in range(1, nodes)])


def _kv_instances(ctx: Ctx, plan: KvStorePlan, resolve_at: Resolver) -> list[Process]:
    files = _client_config(plan.mooncake_config)
    out: list[Process] = []
    for i in range(plan.instances):
        c, p = (ctx, plan) if i == plan.current_instance else resolve_at({"kv_instance": i})
        assert isinstance(p, KvStorePlan)
        key = f"vllm-{i + 1}"
        nodes = 1 + len(p.workers) if p.multi_node_instance else 1
        proc = replace(_serve(c, key, f"vLLM instance {i + 1}", p.vllm, p.env, nodes=nodes), files=files,
                       install=p.install or None)
        if p.multi_node_instance:
            env = env_items(p.env)
            proc = _with_workers(proc, [(tuple(render_invocation(w)[1]), env) for w in p.workers])
        out.append(proc)
    return out
