"""The JSON-API rendering object of one selection (json-api.md §8), plus our ``frontend`` key.

Also exposes the engine-shaped result (camelCase, synthesis.md §8) that the
CLI's ``--format json`` and the live API reuse.
"""

from __future__ import annotations

from typing import Any

from vllm_recipes.jsvalues import as_map, first_truthy
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import (
    EnvValue,
    Invocation,
    KvStorePlan,
    MultiNodePlan,
    PdPlan,
    Plan,
    SinglePlan,
)

from .docker import DockerMeta, docker_meta, docker_run_argv, docker_run_text
from .frontend import frontend_in_effect
from .shell import render_values, router_text


def env_dict(env: tuple[EnvValue, ...]) -> dict[str, Any]:
    return {e.key: e.value for e in env}


def env_pairs(env: tuple[EnvValue, ...]) -> list[tuple[str, Any]]:
    return [(e.key, e.value) for e in env]


def meta_for(ctx: Ctx) -> DockerMeta:
    """Docker image and GPU flags for the selection."""
    return ctx.hw.read(docker_meta, ctx.recipe, ctx.variant)


def token_values(inv: Invocation) -> tuple[str, ...]:
    return tuple(a.value for a in inv.args)


def _inv_rendered(inv: Invocation) -> tuple[str, tuple[str, ...]]:
    """Text and argv of one process (dedupe, drop, layout: :func:`~.shell.render_values`)."""
    return render_values(inv.binary, inv.model_id, token_values(inv), inv.drop_flags)


def _dock(meta: DockerMeta, rendered: tuple[str, tuple[str, ...]], env: tuple[EnvValue, ...],
          port: int) -> tuple[str, list[str]]:
    """``docker run`` text and argv of a rendered process."""
    text, argv = rendered
    pairs = env_pairs(env)
    return docker_run_text(text, pairs, meta, port), docker_run_argv(argv, pairs, meta, port)


def rendering_object(ctx: Ctx, plan: Plan, *, frontend_key: bool = True) -> dict[str, Any]:
    """json-api.md §8.2-§8.6 for one resolved selection, key order exact."""
    return _rendering_object(ctx, plan, frontend_key)


def _rendering_object(ctx: Ctx, plan: Plan, frontend_key: bool) -> dict[str, Any]:
    sel = ctx.sel
    meta = meta_for(ctx)
    head_env: tuple[EnvValue, ...] = plan.env if isinstance(plan, SinglePlan | MultiNodePlan | KvStorePlan) else ()
    out: dict[str, Any] = {
        "hardware": sel.hw_id,
        "strategy": sel.strategy,
        "variant": sel.variant_key,
        "node_count": sel.node_count,
        "deploy_type": plan.deploy_type,
        "env": env_dict(head_env),
    }
    if meta.image is not None:
        out["docker_image"] = meta.image
    if frontend_key:
        out["frontend"] = frontend_in_effect(ctx, plan).name
    if isinstance(plan, MultiNodePlan):
        out.update(_multi_node_keys(meta, plan))
    elif isinstance(plan, PdPlan):
        out.update(_pd_keys(meta, plan))
    elif isinstance(plan, KvStorePlan):
        out.update(_kv_store_keys(ctx, meta, plan))
    else:
        out.update(_single_keys(meta, plan))
    return out


def _multi_node_keys(meta: DockerMeta, plan: MultiNodePlan) -> dict[str, Any]:
    """The head's and every worker's command, argv and docker forms."""
    out: dict[str, Any] = {}
    head = _inv_rendered(plan.head)
    head_cmd, head_argv = head[0], list(head[1])
    workers = [_inv_rendered(w) for w in plan.workers]
    wc = [w[0] for w in workers]
    wa = [list(w[1]) for w in workers]
    hd = _dock(meta, head, plan.env, 8000)
    wd = [_dock(meta, w, plan.env, 8000) for w in workers]
    out.update({
        "head_command": head_cmd, "worker_command": wc[0] if wc else None, "worker_commands": wc,
        "head_argv": head_argv, "worker_argv": wa[0] if wa else None, "worker_argvs": wa,
        "head_docker_command": hd[0], "worker_docker_command": wd[0][0] if wd else None,
        "worker_docker_commands": [d[0] for d in wd],
        "head_docker_argv": hd[1], "worker_docker_argv": wd[0][1] if wd else None,
        "worker_docker_argvs": [d[1] for d in wd],
    })
    return out


def _pd_keys(meta: DockerMeta, plan: PdPlan) -> dict[str, Any]:
    """Each pool's process and the router that joins them."""
    out: dict[str, Any] = {}
    for role_plan, port in ((plan.prefill, 8001), (plan.decode, 8002)):
        rendered = _inv_rendered(role_plan.serve)
        cmd, argv = rendered[0], list(rendered[1])
        role_obj: dict[str, Any] = {"command": cmd, "argv": argv, "env": env_dict(role_plan.env),
                                    **role_plan.meta}
        d = _dock(meta, rendered, role_plan.env, port)
        role_obj["docker_command"], role_obj["docker_argv"] = d
        out[role_plan.role] = role_obj
    out["router"] = {"command": router_text(plan.router.lines), "install": plan.router.install}
    out["router_config"] = plan.router_config
    return out


def _kv_store_keys(ctx: Ctx, meta: DockerMeta, plan: KvStorePlan) -> dict[str, Any]:
    """A Mooncake store deployment (``strategy`` names the store)."""
    out: dict[str, Any] = {}
    kv_id = ctx.sel.kv_offload or ctx.sel.strategy
    out["strategy"] = kv_id
    out["node_count"] = plan.node_count
    rendered = _inv_rendered(plan.vllm)
    cmd, argv = rendered[0], list(rendered[1])
    worker_renders = [_inv_rendered(w) for w in plan.workers]
    kv_workers = [(w[0], list(w[1])) for w in worker_renders]
    vd = _dock(meta, rendered, plan.env, 8000)
    wd = [_dock(meta, w, plan.env, 8000) for w in worker_renders]
    kv_spec = as_map(ctx.catalog.strategies.get(kv_id))
    out.update({
        "serving_strategy": plan.serving_strategy,
        "kv_min_vllm_version": first_truthy(kv_spec.get("min_vllm_version"), None),
        "instances": plan.instances,
        "vllm_command": cmd,
        "vllm_argv": argv,
        "vllm_worker_command": kv_workers[0][0] if kv_workers else None,
        "vllm_worker_commands": [w[0] for w in kv_workers] if plan.multi_node_instance else None,
        "vllm_worker_argv": kv_workers[0][1] if kv_workers else None,
        "vllm_worker_argvs": [w[1] for w in kv_workers] if plan.multi_node_instance else None,
        "vllm_worker_docker_command": wd[0][0] if wd else None,
        "vllm_worker_docker_argv": wd[0][1] if wd else None,
        "vllm_worker_docker_commands": [d[0] for d in wd] if plan.multi_node_instance else None,
        "vllm_worker_docker_argvs": [d[1] for d in wd] if plan.multi_node_instance else None,
        "vllm_install": plan.install if plan.install else None,
        "vllm_docker_command": vd[0],
        "vllm_docker_argv": vd[1],
        "master": plan.master,
        "store": plan.store,
        "router": ({"command": router_text(plan.router.lines), "install": plan.router.install,
                    "port": plan.router.port} if plan.router else None),
        "mooncake_config": plan.mooncake_config,
        "mooncake_config_note": plan.mooncake_config_note or "",
    })
    return out


def _single_keys(meta: DockerMeta, plan: SinglePlan) -> dict[str, Any]:
    """One process, and the feature companions."""
    out: dict[str, Any] = {}
    rendered = _inv_rendered(plan.serve)
    cmd, argv = rendered[0], list(rendered[1])
    d = _dock(meta, rendered, plan.env, 8000)
    out.update({"command": cmd, "argv": argv, "docker_command": d[0], "docker_argv": d[1]})
    if plan.companions:
        out["companions"] = [
            {"feature": c.feature, "label": c.label, "description": c.description, "command": c.command}
            for c in plan.companions
        ]
    return out

