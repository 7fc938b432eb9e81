"""``resolveCommand``: a complete :class:`Selection` -> a :class:`Plan` (synthesis.md §5-§8)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.memo import SELECTIONS, remember, remember_answer, selection_cache
from vllm_recipes.jsvalues import (
    as_map,
    first_present,
    first_truthy,
    get,
    is_map,
    is_number,
    js_floor_div,
    js_str,
    truthy,
)
from vllm_recipes.select.gates import follower_ranks, is_feature_allowed_for_strategy
from vllm_recipes.select.selection import Selection

from .context import Ctx, build_context, profile_facts, shape_of
from .layers import (
    ARG_ORDER,
    ENV_ORDER,
    LAYERS,
    Call,
    Contribution,
    layer_advanced,
    layer_features,
    layer_parallelism,
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


#: What each memoized layer reads, as its memo key: a layer's contribution (args, env and
#: their provenance) is computed once per distinct key and shared by every selection with
#: that key. ``hw_class`` stands for the hardware (see :func:`~.context.hardware_class`).
LAYER_KEYS: dict[str, Callable[[Ctx, Call], tuple[Any, ...]]] = {
    "base": lambda ctx, call: (ctx.recipe_file,),
    "frontend": lambda ctx, call: (ctx.frontend,),
    "variant": lambda ctx, call: (ctx.recipe_file, ctx.variant_data_key),
    "variant-hardware": lambda ctx, call: (ctx.recipe_file, ctx.variant_data_key,
                                           ctx.hw_id if is_map(ctx.variant_exact_ho) else None),
    "strategy": lambda ctx, call: (ctx.strategy_name, call.role),
    "strategy-override": lambda ctx, call: (ctx.recipe_file, ctx.strategy_name, call.role),
    "hardware-overrides": lambda ctx, call: _hardware_overrides_key(ctx, call),
    "kv-option": lambda ctx, call: (ctx.sel.kv_offload if ctx.kv_opt is not None else None,),
    "mooncake": lambda ctx, call: (ctx.sel.kv_offload if ctx.kv_store is not None else None, ctx.kv_composing,
                                   ctx.is_pd, call.role),
}


def _hardware_overrides_key(ctx: Ctx, call: Call) -> tuple[Any, ...]:
    """What ``layer_hardware_overrides`` reads, finer than the hardware class.

    The layer looks the profile up by generation and brand in the strategy
    override's, the recipe's and the variant's ``hardware_overrides``, and by id only
    in the strategy override's (and its role's) maps: the id matters only when one of
    those names it. The strategy (and role) appear in its tokens' sources only when
    the strategy override has such maps, the variant only when it has its own.
    """
    so = ctx.so
    so_ho = so.get("hardware_overrides") if so is not None else None
    role_ho = get(so.get(call.role), "hardware_overrides") if so is not None and call.role else None
    hw_id = ctx.hw_id
    by_id = (is_map(so_ho) and hw_id in so_ho) or (is_map(role_ho) and hw_id in role_ho)
    by_strategy = is_map(so_ho) or is_map(role_ho)
    return (ctx.recipe_file, ctx.variant_data_key if is_map(ctx.variant.get("hardware_overrides")) else None,
            hw_id if by_id else profile_facts(ctx.catalog, hw_id)[3],
            (ctx.strategy_name, call.role if is_map(role_ho) else None) if by_strategy else None)


def _layer(ctx: Ctx, name: str, call: Call) -> Contribution:
    """One layer's contribution, memoized by :data:`LAYER_KEYS` (computed layers run every time)."""
    keyf = LAYER_KEYS.get(name)
    if keyf is None:
        return LAYERS[name](ctx, call)
    key = ("layer", name, *keyf(ctx, call))
    memo = ctx.catalog.memo
    hit = memo.get(key)
    if hit is None:
        hit = remember(memo, key, LAYERS[name](ctx, call))
    return hit  # type: ignore[no-any-return]


def _feature_args(ctx: Ctx, call: Call) -> tuple[Arg, ...]:
    """The features layer, memoized by what it reads (features and modes as selected).

    The strategy is read only through each feature's ``strategies`` allowlist, so the
    key holds the features the strategy lets through instead: strategies that admit
    the same features share the entry. In front of that, the shape's memo answers by
    the selection's own feature list (the strategy is the shape's).
    """
    sel = ctx.sel
    if not sel.features:
        return ()
    compiled = shape_of(ctx)
    local = ("features", ctx.features_hw_class, sel.features, sel.feature_modes)
    hit = compiled.memo.get(local)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    feats, strategy = ctx.features, ctx.strategy_name
    admitted = tuple(f for f in sel.features if is_feature_allowed_for_strategy(feats.get(f), strategy))
    key = (ctx.recipe_file, "features", sel.variant_key, ctx.variant_data_key, ctx.features_hw_class, admitted,
           sel.feature_modes, ctx.kv_composing)
    memo = ctx.catalog.memo
    hit = memo.get(key)
    if hit is None:
        hit = remember(memo, key, tuple(layer_features(ctx, call).args))
    return compiled.keep(local, hit)  # type: ignore[no-any-return]


def feature_tokens(ctx: Ctx) -> tuple[Arg, ...]:
    """The features layer's tokens of a context's selection, as :func:`build_args` places them (memoized: the
    same token objects as in the resolved plan)."""
    return _feature_args(ctx, ROLE_CALLS[None])


#: The layers around ``parallelism`` whose arguments never depend on the selection beyond
#: (recipe, variant data, hardware class, strategy, role): compiled into cached tuples.
STATIC_HEAD = ARG_ORDER[:ARG_ORDER.index("parallelism")]
STATIC_TAIL = ("strategy-override", "hardware-overrides")
assert ARG_ORDER[len(STATIC_HEAD) + 1:len(STATIC_HEAD) + 3] == STATIC_TAIL
DYNAMIC_TAIL = ARG_ORDER[len(STATIC_HEAD) + 3:]
#: the layers after ``features``, as static as the head and tail (KV option, Mooncake)
STATIC_END = DYNAMIC_TAIL[DYNAMIC_TAIL.index("features") + 1:]
assert ("advanced", "features", *STATIC_END) == DYNAMIC_TAIL


#: the memoized layers that read the hardware (through its class); the others are looked up
#: once per shape and role (their :data:`LAYER_KEYS` hold no hardware)
HARDWARE_LAYERS = ("variant-hardware", "hardware-overrides", "kv-option")


def _class_parts(ctx: Ctx, call: Call) -> tuple[tuple[tuple[Arg, ...], tuple[Arg, ...], tuple[Arg, ...]],
                                                dict[str, Contribution]]:
    """The static tokens before and after the parallelism layer and after the features, plus
    every memoized layer's contribution (the env merges them): one lookup per selection in
    its shape's memo, assembled on a miss from the per-layer memo.

    Keyed by role and hardware *class*: every memoized layer keys its own memo by
    ``ctx.hw_class`` or by less (see :data:`LAYER_KEYS`; the KV option reads the brand,
    part of the class), so profiles of one class share the entry.
    """
    key = ("class-parts", ctx.hw_class, call.role)
    compiled = shape_of(ctx)
    memo = compiled.memo
    hit = memo.get(key)
    if hit is None:
        # the layers before the KV option and Mooncake read no KV choice: shared by the shapes of every KV
        # choice (and kept in the catalog memo by what their keys read: recipe, variant, strategy,
        # frontend, hardware class and role)
        common_key = (ctx.recipe_file, "class-parts-common", ctx.variant_data_key, ctx.strategy_name, ctx.frontend,
                      ctx.hw_class, call.role)
        catalog_memo = ctx.catalog.memo
        common = catalog_memo.get(common_key)
        if common is None:
            common_parts = {n: _layer(ctx, n, call) for n in LAYER_KEYS if n not in STATIC_END}
            common = remember(catalog_memo, common_key, (
                common_parts, tuple(tuple(chain.from_iterable(common_parts[n].args for n in names))
                                    for names in (STATIC_HEAD, STATIC_TAIL))))
        common_parts, (head, tail) = common
        parts = {**common_parts, **{n: _layer(ctx, n, call) for n in STATIC_END}}
        end = tuple(chain.from_iterable(parts[n].args for n in STATIC_END))
        hit = compiled.keep(key, ((head, tail, end), parts))
    return hit  # type: ignore[no-any-return]


def _parallelism_args(ctx: Ctx, call: Call) -> tuple[Arg, ...]:
    """The parallelism layer's tokens, memoized by everything it reads.

    Of the recipe the layer reads the strategy's override and its PD pool modes; of the
    catalog the strategy; of the selection the call, the node count, the GPU count and
    single-node TP size, the master address (from the instance counts), the PD pool
    request and, for a multi-node DEP override, the hardware class. Variants, frontends
    and KV options that leave those alike share the entry.
    """
    sel = ctx.sel
    key = (ctx.recipe_file, "parallelism", sel.strategy, call.role, call.node_role, call.rank, sel.node_count,
           repr(ctx.gpu_count), repr(ctx.single_node_tp), ctx.mp_master_addr, ctx.hw_class if ctx.is_multi else None,
           repr(sel.pd_nodes) if ctx.is_pd else None)
    memo = ctx.catalog.memo
    hit = memo.get(key)
    if hit is None:
        hit = remember(memo, key, tuple(layer_parallelism(ctx, call).args))
    return hit  # type: ignore[no-any-return]


#: the calls of single-process and PD plans (made once: a frozen dataclass costs its ``__setattr__`` calls)
ROLE_CALLS: dict[str | None, Call] = {None: Call(), "prefill": Call(role="prefill"), "decode": Call(role="decode")}


def build_args(ctx: Ctx, call: Call) -> Invocation:
    """§5.1: the raw argument tokens of one process, in :data:`ARG_ORDER`.

    ``ctx`` must come from :func:`~.context.build_context` (its shape's memo holds the pieces).
    """
    head, tail, end = _class_parts(ctx, call)[0]
    middle = _parallelism_args(ctx, call)
    if ctx.sel.advanced:
        tail = (*tail, *layer_advanced(ctx, call).args)
    return Invocation(ctx.model_id, head + middle + tail + _feature_args(ctx, call) + end)


def build_env(ctx: Ctx, role: str | None) -> tuple[EnvValue, ...]:
    """§6: ordered merge (Python ``dict.update`` semantics) with shadow tracking (memoized).

    The merge is memoized by the identities of the (memoized) layer contributions it
    merges, plus what the PD steps read; the entry keeps the contributions, checked on a hit.
    In front of that, one lookup per selection in its shape's memo keyed by the hardware
    *class*: the env layers key their contributions by ``ctx.hw_class`` or by less, the
    NVL4 profiles are always their own class, and the PD key carries the GPU count and
    pool request pinning reads.
    """
    sel = ctx.sel
    pd_key = None
    if ctx.is_pd and role:
        pd_key = (repr(ctx.gpu_count), repr(sel.pd_nodes), ctx.node_count > 1, ctx.hw_id in NVL4_PROFILES)
    compiled = shape_of(ctx)
    direct = ("env", ctx.hw_class, role, pd_key)
    hit = compiled.memo.get(direct)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    parts = _class_parts(ctx, ROLE_CALLS[role] if role in ROLE_CALLS else Call(role=role))[1]
    used = tuple(p for n in ENV_ORDER if n in parts and (p := parts[n]).env)
    key = ("env", role, pd_key, *map(id, used))
    memo = ctx.catalog.memo
    hit = memo.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], used, strict=True)):
        hit = remember(memo, key, (used, _build_env(ctx, role, parts)))
    return compiled.keep(direct, hit[1])  # type: ignore[no-any-return]


#: the env layers merged first that read nothing of the hardware nor of the call but its role:
#: their merge is kept per shape and role, and every env of the shape continues from a copy
ENV_PREFIX = ENV_ORDER[:3]
assert not set(ENV_PREFIX) & {*HARDWARE_LAYERS, "pd-pinning"}


def _merge_into(merged: dict[str, EnvValue], part: Contribution) -> None:
    """One layer's env over ``merged`` (``dict.update`` semantics, each replaced value kept as shadowed)."""
    get_old = merged.get
    for k, v, s in part.env_entries():
        old = get_old(k)
        merged[k] = EnvValue(k, v, s, (*old.shadowed, (old.value, old.source)) if old is not None else ())


def _build_env(ctx: Ctx, role: str | None, parts: Mapping[str, Contribution] | None = None) -> tuple[EnvValue, ...]:
    """The merge itself; ``parts``: the memoized layers' contributions, already looked up."""
    call = Call(role=role)
    prefix_key = ("env-prefix", role)
    compiled = shape_of(ctx)
    prefix = compiled.memo.get(prefix_key)
    if prefix is None:
        prefix = {}
        for name in ENV_PREFIX:
            part = parts.get(name) if parts is not None else None
            _merge_into(prefix, part if part is not None else _layer(ctx, name, call))
        compiled.keep(prefix_key, prefix)
    merged = dict(prefix)
    for name in ENV_ORDER[len(ENV_PREFIX):]:
        part = parts.get(name) if parts is not None else None
        _merge_into(merged, part if part is not None else _layer(ctx, name, call))
    if ctx.is_pd and role:
        if ctx.hw_id not in NVL4_PROFILES:
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
    return tuple(merged.values())


def _plan_companions(ctx: Ctx) -> tuple[Companion, ...]:
    """:func:`_companions`, memoized in the shape by the feature list and whether the KV option applies."""
    sel = ctx.sel
    if not sel.features and ctx.kv_opt is None:
        return ()
    return shape_of(ctx).recall(("companions", sel.features, ctx.kv_opt is not None), _companions, ctx)


def _companions(ctx: Ctx) -> tuple[Companion, ...]:
    out: list[Companion] = []
    feats = ctx.features
    for f in ctx.sel.features:
        feat = feats.get(f)
        comp = get(feat, "companion")
        if is_map(feat) and truthy(get(comp, "command")) and is_feature_allowed_for_strategy(feat, ctx.strategy_name):
            out.append(Companion(f, _str(first_truthy(comp.get("label"), f)), _str(first_truthy(comp.get("description"), "")),
                                 _str(comp["command"]).rstrip()))
    opt = ctx.kv_opt
    comp = get(opt, "companion") if opt is not None else None
    if opt is not None and truthy(get(comp, "command")):
        k = ctx.sel.kv_offload or ""
        desc_parts = [_str(first_truthy(comp.get("description"), ""))]
        if truthy(opt.get("install")):
            desc_parts.append("Requires: " + _str(opt["install"]))
        out.append(Companion("kv_offload:" + k, _str(first_truthy(comp.get("label"), k)),
                             " ".join(p for p in desc_parts if p), _str(comp["command"]).rstrip()))
    return tuple(out)


def _str(v: Any) -> str:
    return v if isinstance(v, str) else js_str(v)


def role_meta(ctx: Ctx, role: str) -> dict[str, Any]:
    """§8.3 ``roleMeta`` (deliberately *not* clamped to pool modes)."""
    g = ctx.gpu_count
    so_role = as_map(get(ctx.so, role))
    role_cfg = as_map(ctx.strategy.get(role))
    pd_role = pd_role_request(ctx, role)
    nodes = pd_role.get("nodes") if is_number(pd_role.get("nodes")) else (1 if ctx.node_count > 1 else 0)
    par = first_truthy(pd_role.get("parallelism"), so_role.get("parallelism"), role_cfg.get("parallelism"), "tp")
    pool_gpus = js_floor_div(g, 2) if nodes == 0 else nodes * g
    if par == "dep":
        tp = first_truthy(so_role.get("tp"), role_cfg.get("tp"), 1)
        # ranks = the GPUs the pool owns (half the node when co-located): docs/decisions.md deviations
        dp_local = max(1, js_floor_div(pool_gpus if nodes == 0 else g, tp))
        dp_size = max(1, nodes) * dp_local
    else:
        tp, dp_local, dp_size = pool_gpus, 0, 1
    rank = pd_role.get("rank") if truthy(pd_role.get("rank")) and is_number(pd_role.get("rank")) else 0
    current = max(0, min(max(1, nodes) - 1, rank))
    return {"nodes": nodes, "parallelism": par, "tp": tp, "dpLocal": dp_local, "dpSize": dp_size,
            "poolGpus": pool_gpus, "currentNode": current, "startRank": current * dp_local}


def _brand_install(raw: Any, profile: Mapping[str, Any]) -> Any:
    if is_map(raw):
        brand = profile.get("brand")
        if brand == "AMD":
            return raw.get("amd")
        if brand == "NVIDIA":
            return raw.get("nvidia")
        return None
    return raw if truthy(raw) else None


def _router_lines(first: str, flags: list[str]) -> tuple[str, ...]:
    return (first, *flags)


def _pd_router(ctx: Ctx, pm: dict[str, Any], dm: dict[str, Any]) -> RouterPlan:
    policy = first_truthy(get(ctx.strategy.get("router"), "policy"), "round_robin")

    def ep_count(meta: dict[str, Any]) -> int:
        if meta["parallelism"] == "dep":
            return max(1, first_truthy(meta["nodes"], 1))
        return 1

    intra = first_present(get(get(ctx.so, "router"), "intra_node_data_parallel_size"), None)
    if intra is None:
        intra = max(first_truthy(pm["dpLocal"], 0), first_truthy(dm["dpLocal"], 0), 1)
    lines = ["--vllm-pd-disaggregation"]
    lines += [f"--prefill http://$PREFILL_NODE_{i}:8001" for i in range(1, int(ep_count(pm)) + 1)]
    lines += [f"--decode http://$DECODE_NODE_{i}:8002" for i in range(1, int(ep_count(dm)) + 1)]
    lines += ["--host $ROUTER_HOST", "--port $ROUTER_PORT", f"--intra-node-data-parallel-size {js_str(intra)}"]
    return RouterPlan(_router_lines(f"vllm-router --policy {_str(policy)}", lines))


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

    def eps(meta: dict[str, Any]) -> int:
        return int(max(1, first_truthy(meta["nodes"], 1))) if meta["parallelism"] == "dep" else 1

    lines: list[str] = []
    mode = [t for t in (gw.get("mode_args") or ()) if isinstance(t, str)]
    if mode:
        lines.append(" ".join(mode))
    for role, meta in (("prefill", pm), ("decode", dm)):
        flag, tmpl = gw.get(f"{role}_flag"), gw.get(f"{role}_endpoint")
        if isinstance(flag, str) and isinstance(tmpl, str):
            lines += [f"{flag} {tmpl.replace('{i}', str(i))}" for i in range(1, eps(meta) + 1)]
    for key, flag in as_map(gw.get("parser_flags")).items():
        if truthy(parsers.get(key)):
            lines.append(f"{flag} {_str(parsers[key])}")
    hp = [t for t in (gw.get("host_port_args") or ()) if isinstance(t, str)]
    lines += [" ".join(hp[i:i + 2]) for i in range(0, len(hp), 2)]
    return RouterPlan((_str(spec.get("command") or rid), *lines),
                      install=_str(first_truthy(spec.get("install"), "")), kind=rid)


def _pd_pools(ctx: Ctx) -> tuple[dict[str, dict[str, Any]], RouterPlan]:
    """Both pools' ``roleMeta`` and the vllm-router, memoized in the shape by what they read
    (the GPU count, the pool requests and the node count; the rest is the shape's)."""
    return shape_of(ctx).recall(("pd-pools", repr(ctx.gpu_count), repr(ctx.sel.pd_nodes), ctx.node_count),
                                _pd_pools_of, ctx)


def _pd_pools_of(ctx: Ctx) -> tuple[dict[str, dict[str, Any]], RouterPlan]:
    """Both pools' ``roleMeta`` and the router that joins them (what :func:`_pd_pools` remembers)."""
    metas = {role: role_meta(ctx, role) for role in ("prefill", "decode")}
    return metas, _pd_router(ctx, metas["prefill"], metas["decode"])


def _mooncake_parts(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any] | None, Any, str, Any]:
    """:func:`_mooncake_blocks`, memoized in the shape by the brand (the install reads it; the rest is the shape's)."""
    return shape_of(ctx).recall(("mooncake-parts", repr(ctx.profile.get("brand"))), _mooncake_blocks, ctx)


def _mooncake_blocks(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any] | None, Any, str, Any]:
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
    install = _brand_install(get(kv.get("vllm"), "install"), ctx.profile)
    return master, store, config, note, install


def resolve_plan(ctx: Ctx) -> Plan:
    """Branch on the deploy shape (§8): PD -> Mooncake -> multi-node -> single."""
    if ctx.is_pd:
        metas, router = _pd_pools(ctx)
        roles = {role: PdRolePlan(role, build_args(ctx, ROLE_CALLS[role]), build_env(ctx, role), metas[role])
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
        multi = ctx.strategy.get("deploy_type") == "multi_node" and ctx.node_count > 1
        head = build_args(ctx, Call(node_role="head" if multi else None))
        workers = tuple(build_args(ctx, Call(node_role="worker", rank=r)) for r in follower_ranks(ctx.node_count)) \
            if multi else ()
        master, store, config, note, install = _mooncake_parts(ctx)
        router = None
        if ctx.kv_instance_count > 1:
            rc = as_map(kv.get("router"))
            policy = first_truthy(rc.get("policy"), "cache_aware")
            port = first_truthy(get(kv.get("vllm"), "port"), 8000)
            lines = [f"--backend-url http://$VLLM_INSTANCE_{i}:{_str(port)}"
                     for i in range(1, ctx.kv_instance_count + 1)]
            lines += ["--host $ROUTER_HOST", "--port $ROUTER_PORT", "--cache-threshold 0.5",
                      "--balance-abs-threshold 4", "--balance-rel-threshold 1.1"]
            router = RouterPlan(_router_lines(f"vllm-router --policy {_str(policy)}", lines),
                                install=first_truthy(rc.get("install"), "uv pip install vllm-router"),
                                port=first_truthy(rc.get("port"), 30080))
        return KvStorePlan(ctx.strategy_name, ctx.node_count, ctx.kv_instance_count, ctx.kv_current, master, store,
                           head, workers, multi, build_env(ctx, None), install, router, config, note)
    if ctx.is_multi:
        head = build_args(ctx, Call(node_role="head"))
        workers = tuple(build_args(ctx, Call(node_role="worker", rank=r)) for r in follower_ranks(ctx.node_count))
        return MultiNodePlan(ctx.node_count, head, workers, build_env(ctx, None))
    return SinglePlan(ctx.deploy_type, build_args(ctx, ROLE_CALLS[None]), build_env(ctx, None), _plan_companions(ctx))


def resolve(catalog: Catalog, recipe: Recipe, sel: Selection) -> tuple[Ctx, Plan]:
    """Resolve one selection of ``recipe`` into a plan (pure; never touches I/O).

    A selection resolved before is answered from the catalog's bounded memo (the
    website resolves the same few selections over and over); plans are immutable.
    """
    memo = catalog.memo
    cache = memo.get(SELECTIONS)  # (inlined selection_cache: this is the website's hot path)
    if cache is None:
        cache = selection_cache(memo)
    data = recipe.doc.data
    try:
        key: tuple[Any, ...] | None = ("resolve", recipe.rel_path, sel)
        hit = cache.get(key)
    except TypeError:  # a PD pool or KV request given as a dict: not hashable, not cached
        key = hit = None
    if hit is not None and hit[0] is data:
        return hit[1]  # type: ignore[no-any-return]
    ctx = build_context(catalog, recipe.data, recipe.rel_path, sel)
    out = (ctx, resolve_plan(ctx))
    if key is not None:
        remember_answer(cache, key, (data, out))
    return out
