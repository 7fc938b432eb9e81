"""The command builder's selection: page initial state (synthesis.md §4.8) plus user choices -> a
complete :class:`Selection`. ``strict`` requests (CLI, ``/api/resolve``) refuse what cannot be honoured
with a :class:`SelectionError` naming the valid choices; lenient ones (the page) drop it with a notice.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.loader import MAX_POOL_NODES, POOL_MODES
from vllm_recipes.jsvalues import as_list, as_map, get, is_map, is_number, truthy

from .advanced import advanced_options_for
from .aliases import advanced_id, canonical
from .defaults import (
    default_features,
    effective_install_config,
    pick_default_hardware,
    pick_fitting_variant,
    recommend_strategy,
    resolve_single_node_tp,
    selectable_hardware,
)
from .gates import (
    MAX_NODES,
    allowed_modes,
    bounded_nodes,
    effective_vram_min,
    feature_conflicts,
    fits_single_node,
    is_feature_allowed_for_strategy,
    is_hardware_supported,
    is_listed,
    is_precision_compatible,
    is_scalable,
    is_strategy_reachable,
    is_strategy_supported_on_hardware,
    is_variant_hardware_supported,
    kv_offload_allowed_for_strategy,
    kv_offload_brand_supported,
    kv_offload_supported_for_recipe,
    kv_store_offered,
    node_gpus,
    nodes_for_strategy,
    offered_strategies,
    pd_pool_modes,
    resolve_mode_key,
    spans_nodes,
    variant_runs_on,
)
from .lookups import gen
from .nodes import node_count_issue, strategy_split
from .options import flag, spell
from .params import INSTALL_METHODS, MAX_KV_INSTANCES, pd_routers
from .request import PageRequest, SelectionError
from .selection import Selection, mode_for


@dataclass(frozen=True)
class PageState:
    """A complete, valid builder state and what its defaults were (for clean URLs)."""

    selection: Selection
    install: str
    install_tabs: tuple[str, ...]
    recommended_strategy: str
    default_features: tuple[str, ...]
    default_modes: dict[str, str]
    default_pd: Mapping[str, Any] | None
    candidates: tuple[str, ...]
    notices: tuple[str, ...] = ()
    pd_co_located: bool = False
    request: PageRequest = field(default_factory=PageRequest)


def _profile(catalog: Catalog, hw: str) -> Mapping[str, Any]:
    return as_map(catalog.hardware_profiles.get(hw))


def hardware_choices(catalog: Catalog, recipe: Recipe, variant: Mapping[str, Any]) -> list[str]:
    """Hardware a user may pick for this variant (compatible and listed)."""
    return selectable_hardware(catalog.hardware_profiles, variant, recipe.data)


def hardware_block_reason(catalog: Catalog, recipe: Recipe, variant: Mapping[str, Any], hw: str) -> str | None:
    """Why ``hw`` cannot be picked for ``variant`` (``None`` when it can)."""
    r = recipe.data
    p = _profile(catalog, hw)
    if hw not in catalog.hardware_profiles:
        return f"unknown hardware profile {hw!r}"
    if not is_hardware_supported(r, hw):
        return "the recipe marks this hardware unsupported"
    if not is_listed(r, hw, p):
        return "restricted profile not declared by this recipe"
    if not is_precision_compatible(p, variant):
        c = variant.get("precision_hardware") or {}
        return f"{variant.get('precision', 'this')} precision needs {get(c, 'brand') or 'NVIDIA'} " \
               f"{get(c, 'generation') or 'Blackwell'} hardware"
    if not is_variant_hardware_supported(variant, hw, p):
        return "this variant does not list this hardware"
    return None


def candidate_strategies(catalog: Catalog, recipe: Recipe, hw: str, node_count: int) -> list[str]:
    """§4.8 candidates: offered, known, not kv_store, matching node count, reachable."""
    r = recipe.data
    gpn = _profile(catalog, hw).get("gpu_count")
    # a Mooncake deployment is a KV choice; one node takes no multi-node strategy, several no single-node one
    by_nodes = "multi_node" if node_count == 1 else "single_node" if node_count > 1 else "kv_store_lb"
    wrong = ("kv_store_lb", by_nodes)
    return [s for s in offered_strategies(r) if is_map(spec := catalog.strategies.get(s))
            and (dt := spec.get("deploy_type")) not in wrong and is_strategy_reachable(r, s, dt, gpn, hw)]


def pd_pool_nodes(catalog: Catalog, recipe: Recipe, variant_key: str, hw: str, role: str, mode: str) -> int:
    """The size of a PD pool running in ``mode`` when the user did not give one: the recipe's (or the
    weights') pool size raised to the mode's floor, so a mode override resizes the pool (§4.8)."""
    r, p = recipe.data, _profile(catalog, hw)
    raw = get(get(get(r.get("strategy_overrides"), "pd_cluster"), role), "nodes")
    if is_map(raw):
        raw = raw.get(hw) if is_number(raw.get(hw)) else raw.get("default")
    if is_number(raw):
        base = int(raw) if math.isfinite(raw) and raw <= MAX_POOL_NODES else MAX_POOL_NODES + 1
    else:
        vm = effective_vram_min(as_map(recipe.variants.get(variant_key)), hw)
        vg = p.get("vram_gb")
        weights = isinstance(vm, int | float) and vm > 0 and isinstance(vg, int | float) and vg > 0
        base = bounded_nodes(vm / vg) if weights else 1
    return max(base, nodes_for_strategy(r, mode, p.get("gpu_count"), hw))


def _default_pd(catalog: Catalog, recipe: Recipe, variant_key: str, hw: str) -> dict[str, Any]:
    """§4.8 pdNodes row: per-role nodes and parallelism for the page's initial PD state."""
    r = recipe.data
    modes = pd_pool_modes(r)
    gpn = _profile(catalog, hw).get("gpu_count")
    reachable = [m for m in modes if is_strategy_reachable(r, m, "multi_node", gpn, hw)]
    out = {}
    for role in ("prefill", "decode"):
        par = get(get(get(r.get("strategy_overrides"), "pd_cluster"), role), "parallelism") \
            or get(get(catalog.strategies.get("pd_cluster"), role), "parallelism") or "tp"
        if par not in modes:
            par = modes[0]
        if par not in reachable:
            par = reachable[0] if reachable else "tp"
        out[role] = {"nodes": pd_pool_nodes(catalog, recipe, variant_key, hw, role, par), "rank": 0,
                     "parallelism": par}
    return out


_EMPTY_REQUEST = PageRequest()


def canonical_request(catalog: Catalog, recipe: Recipe, req: PageRequest) -> PageRequest:
    """``req`` with every id spelled as the catalog spells it (any letter case, the public site's
    advanced-option ids); ``req`` itself when it already is (the links the page wrote)."""
    if req == _EMPTY_REQUEST:
        return req
    feats = as_map(recipe.data.get("features"))
    ids: dict[str, Collection[str]] = {
        "hardware": catalog.hardware_profiles, "variant": recipe.variants, "strategy": catalog.strategies,
        "kv_offload": (*catalog.kv_offload_options, *catalog.strategies), "prefill_mode": POOL_MODES,
        "decode_mode": POOL_MODES, "frontend": catalog.frontends, "install": INSTALL_METHODS,
        "pd_router": pd_routers(catalog)}
    fixed: dict[str, Any] = {name: canonical(v, choices) for name, choices in ids.items()
                             if (v := getattr(req, name)) is not None}
    for name in ("features", "add_features", "remove_features"):
        fixed[name] = tuple(canonical(v, feats) for v in getattr(req, name) or ()) or getattr(req, name)
    fixed["fmode"] = tuple((f, canonical(m, as_map(get(feats.get(f), "modes"))))
                           for f, m in ((canonical(f, feats), m) for f, m in req.fmode))
    fixed["advanced"] = tuple(advanced_id(a) for a in req.advanced)
    changes = {name: v for name, v in fixed.items() if v != getattr(req, name)}
    return replace(req, **changes) if changes else req


def default_hardware(catalog: Catalog, recipe: Recipe, variant_key: str) -> str:
    """:func:`pick_default_hardware` of a recipe's variant."""
    return _default_hardware(catalog.hardware_profiles, recipe, variant_key)


@lru_cache(maxsize=4096)
def _default_hardware(profiles: Mapping[str, Any], recipe: Recipe, variant_key: str) -> str:
    """Remembered (catalog data is immutable; the profiles hash by identity): a page asks it for each of its
    ~50 links, and each answer scans every hardware profile (a third of a new page's CPU)."""
    return pick_default_hardware(profiles, as_map(recipe.variants.get(variant_key)), recipe.data)


@dataclass
class Refusals:
    """What a request asked for and cannot have: ``strict`` raises the first as a
    :class:`SelectionError` naming the valid choices; lenient keeps a notice and goes on."""

    strict: bool
    notices: list[str] = field(default_factory=list)

    def __call__(self, param: str, message: str, choices: Sequence[str] = ()) -> None:
        if self.strict:
            raise SelectionError(param, message, choices)
        self.notices.append(spell(message, "url"))

    def checked(self, param: str, v: int | None, lo: int, hi: int, context: str = "") -> int | None:
        """An integer parameter within ``[lo, hi]``, else refused (strict) or dropped (lenient)."""
        if v is not None and not (lo <= v <= hi):
            span = f"be {lo}" if lo == hi else f"be between {lo} and {hi}"
            self(param, f"{flag(param)} must {span}{context}; got {v}.",
                 [str(n) for n in range(lo, hi + 1)] if hi - lo < 16 else [])
            return None
        return v


@dataclass
class _Draft:
    """The state as :func:`build_state`'s steps fill it in, in order."""

    catalog: Catalog
    recipe: Recipe
    req: PageRequest
    refuse: Refusals
    vk: str = "default"
    variant: Mapping[str, Any] = field(default_factory=dict)
    hw: str = ""
    profile: Mapping[str, Any] = field(default_factory=dict)
    gpn: Any = 8
    strategy: str = ""
    recommended: str = ""
    node_count: int = 1
    #: the node count asked for, while it stands (``None``: not asked, or refused)
    req_nodes: int | None = None
    cands: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    default_features: tuple[str, ...] = ()
    modes: list[tuple[str, str]] = field(default_factory=list)
    default_modes: dict[str, str] = field(default_factory=dict)
    advanced: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    kv: str | None = None
    kv_instances: Any = None
    pd_nodes: Any = None
    default_pd: dict[str, Any] | None = None
    co_located: bool = False
    frontend: str | None = None
    pd_router: str | None = None
    install: str = "docker"
    tabs: list[str] = field(default_factory=list)

    @property
    def r(self) -> Mapping[str, Any]:
        return self.recipe.data

    @property
    def hf_id(self) -> str:
        return self.recipe.hf_id

    @property
    def scalable(self) -> bool:
        return is_scalable(self.profile)

    def deploy_type(self, strategy: str | None) -> Any:
        return get(self.catalog.strategies.get(strategy or ""), "deploy_type")

    def runs_on_hw(self) -> list[str]:
        """The variants that run on the selected hardware."""
        return [k for k, v in self.recipe.variants.items() if variant_runs_on(self.profile, as_map(v), self.hw)]


def build_state(catalog: Catalog, recipe: Recipe, req: PageRequest, *, strict: bool = True) -> PageState:
    """Resolve a request into a complete builder state (see module docstring): variant ->
    hardware -> nodes and strategy -> features -> advanced -> KV -> PD -> frontend/install."""
    d = _Draft(catalog, recipe, canonical_request(catalog, recipe, req), Refusals(strict))
    for step in (_variant, _hardware, _requested_strategy, _reconcile_strategy, _features, _feature_modes,
                 _advanced, _kv, _pd, _frontend_install):
        step(d)
    sel = Selection(
        variant_key=d.vk, hw_id=d.hw, strategy=d.strategy, node_count=d.node_count, features=tuple(d.features),
        feature_modes=tuple(d.modes), advanced=tuple(d.advanced), pd_nodes=d.pd_nodes, kv_offload=d.kv,
        kv_instances=d.kv_instances, frontend=d.frontend, pd_router=d.pd_router,
    )
    return PageState(
        selection=sel, install=d.install, install_tabs=tuple(d.tabs), recommended_strategy=d.recommended,
        default_features=d.default_features, default_modes=d.default_modes, default_pd=d.default_pd,
        candidates=tuple(d.cands), notices=tuple(d.refuse.notices), pd_co_located=d.co_located, request=d.req,
    )


def _variant(d: _Draft) -> None:
    """The variant (``default`` unless asked); an omni recipe has no builder state at all."""
    if d.recipe.is_omni:
        raise SelectionError("model", f"{d.hf_id} is an omni recipe; it has tasks, not serving strategies.")
    if d.req.task is not None:
        d.refuse("task", f"{flag('task')} applies to omni recipes only; {d.hf_id} has serving strategies.")
    d.vk = d.req.variant or "default"
    if d.vk not in d.recipe.variants:
        d.refuse("variant", f"{flag('variant')} {d.vk!r} is not a variant of {d.hf_id}.", list(d.recipe.variants))
        d.vk = "default"
    d.variant = as_map(d.recipe.variants.get(d.vk))


def _hardware(d: _Draft) -> None:
    """The hardware (asked for, else the variant's default); on hardware that cannot scale
    out, the variant is switched to one that fits a node."""
    hw = d.req.hardware
    if hw is not None and (reason := hardware_block_reason(d.catalog, d.recipe, d.variant, hw)):
        d.refuse("hardware", f"{flag('hardware')} {hw!r} is not available for {d.hf_id} variant {d.vk!r}: "
                 f"{reason}.", hardware_choices(d.catalog, d.recipe, d.variant))
        hw = None
    d.hw = hw if hw is not None else default_hardware(d.catalog, d.recipe, d.vk)
    d.profile = _profile(d.catalog, d.hw)
    d.gpn = node_gpus(d.profile.get("gpu_count"))
    if not d.scalable and not fits_single_node(d.profile, d.variant, d.hw):
        fit = pick_fitting_variant(d.r, d.profile, d.hw)
        if d.req.variant is not None and fit != d.vk:
            need = effective_vram_min(d.variant, d.hw)
            d.refuse("variant", f"{flag('variant')} {d.vk!r} needs {need} GB, more than one {d.hw} node "
                     f"({d.profile.get('vram_gb')} GB), and {d.hw} cannot scale out.", d.runs_on_hw())
        if fit is not None and fit != d.vk:
            d.vk, d.variant = fit, as_map(d.recipe.variants[fit])
    if not variant_runs_on(d.profile, d.variant, d.hw) and d.refuse.strict and d.req.hardware is not None:
        raise SelectionError("variant", f"{flag('variant')} {d.vk!r} does not run on {d.hw}.", d.runs_on_hw())


def _default_nodes(d: _Draft) -> int:
    """The starting node count: 2 when a multi-node strategy is offered and the variant
    does not fit one node of scalable hardware, else 1."""
    has_multi = any(isinstance(s, str) and (s.startswith("multi_node_") or s == "pd_cluster")
                    for s in offered_strategies(d.r))
    return 2 if has_multi and d.scalable and not fits_single_node(d.profile, d.variant, d.hw) else 1


def _strategy_refusal(d: _Draft, strategy: str) -> tuple[str, list[str]] | None:
    """Why an asked-for strategy cannot run here, with the strategies that can (``None``: it can)."""
    r, hw, dt = d.r, d.hw, d.deploy_type(strategy)
    # the serving strategies the recipe offers (Mooncake deployments are KV choices)
    offered = [s for s in offered_strategies(r) if d.deploy_type(s) not in (None, "kv_store_lb")]
    supported = [s for s in offered if is_strategy_supported_on_hardware(r, s, d.profile, hw)]
    if strategy not in offered_strategies(r) or not is_map(d.catalog.strategies.get(strategy)) \
            or dt == "kv_store_lb":
        return f"is not offered by {d.hf_id}", offered
    if not is_strategy_supported_on_hardware(r, strategy, d.profile, hw):
        return f"is not supported on {hw} for {d.hf_id}", supported
    if not is_strategy_reachable(r, strategy, dt, d.gpn, hw):
        return (f"needs more GPUs than {MAX_NODES} {hw} nodes provide",
                [s for s in supported if is_strategy_reachable(r, s, d.deploy_type(s), d.gpn, hw)])
    if not d.scalable and spans_nodes(strategy, dt):
        return (f"needs several nodes and {hw} cannot scale out",
                [s for s in offered if d.deploy_type(s) == "single_node"])
    return None


def _requested_strategy(d: _Draft) -> None:
    """The asked-for node count and strategy, each refused when it cannot run here; the node
    count follows the strategy's kind when not given."""
    req_nodes = d.refuse.checked("nodes", d.req.nodes, 1, MAX_NODES)
    d.node_count = req_nodes if req_nodes is not None else _default_nodes(d)
    if req_nodes is not None and req_nodes > 1 and not d.scalable:
        d.refuse("nodes", f"{flag('nodes')} {req_nodes}: {d.hw} cannot scale beyond one node.", ["1"])
        d.node_count, req_nodes = 1, None
    d.req_nodes = req_nodes
    strategy = d.req.strategy
    if strategy is None:
        return
    refusal = _strategy_refusal(d, strategy)
    if refusal is not None:
        d.refuse("strategy", f"{flag('strategy')} {strategy!r} {refusal[0]}.", refusal[1])
        return
    d.strategy = strategy
    dt, floor = d.deploy_type(strategy), nodes_for_strategy(d.r, strategy, d.gpn, d.hw)
    if req_nodes is None:
        if dt == "multi_node":
            d.node_count = max(2, d.node_count, floor)
        elif dt == "single_node":
            d.node_count = 1
    elif dt == "multi_node" and d.node_count < 2:
        d.refuse("nodes", f"{flag('strategy')} {strategy!r} runs on 2 or more nodes; got {flag('nodes')} "
                 f"{d.node_count}.", [str(n) for n in range(max(2, floor), MAX_NODES + 1)])
        d.node_count = max(2, floor)
    elif dt == "single_node" and d.node_count > 1:
        d.refuse("nodes", f"{flag('strategy')} {strategy!r} runs on one node; got {flag('nodes')} "
                 f"{d.node_count}.", ["1"])
        d.node_count = 1


def _pick_active(d: _Draft, n: int) -> tuple[list[str], str, bool]:
    """§4.8 candidates and active strategy at ``n`` nodes, and whether it is a supported candidate."""
    cands = candidate_strategies(d.catalog, d.recipe, d.hw, n)
    rec = recommend_strategy(d.r, n)
    supported = [s for s in cands if is_strategy_supported_on_hardware(d.r, s, d.profile, d.hw)]
    if rec in supported:
        return cands, rec, True
    return cands, supported[0] if supported else (cands[0] if cands else rec), bool(supported)


def _floor_nodes(d: _Draft, s: str) -> int:
    """§4.8 reconcile: the node count ``s`` is raised to (1 when nothing is raised)."""
    if s == "pd_cluster" or not d.scalable:
        return 1
    needed = nodes_for_strategy(d.r, s, d.gpn, d.hw)
    return needed if needed <= MAX_NODES else 1


def _reconcile_strategy(d: _Draft) -> None:
    """§4.8: the candidates and recommendation at the node count, the active strategy, and
    the node count raised to what the strategy needs."""
    req_nodes = d.req_nodes
    default_nodes = _default_nodes(d)
    cands, active, ok = _pick_active(d, d.node_count)
    asked = bool(d.strategy)
    if not asked and req_nodes is not None and not ok:
        alt = _pick_active(d, default_nodes)
        if alt[2]:
            d.refuse("nodes", f"{flag('nodes')} {req_nodes}: no strategy {d.hf_id} offers on {d.hw} runs on "
                     f"{req_nodes} node(s).", [str(default_nodes)])
            d.node_count, req_nodes = default_nodes, None
            cands, active, ok = alt
    if not asked and req_nodes is None and d.node_count < _floor_nodes(d, active):
        # the reconcile moved the node count: candidates and recommendation follow it
        d.node_count = _floor_nodes(d, active)
        cands, active, ok = _pick_active(d, d.node_count)
    d.recommended = active
    if not asked:
        d.strategy = active
    if d.deploy_type(d.strategy) == "single_node" and d.node_count > 1 and req_nodes is None:
        d.node_count = 1
        cands = candidate_strategies(d.catalog, d.recipe, d.hw, d.node_count)
    d.cands = cands
    needed = _floor_nodes(d, d.strategy)
    if d.node_count < needed:
        if req_nodes is not None:
            d.refuse("nodes", f"{flag('strategy')} {d.strategy!r} needs at least {needed} {d.hw} nodes; "
                     f"got {flag('nodes')} {d.node_count}.", [str(n) for n in range(needed, MAX_NODES + 1)])
        d.node_count = needed
    # a node count whose tensor-parallel size the model's heads cannot split (select/nodes.py)
    issue = node_count_issue(d.r, strategy_split(as_map(d.catalog.strategies.get(d.strategy))), d.gpn, d.node_count)
    if issue is not None and issue.severity == "error" and req_nodes is not None:
        d.refuse("nodes", f"{flag('nodes')} {d.node_count}: {issue.problem()}.", [str(n) for n in issue.valid])
        d.node_count = min(issue.valid, key=lambda n: (abs(n - d.node_count), n), default=d.node_count)


def _features(d: _Draft) -> None:
    """The enabled features: the defaults, or the URL's full list, with the command line's
    additions and removals; conflicting features switch each other off."""
    req, feats = d.req, as_map(d.r.get("features"))
    d.default_features = tuple(default_features(d.r, d.hw, d.vk))
    enabled = _listed_features(d, feats) if req.features is not None else list(d.default_features)
    enabled = _switched_features(d, feats, enabled)
    explicit = set(req.add_features) | set(req.features or ())
    for f in enabled:
        feat = as_map(feats.get(f))
        if f in explicit and not is_feature_allowed_for_strategy(feat, d.strategy):
            d.refuse("feature", f"Feature {f!r} is not available with strategy {d.strategy!r}.",
                     [s for s in as_list(feat.get("strategies")) if isinstance(s, str)])
    d.features = enabled


def _listed_features(d: _Draft, feats: Mapping[str, Any]) -> list[str]:
    """The URL's full feature list, unknown names refused; only unknown names: the defaults."""
    asked = list(dict.fromkeys(d.req.features or ()))
    for f in asked:
        if f not in feats:
            d.refuse("features", f"Unknown feature {f!r}.", list(feats))
    enabled = [f for f in asked if f in feats]
    if not enabled and asked:
        return list(d.default_features)  # lenient: a list of only unknown names is treated as absent
    return enabled


def _switched_features(d: _Draft, feats: Mapping[str, Any], enabled: list[str]) -> list[str]:
    """``enabled`` with the command line's ``--no-feature`` and ``--feature`` applied (a feature
    switched on switches its conflicts off), and a URL list's conflicts resolved."""
    req = d.req
    for f in dict.fromkeys(req.add_features):
        if f in req.remove_features:
            d.refuse("feature", f"{flag('feature')} {f} and {flag('no-feature')} {f} contradict each other; "
                     f"give one of them.")
    for f in req.remove_features:
        if f not in feats:
            d.refuse("no-feature", f"Unknown feature {f!r}.", list(feats))
        enabled = [x for x in enabled if x != f]
    for f in req.add_features:
        if f not in feats:
            d.refuse("feature", f"Unknown feature {f!r}.", list(feats))
            continue
        for other in feature_conflicts(d.r, f):  # refused when also asked for
            if other in req.add_features or other in (req.features or ()):
                d.refuse("feature", f"Features {f!r} and {other!r} are mutually exclusive; enable only one.")
            enabled = [x for x in enabled if x != other]
        enabled = enabled if f in enabled else [*enabled, f]
    return _without_conflicts(d, enabled) if req.features is not None else enabled


def _without_conflicts(d: _Draft, enabled: list[str]) -> list[str]:
    """A URL list's features in order, each switching off the later ones it conflicts with (refused)."""
    for f in list(enabled):
        for other in feature_conflicts(d.r, f):
            if other in enabled and f in enabled:
                d.refuse("features", f"Features {f!r} and {other!r} are mutually exclusive; enable only one.")
                enabled = [x for x in enabled if x != other]
    return enabled


def _feature_modes(d: _Draft) -> None:
    """Each moded feature's default mode, and the modes asked for (refused when not offered)."""
    feats = as_map(d.r.get("features"))
    for f, feat in feats.items():
        if not is_map(feat) or not truthy(feat.get("modes")):
            continue
        dm = resolve_mode_key(feat, f, d.variant, d.vk, d.profile, d.hw, None)
        if dm is not None:
            d.default_modes[f] = dm
    for f, m in d.req.fmode:
        feat = as_map(feats.get(f))
        if f not in feats or not truthy(feat.get("modes")):
            d.refuse("fmode", f"Feature {f!r} has no modes ({flag('fmode')} {f}={m}).",
                     [k for k, v in feats.items() if is_map(v) and truthy(v.get("modes"))])
            continue
        allowed = allowed_modes(feat, d.vk, d.profile, d.hw)
        if m not in allowed:
            d.refuse("fmode", f"{flag('fmode')} {f}={m}: mode {m!r} of feature {f!r} is not available for variant "
                     f"{d.vk!r} on {d.hw}.", allowed)
            continue
        chosen = mode_for(d.modes, f)
        if chosen is not None and chosen != m:
            d.refuse("fmode", f"{flag('fmode')} {f}={chosen} and {f}={m} contradict each other; a feature runs "
                     f"one mode.", allowed)
            continue
        if chosen is None:
            d.modes.append((f, m))


def _advanced(d: _Draft) -> None:
    """The Advanced row's presets offered here, and the command line's raw ``--arg`` tokens."""
    available = {o.id: o.args for o in advanced_options_for(d.r, d.strategy)}
    for a in d.req.advanced:
        if a not in available:
            d.refuse("advanced", f"{flag('advanced')} {a!r} is unknown or not available for this recipe and "
                     f"strategy.", list(available))
            continue
        d.advanced.append((a, available[a]))
    if d.req.extra_args:
        d.advanced.append(("arg", tuple(d.req.extra_args)))


def _kv(d: _Draft) -> None:
    """KV offload (a taxonomy option or a Mooncake deployment) and Mooncake's instance choice."""
    req, strategies = d.req, d.catalog.strategies
    kv = req.kv_offload
    if kv is not None and kv not in ("", "off"):
        opts = kv_choices(d.catalog, d.recipe, d.hw, d.strategy)
        if kv not in opts:
            d.refuse("kv_offload", f"{flag('kv_offload')} {kv!r} is not available for {d.strategy!r} on {d.hw}.",
                     opts)
            kv = None
        elif d.deploy_type(kv) == "kv_store_lb":
            count = d.refuse.checked("kv_instances", req.kv_instances, 1, MAX_KV_INSTANCES)
            n = count if count is not None else (get(strategies.get(kv), "default_instances") or 2)
            current = d.refuse.checked("kv_instance", req.kv_instance, 0, n - 1, f" for {n} Mooncake instances")
            if count is not None or current is not None:
                d.kv_instances = {"count": count, "current": current or 0}
    if (req.kv_instances is not None or req.kv_instance is not None) and d.deploy_type(kv) != "kv_store_lb":
        d.refuse("kv_instances", f"{flag('kv_instances')} and {flag('kv_instance')} apply to a Mooncake KV store "
                 f"only; pick one with {flag('kv_offload')}.",
                 [k for k in strategies if d.deploy_type(k) == "kv_store_lb"])
    d.kv = kv if kv not in (None, "", "off") else None


PD_OPTIONS = ("prefill_nodes", "decode_nodes", "prefill_mode", "decode_mode", "prefill_rank", "decode_rank")


def _pd(d: _Draft) -> None:
    """The prefill and decode pools of ``pd_cluster`` (or its co-located layout); PD options
    with any other strategy are refused."""
    req = d.req
    if d.strategy != "pd_cluster":
        given = [k for k in PD_OPTIONS if getattr(req, k) is not None]
        if given:
            d.refuse("strategy", f"{', '.join(flag(k) for k in given)}: prefill/decode pool options need "
                     f"{flag('strategy')} pd_cluster (the strategy is {d.strategy!r}).")
        return
    d.default_pd = _default_pd(d.catalog, d.recipe, d.vk, d.hw)
    if req.prefill_nodes == 0 and req.decode_nodes == 0:
        d.co_located, d.node_count = True, 1
        return
    d.pd_nodes = {role: _pd_pool(d, role) for role in ("prefill", "decode")}


def _pd_pool(d: _Draft, role: str) -> dict[str, Any]:
    """One PD pool: its mode (the pool size follows it), size (raised to the mode's floor) and rank."""
    assert d.default_pd is not None
    req, r = d.req, d.r
    pool_modes = pd_pool_modes(r)
    nodes = d.refuse.checked(f"{role}_nodes", getattr(req, f"{role}_nodes"), 1, MAX_NODES)
    mode = getattr(req, f"{role}_mode")
    if mode is not None and mode not in pool_modes:
        d.refuse(f"{role}_mode", f"{flag(role + '_mode')} {mode!r} is not a pool mode {d.hf_id} offers.", pool_modes)
        mode = None
    obj = dict(d.default_pd[role])
    if mode is not None and mode != obj["parallelism"]:
        # the pool size follows the mode actually used (as clicking the mode pill does)
        obj["parallelism"] = mode
        obj["nodes"] = pd_pool_nodes(d.catalog, d.recipe, d.vk, d.hw, role, mode)
    if nodes is not None:
        obj["nodes"] = nodes
    floor = nodes_for_strategy(r, obj["parallelism"], d.gpn, d.hw)
    if obj["nodes"] < floor:
        if nodes is not None:
            d.refuse(f"{role}_nodes", f"A {obj['parallelism']} {role} pool of {d.hf_id} on {d.hw} needs at least "
                     f"{floor} nodes; got {flag(role + '_nodes')} {nodes}.",
                     [str(n) for n in range(floor, MAX_NODES + 1)])
        obj["nodes"] = floor
    if obj["nodes"] > MAX_POOL_NODES:  # derived from the recipe (issue #28.1): never walked
        d.refuse("strategy", f"The {role} pool of {d.hf_id} on {d.hw} would need more than {MAX_POOL_NODES:,} "
                 "nodes (from the recipe's vram_minimum_gb or strategy_min_gpus); pick another strategy or hardware.")
        obj["nodes"] = MAX_POOL_NODES
    rank = d.refuse.checked(f"{role}_rank", getattr(req, f"{role}_rank"), 0, obj["nodes"] - 1,
                            f" for a {obj['nodes']}-node {role} pool")
    if rank is not None:
        obj["rank"] = rank
    return obj


def _frontend_install(d: _Draft) -> None:
    """The OpenAI-compatible frontend, the PD router and the install method."""
    req = d.req
    d.frontend = req.frontend
    if d.frontend is not None and d.frontend not in d.catalog.frontends:
        d.refuse("frontend", f"{flag('frontend')} {d.frontend!r} is not a known frontend.",
                 list(d.catalog.frontends))
        d.frontend = None
    d.pd_router = req.pd_router
    if d.pd_router is not None:
        routers = pd_router_choices(d.catalog, d.recipe)
        if d.strategy != "pd_cluster":
            d.refuse("router", f"{flag('router')} applies to {flag('strategy')} pd_cluster only "
                     f"(the strategy is {d.strategy!r}).")
            d.pd_router = None
        elif d.pd_router not in routers:
            d.refuse("router", f"{flag('router')} {d.pd_router!r} is not available for {d.hf_id}.", routers)
            d.pd_router = None
    d.tabs = install_tabs(d.r, d.variant, d.hw)
    d.install = pick_install(d.refuse, d.hf_id, d.hw, d.tabs, req.install)


def pick_install(refuse: Refusals, hf_id: str, hw: str, tabs: Sequence[str], asked: str | None) -> str:
    """The install method asked for when this hardware offers it, else (refused) the first tab."""
    if asked is not None and asked not in tabs:
        refuse("install", f"{hf_id} does not offer a {asked} install on {hw} ({flag('install')} {asked})."
               if asked in INSTALL_METHODS else f"{flag('install')} {asked!r} is not an install method.", tabs)
        asked = None
    return asked or (tabs[0] if tabs else "docker")


def kv_choices(catalog: Catalog, recipe: Recipe, hw: str, strategy: str) -> list[str]:
    """KV offload ids usable with this hardware and strategy (taxonomy options, then Mooncake)."""
    return [k for k, reason in kv_option_reasons(catalog, recipe, hw, strategy) if reason is None]


def kv_option_reasons(catalog: Catalog, recipe: Recipe, hw: str, strategy: str) -> list[tuple[str, str | None]]:
    """Every KV offload id with the reason it is unavailable (``None`` when available)."""
    r = recipe.data
    p = _profile(catalog, hw)
    spec = as_map(catalog.strategies.get(strategy))
    out: list[tuple[str, str | None]] = []
    for k, opt in catalog.kv_offload_options.items():
        reason = None
        if gen(p) == "xpu":
            reason = "KV offload is not offered on Intel XPU"
        elif not kv_offload_allowed_for_strategy(opt, strategy, spec):
            reason = f"not available with {strategy}"
        elif not kv_offload_supported_for_recipe(as_map(opt), k, r):
            reason = "not verified for this recipe" if truthy(get(opt, "requires_opt_in")) else "unsupported by this recipe"
        elif not kv_offload_brand_supported(as_map(opt), p):
            reason = f"needs {' or '.join(as_list(get(opt, 'brands')))} hardware"
        out.append((k, reason))
    mooncake = "Mooncake needs scalable NVIDIA or AMD hardware the recipe does not opt out of"
    out += [(k, None if kv_store_offered(r, k, p, hw) else mooncake)
            for k, s in catalog.strategies.items() if get(s, "deploy_type") == "kv_store_lb"]
    return out


def pd_router_choices(catalog: Catalog, recipe: Recipe) -> list[str]:
    """PD router kinds (extensions §2.6): vllm-router, plus smg-grpc when the recipe opts in."""
    ids = pd_routers(catalog)
    if not is_map(get(recipe.model, "smg_grpc")):
        ids = [i for i in ids if i == "vllm-router"]
    return ids or ["vllm-router"]


def install_tabs(recipe: Mapping[str, Any], variant: Mapping[str, Any], hw: str) -> list[str]:
    """Install tabs present on this hardware (ext §2.5 per-hardware install merged over model.install)."""
    cfg = as_map(effective_install_config(recipe, variant, hw))
    return [t for t in ("pip", "docker") if cfg.get(t) is not False]


def single_node_tp_hint(catalog: Catalog, recipe: Recipe, state: PageState) -> str | None:
    """ui.md hardware hint: single-node TP uses fewer GPUs than the node has."""
    sel = state.selection
    if sel.strategy != "single_node_tp":
        return None
    p = _profile(catalog, sel.hw_id)
    variant = as_map(recipe.variants.get(sel.variant_key))
    tp = resolve_single_node_tp(recipe.data, variant, p, sel.strategy, sel.hw_id)
    g = p.get("gpu_count")
    if isinstance(g, int | float) and isinstance(tp, int | float) and tp < g:
        return f"TP={tp} uses {tp} of the node's {g} GPUs."
    return None

