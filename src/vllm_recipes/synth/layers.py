"""Argument and environment layers, as data (synthesis.md §5-§6, extensions §2.1/§2.3).

Each layer is written once as a function returning both the argument tokens and
the env maps it contributes for one call ``(role, node_role, rank)``. Arguments
are assembled in :data:`ARG_ORDER`, environment in :data:`ENV_ORDER` (docs/reference/synthesis.md
orders the two differently: KV and PD pinning env come before strategy
overrides, their args after features). Provenance falls out of the loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_recipes.jsvalues import (
    as_list,
    as_map,
    first_present,
    first_truthy,
    get,
    is_map,
    is_number,
    js_floor_div,
    js_number,
    js_str,
    number_or,
    truthy,
)
from vllm_recipes.select.gates import (
    is_feature_allowed_for_strategy,
    pd_pool_modes,
    resolve_mode_key,
)
from vllm_recipes.select.selection import FeatureModes, mode_for

from .context import Ctx
from .plan import Arg, Source

EnvFragment = tuple[Mapping[str, Any], Source]


@dataclass(frozen=True, slots=True)
class Call:
    """Which process an argument list is for (``buildArgs(role, nodeRole, nodeRank)``). Only the parallelism
    layer reads ``node_role`` and ``rank``: a multi-node deployment's followers share the head's other layers."""

    role: str | None = None
    node_role: str | None = None
    rank: int = 1

    @property
    def mp_rank(self) -> int:
        return max(1, self.rank) if self.node_role == "worker" else 0


@dataclass(slots=True)
class Contribution:
    args: list[Arg] = field(default_factory=list)
    env: list[EnvFragment] = field(default_factory=list)

    def add_args(self, tokens: Any, source: Source) -> None:
        """Append ``tokens`` if it is a list (JS: only if truthy). ``"--max-model-len auto"`` (a flag and its
        value in one item, as some recipes write it) becomes the two argv items vLLM parses, so the command text,
        its argv and every deploy target run the same thing and the dedupe sees the flag; any other token
        (``--x=1``, ``--x a b``, a value) is kept whole."""
        if isinstance(tokens, tuple):  # (catalog data: the same tuple gives the same arguments, made once)
            key = (id(tokens), source)
            got = _ARGS.get(key)
            if got is None:  # (an entry keeps its tuple alive: no other object has that id meanwhile)
                if len(_ARGS) >= 4096:
                    _ARGS.clear()
                got = _ARGS[key] = (tokens, _args_of(tokens, source))
            self.args += got[1]
        elif isinstance(tokens, list):
            self.args += _args_of(tokens, source)

    def add_recipe_args(self, ctx: Ctx, tokens: Any, layer: str, *path: str | int) -> None:
        """:meth:`add_args` of a list at ``path`` in the selected recipe."""
        if isinstance(tokens, list | tuple):
            self.add_args(tokens, Source(layer, ctx.recipe_file, path))

    def add_recipe_extras(self, ctx: Ctx, block: Any, layer: str, *path: str | int) -> None:
        """The ``extra_args`` and ``extra_env`` of the block at ``path`` in the selected recipe."""
        self.add_recipe_args(ctx, get(block, "extra_args"), layer, *path, "extra_args")
        self.add_recipe_env(ctx, get(block, "extra_env"), layer, *path, "extra_env")

    def add_computed(self, layer: str, note: str, *tokens: Any) -> None:
        src = Source(layer, "", (), note)
        self.args += [Arg(t if isinstance(t, str) else js_str(t), src) for t in tokens]

    def add_env(self, m: Any, source: Source) -> None:
        if is_map(m):
            self.env.append((m, source))

    def add_recipe_env(self, ctx: Ctx, m: Any, layer: str, *path: str | int) -> None:
        """:meth:`add_env` of a map at ``path`` in the selected recipe."""
        if is_map(m):
            self.env.append((m, Source(layer, ctx.recipe_file, path)))


#: :func:`_args_of` by the identity of its tuple (kept alive here) and the source
_ARGS: dict[tuple[int, Source], tuple[tuple[Any, ...], tuple[Arg, ...]]] = {}


def _args_of(tokens: tuple[Any, ...] | list[Any], source: Source) -> tuple[Arg, ...]:
    out: list[Arg] = []
    append = out.append
    for i, t in enumerate(tokens):
        if not isinstance(t, str):
            t = js_str(t) if truthy(t) else ""
        if t.startswith("--") and len(parts := t.split()) == 2 and "=" not in parts[0]:
            append(Arg(parts[0], source, i))
            append(Arg(parts[1], source, i))
        else:
            append(Arg(t, source, i))
    return tuple(out)


# --- layers ----------------------------------------------------------------

def layer_base(ctx: Ctx, call: Call) -> Contribution:
    c = Contribution()
    model = as_map(ctx.recipe.get("model"))
    c.add_recipe_args(ctx, model.get("base_args"), "base", "model", "base_args")
    c.add_recipe_env(ctx, model.get("base_env"), "base", "model", "base_env")
    return c


def layer_frontend(ctx: Ctx, call: Call) -> Contribution:
    """extensions §2.1: the selected frontend's env, right after ``base_env``."""
    c = Contribution()
    c.add_env(ctx.frontend_env, Source("frontend", ctx.catalog.taxonomy_file, ("frontends", ctx.frontend, "env")))
    return c


def layer_variant(ctx: Ctx, call: Call) -> Contribution:
    c = Contribution()
    c.add_recipe_extras(ctx, ctx.variant, "variant", "variants", ctx.variant_data_key)
    return c


def layer_variant_hardware(ctx: Ctx, call: Call) -> Contribution:
    c = Contribution()
    ho = ctx.hw.exact(ctx.variant.get("hardware_overrides"))
    if is_map(ho):
        c.add_recipe_extras(ctx, ho, "variant-hardware", "variants", ctx.variant_data_key,
                            "hardware_overrides", ctx.hw_id)
    return c


def layer_strategy(ctx: Ctx, call: Call) -> Contribution:
    c = Contribution()
    s, f = ctx.strategy, ctx.strategy_file
    if not ctx.is_pd:
        c.add_args(s.get("vllm_args"), Source("strategy", f, ("vllm_args",)))
        c.add_env(s.get("env"), Source("strategy", f, ("env",)))
    elif call.role:
        role_cfg = as_map(s.get(call.role))
        c.add_args(role_cfg.get("vllm_args"), Source("strategy-role", f, (call.role, "vllm_args")))
        c.add_env(role_cfg.get("env"), Source("strategy-role", f, (call.role, "env")))
    return c


def pd_role_request(ctx: Ctx, role: str) -> Mapping[str, Any]:
    """The user's pool request for ``role``: ``{nodes?, rank?, parallelism?}`` (a bare count -> nodes)."""
    raw = get(ctx.sel.pd_nodes, role) if is_map(ctx.sel.pd_nodes) else None
    if is_number(raw):
        return {"nodes": raw}
    return raw if is_map(raw) else {}


def layer_parallelism(ctx: Ctx, call: Call) -> Contribution:
    """§5.2: exactly one parallel layout per call."""
    c = Contribution()
    if ctx.is_pd:
        if call.role:
            _pd_parallel(ctx, call.role, c)
        return c
    if not ctx.is_multi:
        note = "single node" + (" (TP size resolved from the recipe / VRAM fit)"
                                if ctx.strategy_name == "single_node_tp" else f": {ctx.gpu_count} GPUs")
        c.add_computed("parallelism", note, ctx.parallel_flag, ctx.single_node_tp)
        return c
    n, g, mp, addr = ctx.node_count, ctx.gpu_count, call.mp_rank, ctx.mp_master_addr
    parallelism = ctx.strategy.get("parallelism")
    if ctx.parallel_flag == "--data-parallel-size":
        dp_local_rank: Any = g
        so = as_map(ctx.so)
        dep_ov: list[Any] = [*as_list(so.get("vllm_args")), *as_list(so.get("extra_args"))]
        hit = ctx.hw.gen_or_nvidia(so.get("hardware_overrides"))
        if hit:
            dep_ov += as_list(get(hit[1], "extra_args"))
        dep_ov += as_list(get(ctx.hw.exact(so.get("hardware_overrides")), "extra_args"))
        for i in range(len(dep_ov) - 1, -1, -1):
            if dep_ov[i] == "--data-parallel-size-local":
                dp_local_rank = js_number(dep_ov[i + 1] if i + 1 < len(dep_ov) else None)
                break
        note = f"multi-node DEP: {g} GPUs x {n} nodes"
        c.add_computed("parallelism", note, "--data-parallel-size", ctx.total_gpus,
                       "--data-parallel-size-local", g, "--data-parallel-address", addr)
        if call.node_role == "worker":
            c.add_computed("parallelism", note, "--data-parallel-start-rank", _mul(mp, dp_local_rank))
    elif parallelism == "tp_pp":
        note = f"multi-node TPxPP: TP {g} per node, PP {n}"
        c.add_computed("parallelism", note, "--tensor-parallel-size", g, "--pipeline-parallel-size", n,
                       "--nnodes", n, "--node-rank", mp, "--master-addr", addr)
        if mp > 0:
            c.add_computed("parallelism", note, "--headless")
    elif parallelism == "tp_dp":
        note = f"multi-node TPxDP: TP {g} per node, DP {n}"
        c.add_computed("parallelism", note, "--tensor-parallel-size", g, "--data-parallel-size", n,
                       "--data-parallel-size-local", 1, "--data-parallel-address", addr)
        if call.node_role == "worker":
            c.add_computed("parallelism", note, "--data-parallel-start-rank", mp)
    else:
        note = f"multi-node TP: {g} GPUs x {n} nodes"
        c.add_computed("parallelism", note, "--tensor-parallel-size", ctx.total_gpus, "--nnodes", n,
                       "--node-rank", mp, "--master-addr", addr)
        if mp > 0:
            c.add_computed("parallelism", note, "--headless")
    return c


def _mul(a: Any, b: Any) -> Any:
    try:
        r = a * b
    except TypeError:
        return math.nan
    return r


def _pd_parallel(ctx: Ctx, role: str, c: Contribution) -> None:
    """§5.2(e): one PD pool's parallel flags."""
    up = role.upper()
    g = ctx.gpu_count
    role_cfg = as_map(ctx.strategy.get(role))
    so_role = as_map(get(ctx.so, role))
    pd_role = pd_role_request(ctx, role)
    rpn = number_or(pd_role.get("nodes"), 1 if ctx.is_pd_multi else 0)
    pool_gpus = js_floor_div(g, 2) if rpn == 0 else rpn * g
    par = first_truthy(pd_role.get("parallelism"), so_role.get("parallelism"), role_cfg.get("parallelism"), "tp")
    modes = pd_pool_modes(ctx.recipe)
    if par not in modes:
        par = modes[0]
    note = f"PD {role} pool ({par})"
    rank = first_present(pd_role.get("rank"), 0)
    rank = rank if is_number(rank) else 0
    if par == "dep":
        nodes_in_pool = max(1, rpn)
        so_tp = so_role.get("tp")
        role_tp = first_present(so_tp, role_cfg.get("tp"), 1)
        # ranks = GPUs the pool owns: a co-located pool (rpn 0) has half the node (the pinning layer's half)
        dp_local = max(1, js_floor_div(pool_gpus if rpn == 0 else g, role_tp))
        dp_size = nodes_in_pool * dp_local
        node_idx = max(0, min(nodes_in_pool - 1, rank))
        if so_tp is not None or "tp" in role_cfg:
            c.add_computed("parallelism", note, "--tensor-parallel-size", role_tp)
        c.add_computed("parallelism", note, "--data-parallel-size", dp_size, "--data-parallel-size-local", dp_local,
                       "--data-parallel-start-rank", _mul(node_idx, dp_local),
                       "--data-parallel-address", f"${up}_NODE_1", "--data-parallel-rpc-port", f"${up}_DP_RPC_PORT")
        if nodes_in_pool > 1:
            c.add_computed("parallelism", note, "--data-parallel-hybrid-lb")
        c.add_computed("parallelism", note, "--enable-expert-parallel")
    else:
        flag = first_truthy(so_role.get("parallel_flag"), role_cfg.get("parallel_flag"),
                            ctx.strategy.get("parallel_flag"), "--tensor-parallel-size")
        c.add_computed("parallelism", note, flag, max(1, pool_gpus))
        if par == "tep":
            c.add_computed("parallelism", note, "--enable-expert-parallel")
        if rpn > 1:
            raw_rank = pd_role.get("rank")
            idx = max(0, min(rpn - 1, raw_rank if truthy(raw_rank) and is_number(raw_rank) else 0))
            c.add_computed("parallelism", note, "--nnodes", rpn, "--node-rank", idx, "--master-addr", f"${up}_NODE_1")
            if idx > 0:
                c.add_computed("parallelism", note, "--headless")


def layer_strategy_override(ctx: Ctx, call: Call) -> Contribution:
    c = Contribution()
    so = ctx.so
    if so is None:
        return c
    path = ("strategy_overrides", ctx.strategy_name)
    where: tuple[str, ...]
    if call.role:
        block, layer, where, env_key = as_map(so.get(call.role)), "strategy-role-override", (*path, call.role), "env"
    else:
        block, layer, where, env_key = so, "strategy-override", path, "extra_env"
    c.add_recipe_args(ctx, block.get("extra_args"), layer, *where, "extra_args")
    c.add_recipe_args(ctx, block.get("vllm_args"), layer, *where, "vllm_args")
    c.add_recipe_env(ctx, so.get("env"), "strategy-override", *path, "env")
    c.add_recipe_env(ctx, block.get(env_key), layer, *where, env_key)
    return c


def layer_hardware_overrides(ctx: Ctx, call: Call) -> Contribution:
    """§5.4: a strategy generation block REPLACES recipe + variant generation blocks."""
    c = Contribution()
    so = as_map(ctx.so)
    s = ctx.strategy_name
    so_ho = so.get("hardware_overrides")
    hit = ctx.hw.gen_or_nvidia(so_ho)
    if hit and truthy(hit[1]):
        c.add_recipe_extras(ctx, hit[1], "strategy-override-generation", "strategy_overrides", s,
                            "hardware_overrides", hit[0])
    else:
        rhit = ctx.hw.gen_or_nvidia(ctx.recipe.get("hardware_overrides"))
        if rhit:
            c.add_recipe_extras(ctx, rhit[1], "recipe-generation", "hardware_overrides", rhit[0])
        vhit = ctx.hw.gen_or_nvidia(ctx.variant.get("hardware_overrides"))
        if vhit:
            c.add_recipe_extras(ctx, vhit[1], "variant-generation", "variants", ctx.variant_data_key,
                                "hardware_overrides", vhit[0])
    # (the id is read only for a block of its own: the path of any other would read the whole hardware)
    blk = ctx.hw.exact(so_ho)
    if is_map(blk):
        c.add_recipe_extras(ctx, blk, "strategy-override-exact-gpu", "strategy_overrides", s, "hardware_overrides",
                            ctx.hw_id)
    role = call.role
    blk = ctx.hw.exact(get(so.get(role), "hardware_overrides")) if role else None
    if role and is_map(blk):
        c.add_recipe_extras(ctx, blk, "strategy-role-exact-gpu", "strategy_overrides", s, role, "hardware_overrides",
                            ctx.hw_id)
    return c


def layer_advanced(ctx: Ctx, call: Call) -> Contribution:
    c = Contribution()
    for opt_id, tokens in ctx.sel.advanced:
        c.add_args(tokens, Source("advanced", "", ("advanced", opt_id)))
    return c


def layer_features(ctx: Ctx, call: Call) -> Contribution:
    """§5.6 with extensions §2.3 (exact-GPU keys on boolean feature overrides)."""
    c = Contribution()
    feats = ctx.features
    for f in ctx.sel.features:
        feat = feats.get(f)
        if not is_map(feat) or not is_feature_allowed_for_strategy(feat, ctx.strategy_name) or (
                ctx.kv_composing and truthy(get(feat.get("companion"), "command"))):
            continue
        block: Mapping[str, Any] = feat
        layer = "feature"
        path: tuple[str, ...] = ("features", f)
        if truthy(feat.get("modes")):
            mk = ctx.hw.read(_mode_key, feat, f, ctx.variant, ctx.sel.variant_key, modes=True)
            if mk is None:
                continue
            block, layer, path = as_map(feat["modes"].get(mk)), "mode", (*path, "modes", mk)
        hit = ctx.hw.keyed(block.get("hardware_overrides"))
        if hit and is_map(hit[1]) and hit[1].get("args") is not None:
            c.add_recipe_args(ctx, hit[1]["args"], layer, *path, "hardware_overrides", hit[0], "args")
        else:
            c.add_recipe_args(ctx, block.get("args"), layer, *path, "args")
    return c


def layer_kv_option(ctx: Ctx, call: Call) -> Contribution:
    c = Contribution()
    if ctx.kv_opt is not None:
        f, k = ctx.catalog.taxonomy_file, ctx.sel.kv_offload or ""
        c.add_args(ctx.kv_opt.get("args"), Source("kv-option", f, ("kv_offload", k, "args")))
        c.add_env(ctx.kv_opt.get("env"), Source("kv-option", f, ("kv_offload", k, "env")))
    return c


def layer_mooncake(ctx: Ctx, call: Call) -> Contribution:
    c = Contribution()
    kv = ctx.kv_store
    if kv is None:
        return c
    f = ctx.kv_store_file
    vllm = as_map(kv.get("vllm"))
    if ctx.kv_composing:
        c.add_args(vllm.get("vllm_args"), Source("mooncake", f, ("vllm", "vllm_args")))
        c.add_env(vllm.get("env"), Source("mooncake", f, ("vllm", "env")))
    elif ctx.is_pd and call.role:
        role_args = get(get(kv.get("pd"), call.role), "args")
        if truthy(role_args):
            c.add_args(role_args, Source("mooncake", f, ("pd", call.role, "args")))
        if truthy(kv.get("pd")):
            c.add_env(vllm.get("env"), Source("mooncake", f, ("vllm", "env")))
    return c


def layer_pd_pinning(ctx: Ctx, call: Call) -> Contribution:
    """§6.2: per-pool ``CUDA_VISIBLE_DEVICES`` (and socket ifnames for multi-node pools)."""
    c = Contribution()
    if not (ctx.is_pd and call.role):
        return c
    g = ctx.gpu_count
    pd_role = pd_role_request(ctx, call.role)
    rpn = number_or(pd_role.get("nodes"), 1 if ctx.node_count > 1 else 0)
    env: dict[str, Any] = {}
    if rpn >= 1:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(int(g)))
        if rpn >= 2:
            env["GLOO_SOCKET_IFNAME"] = "$IFACE_NAME"
            env["NCCL_SOCKET_IFNAME"] = "$IFACE_NAME"
        note = f"PD {call.role} pool on whole node(s): all {g} GPUs"
    else:
        half = js_floor_div(g, 2)
        if half > 0:
            rng = range(0, int(half)) if call.role == "prefill" else range(int(half), int(g))
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in rng)
        note = f"PD co-located demo: {call.role} gets half of the node's GPUs"
    if env:
        c.env.append((env, Source("pd-pinning", "", (), note)))
    return c


def _mode_key(feat: Mapping[str, Any], f: str, variant: Mapping[str, Any], vk: str, modes: FeatureModes,
              profile: Mapping[str, Any], hw_id: str) -> str | None:
    return resolve_mode_key(feat, f, variant, vk, profile, hw_id or None, mode_for(modes, f))


Layer = Callable[[Ctx, Call], Contribution]

#: Every layer, by name. Order of emission is given by the two tuples below.
LAYERS: dict[str, Layer] = {
    "base": layer_base,
    "frontend": layer_frontend,
    "variant": layer_variant,
    "variant-hardware": layer_variant_hardware,
    "strategy": layer_strategy,
    "parallelism": layer_parallelism,
    "strategy-override": layer_strategy_override,
    "hardware-overrides": layer_hardware_overrides,
    "advanced": layer_advanced,
    "features": layer_features,
    "kv-option": layer_kv_option,
    "mooncake": layer_mooncake,
    "pd-pinning": layer_pd_pinning,
}

#: buildArgs order (synthesis §5.1 steps 1-8).
ARG_ORDER = ("base", "variant", "variant-hardware", "strategy", "parallelism", "strategy-override",
             "hardware-overrides", "advanced", "features", "kv-option", "mooncake")
#: buildEnv order (synthesis §6 steps 1-8, frontend per extensions §2.1).
ENV_ORDER = ("base", "frontend", "variant", "variant-hardware", "strategy", "kv-option", "mooncake",
             "pd-pinning", "strategy-override", "hardware-overrides")

