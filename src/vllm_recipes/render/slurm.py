"""An ``sbatch`` script: one job step per process group, ranks from Slurm, health-gated start.

Every serve process gets its own nodes of the allocation, in plan order; the
router, Mooncake and companion processes run as overlapping steps on the first
node. Placeholders stay shell variables: the script sets the ones Slurm knows
(node addresses from ``SLURM_JOB_NODELIST``, mounted file paths) and refuses to
start until the others are set. ``--install docker`` runs the steps in the
image through pyxis/enroot (``srun --container-image``); pip uses the
environment ``sbatch`` was called from.
"""

from __future__ import annotations

from .artifacts import (
    MEDIA_SHELL,
    RPC_PORTS,
    Artifact,
    ExportOptions,
    check_name,
    default_name,
    header,
    shell_command,
    used_placeholders,
    whole_json_values,
)
from .k8s import HF_CACHE
from .shell import literal, quote
from .workloads import (
    SELF,
    Deployment,
    Process,
    RankTerm,
    container_install,
    placeholders,
    shell_join,
    shell_word,
    split_command,
)

HEALTH_POLL_S = 10
#: RDMA registers (pins) memory: in a step that is the locked-memory limit (no IPC_LOCK for a user's
#: container); Slurm starts steps with the submitting shell's soft limits, so the step lifts its own
MEMLOCK = ('ulimit -S -l unlimited 2>/dev/null || echo "warning: locked memory is limited to $(ulimit -l) KiB '
           'on $(hostname); RDMA needs it unlimited (limits.conf, slurm.conf PropagateResourceLimitsExcept=MEMLOCK)" >&2')


def _ref(name: str) -> str:
    return f'"${{{name}}}"'


def _words(tokens: tuple[str | RankTerm, ...], rank_var: str) -> str:
    return shell_command(tokens, lambda t: shell_word(t, _ref), rank_var, indent="    ")


def _exports(env: tuple[tuple[str, str | RankTerm], ...]) -> list[str]:
    return [f"export {k}={shell_word(v, _ref) if isinstance(v, str) else v.step}" for k, v in env]


def step_script(p: Process, rank_var: str, install: str | None) -> str:
    """What runs on each node of ``p``'s step: env, optional install, then exec of its argv.

    Returned as text for one ``bash -c`` argument: every value in it is a quoted shell word, and the
    text itself is passed single-quoted (no heredoc a value could end), lines never re-indented (a
    multi-line value stays byte for byte)."""
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


def _health(p: Process, host: str) -> str:
    """A readiness check the batch script polls: ``/health`` over HTTP, a TCP connect for gRPC."""
    if p.protocol == "grpc":
        return f'wait_healthy "tcp://{host}:{p.port}" "${_var(p.key)}_PID"'
    return f'wait_healthy "http://{host}:{p.port}/health" "${_var(p.key)}_PID"'


def render(dep: Deployment, opts: ExportOptions) -> list[Artifact]:
    name = check_name(opts.name or default_name(dep.model_id), "--name")
    serve = [p for p in dep.processes if p.kind == "serve"]
    total = dep.machines
    first: dict[str, int] = {}
    n = 0
    for p in serve:
        first[p.key] = 0 if dep.co_located else n
        n += p.nodes
    bound: dict[str, str] = {}
    by_pool = {p.pool: p for p in serve if p.pool}
    for name_, _places in used_placeholders(dep).items():
        for pool, owner in by_pool.items():
            if name_.startswith(pool) and name_[len(pool):].isdigit():
                bound[name_] = f'"${{NODES[{first[owner.key] + int(name_[len(pool):]) - 1}]}}"'
        if name_.startswith("VLLM_INSTANCE_") and f"vllm-{name_[14:]}" in first:
            bound[name_] = f'"${{NODES[{first[f"vllm-{name_[14:]}"]}]}}"'
        if name_ == "HEAD_IP":
            bound[name_] = '"${NODES[0]}"'
        if name_ == "ROUTER_HOST":
            bound[name_] = "0.0.0.0"
        if name_ == "ROUTER_PORT":
            bound[name_] = str(next((p.port for p in dep.processes if p.kind == "router"), 8000))
        if name_ == "MOONCAKE_MASTER_IP":
            bound[name_] = '"${NODES[0]}"'
        if name_ in RPC_PORTS:
            bound[name_] = str(RPC_PORTS[name_])
    files = {f.path_var: f for p in dep.processes for f in p.files}
    for var, f in files.items():
        bound[var] = f'"$WORKDIR/{f.name}"'
    to_set = {k: v for k, v in used_placeholders(dep).items() if k not in bound}
    empty_ok = whole_json_values(dep)
    docker = dep.install == "docker"
    image = opts.image or dep.meta.image
    gpus = max((p.gpus for p in serve), default=0) if not dep.co_located else sum(p.gpus for p in serve)
    lines = ["#!/bin/bash", "# shellcheck disable=SC2016  # step scripts are single-quoted: bash -c expands them on the node",
             header(dep, "slurm", opts, to_set, [
        "Submit: sbatch " + f"{name}.sbatch" + ("" if docker else "  (from the environment that has vLLM installed)"),
        "Every node of the allocation must reach the others; $WORKDIR must be on a shared filesystem.",
        *(["RDMA (NCCL/NIXL across nodes, Mooncake): those steps lift their locked-memory limit"
           + (" and mount /dev/infiniband into the container (--rdma none: no mount)."
              if docker and image and opts.rdma not in ("", "none") else ".")] if any(p.rdma for p in dep.processes) else []),
    ]).rstrip("\n")]
    lines += [f"#SBATCH --job-name={name}", f"#SBATCH --nodes={max(total, 1)}", "#SBATCH --ntasks-per-node=1"]
    if gpus:
        lines.append(f"#SBATCH --gpus-per-node={gpus}")
    lines += ["#SBATCH --exclusive", "", "set -euo pipefail", ""]
    for var in to_set:
        need = "?" if var in empty_ok else ":?"
        lines.append(f': "${{{var}{need}set {var} before sbatch (see the header)}}"')
    for var in to_set:
        lines.append(f"export {var}")
    lines += ['mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
              'WORKDIR="${SLURM_SUBMIT_DIR:-$PWD}/' + name + '-${SLURM_JOB_ID}"', 'mkdir -p "$WORKDIR"']
    for var, value in bound.items():
        if var not in files:
            lines.append(f"export {var}={value}")
    for var, value in bound.items():
        if var in files:
            lines.append(f"export {var}={value}")
    for var, f in files.items():
        # the user's settings ($MOONCAKE_DEVICE_NAME ...) are filled in as the file is written
        lines.append(f"printf '%s\\n' {shell_word(f.content, _ref)} > \"${var}\"")
    lines += ["", "PIDS=()",
              "# stop every step when the job ends, fails or is cancelled (scancel sends TERM)",
              """trap 'if [ "${#PIDS[@]}" -gt 0 ]; then kill "${PIDS[@]}" 2>/dev/null || true; fi; wait' EXIT""",
              "trap 'exit 143' TERM INT", ""]
    container = []
    if docker and image:
        container = [f"--container-image={quote(image)}",
                     f'--container-mounts="$HOME/.cache/huggingface:{HF_CACHE},$WORKDIR:$WORKDIR"']
    rdma = opts.rdma not in ("", "none")
    ordered = [p for p in dep.processes if p.kind in ("companion", "mooncake")] + serve + \
        [p for p in dep.processes if p.kind == "router"]
    health: list[str] = []
    for p in ordered:
        var = _var(p.key)
        spans_job = p.kind == "serve" and p.nodes == total
        rank_var = "SLURM_NODEID" if spans_job else "SLURM_PROCID"
        lines.append(f"# {p.title}" + (f" ({p.nodes} nodes)" if p.nodes > 1 else ""))
        lines.append(f"{var}={literal(step_script(p, rank_var, _install(p, docker, image)))}")
        if p.kind == "serve":
            start = first[p.key]
            nodelist = ",".join(f"${{NODES[{start + i}]}}" for i in range(p.nodes))
            where = [f"--nodes={p.nodes}", f"--ntasks={p.nodes}", "--ntasks-per-node=1", f'--nodelist="{nodelist}"']
            if dep.co_located:
                where.append("--overlap")
        else:
            where = ["--nodes=1", "--ntasks=1", "--overlap", '--nodelist="${NODES[0]}"']
        if p.kind == "router" and health:
            lines += ["# start the router once every vLLM process answers its health check", *health, ""]
            health = []
        mounts = container
        if container and p.rdma and rdma:  # the RDMA NICs, as the k8s/Compose exports request them
            mounts = [container[0], container[1][:-1] + ',/dev/infiniband:/dev/infiniband"']
        srun = [" ".join(["srun", *where]), *mounts, f'bash -c "${var}" &']
        lines += [" \\\n  ".join(srun), 'PIDS+=("$!")']
        if p.kind == "serve" and p.port is not None:
            lines.append(f"{var}_PID=$!")
            health.append(_health(p, f"${{NODES[{first[p.key]}]}}"))
        lines.append("")
    if health:
        lines += ["# wait until every vLLM process answers its health check", *health,
                  'echo "every vLLM process is healthy" >&2', ""]
    lines += ['wait -n "${PIDS[@]}"', 'echo "a job step exited; stopping the others" >&2', "exit 1", ""]
    body = "\n".join(lines)
    fn = ["wait_healthy() {",
          f"  local url=$1 pid=$2 deadline=$((SECONDS + {dep.ready_timeout_s}))",
          '  until check_up "$url"; do',
          '    if ! kill -0 "$pid" 2>/dev/null; then echo "step for $url exited" >&2; exit 1; fi',
          f'    if [ "$SECONDS" -ge "$deadline" ]; then echo "$url not healthy after {dep.ready_timeout_s}s" >&2; '
          "exit 1; fi",
          f"    sleep {HEALTH_POLL_S}",
          "  done",
          "}",
          "# an http:// URL answers 2xx, or a tcp://HOST:PORT server (gRPC) accepts a connection",
          "check_up() {",
          '  case "$1" in',
          '    tcp://*) local hp=${1#tcp://}; python3 -c "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)" '
          '"${hp%:*}" "${hp##*:}" 2>/dev/null ;;',
          '    *) curl -fsS -o /dev/null "$1" ;;',
          "  esac",
          "}", ""]
    body = body.replace("\nPIDS=()\n", "\n" + "\n".join(fn) + "PIDS=()\n", 1)
    return [Artifact(f"{name}.sbatch", body, MEDIA_SHELL)]
