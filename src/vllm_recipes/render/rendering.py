"""The JSON-API rendering object of one selection (json-api.md §8), plus our ``frontend`` key.

Also exposes the engine-shaped result (camelCase, synthesis.md §8) that the
CLI's ``--format json`` and the live API reuse.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from vllm_recipes.catalog.memo import SELECTIONS, remember, remember_answer, selection_cache
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

from .docker import (
    DockerMeta,
    docker_argv_head,
    docker_meta,
    docker_run_head,
    serve_argv_tail,
    split_serve_text,
)
from .shell import kept_positions, render_kept, router_text


def env_dict(env: tuple[EnvValue, ...]) -> dict[str, Any]:
    return {e.key: e.value for e in env}


def env_pairs(env: tuple[EnvValue, ...]) -> list[tuple[str, Any]]:
    return [(e.key, e.value) for e in env]


def meta_for(ctx: Ctx) -> DockerMeta:
    """Docker image and GPU flags for the selection; one computation per (recipe, variant, hardware)."""
    key = (ctx.recipe_file, "docker", ctx.variant_data_key, ctx.hw_id)
    meta = ctx.catalog.memo.get(key)
    if meta is None:
        meta = remember(ctx.catalog.memo, key, docker_meta(ctx.recipe, ctx.variant, ctx.profile, ctx.hw_id))
    return meta  # type: ignore[no-any-return]


# Rendering is memoized by *values*: the text and argv of a process depend only on its
# token values (dedupe, quoting and layout never look at provenance), and its docker
# forms only on that text, the env it runs with and the image/GPU flags. Across a
# catalog most processes repeat (the same tokens on many hardware profiles), so each
# distinct one is laid out once. Env tuples are memoized by the engine, so they are
# keyed by identity (the entry keeps the tuple alive and is checked on a hit).
_token_value = itemgetter(0)


def token_values(inv: Invocation) -> tuple[str, ...]:
    return tuple(map(_token_value, inv.args))


def kept_positions_of(memo: dict[Any, Any], values: tuple[str, ...], drop_flags: tuple[str, ...]) -> tuple[int, ...]:
    """:func:`~.shell.kept_positions`, memoized by values: one dedupe serves the text and the lint."""
    key = ("kept", drop_flags, values)
    hit = memo.get(key)
    if hit is None:
        hit = remember(memo, key, kept_positions(values, drop_flags))
    return hit  # type: ignore[no-any-return]


def _inv_rendered(memo: dict[Any, Any], inv: Invocation) -> tuple[str, tuple[str, ...]]:
    """Text and argv of one process, shared by every process with the same token values."""
    values = token_values(inv)
    key = ("inv", inv.binary, inv.model_id, inv.drop_flags, values)
    hit = memo.get(key)
    if hit is None:
        kept = [values[i] for i in kept_positions_of(memo, values, inv.drop_flags)]
        hit = remember(memo, key, render_kept(inv.binary, inv.model_id, kept))
    return hit  # type: ignore[no-any-return]


def _env_dict(memo: dict[Any, Any], env: tuple[EnvValue, ...]) -> dict[str, Any]:
    key = ("env-dict", id(env))
    hit = memo.get(key)
    if hit is None or hit[0] is not env:
        hit = remember(memo, key, (env, env_dict(env)))
    return dict(hit[1])


def _dock(memo: dict[Any, Any], meta: DockerMeta, rendered: tuple[str, tuple[str, ...]], env: tuple[EnvValue, ...],
          port: int) -> tuple[str, list[str]]:
    """``docker run`` text and argv, keyed by the rendered process (identity) and env (identity)."""
    key = ("docker", meta.image, meta.gpu_flags_text, id(rendered), id(env), port)
    hit = memo.get(key)
    if hit is None or hit[0] is not env or hit[1] is not rendered:
        # = docker_run_text / docker_run_argv, with the env-dependent head laid out once per env
        text, argv = rendered
        model_id, body = split_serve_text(text)
        head = _docker_head(memo, meta, env, port, model_id)[0]
        cmd = serve_argv_tail(argv)
        argv_head = _docker_head(memo, meta, env, port, cmd[0] if cmd else "")[1]
        hit = remember(memo, key, (env, rendered, head + (" \\\n  " + body if body else ""), (*argv_head, *cmd)))
    return hit[2], list(hit[3])


def _docker_head(memo: dict[Any, Any], meta: DockerMeta, env: tuple[EnvValue, ...], port: int,
                 model_id: str) -> tuple[str, tuple[str, ...]]:
    """``docker run`` text and argv up to the image, per (env identity, image, port, model id)."""
    key = ("docker-head", meta.image, meta.gpu_flags_text, meta.gpu_flags_argv, port, model_id, id(env))
    hit = memo.get(key)
    if hit is None or hit[0] is not env:
        pairs = env_pairs(env)
        hit = remember(memo, key, (env, docker_run_head(model_id, pairs, meta, port),
                                   tuple(docker_argv_head(model_id, pairs, meta, port))))
    return hit[1], hit[2]


def rendering_object(ctx: Ctx, plan: Plan, *, frontend_key: bool = True) -> dict[str, Any]:
    """json-api.md §8.2-§8.6 for one resolved selection, key order exact.

    Memoized per plan (a repeated selection resolves to the same plan object): the
    caller gets a fresh top-level dict, nested values are shared and read-only.
    """
    memo = ctx.catalog.memo
    cache = memo.get(SELECTIONS)  # (inlined selection_cache: this is the website's hot path)
    if cache is None:
        cache = selection_cache(memo)
    key = ("rendering", id(plan), id(ctx), frontend_key)
    hit = cache.get(key)
    if hit is None or hit[0] is not plan or hit[1] is not ctx:
        hit = remember_answer(cache, key, (plan, ctx, _rendering_object(ctx, plan, frontend_key)))
    return hit[2].copy()  # type: ignore[no-any-return]


def _rendering_object(ctx: Ctx, plan: Plan, frontend_key: bool) -> dict[str, Any]:
    sel = ctx.sel
    memo = ctx.catalog.memo
    meta = meta_for(ctx)
    head_env: tuple[EnvValue, ...] = plan.env if isinstance(plan, SinglePlan | MultiNodePlan | KvStorePlan) else ()
    out: dict[str, Any] = {
        "hardware": sel.hw_id,
        "strategy": sel.strategy,
        "variant": sel.variant_key,
        "node_count": sel.node_count,
        "deploy_type": plan.deploy_type,
        "env": _env_dict(memo, head_env),
    }
    if meta.image is not None:
        out["docker_image"] = meta.image
    if frontend_key:
        out["frontend"] = ctx.frontend
    if isinstance(plan, MultiNodePlan):
        head = _inv_rendered(memo, plan.head)
        head_cmd, head_argv = head[0], list(head[1])
        workers = [_inv_rendered(memo, w) for w in plan.workers]
        wc = [w[0] for w in workers]
        wa = [list(w[1]) for w in workers]
        hd = _dock(memo, meta, head, plan.env, 8000)
        wd = [_dock(memo, meta, w, plan.env, 8000) for w in workers]
        out.update({
            "head_command": head_cmd, "worker_command": wc[0] if wc else None, "worker_commands": wc,
            "head_argv": head_argv, "worker_argv": wa[0] if wa else None, "worker_argvs": wa,
            "head_docker_command": hd[0], "worker_docker_command": wd[0][0] if wd else None,
            "worker_docker_commands": [d[0] for d in wd],
            "head_docker_argv": hd[1], "worker_docker_argv": wd[0][1] if wd else None,
            "worker_docker_argvs": [d[1] for d in wd],
        })
    elif isinstance(plan, PdPlan):
        for role_plan, port in ((plan.prefill, 8001), (plan.decode, 8002)):
            rendered = _inv_rendered(memo, role_plan.serve)
            cmd, argv = rendered[0], list(rendered[1])
            role_obj: dict[str, Any] = {"command": cmd, "argv": argv, "env": _env_dict(memo, role_plan.env),
                                        **role_plan.meta}
            d = _dock(memo, meta, rendered, role_plan.env, port)
            role_obj["docker_command"], role_obj["docker_argv"] = d
            out[role_plan.role] = role_obj
        out["router"] = {"command": router_text(plan.router.lines), "install": plan.router.install}
        out["router_config"] = plan.router_config
    elif isinstance(plan, KvStorePlan):
        kv_id = sel.kv_offload or sel.strategy
        out["strategy"] = kv_id
        out["node_count"] = plan.node_count
        rendered = _inv_rendered(memo, plan.vllm)
        cmd, argv = rendered[0], list(rendered[1])
        worker_renders = [_inv_rendered(memo, w) for w in plan.workers]
        workers = [(w[0], list(w[1])) for w in worker_renders]
        vd = _dock(memo, meta, rendered, plan.env, 8000)
        wd = [_dock(memo, meta, w, plan.env, 8000) for w in worker_renders]
        kv_spec = as_map(ctx.catalog.strategies.get(kv_id))
        out.update({
            "serving_strategy": plan.serving_strategy,
            "kv_min_vllm_version": first_truthy(kv_spec.get("min_vllm_version"), None),
            "instances": plan.instances,
            "vllm_command": cmd,
            "vllm_argv": argv,
            "vllm_worker_command": workers[0][0] if workers else None,
            "vllm_worker_commands": [w[0] for w in workers] if plan.multi_node_instance else None,
            "vllm_worker_argv": workers[0][1] if workers else None,
            "vllm_worker_argvs": [w[1] for w in workers] if plan.multi_node_instance else None,
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
    else:
        rendered = _inv_rendered(memo, plan.serve)
        cmd, argv = rendered[0], list(rendered[1])
        d = _dock(memo, meta, rendered, plan.env, 8000)
        out.update({"command": cmd, "argv": argv, "docker_command": d[0], "docker_argv": d[1]})
        if plan.companions:
            out["companions"] = [
                {"feature": c.feature, "label": c.label, "description": c.description, "command": c.command}
                for c in plan.companions
            ]
    return out

