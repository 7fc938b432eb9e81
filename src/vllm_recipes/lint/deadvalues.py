"""Dead-value lint: recipe values that never reach any rendering.

Every offered selection of a recipe is resolved (each variant x listed hardware
x strategy offered there, with the default features, all features and every
mode, each KV option and Mooncake topology that is offered). A recipe argument
or env entry that survives dedupe in none of them is dead: either always
shadowed by a later layer (we name the layer that wins) or never applicable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe, format_key_path
from vllm_recipes.catalog.diagnostics import Finding
from vllm_recipes.jsvalues import as_map, get, is_map, truthy
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.render.shell import final_tokens
from vllm_recipes.select.defaults import default_features, listed_hardware, recommend_strategy
from vllm_recipes.select.gates import (
    feature_conflicts,
    fits_single_node,
    is_scalable,
    is_strategy_reachable,
    is_strategy_supported_on_hardware,
    kv_store_offered,
    nodes_for_strategy,
    offered_strategies,
)
from vllm_recipes.select.selection import Selection
from vllm_recipes.select.state import kv_choices
from vllm_recipes.synth.context import AlikeResolves, Ctx
from vllm_recipes.synth.plan import Invocation, Plan
from vllm_recipes.synth.resolve import resolve

KeyPath = tuple[str | int, ...]
ARG_KEYS = ("base_args", "extra_args", "vllm_args", "args")
ENV_KEYS = ("base_env", "extra_env", "env")


@dataclass
class Tally:
    """What the offered selections of one recipe rendered: key paths emitted, and shadowed ones with their winners."""

    emitted: set[KeyPath] = field(default_factory=set)
    #: key path of a shadowed token -> layers that won over it
    shadowed_by: dict[KeyPath, set[str]] = field(default_factory=dict)


def _feature_sets(recipe: Recipe, hw: str, vk: str) -> Iterator[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]:
    r = recipe.data
    feats = as_map(r.get("features"))
    defaults = tuple(default_features(r, hw, vk))
    yield defaults, ()
    # every feature on (one member of each conflicting pair at a time)
    everything: list[str] = []
    for f in feats:
        if not any(o in everything for o in feature_conflicts(r, f)):
            everything.append(f)
    yield tuple(everything), ()
    others = tuple(f for f in feats if f not in everything)
    if others:
        yield tuple(x for x in everything if not any(x in feature_conflicts(r, o) for o in others)) + others, ()
    for f, feat in feats.items():
        if is_map(feat) and truthy(feat.get("modes")):
            for m in as_map(feat.get("modes")):
                yield tuple(everything if f in everything else (*everything, f)), ((f, m),)


def pd_pool_request() -> dict[str, Any]:
    """A fresh copy of the PD pool request the enumeration offers (each selection gets its own dict)."""
    return {"prefill": {"nodes": 2, "parallelism": "dep"}, "decode": {"nodes": 2, "parallelism": "dep"}}


def _served(catalog: Catalog, r: Mapping[str, Any], profile: Mapping[str, Any], hw: str) -> list[tuple[str, int]]:
    """The serving strategies offered on ``hw`` (no Mooncake deployments), each with its node count."""
    gpn = profile.get("gpu_count")
    scalable = is_scalable(profile)
    served: list[tuple[str, int]] = []
    for s in offered_strategies(r):
        dt = get(catalog.strategies.get(s), "deploy_type")
        if (dt is None or dt == "kv_store_lb" or not is_strategy_supported_on_hardware(r, s, profile, hw)
                or not is_strategy_reachable(r, s, dt, gpn, hw)
                or (not scalable and (dt == "multi_node" or s == "pd_cluster"))):
            continue
        served.append((s, max(2 if dt == "multi_node" else 1, nodes_for_strategy(r, s, gpn, hw))))
    return served


def _stores(catalog: Catalog, r: Mapping[str, Any], variant: Mapping[str, Any], profile: Mapping[str, Any],
            hw: str) -> list[tuple[str, str, int]]:
    """The Mooncake deployments offered on ``hw``: id, the serving strategy under it, node count."""
    ids = [kv_id for kv_id, spec in catalog.strategies.items()
           if get(spec, "deploy_type") == "kv_store_lb" and kv_store_offered(r, kv_id, profile, hw)]
    nc = (1 if fits_single_node(profile, variant, hw) else 2) if ids else 1
    return [(kv_id, recommend_strategy(r, nc), nc) for kv_id in ids]


def offered_selections(catalog: Catalog, recipe: Recipe) -> Iterator[Selection]:
    """Every selection a user of the builder (or the JSON API) can reach, approximately exhaustively: per
    variant and listed hardware, each served ``(strategy, nodes)`` with every feature set (on ``pd_cluster``
    each also with :func:`pd_pool_request`) and with each KV choice; then each Mooncake deployment."""
    r = recipe.data
    if recipe.is_omni:
        return
    kv_offered: dict[tuple[str, str], list[str]] = {}  # KV choices read the hardware and strategy, not the variant
    for vk, variant in as_map(r.get("variants")).items():
        if not is_map(variant):
            continue
        for hw in listed_hardware(catalog.hardware_profiles, variant, r):
            profile = as_map(catalog.hardware_profiles.get(hw))
            served = _served(catalog, r, profile, hw)
            feature_sets = list(dict.fromkeys(_feature_sets(recipe, hw, vk))) if served else []
            defaults = tuple(default_features(r, hw, vk))
            for s, nodes in served:
                for feats, modes in feature_sets:
                    yield Selection(variant_key=vk, hw_id=hw, strategy=s, node_count=nodes, features=feats,
                                    feature_modes=modes)
                    if s == "pd_cluster":
                        yield Selection(variant_key=vk, hw_id=hw, strategy=s, node_count=1, features=feats,
                                        feature_modes=modes, pd_nodes=pd_pool_request())
                if (hw, s) not in kv_offered:
                    kv_offered[(hw, s)] = kv_choices(catalog, recipe, hw, s)
                for kv in kv_offered[(hw, s)]:
                    yield Selection(variant_key=vk, hw_id=hw, strategy=s, node_count=nodes, features=defaults,
                                    kv_offload=kv)
            for kv_id, strategy, nc in _stores(catalog, r, variant, profile, hw):
                yield Selection(variant_key=vk, hw_id=hw, strategy=strategy, node_count=nc, features=defaults,
                                kv_offload=kv_id)


#: called with each resolved offered selection (lets another per-selection analysis share the resolve); a
#: selection whose hardware reads like an earlier one's is not resolved (it adds nothing)
PlanHook = Callable[[Selection, Ctx, Plan], None]


def tally_invocation(t: Tally, rf: str, inv: Invocation) -> None:
    """Count one process's argument tokens from ``rf``: kept ones as emitted, shadowed ones with their winner."""
    kept, shadowed = final_tokens(inv)
    winner = {a.value: a.source.layer for a in kept if a.value.startswith("-")}
    for a in kept:
        if a.source.file == rf:
            t.emitted.add(a.key_path)
    for flag, units in shadowed.items():
        for u in units:
            for tok in (u.flag, u.value):
                if tok is not None and tok.source.file == rf:
                    t.shadowed_by.setdefault(tok.key_path, set()).add(winner.get(flag, "?"))


def tally_env(t: Tally, rf: str, env: Any) -> None:
    """Count one process env's entries from ``rf`` (final values emitted, replaced ones shadowed)."""
    for ev in env:
        if ev.source.file == rf:
            t.emitted.add(ev.source.key_path)
        for _v, src in ev.shadowed:
            if src.file == rf:
                t.shadowed_by.setdefault(src.key_path, set()).add(ev.source.layer)


def resolved_selections(catalog: Catalog, recipe: Recipe) -> Iterator[tuple[Selection, Ctx, Plan]]:
    """Each offered selection resolved once (one that fails is skipped), but for a selection whose hardware
    reads like an earlier one's (same everything else): it renders that very plan (:class:`AlikeResolves`)."""
    alike: AlikeResolves[None] = AlikeResolves(catalog)
    for sel in offered_selections(catalog, recipe):
        # a repeat (Mooncake deployments also come as KV choices) reads alike too: resolved once
        rest = repr({**vars(sel), "hw_id": ""})  # (PD requests are dicts)
        if alike.find(rest, sel.hw_id) is not None:
            continue
        try:
            ctx, plan = resolve(catalog, recipe, sel)
        except Exception:
            continue
        alike.add(rest, ctx.hw, None)  # (what the caller reads of ``ctx.hw`` is recorded there too)
        yield sel, ctx, plan


def tally(catalog: Catalog, recipe: Recipe, on_plan: PlanHook | None = None) -> Tally:
    """Resolve the offered selections of ``recipe`` (each calling ``on_plan``) and count what they render."""
    t = Tally()
    rf = recipe.rel_path
    #: processes and envs already counted: many selections render the very same process (a set adds nothing twice)
    counted: set[Invocation | tuple[Any, ...]] = set()
    for sel, ctx, plan in resolved_selections(catalog, recipe):
        if on_plan is not None:
            on_plan(sel, ctx, plan)
        for _title, inv, env in plan_processes(plan):
            if inv not in counted:
                counted.add(inv)
                tally_invocation(t, rf, inv)
            if env and env not in counted:
                counted.add(env)
                tally_env(t, rf, env)
    return t


def _value_sites(data: Any, path: KeyPath = ()) -> Iterator[tuple[str, KeyPath, Any]]:
    """Every argument token (flags with their values) and env entry in the recipe."""
    if isinstance(data, dict):
        for k, v in data.items():
            p = (*path, k)
            if k in ARG_KEYS and isinstance(v, tuple | list):
                yield "arg", p, v
            elif k in ENV_KEYS and isinstance(v, dict):
                yield "env", p, v
            else:
                yield from _value_sites(v, p)


def dead_value_findings(catalog: Catalog, recipe: Recipe, on_plan: PlanHook | None = None) -> list[Finding]:
    if recipe.is_omni:
        return []
    return dead_value_report(recipe, tally(catalog, recipe, on_plan))


def dead_value_report(recipe: Recipe, tally: Tally) -> list[Finding]:
    """The findings of a recipe whose offered selections were counted into ``tally``."""
    doc = recipe.doc
    out: list[Finding] = []

    def report(path: KeyPath, shown: str) -> None:
        pos = doc.position(path)
        layers = tally.shadowed_by.get(path)
        if layers:
            why = "always shadowed by layer " + ", ".join(sorted(layers))
        else:
            why = "never applicable to any offered selection"
        out.append(Finding("warning", recipe.rel_path, pos.line, pos.col, format_key_path(path),
                           f"{shown} never reaches a rendering: {why}", "dead-value"))

    for kind, path, value in _value_sites(recipe.data):
        if path[:1] == ("omni",):
            continue
        if kind == "arg":
            i = 0
            while i < len(value):
                tok = value[i]
                has_val = (isinstance(tok, str) and tok.startswith("-") and i + 1 < len(value)
                           and isinstance(value[i + 1], str) and not value[i + 1].startswith("-"))
                p = (*path, i)
                if p not in tally.emitted and isinstance(tok, str) and tok != "":
                    report(p, f"`{tok}{' ' + value[i + 1] if has_val else ''}`")
                i += 2 if has_val else 1
        else:
            for k in value:
                p = (*path, k)
                if p not in tally.emitted:
                    report(p, f"`{k}={value[k]}`")
    return out


def dead_value_checker(catalog: Catalog) -> list[Finding]:
    """Catalog-wide checker (``serve``'s reload panel): dead values without the release lint."""
    return [f for recipe in catalog.recipes for f in dead_value_findings(catalog, recipe)]
