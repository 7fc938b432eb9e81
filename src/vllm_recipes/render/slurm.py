"""An ``sbatch`` script: one job step per process group, ranks from Slurm, health-gated start.

Serve processes get their own nodes; router, Mooncake and companions run as overlapping steps on the first
node. The script fills the placeholders Slurm knows, refuses to start without the others, and runs steps
through pyxis/enroot with ``--install docker``.
"""

from __future__ import annotations

from itertools import accumulate

from .artifacts import (
    MEDIA_SHELL,
    Artifact,
    ExportOptions,
    check_name,
    checked_exports,
    default_name,
    fixed_value,
    header,
    shell_command,
    used_placeholders,
)
from .docker import HF_CACHE
from .shell import literal, placeholders, quote, shell_join, shell_word
from .workloads import SELF, Deployment, Process, RankTerm, container_install, split_command

HEALTH_POLL_S = 10
#: RDMA registers (pins) memory: in a step that is the locked-memory limit (no IPC_LOCK for a user's
#: container); Slurm starts steps with the submitting shell's soft limits, so the step lifts its own
MEMLOCK = ('ulimit -S -l unlimited 2>/dev/null || echo "warning: locked memory is limited to $(ulimit -l) KiB '
           'on $(hostname); RDMA needs it unlimited (limits.conf, slurm.conf PropagateResourceLimitsExcept=MEMLOCK)" >&2')


def _words(tokens: tuple[str | RankTerm, ...], rank_var: str) -> str:
    return shell_command(tokens, shell_word, rank_var, indent="    ")


def _exports(env: tuple[tuple[str, str], ...]) -> list[str]:
    return [f"export {k}={shell_word(v)}" for k, v in env]


def step_script(p: Process, rank_var: str, install: str | None) -> str:
    """What runs on each node of ``p``'s step (env, optional install, exec of its argv), as one ``bash -c``
    argument of quoted shell words: passed single-quoted, never re-indented (no heredoc a value ends)."""
    pre = (["set -e", install] if install else []) + ([MEMLOCK] if p.rdma else [])
    if p.script is not None:
        return "\n".join([*pre, p.script])
    head = [*pre, *_exports(p.env), "exec " + _words(p.argv, rank_var)]
    if p.nodes <= 1:
        return "\n".join(head)
    worker = [*pre, *_exports(p.worker_env), "exec " + _words(p.worker_argv, rank_var)]
    if any(SELF in placeholders(t) for t in (*p.worker_argv, *(v for _, v in p.worker_env)) if isinstance(t, str)):
        worker.insert(len(pre), f"{SELF}=$(hostname)")
    return "\n".join([f'if [ "${rank_var}" -eq 0 ]; then', *head, "else", *worker, "fi"])


def _var(key: str) -> str:
    return key.upper().replace("-", "_") + "_STEP"


def _install(p: Process, docker: bool, image: str | None) -> str | None:
    """The install step on the node: in the image as :func:`container_install` says, else (pip: the
    environment ``sbatch`` runs in) the same ``pip install`` re-quoted word by word."""
    if not p.install:
        return None
    if docker and image:
        return container_install(p.install, image, p.title)
    return shell_join(split_command(p.install))


#: bash functions the script polls readiness with (``{timeout}``: the deployment's ready timeout)
_WAIT_FUNCTIONS = """wait_healthy() {{
  local url=$1 pid=$2 deadline=$((SECONDS + {timeout}))
  until check_up "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then echo "step for $url exited" >&2; exit 1; fi
    if [ "$SECONDS" -ge "$deadline" ]; then echo "$url not healthy after {timeout}s" >&2; exit 1; fi
    sleep {poll}
  done
}}
# an http:// URL answers 2xx, or a tcp://HOST:PORT server (gRPC) accepts a connection
check_up() {{
  case "$1" in
    tcp://*) local hp=${{1#tcp://}}; python3 -c "import socket, sys; socket.create_connection((sys.argv[1], \
int(sys.argv[2])), timeout=5)" "${{hp%:*}}" "${{hp##*:}}" 2>/dev/null ;;
    *) curl -fsS -o /dev/null "$1" ;;
  esac
}}
"""
#: placeholders the script fills in itself, whatever the deployment
_FIXED = {"HEAD_IP": '"${NODES[0]}"', "MOONCAKE_MASTER_IP": '"${NODES[0]}"', "ROUTER_PORT": "8000"}


def _bound_value(var: str, dep: Deployment, first: dict[str, int]) -> str | None:
    """What the script sets ``var`` to, when Slurm knows it: a node address, the router's port, a fixed value."""
    node = dep.node_of(var)
    if node is not None and node[0].key in first:
        return f'"${{NODES[{first[node[0].key] + node[1] - 1}]}}"'
    return fixed_value(dep, var) or _FIXED.get(var)


def _header(dep: Deployment, opts: ExportOptions, name: str, to_set: dict[str, list[str]], docker: bool,
            image: str | None) -> list[str]:
    rdma_note = ["RDMA (NCCL/NIXL across nodes, Mooncake): those steps lift their locked-memory limit"
                 + (" and mount /dev/infiniband into the container (--rdma none: no mount)."
                    if docker and image and opts.rdma_resource else ".")]
    notes = ["Submit: sbatch " + f"{name}.sbatch" + ("" if docker else "  (from the environment that has vLLM installed)"),
             "Every node of the allocation must reach the others; $WORKDIR must be on a shared filesystem.",
             *(rdma_note if any(p.rdma for p in dep.processes) else [])]
    return ["#!/bin/bash",
            "# shellcheck disable=SC2016  # step scripts are single-quoted: bash -c expands them on the node",
            header(dep, "slurm", opts, to_set, notes).rstrip("\n")]


def _srun(p: Process, where: list[str], container: list[str], rdma: bool) -> list[str]:
    """The backgrounded ``srun`` of one step (its NICs mounted when it uses RDMA, as k8s/Compose request them)."""
    mounts = container
    if container and p.rdma and rdma:
        mounts = [container[0], container[1][:-1] + ',/dev/infiniband:/dev/infiniband"']
    srun = [" ".join(["srun", *where]), *mounts, f'bash -c "${_var(p.key)}" &']
    return [" \\\n  ".join(srun), 'PIDS+=("$!")']


def _where(p: Process, dep: Deployment, first: dict[str, int]) -> list[str]:
    """``srun`` placement: a serve process on its own nodes, every other step overlapping on the first."""
    if p.kind != "serve":
        return ["--nodes=1", "--ntasks=1", "--overlap", '--nodelist="${NODES[0]}"']
    nodelist = ",".join(f"${{NODES[{first[p.key] + i}]}}" for i in range(p.nodes))
    where = [f"--nodes={p.nodes}", f"--ntasks={p.nodes}", "--ntasks-per-node=1", f'--nodelist="{nodelist}"']
    return [*where, "--overlap"] if dep.co_located else where


def _steps(dep: Deployment, opts: ExportOptions, serve: list[Process], first: dict[str, int],
           docker: bool, image: str | None) -> list[str]:
    """Every job step in start order (helpers, vLLM, router), health-gated before the router and the end."""
    container = []
    if docker and image:
        container = [f"--container-image={quote(image)}",
                     f'--container-mounts="$HOME/.cache/huggingface:{HF_CACHE},$WORKDIR:$WORKDIR"']
    ordered = [p for p in dep.processes if p.kind in ("companion", "mooncake")] + serve + \
        [p for p in dep.processes if p.kind == "router"]
    lines: list[str] = []
    health: list[str] = []
    for p in ordered:
        var = _var(p.key)
        rank_var = "SLURM_NODEID" if p.kind == "serve" and p.nodes == dep.machines else "SLURM_PROCID"
        lines.append(f"# {p.title}" + (f" ({p.nodes} nodes)" if p.nodes > 1 else ""))
        lines.append(f"{var}={literal(step_script(p, rank_var, _install(p, docker, image)))}")
        if p.kind == "router" and health:
            lines += ["# start the router once every vLLM process answers its health check", *health, ""]
            health = []
        lines += _srun(p, _where(p, dep, first), container, bool(opts.rdma_resource))
        if p.kind == "serve" and p.port is not None:
            lines.append(f"{var}_PID=$!")
            # the readiness check the script polls: ``/health`` over HTTP, a TCP connect for gRPC
            host = f"${{NODES[{first[p.key]}]}}"
            url = f"tcp://{host}:{p.port}" if p.protocol == "grpc" else f"http://{host}:{p.port}/health"
            health.append(f'wait_healthy "{url}" "${var}_PID"')
        lines.append("")
    if health:
        lines += ["# wait until every vLLM process answers its health check", *health,
                  'echo "every vLLM process is healthy" >&2', ""]
    return lines


def _sbatch(dep: Deployment, name: str, serve: list[Process]) -> list[str]:
    gpus = sum(p.gpus for p in serve) if dep.co_located else max((p.gpus for p in serve), default=0)
    return [f"#SBATCH --job-name={name}", f"#SBATCH --nodes={max(dep.machines, 1)}", "#SBATCH --ntasks-per-node=1",
            *([f"#SBATCH --gpus-per-node={gpus}"] if gpus else []), "#SBATCH --exclusive", "", "set -euo pipefail", ""]


def _environment(dep: Deployment, name: str, bound: dict[str, str], to_set: dict[str, list[str]]) -> list[str]:
    """Refuse to start without the user's settings, then export them, the bound values and the config files."""
    files = dep.files
    lines = checked_exports(dep, to_set, "before sbatch (see the header)")
    lines += ['mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
              'WORKDIR="${SLURM_SUBMIT_DIR:-$PWD}/' + name + '-${SLURM_JOB_ID}"', 'mkdir -p "$WORKDIR"']
    lines += [f"export {var}={value}" for var, value in bound.items() if var not in files]
    lines += [f"export {var}={value}" for var, value in bound.items() if var in files]
    # the user's settings ($MOONCAKE_DEVICE_NAME ...) are filled in as the file is written
    lines += [f"printf '%s\\n' {shell_word(f.content)} > \"${var}\"" for var, f in files.items()]
    return lines


def render(dep: Deployment, opts: ExportOptions) -> list[Artifact]:
    name = check_name(opts.name or default_name(dep.model_id), "--name")
    serve = [p for p in dep.processes if p.kind == "serve"]
    # index in NODES of each serve process's first node (all 0 when co-located)
    starts = accumulate((p.nodes for p in serve), initial=0)
    first = {p.key: 0 if dep.co_located else n for p, n in zip(serve, starts, strict=False)}
    used = used_placeholders(dep)
    bound = {var: value for var in used if (value := _bound_value(var, dep, first)) is not None}
    bound.update({var: f'"$WORKDIR/{f.name}"' for var, f in dep.files.items()})
    to_set = {k: v for k, v in used.items() if k not in bound}
    docker = dep.install == "docker"
    image = opts.image or dep.meta.image
    lines = [*_header(dep, opts, name, to_set, docker, image), *_sbatch(dep, name, serve),
             *_environment(dep, name, bound, to_set),
             "", _WAIT_FUNCTIONS.format(timeout=dep.ready_timeout_s, poll=HEALTH_POLL_S) + "PIDS=()",
             "# stop every step when the job ends, fails or is cancelled (scancel sends TERM)",
             """trap 'if [ "${#PIDS[@]}" -gt 0 ]; then kill "${PIDS[@]}" 2>/dev/null || true; fi; wait' EXIT""",
             "trap 'exit 143' TERM INT", "",
             *_steps(dep, opts, serve, first, docker, image),
             'wait -n "${PIDS[@]}"', 'echo "a job step exited; stopping the others" >&2', "exit 1", ""]
    return [Artifact(f"{name}.sbatch", "\n".join(lines), MEDIA_SHELL)]
