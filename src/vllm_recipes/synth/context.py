"""Values computed once per resolve (synthesis.md §5.0)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_recipes.catalog import Catalog
from vllm_recipes.catalog.memo import remember
from vllm_recipes.jsvalues import as_map, first_present, first_truthy, get, is_map, is_number, truthy
from vllm_recipes.select.defaults import resolve_single_node_tp, variant_entry
from vllm_recipes.select.gates import (
    kv_offload_allowed_for_strategy,
    kv_offload_brand_supported,
    kv_offload_supported_for_recipe,
)
from vllm_recipes.select.lookups import gen
from vllm_recipes.select.selection import Selection

from .compiled import Compiled


@dataclass(frozen=True)
class Ctx:
    """Everything a layer may read; built once per resolve."""

    catalog: Catalog
    recipe: Mapping[str, Any]
    recipe_file: str
    sel: Selection
    variant: Mapping[str, Any]
    #: the variants key whose data is used (given key, else ``default``); for key paths
    variant_data_key: str
    strategy: Mapping[str, Any]
    strategy_file: str
    deploy_type: str
    profile: Mapping[str, Any]
    gen: Any
    gpu_count: Any
    total_gpus: Any
    single_node_tp: Any
    model_id: str
    variant_exact_ho: Any
    so: Mapping[str, Any] | None
    parallel_flag: str
    is_multi: bool
    is_pd: bool
    is_pd_multi: bool
    kv_store: Mapping[str, Any] | None
    kv_store_file: str
    kv_composing: bool
    kv_opt: Mapping[str, Any] | None
    kv_instance_count: int
    kv_current: int
    mp_master_addr: str
    frontend: str
    frontend_env: Mapping[str, Any]
    #: what the recipe can tell about the hardware (see :func:`hardware_class`): memo keys of
    #: layers use it instead of the id, so indistinguishable profiles share their work
    hw_class: Any = None
    #: the same for the features' hardware lookups (see :func:`hardware_class`, scope ``features``)
    features_hw_class: Any = field(default=None, compare=False, repr=False)
    #: what the selection's shape (recipe, variant, strategy, frontend, KV choice) compiles to;
    #: made by :func:`build_context` (see :mod:`.compiled`)
    compiled: Compiled | None = field(default=None, compare=False, repr=False)

    @property
    def hw_id(self) -> str:
        return self.sel.hw_id

    @property
    def strategy_name(self) -> str:
        return self.sel.strategy

    @property
    def node_count(self) -> int:
        return self.sel.node_count

    @property
    def features(self) -> Mapping[str, Any]:
        return as_map(self.recipe.get("features"))


def shape_of(ctx: Ctx) -> Compiled:
    """The compiled shape of a context (every :class:`Ctx` of :func:`build_context` has one)."""
    compiled = ctx.compiled
    if compiled is None:
        raise ValueError("a context made outside build_context has no compiled shape")
    return compiled


def recipe_frontend(recipe: Mapping[str, Any]) -> str:
    """extensions §2.1: ``model.default_frontend``, absent means ``python``."""
    fe = get(recipe.get("model"), "default_frontend")
    return fe if isinstance(fe, str) and fe else "python"


def build_context(catalog: Catalog, recipe: Mapping[str, Any], recipe_file: str, sel: Selection) -> Ctx:
    """The context of one selection: the memoized fields of its shape (no hardware), those of
    its hardware profile (memoized in the shape), plus what depends on node and instance counts."""
    key = (recipe_file, "ctx-static", sel.variant_key, sel.strategy, sel.frontend, sel.kv_offload)
    memo = catalog.memo
    static = memo.get(key)
    if static is None:
        static = remember(memo, key, _static_fields(catalog, recipe, recipe_file, sel))
    compiled: Compiled = static["compiled"]
    # (the shape's memo read inline, not through ``Compiled.recall``: a context is built per selection,
    # and the extra call was 5-10% of a warm build_context)
    hw_key = ("hardware", sel.hw_id)
    hw = compiled.memo.get(hw_key)
    if hw is None:
        hw = compiled.keep(hw_key, _hardware_fields(catalog, recipe, recipe_file, sel, static, compiled))
    node_count = sel.node_count
    kv_store = static["kv_store"]
    kv_composing = static["kv_composing"]
    kvi = sel.kv_instances
    if kvi is None:
        counts = compiled.memo.get("kv-counts")
        if counts is None:
            counts = compiled.keep("kv-counts", _kv_counts(kv_store, None))
        kv_count, kv_current = counts
    else:
        kv_count, kv_current = _kv_counts(kv_store, kvi)
    deploy = compiled.raw_deploy_type
    ctx = object.__new__(Ctx)  # without 30 frozen-dataclass ``__setattr__`` calls (a third of a warm resolve)
    fields = ctx.__dict__
    fields.update(static)
    fields.update(hw)
    fields.update(
        sel=sel,
        total_gpus=hw["gpu_count"] * max(1, node_count),
        is_multi=deploy == "multi_node" and node_count > 1,
        is_pd_multi=deploy == "pd_cluster" and node_count > 1,
        kv_instance_count=kv_count,
        kv_current=kv_current,
        mp_master_addr=f"$VLLM_INSTANCE_{kv_current + 1}" if kv_composing and kv_count > 1 else "$HEAD_IP",
    )
    return ctx


def with_selection(ctx: Ctx, sel: Selection) -> Ctx | None:
    """The context of ``sel`` from ``ctx``, a context of a selection that differs from ``sel`` only in what no
    context field but ``sel`` reads (features, mode picks, PD pool requests, PD router, advanced options);
    ``None`` when ``sel`` differs in anything :func:`build_context` reads (build it then).

    A copy with the selection swapped: ``validate`` meets thousands of feature sets per recipe, each of
    which would otherwise build its context from the memo again.
    """
    base = ctx.sel
    if (sel.variant_key != base.variant_key or sel.hw_id != base.hw_id or sel.strategy != base.strategy
            or sel.frontend != base.frontend or sel.kv_offload != base.kv_offload
            or repr(sel.node_count) != repr(base.node_count) or repr(sel.kv_instances) != repr(base.kv_instances)):
        return None
    out = object.__new__(Ctx)
    out.__dict__.update(ctx.__dict__)
    out.__dict__["sel"] = sel
    return out


def _kv_counts(kv_store: Mapping[str, Any] | None, kv_instances: Any) -> tuple[Any, int]:
    """Mooncake instance count and current instance for the selection's ``kv_instances``."""
    obj = kv_instances if is_map(kv_instances) else {"count": kv_instances}
    count = obj.get("count")
    if is_number(count) and count >= 1 and math.isfinite(count):
        kv_count = math.floor(count)
    elif kv_store is not None and truthy(kv_store.get("default_instances")):
        kv_count = kv_store["default_instances"]
    else:
        kv_count = 2
    cur = first_present(obj.get("current"), 0)
    cur = cur if is_number(cur) and math.isfinite(cur) else 0
    return kv_count, int(max(0, min(kv_count - 1, cur)))


def _hardware_fields(catalog: Catalog, recipe: Mapping[str, Any], recipe_file: str, sel: Selection,
                     static: Mapping[str, Any], compiled: Compiled) -> dict[str, Any]:
    """The :class:`Ctx` fields that read the hardware profile (but no node or instance count).

    All but ``kv_opt`` read only the variant and strategy of the shape: they are shared through the catalog
    memo by the shapes of every frontend and KV choice (``validate`` meets each hardware in a dozen of them).
    """
    hw_id = sel.hw_id
    vkey = static["variant_data_key"]
    key = (recipe_file, "ctx-hardware", vkey, sel.strategy, hw_id)
    common = catalog.memo.get(key)
    if common is None:
        profile, generation, gpu_count, _shared = profile_facts(catalog, hw_id)
        variant = static["variant"]
        common = remember(catalog.memo, key, dict(
            profile=profile,
            gen=generation,
            gpu_count=gpu_count,
            single_node_tp=resolve_single_node_tp(recipe, variant, profile, sel.strategy, hw_id),
            variant_exact_ho=get(variant.get("hardware_overrides"), hw_id) if hw_id else None,
            hw_class=hardware_class(catalog, recipe, recipe_file, hw_id, profile, layer_scope(vkey, sel.strategy)),
            features_hw_class=hardware_class(catalog, recipe, recipe_file, hw_id, profile, ("features",)),
        ))
    opt = compiled.kv_opt_candidate
    return {**common, "kv_opt": opt if opt is not None and kv_offload_brand_supported(opt, common["profile"]) else None}


def profile_facts(catalog: Catalog, hw_id: str) -> tuple[Mapping[str, Any], Any, Any, tuple[str, str, str]]:
    """A hardware profile, its generation, GPU count and shared class (see :func:`hardware_class`), memoized."""
    key = ("profile-facts", hw_id)
    hit = catalog.memo.get(key)
    if hit is None:
        profile = as_map(catalog.hardware_profiles.get(hw_id))
        gpu_count = profile.get("gpu_count") if is_number(profile.get("gpu_count")) else 1
        hit = remember(catalog.memo, key, (profile, gen(profile), gpu_count, shared_class(profile)))
    return hit  # type: ignore[no-any-return]


def _static_fields(catalog: Catalog, recipe: Mapping[str, Any], recipe_file: str, sel: Selection) -> dict[str, Any]:
    """The :class:`Ctx` fields that read neither the hardware nor node or instance counts."""
    vkey, variant = variant_entry(recipe, sel.variant_key)
    strategies = catalog.strategies
    strategy = as_map(strategies.get(sel.strategy))
    deploy_type = strategy.get("deploy_type") if truthy(strategy.get("deploy_type")) else "single_node"
    so = get(recipe.get("strategy_overrides"), sel.strategy)

    kv_store = None
    kv_offload = sel.kv_offload
    if truthy(kv_offload) and get(strategies.get(kv_offload), "deploy_type") == "kv_store_lb":
        kv_store = strategies[kv_offload]
    kv_composing = kv_store is not None and strategy.get("deploy_type") != "pd_cluster"
    kv_opt_candidate = None  # the brand check is the hardware's part (see _hardware_fields)
    if truthy(kv_offload):
        opt = catalog.kv_offload_options.get(kv_offload)
        if (is_map(opt) and kv_offload_allowed_for_strategy(opt, sel.strategy, strategy)
                and kv_offload_supported_for_recipe(opt, kv_offload, recipe)):
            kv_opt_candidate = opt

    frontend = sel.frontend or recipe_frontend(recipe)
    frontend_env = as_map(get(catalog.frontends.get(frontend), "env"))
    model_id = first_truthy(variant.get("model_id"), get(recipe.get("model"), "model_id"), "unknown")

    compiled = Compiled(kv_opt_candidate, strategy.get("deploy_type"))
    return dict(
        catalog=catalog,
        recipe=recipe,
        recipe_file=recipe_file,
        variant=variant,
        variant_data_key=vkey,
        strategy=strategy,
        strategy_file=catalog.strategy_files.get(sel.strategy, f"strategies/{sel.strategy}.yaml"),
        deploy_type=deploy_type,
        model_id=model_id if isinstance(model_id, str) else str(model_id),
        so=so if is_map(so) else None,
        parallel_flag=strategy.get("parallel_flag") if truthy(strategy.get("parallel_flag")) else "--tensor-parallel-size",
        is_pd=strategy.get("deploy_type") == "pd_cluster",
        kv_store=kv_store,
        kv_store_file=catalog.strategy_files.get(kv_offload or "", f"kv_store/{kv_offload}.yaml"),
        kv_composing=kv_composing,
        frontend=frontend,
        frontend_env=frontend_env,
        compiled=compiled,
    )


#: Profiles the engine itself singles out by id (PD env keeps NVL4-only variables there).
ID_READ_PROFILES = frozenset({"gb200", "gb300"})
#: Map keys whose keys are hardware ids (or generations/brands) read by a layer.
HARDWARE_KEYED = frozenset({"hardware_overrides", "hardware"})


def hardware_class(catalog: Catalog, recipe: Mapping[str, Any], recipe_file: str, hw_id: str,
                   profile: Mapping[str, Any], scope: tuple[str, ...] = ()) -> Any:
    """The hardware as the recipe data in ``scope`` (a key path) can see it.

    Memoized layers read a profile through its generation and brand (the GPU
    count only in PD pinning env, which adds it to its key), and its id only as a
    key of a hardware-keyed map (``hardware_overrides``, mode ``hardware``). A
    profile whose id that part of the recipe never names is therefore
    indistinguishable from any other of the same generation and brand; it gets
    that shared class, one named by id gets its own id.
    """
    if hw_id in ID_READ_PROFILES or hw_id in named_hardware(catalog, recipe, recipe_file, scope):
        return hw_id
    return shared_class(profile)


def shared_class(profile: Mapping[str, Any]) -> tuple[str, str, str]:
    """The class of every profile of one generation and brand that the recipe does not name."""
    g = gen(profile)
    return ("~", g if isinstance(g, str) else repr(g), repr(profile.get("brand")))


def rendering_hardware_key(catalog: Catalog, recipe: Mapping[str, Any], recipe_file: str, variant_key: str,
                           strategy: str, hw_id: str) -> tuple[Any, ...]:
    """Everything resolving, rendering and linting one selection read of its hardware.

    Two profiles with the same key give the same rendering object but for its
    ``hardware`` id: the memoized layers see the hardware through their classes
    (both scopes below), the parallelism and PD layers through the GPU count and the
    single-node TP size, the docker image, KV options and installs through generation
    and brand (part of a class that is not an id). A profile the recipe names by id
    in those places is its own class, so its key is its own.
    """
    profile = as_map(catalog.hardware_profiles.get(hw_id))
    vkey, variant = variant_entry(recipe, variant_key)
    g = gen(profile)
    # numbers by repr: 8 and 8.0 are equal keys but print differently
    return (hardware_class(catalog, recipe, recipe_file, hw_id, profile, layer_scope(vkey, strategy)),
            hardware_class(catalog, recipe, recipe_file, hw_id, profile, ("features",)),
            g if isinstance(g, str) else repr(g), repr(profile.get("brand")),
            repr(profile.get("gpu_count") if is_number(profile.get("gpu_count")) else 1),
            repr(resolve_single_node_tp(recipe, variant, profile, strategy, hw_id)))


def layer_scope(variant_key: str, strategy: str) -> tuple[str, ...]:
    """Where the static argument and env layers look hardware ids up (see :func:`named_hardware`)."""
    return ("layers", variant_key, strategy)


def named_hardware(catalog: Catalog, recipe: Mapping[str, Any], recipe_file: str,
                   scope: tuple[str, ...] = ()) -> frozenset[str]:
    """Hardware ids used as keys of the maps a layer reads, in one part of the recipe (memoized).

    ``("layers", variant, strategy)``: the variant's and the strategy override's (and
    its PD roles') ``hardware_overrides``, read by the static argument and env layers.
    ``("features",)``: every ``hardware_overrides`` / mode ``hardware`` map of the
    features. ``()``: every such map outside ``meta`` (the conservative union).
    """
    key = (recipe_file, "named-hardware", scope)
    hit = catalog.memo.get(key)
    if hit is None:
        if scope and scope[0] == "layers":
            so = as_map(get(recipe.get("strategy_overrides"), scope[2]))
            maps = [get(get(recipe.get("variants"), scope[1]), "hardware_overrides"), so.get("hardware_overrides"),
                    *(get(get(so, role), "hardware_overrides") for role in ("prefill", "decode"))]
            found = {k for m in maps if is_map(m) for k in m if isinstance(k, str)}
        elif scope == ("features",):
            found = _hardware_keys(recipe.get("features"))
        else:
            found = _hardware_keys({k: v for k, v in recipe.items() if k != "meta"})
        hit = remember(catalog.memo, key, frozenset(found))
    return hit  # type: ignore[no-any-return]


def _hardware_keys(tree: Any) -> set[str]:
    found: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, dict):
                    if k in HARDWARE_KEYED:
                        found.update(y for y in x if isinstance(y, str))
                    stack.append(x)
                elif isinstance(x, list | tuple):
                    stack.append(x)
        elif isinstance(v, list | tuple):
            stack.extend(x for x in v if isinstance(x, dict | list | tuple))
    return found
