"""``resolveCommand``: a complete :class:`Selection` -> a :class:`Plan` (synthesis.md §5-§8)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import (
    as_map,
    first_present,
    first_truthy,
    get,
    is_map,
    is_number,
    js_floor_div,
    js_str,
    number_or,
    truthy,
)
from vllm_recipes.select.gates import follower_ranks, is_feature_allowed_for_strategy
from vllm_recipes.select.selection import Selection

from .context import Ctx, Hardware, build_context
from .layers import (
    ARG_ORDER,
    ENV_ORDER,
    LAYERS,
    Call,
    Contribution,
    pd_role_request,
)
from .plan import (
    Arg,
    Companion,
    EnvValue,
    Invocation,
    KvStorePlan,
    MooncakeBlock,
    MultiNodePlan,
    PdPlan,
    PdRolePlan,
    Plan,
    RouterPlan,
    SinglePlan,
    Source,
)

NVL4_PROFILES = ("gb200", "gb300")
NVL4_ONLY_ENV = ("VLLM_USE_NCCL_SYMM_MEM", "NCCL_CUMEM_ENABLE", "NCCL_MNNVL_ENABLE", "NCCL_NVLS_ENABLE",
                 "UCX_NET_DEVICES")


def _layers(ctx: Ctx, call: Call) -> dict[str, Contribution]:
    return {name: layer(ctx, call) for name, layer in LAYERS.items()}


def _args(ctx: Ctx, parts: Mapping[str, Contribution]) -> Invocation:
    """§5.1: the raw argument tokens of one process, every layer in :data:`ARG_ORDER`."""
    return Invocation(ctx.model_id, tuple(chain.from_iterable(parts[name].args for name in ARG_ORDER)))


def _env(ctx: Ctx, role: str | None, parts: Mapping[str, Contribution]) -> tuple[EnvValue, ...]:
    """§6: an ordered merge (``dict.update`` semantics) with shadow tracking."""
    merged: dict[str, EnvValue] = {}
    for name in ENV_ORDER:
        for m, src in parts[name].env:
            for k, v in m.items():
                source = Source(src.layer, src.file, (*src.key_path, k) if src.file else src.key_path, src.note)
                old = merged.get(k)
                merged[k] = EnvValue(k, v, source, (*old.shadowed, (old.value, old.source)) if old is not None else ())
    if ctx.is_pd and role:
        _pd_env(ctx, role, merged)
    return tuple(merged.values())


def build_process(ctx: Ctx, call: Call) -> tuple[Invocation, tuple[EnvValue, ...]]:
    """The args and env of one process, each layer computed once (the env reads only ``call.role``)."""
    parts = _layers(ctx, call)
    return _args(ctx, parts), _env(ctx, call.role, parts)


def build_nodes(ctx: Ctx) -> tuple[Invocation, tuple[Invocation, ...], tuple[EnvValue, ...]]:
    """A multi-node deployment: the head's args, each follower's args, the env. Only the parallelism layer
    reads a node's place (``Call.node_role``, ``rank``): followers share the head's other layers."""
    parts = _layers(ctx, Call(node_role="head"))
    workers = tuple(_args(ctx, {**parts, "parallelism": LAYERS["parallelism"](ctx, Call(node_role="worker", rank=r))})
                    for r in follower_ranks(ctx.node_count))
    return _args(ctx, parts), workers, _env(ctx, None, parts)


def _pd_env(ctx: Ctx, role: str, merged: dict[str, EnvValue]) -> None:
    """§6 PD steps: NVL4-only variables off other hardware, the DEP rank rewrite of node addresses."""
    if not ctx.hw.read(_is_nvl4):
        for k in NVL4_ONLY_ENV:
            merged.pop(k, None)
    pd_role = pd_role_request(ctx, role)
    rank = pd_role.get("rank") if truthy(pd_role.get("rank")) else 0
    par = first_truthy(pd_role.get("parallelism"), get(get(ctx.so, role), "parallelism"),
                       get(ctx.strategy.get(role), "parallelism"), "tp")
    if is_number(rank) and rank > 0 and par == "dep":
        needle = f"${role.upper()}_NODE_1"
        repl = f"${role.upper()}_NODE_{int(rank) + 1 if float(rank).is_integer() else rank + 1}"
        for k, ev in list(merged.items()):
            if ev.value == needle:
                merged[k] = EnvValue(k, repl, Source("pd-rank-rewrite", "", (), f"rank {rank} of a DEP pool"),
                                     (*ev.shadowed, (ev.value, ev.source)))


def _is_nvl4(profile: Mapping[str, Any], hw_id: str) -> bool:
    return hw_id in NVL4_PROFILES


def _companions(ctx: Ctx) -> tuple[Companion, ...]:
    out: list[Companion] = []
    feats = ctx.features
    for f in ctx.sel.features:
        feat = feats.get(f)
        comp = get(feat, "companion")
        if is_map(feat) and truthy(get(comp, "command")) and is_feature_allowed_for_strategy(feat, ctx.strategy_name):
            out.append(Companion(f, js_str(first_truthy(comp.get("label"), f)), js_str(first_truthy(comp.get("description"), "")),
                                 js_str(comp["command"]).rstrip()))
    opt = ctx.kv_opt
    kv_comp = get(opt, "companion")
    if opt is not None and truthy(get(kv_comp, "command")):
        k = ctx.sel.kv_offload or ""
        desc_parts = [js_str(first_truthy(kv_comp.get("description"), ""))]
        if truthy(opt.get("install")):
            desc_parts.append("Requires: " + js_str(opt["install"]))
        out.append(Companion("kv_offload:" + k, js_str(first_truthy(kv_comp.get("label"), k)),
                             " ".join(p for p in desc_parts if p), js_str(kv_comp["command"]).rstrip()))
    return tuple(out)


def role_meta(ctx: Ctx, role: str) -> dict[str, Any]:
    """§8.3 ``roleMeta`` (deliberately *not* clamped to pool modes)."""
    g = ctx.gpu_count
    so_role = as_map(get(ctx.so, role))
    role_cfg = as_map(ctx.strategy.get(role))
    pd_role = pd_role_request(ctx, role)
    nodes = number_or(pd_role.get("nodes"), 1 if ctx.node_count > 1 else 0)
    par = first_truthy(pd_role.get("parallelism"), so_role.get("parallelism"), role_cfg.get("parallelism"), "tp")
    pool_gpus = js_floor_div(g, 2) if nodes == 0 else nodes * g
    if par == "dep":
        tp = first_truthy(so_role.get("tp"), role_cfg.get("tp"), 1)
        # ranks = the GPUs the pool owns (half the node when co-located): docs/decisions.md deviations
        dp_local = max(1, js_floor_div(pool_gpus if nodes == 0 else g, tp))
        dp_size = max(1, nodes) * dp_local
    else:
        tp, dp_local, dp_size = pool_gpus, 0, 1
    raw_rank = pd_role.get("rank")
    rank = raw_rank if truthy(raw_rank) and is_number(raw_rank) else 0
    current = max(0, min(max(1, nodes) - 1, rank))
    return {"nodes": nodes, "parallelism": par, "tp": tp, "dpLocal": dp_local, "dpSize": dp_size,
            "poolGpus": pool_gpus, "currentNode": current, "startRank": current * dp_local}


def _brand_install(raw: Any, profile: Mapping[str, Any], hw_id: str) -> Any:
    if is_map(raw):
        brand = profile.get("brand")
        if brand == "AMD":
            return raw.get("amd")
        if brand == "NVIDIA":
            return raw.get("nvidia")
        return None
    return raw if truthy(raw) else None


def _endpoints(meta: dict[str, Any]) -> int:
    """How many endpoints a PD pool exposes to its router: one per node of a DEP pool, else one."""
    return int(max(1, first_truthy(meta["nodes"], 1))) if meta["parallelism"] == "dep" else 1


def _pd_router(ctx: Ctx, pm: dict[str, Any], dm: dict[str, Any]) -> RouterPlan:
    policy = first_truthy(get(ctx.strategy.get("router"), "policy"), "round_robin")
    intra = first_present(get(get(ctx.so, "router"), "intra_node_data_parallel_size"), None)
    if intra is None:
        intra = max(first_truthy(pm["dpLocal"], 0), first_truthy(dm["dpLocal"], 0), 1)
    lines = ["--vllm-pd-disaggregation"]
    lines += [f"--prefill http://$PREFILL_NODE_{i}:8001" for i in range(1, _endpoints(pm) + 1)]
    lines += [f"--decode http://$DECODE_NODE_{i}:8002" for i in range(1, _endpoints(dm) + 1)]
    lines += ["--host $ROUTER_HOST", "--port $ROUTER_PORT", f"--intra-node-data-parallel-size {js_str(intra)}"]
    return RouterPlan((f"vllm-router --policy {js_str(policy)}", *lines))


def _alt_router(ctx: Ctx) -> tuple[str, Mapping[str, Any]] | None:
    """The selected non-default PD router (extensions §2.6), when the recipe offers it."""
    rid = ctx.sel.pd_router
    routers = as_map(ctx.strategy.get("routers"))
    spec = routers.get(rid) if rid else None
    if not is_map(spec) or spec.get("default") is True:
        return None
    need = spec.get("requires_model_key")
    if not isinstance(need, str) or not is_map(get(ctx.recipe.get("model"), need)):
        return None
    return rid, spec  # type: ignore[return-value]


def _grpc_pool(ctx: Ctx, rp: PdRolePlan, rid: str, spec: Mapping[str, Any]) -> PdRolePlan:
    """Pools run vLLM's gRPC entrypoint; parsing flags move to the gateway."""
    pool = as_map(spec.get("pool"))
    src = Source("router", ctx.strategy_file, ("routers", rid, "pool", "serve_args"))
    lead = tuple(Arg(t, src, i) for i, t in enumerate(pool.get("serve_args") or ()) if isinstance(t, str))
    drop = tuple(t for t in (pool.get("remove_args") or ()) if isinstance(t, str))
    serve = Invocation(rp.serve.model_id, lead + rp.serve.args, rp.serve.binary, drop)
    return PdRolePlan(rp.role, serve, rp.env, rp.meta)


def _gateway_router(ctx: Ctx, rid: str, spec: Mapping[str, Any], pm: dict[str, Any],
                    dm: dict[str, Any]) -> RouterPlan:
    gw = as_map(spec.get("gateway"))
    parsers = as_map(get(ctx.recipe.get("model"), spec.get("requires_model_key")))
    lines: list[str] = []
    mode = [t for t in (gw.get("mode_args") or ()) if isinstance(t, str)]
    if mode:
        lines.append(" ".join(mode))
    for role, meta in (("prefill", pm), ("decode", dm)):
        flag, tmpl = gw.get(f"{role}_flag"), gw.get(f"{role}_endpoint")
        if isinstance(flag, str) and isinstance(tmpl, str):
            lines += [f"{flag} {tmpl.replace('{i}', str(i))}" for i in range(1, _endpoints(meta) + 1)]
    for key, flag in as_map(gw.get("parser_flags")).items():
        if truthy(parsers.get(key)):
            lines.append(f"{flag} {js_str(parsers[key])}")
    hp = [t for t in (gw.get("host_port_args") or ()) if isinstance(t, str)]
    lines += [" ".join(hp[i:i + 2]) for i in range(0, len(hp), 2)]
    return RouterPlan((js_str(spec.get("command") or rid), *lines),
                      install=js_str(first_truthy(spec.get("install"), "")), kind=rid)


def _mooncake_parts(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any] | None, Any, str, Any]:
    """Master, store, vLLM config template, its note and the install line of the Mooncake deployment."""
    kv = as_map(ctx.kv_store)
    mm = as_map(kv.get("mooncake_master"))
    master = {"command": first_truthy(mm.get("command"), "mooncake_master"),
              "description": first_truthy(mm.get("description"), "")}
    sc = kv.get("mooncake_store_config")
    store = None
    if truthy(sc):
        sc = as_map(sc)
        store = {"command": sc.get("command"), "description": first_truthy(sc.get("description"), ""),
                 "config": first_truthy(sc.get("config"), None), "note": first_truthy(sc.get("note"), "")}
    cfg = as_map(kv.get("mooncake_vllm_config"))
    config = first_truthy(cfg.get("template"), {})
    note = first_truthy(cfg.get("note"), "")
    install = ctx.hw.read(_brand_install, get(kv.get("vllm"), "install"))
    return master, store, config, note, install


def resolve_plan(ctx: Ctx) -> Plan:
    """Branch on the deploy shape (§8): PD -> Mooncake -> multi-node -> single."""
    if ctx.is_pd:
        metas = {role: role_meta(ctx, role) for role in ("prefill", "decode")}
        router = _pd_router(ctx, metas["prefill"], metas["decode"])
        roles = {role: PdRolePlan(role, *build_process(ctx, Call(role=role)), metas[role])
                 for role in ("prefill", "decode")}
        mooncake = None
        if ctx.kv_store is not None and truthy(ctx.kv_store.get("pd")):
            master, store, config, note, install = _mooncake_parts(ctx)
            mooncake = MooncakeBlock(master, store, config, note, install)
        router_cfg = ctx.strategy.get("router") if truthy(ctx.strategy.get("router")) else {"policy": "round_robin"}
        smg = _alt_router(ctx)
        if smg is not None:
            rid, spec = smg
            roles = {k: _grpc_pool(ctx, rp, rid, spec) for k, rp in roles.items()}
            router = _gateway_router(ctx, rid, spec, metas["prefill"], metas["decode"])
        return PdPlan(ctx.node_count, roles["prefill"], roles["decode"], router, router_cfg, mooncake)
    if ctx.kv_composing:
        kv = as_map(ctx.kv_store)
        if ctx.is_multi:
            head, workers, env = build_nodes(ctx)
        else:
            (head, env), workers = build_process(ctx, Call()), ()
        master, store, config, note, install = _mooncake_parts(ctx)
        kv_router: RouterPlan | None = None
        if ctx.kv_instance_count > 1:
            rc = as_map(kv.get("router"))
            policy = first_truthy(rc.get("policy"), "cache_aware")
            port = first_truthy(get(kv.get("vllm"), "port"), 8000)
            lines = [f"--backend-url http://$VLLM_INSTANCE_{i}:{js_str(port)}"
                     for i in range(1, ctx.kv_instance_count + 1)]
            lines += ["--host $ROUTER_HOST", "--port $ROUTER_PORT", "--cache-threshold 0.5",
                      "--balance-abs-threshold 4", "--balance-rel-threshold 1.1"]
            kv_router = RouterPlan((f"vllm-router --policy {js_str(policy)}", *lines),
                                   install=first_truthy(rc.get("install"), "uv pip install vllm-router"),
                                   port=first_truthy(rc.get("port"), 30080))
        return KvStorePlan(ctx.strategy_name, ctx.node_count, ctx.kv_instance_count, ctx.kv_current, master, store,
                           head, workers, ctx.is_multi, env, install, kv_router, config, note)
    if ctx.is_multi:
        return MultiNodePlan(ctx.node_count, *build_nodes(ctx))
    return SinglePlan(ctx.deploy_type, *build_process(ctx, Call()), _companions(ctx))


def resolve(catalog: Catalog, recipe: Recipe, sel: Selection, hw: Hardware | None = None) -> tuple[Ctx, Plan]:
    """Resolve one selection of ``recipe`` into a plan (pure; never touches I/O); ``hw``: its hardware, when given."""
    ctx = build_context(catalog, recipe.data, recipe.rel_path, sel, hw)
    return ctx, resolve_plan(ctx)
