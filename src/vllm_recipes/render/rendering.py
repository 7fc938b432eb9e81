"""The JSON-API rendering object of one selection (json-api.md §8), plus our ``frontend`` key: what
``/api/resolve``, ``command --format json`` and the API files show."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_recipes.jsvalues import first_truthy, get
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import EnvValue, Invocation, KvStorePlan, MultiNodePlan, PdPlan, Plan, SinglePlan

from .docker import DockerMeta, docker_meta, docker_run_argv, docker_run_text
from .frontend import frontend_in_effect
from .shell import render_invocation, router_text

#: the four forms of one process, in the key order of its rendering object
FORMS = ("command", "argv", "docker_command", "docker_argv")


def env_pairs(env: tuple[EnvValue, ...]) -> list[tuple[str, Any]]:
    return [(e.key, e.value) for e in env]


def meta_for(ctx: Ctx) -> DockerMeta:
    """Docker image and GPU flags for the selection."""
    return ctx.hw.read(docker_meta, ctx.recipe, ctx.variant)


def _forms(meta: DockerMeta, inv: Invocation, env: tuple[EnvValue, ...], port: int = 8000) -> dict[str, Any]:
    """Text, argv and their ``docker run`` forms of one process."""
    text, argv = render_invocation(inv)
    pairs = env_pairs(env)
    return {"command": text, "argv": argv, "docker_command": docker_run_text(text, pairs, meta, port),
            "docker_argv": docker_run_argv(argv, pairs, meta, port)}


def rendering_object(ctx: Ctx, plan: Plan) -> dict[str, Any]:
    """json-api.md §8.2-§8.6 for one resolved selection, key order exact."""
    return with_hardware(ctx.sel.hw_id, rendering_fields(ctx, plan))


def with_hardware(hw_id: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """A rendering object: the selection's ``hardware`` id first (§8.2), then its :func:`rendering_fields`."""
    return {"hardware": hw_id, **fields}


def rendering_fields(ctx: Ctx, plan: Plan) -> dict[str, Any]:
    """Every key of the rendering object but ``hardware``. They read the hardware only through ``ctx.hw``, so
    a selection whose hardware reads alike has the same fields (``build-api`` reuses them: ``api.tree``)."""
    sel = ctx.sel
    meta = meta_for(ctx)
    head_env: tuple[EnvValue, ...] = plan.env if isinstance(plan, SinglePlan | MultiNodePlan | KvStorePlan) else ()
    out: dict[str, Any] = {
        "strategy": sel.strategy,
        "variant": sel.variant_key,
        "node_count": sel.node_count,
        "deploy_type": plan.deploy_type,
        "env": {e.key: e.value for e in head_env},
    }
    if meta.image is not None:
        out["docker_image"] = meta.image
    out["frontend"] = frontend_in_effect(ctx, plan).name
    if isinstance(plan, MultiNodePlan):
        head = _forms(meta, plan.head, plan.env)
        workers = [_forms(meta, w, plan.env) for w in plan.workers]
        for form in FORMS:  # head_command, worker_command, worker_commands, head_argv ...
            out.update({f"head_{form}": head[form], f"worker_{form}": workers[0][form] if workers else None,
                        f"worker_{form}s": [w[form] for w in workers]})
    elif isinstance(plan, PdPlan):
        for rp, port in ((plan.prefill, 8001), (plan.decode, 8002)):
            forms = _forms(meta, rp.serve, rp.env, port)
            out[rp.role] = {"command": forms["command"], "argv": forms["argv"],
                            "env": {e.key: e.value for e in rp.env}, **rp.meta,
                            "docker_command": forms["docker_command"], "docker_argv": forms["docker_argv"]}
        out["router"] = {"command": router_text(plan.router.lines), "install": plan.router.install}
        out["router_config"] = plan.router_config
    elif isinstance(plan, KvStorePlan):
        out.update(_kv_store_keys(ctx, meta, plan))
    else:
        out.update(_forms(meta, plan.serve, plan.env))
        if plan.companions:
            out["companions"] = [
                {"feature": c.feature, "label": c.label, "description": c.description, "command": c.command}
                for c in plan.companions
            ]
    return out


def _kv_store_keys(ctx: Ctx, meta: DockerMeta, plan: KvStorePlan) -> dict[str, Any]:
    """A Mooncake store deployment (``strategy`` names the store)."""
    kv_id = ctx.sel.kv_offload or ctx.sel.strategy
    vllm = _forms(meta, plan.vllm, plan.env)
    workers = [_forms(meta, w, plan.env) for w in plan.workers]
    first = workers[0] if workers else dict.fromkeys(FORMS)
    each = {f: [w[f] for w in workers] if plan.multi_node_instance else None for f in FORMS}
    return {
        "strategy": kv_id,
        "node_count": plan.node_count,
        "serving_strategy": plan.serving_strategy,
        "kv_min_vllm_version": first_truthy(get(ctx.catalog.strategies.get(kv_id), "min_vllm_version"), None),
        "instances": plan.instances,
        "vllm_command": vllm["command"],
        "vllm_argv": vllm["argv"],
        "vllm_worker_command": first["command"],
        "vllm_worker_commands": each["command"],
        "vllm_worker_argv": first["argv"],
        "vllm_worker_argvs": each["argv"],
        "vllm_worker_docker_command": first["docker_command"],
        "vllm_worker_docker_argv": first["docker_argv"],
        "vllm_worker_docker_commands": each["docker_command"],
        "vllm_worker_docker_argvs": each["docker_argv"],
        "vllm_install": plan.install or None,
        "vllm_docker_command": vllm["docker_command"],
        "vllm_docker_argv": vllm["docker_argv"],
        "master": plan.master,
        "store": plan.store,
        "router": ({"command": router_text(plan.router.lines), "install": plan.router.install,
                    "port": plan.router.port} if plan.router else None),
        "mooncake_config": plan.mooncake_config,
        "mooncake_config_note": plan.mooncake_config_note or "",
    }
