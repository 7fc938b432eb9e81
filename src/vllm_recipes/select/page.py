"""The command builder's selection: page initial state (synthesis.md §4.8) plus user
choices (ui.md URL parameters / CLI options) -> a complete :class:`Selection`.

``strict`` requests (CLI, ``/api/resolve``) refuse anything that cannot be honoured
with a :class:`SelectionError` naming the valid choices; lenient requests (the web
page) drop an unusable parameter and record a notice, like the public site
rewriting an invalid URL.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.validate import MAX_POOL_NODES
from vllm_recipes.jsvalues import as_list, as_map, get, is_map, is_number, truthy

from .aliases import advanced_id, alias_table, canonical
from .defaults import (
    default_features,
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
    nodes_for_strategy,
    offered_strategies,
    pd_pool_modes,
    resolve_mode_key,
    variant_runs_on,
)
from .lookups import gen
from .nodes import node_count_issue, strategy_split
from .options import Style, flag, spell
from .selection import Selection

MAX_KV_INSTANCES = 16
MAX_QUERY_VALUE = 512


class SelectionError(ValueError):
    """A user choice that cannot be honoured; names the parameter and the valid choices."""

    def __init__(self, param: str, message: str, choices: Sequence[str] = ()) -> None:
        self.param = param
        #: the message with :func:`~.options.flag` markers (spelled per reader by :meth:`text`)
        self.template = message
        self.message = spell(message, "url")
        self.choices = list(choices)
        super().__init__(self.text("url"))

    def text(self, style: Style = "url") -> str:
        """The refusal with option names as the reader types them (``cli``: ``--prefill-rank``)."""
        return spell(self.template, style) + (f" Valid choices: {', '.join(self.choices)}." if self.choices else "")

    def to_dict(self) -> dict[str, Any]:
        return {"error": str(self), "param": self.param, "choices": self.choices}


@dataclass(frozen=True)
class AdvancedOption:
    id: str
    label: str
    args: tuple[str, ...]


#: Tuning presets of the builder's Advanced row (ui.md); ids are ours.
ADVANCED_OPTIONS: tuple[AdvancedOption, ...] = (
    AdvancedOption("max_batched_8k", "Max batched tokens 8192", ("--max-num-batched-tokens", "8192")),
    AdvancedOption("max_seqs_256", "Max sequences 256", ("--max-num-seqs", "256")),
    AdvancedOption("gpu_mem_095", "GPU memory utilization 0.95", ("--gpu-memory-utilization", "0.95")),
    AdvancedOption("max_model_len_auto", "Max model length auto", ("--max-model-len", "auto")),
    AdvancedOption("dcp_8", "Decode context parallel 8", ("--decode-context-parallel-size", "8")),
    AdvancedOption("no_flashinfer_autotune", "Disable FlashInfer autotune", ("--no-enable-flashinfer-autotune",)),
    AdvancedOption("ep_weight_filter", "EP weight filter", ("--enable-ep-weight-filter",)),
)


@dataclass(frozen=True)
class PageRequest:
    """Raw user choices; ``None`` means "not given" (take the default)."""

    hardware: str | None = None
    variant: str | None = None
    strategy: str | None = None
    nodes: int | None = None
    #: a full feature list (URL ``features=``) replacing the defaults
    features: tuple[str, ...] | None = None
    #: features to switch on / off relative to the defaults (CLI)
    add_features: tuple[str, ...] = ()
    remove_features: tuple[str, ...] = ()
    fmode: tuple[tuple[str, str], ...] = ()
    advanced: tuple[str, ...] = ()
    #: raw extra argument tokens (CLI ``--arg``)
    extra_args: tuple[str, ...] = ()
    kv_offload: str | None = None
    kv_instances: int | None = None
    kv_instance: int | None = None
    prefill_nodes: int | None = None
    decode_nodes: int | None = None
    prefill_mode: str | None = None
    decode_mode: str | None = None
    prefill_rank: int | None = None
    decode_rank: int | None = None
    frontend: str | None = None
    install: str | None = None
    pd_router: str | None = None
    task: str | None = None


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

    @property
    def hw_id(self) -> str:
        return self.selection.hw_id

    @property
    def variant_key(self) -> str:
        return self.selection.variant_key


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
    p = _profile(catalog, hw)
    gpn = p.get("gpu_count") if truthy(p.get("gpu_count")) else 8
    out = []
    for s in offered_strategies(r):
        spec = catalog.strategies.get(s)
        if not is_map(spec):
            continue
        dt = spec.get("deploy_type")
        if dt == "kv_store_lb":
            continue
        if node_count == 1 and dt == "multi_node":
            continue
        if node_count > 1 and dt == "single_node":
            continue
        if not is_strategy_reachable(r, s, dt, gpn, hw):
            continue
        out.append(s)
    return out


def _pd_base_nodes(catalog: Catalog, recipe: Recipe, variant: Mapping[str, Any], hw: str, role: str) -> int:
    """§4.8 pdNodes row before the mode floor: the recipe's pool size, else what the weights need."""
    r = recipe.data
    p = _profile(catalog, hw)
    raw = get(get(get(r.get("strategy_overrides"), "pd_cluster"), role), "nodes")
    if is_map(raw):
        raw = raw.get(hw) if is_number(raw.get(hw)) else raw.get("default")
    if is_number(raw):
        return int(raw) if math.isfinite(raw) and raw <= MAX_POOL_NODES else MAX_POOL_NODES + 1
    vm = effective_vram_min(variant, hw)
    vg = p.get("vram_gb")
    if is_number(vm) and vm > 0 and is_number(vg) and vg > 0:
        return bounded_nodes(vm / vg)
    return 1


def pd_pool_nodes(catalog: Catalog, recipe: Recipe, variant_key: str, hw: str, role: str, mode: str) -> int:
    """The size of a PD pool running in ``mode`` when the user did not give one.

    The recipe's (or the weights') pool size, raised to the floor of the mode actually
    used. A mode override therefore resizes the pool: a 2-node DEP default becomes a
    1-node TP pool when TP fits one node (docs/reference/synthesis.md §4.8).
    """
    variant = as_map(as_map(recipe.data.get("variants")).get(variant_key))
    p = _profile(catalog, hw)
    gpn = p.get("gpu_count") if truthy(p.get("gpu_count")) else 8
    return max(_pd_base_nodes(catalog, recipe, variant, hw, role), nodes_for_strategy(recipe.data, mode, gpn, hw))


def _default_pd(catalog: Catalog, recipe: Recipe, variant: Mapping[str, Any], hw: str) -> dict[str, Any]:
    """§4.8 pdNodes row: per-role nodes and parallelism for the page's initial PD state."""
    r = recipe.data
    p = _profile(catalog, hw)
    gpn = p.get("gpu_count") if truthy(p.get("gpu_count")) else 8
    modes = pd_pool_modes(r)
    out = {}
    for role in ("prefill", "decode"):
        so_role = as_map(get(get(r.get("strategy_overrides"), "pd_cluster"), role))
        nodes = _pd_base_nodes(catalog, recipe, variant, hw, role)
        par = so_role.get("parallelism") or get(get(catalog.strategies.get("pd_cluster"), role), "parallelism") or "tp"
        if par not in modes:
            par = modes[0]
        reachable = [m for m in modes if is_strategy_reachable(r, m, "multi_node", gpn, hw)]
        if par not in reachable:
            par = reachable[0] if reachable else "tp"
        nodes = max(int(nodes), nodes_for_strategy(r, par, gpn, hw))
        out[role] = {"nodes": nodes, "rank": 0, "parallelism": par}
    return out




#: folded public-site / our advanced-option id -> our id (D1: public page URLs open the same selection)
ADVANCED_ALIASES = alias_table((o.id, o.args) for o in ADVANCED_OPTIONS)
POOL_MODE_IDS = ("tp", "tep", "dep")


_EMPTY_REQUEST = PageRequest()


def canonical_request(catalog: Catalog, recipe: Recipe, req: PageRequest) -> PageRequest:
    """``req`` with every id spelled as the catalog spells it: ids match regardless of
    letter case, and the public site's advanced-option ids map to ours. Returns ``req``
    itself when it is already canonical (the common case: links the page wrote)."""
    if req == _EMPTY_REQUEST:
        return req
    feats = as_map(recipe.data.get("features"))
    changes: dict[str, Any] = {}

    def one(name: str, choices: Collection[str]) -> None:
        value = getattr(req, name)
        if value is not None and value not in choices:
            fixed = canonical(value, choices)
            if fixed != value:
                changes[name] = fixed

    def many(name: str) -> None:
        values = getattr(req, name)
        if values and any(v not in feats for v in values):
            changes[name] = tuple(canonical(v, feats) for v in values)

    one("hardware", catalog.hardware_profiles)
    one("variant", recipe.variants)
    one("strategy", catalog.strategies)
    many("features")
    many("add_features")
    many("remove_features")
    if req.fmode:
        fmode = []
        for f, m in req.fmode:
            f = canonical(f, feats)
            fmode.append((f, canonical(m, as_map(get(feats.get(f), "modes")))))
        if tuple(fmode) != req.fmode:
            changes["fmode"] = tuple(fmode)
    if req.advanced:
        advanced = tuple(advanced_id(a, ADVANCED_ALIASES) for a in req.advanced)
        if advanced != req.advanced:
            changes["advanced"] = advanced
    if req.kv_offload is not None:
        one("kv_offload", (*catalog.kv_offload_options, *catalog.strategies))
    one("prefill_mode", POOL_MODE_IDS)
    one("decode_mode", POOL_MODE_IDS)
    one("frontend", catalog.frontends)
    one("install", ("pip", "docker"))
    if req.pd_router is not None:
        routers = get(catalog.strategies.get("pd_cluster"), "routers")
        one("pd_router", tuple(routers) if is_map(routers) else ("vllm-router",))
    return replace(req, **changes) if changes else req


def default_hardware(catalog: Catalog, recipe: Recipe, variant_key: str) -> str:
    """:func:`pick_default_hardware` of a recipe's variant, remembered per catalog.

    A page asks for it once per pill link (a hundred times a page: each link's
    URL leaves the default hardware out), and it scans every hardware profile.
    The entry names the profiles and recipe data it was made from: catalogs made
    with ``dataclasses.replace`` share one memo but may differ in either.
    """
    key = ("default_hardware", recipe.rel_path, variant_key)
    profiles, data = catalog.hardware_profiles, recipe.data
    got = catalog.memo.get(key)
    if got is not None and got[0] is profiles and got[1] is data:
        return got[2]
    hw = pick_default_hardware(profiles, as_map(as_map(data.get("variants")).get(variant_key)), data)
    catalog.memo[key] = (profiles, data, hw)
    return hw


def build_state(catalog: Catalog, recipe: Recipe, req: PageRequest, *, strict: bool = True) -> PageState:
    """Resolve a request into a complete builder state (see module docstring)."""
    r = recipe.data
    notices: list[str] = []
    req = canonical_request(catalog, recipe, req)

    def refuse(param: str, message: str, choices: Sequence[str] = ()) -> None:
        if strict:
            raise SelectionError(param, message, choices)
        notices.append(spell(message, "url"))

    def checked(param: str, v: int | None, lo: int, hi: int, context: str = "") -> int | None:
        """An integer parameter within ``[lo, hi]``, else refused (strict) or dropped (lenient)."""
        if v is not None and not (lo <= v <= hi):
            span = f"be {lo}" if lo == hi else f"be between {lo} and {hi}"
            refuse(param, f"{flag(param)} must {span}{context}; got {v}.",
                   [str(n) for n in range(lo, hi + 1)] if hi - lo < 16 else [])
            return None
        return v

    variants = as_map(r.get("variants"))
    if recipe.is_omni:
        raise SelectionError("model", f"{recipe.hf_id} is an omni recipe; it has tasks, not serving strategies.")
    if req.task is not None:
        refuse("task", f"{flag('task')} applies to omni recipes only; {recipe.hf_id} has serving strategies.")
    vk = req.variant or "default"
    if vk not in variants:
        refuse("variant", f"{flag('variant')} {vk!r} is not a variant of {recipe.hf_id}.", list(variants))
        vk = "default"
    variant = as_map(variants.get(vk))

    hw = req.hardware
    if hw is not None:
        reason = hardware_block_reason(catalog, recipe, variant, hw)
        if reason:
            choices = hardware_choices(catalog, recipe, variant)
            refuse("hardware", f"{flag('hardware')} {hw!r} is not available for {recipe.hf_id} variant {vk!r}: {reason}.",
                   choices)
            hw = None
    if hw is None:
        hw = default_hardware(catalog, recipe, vk)
    profile = _profile(catalog, hw)

    if not is_scalable(profile) and not fits_single_node(profile, variant, hw):
        fit = pick_fitting_variant(r, profile, hw)
        if req.variant is not None and fit != vk:
            need = effective_vram_min(variant, hw)
            refuse("variant", f"{flag('variant')} {vk!r} needs {need} GB, more than one {hw} node "
                   f"({profile.get('vram_gb')} GB), and {hw} cannot scale out.",
                   [k for k, v in variants.items() if variant_runs_on(profile, as_map(v), hw)])
        if fit is not None and fit != vk:
            vk, variant = fit, as_map(variants[fit])
    if not variant_runs_on(profile, variant, hw) and strict and req.hardware is not None:
        raise SelectionError("variant", f"{flag('variant')} {vk!r} does not run on {hw}.",
                             [k for k, v in variants.items() if variant_runs_on(profile, as_map(v), hw)])

    scalable = is_scalable(profile)
    offered = offered_strategies(r)
    gpn = profile.get("gpu_count") if truthy(profile.get("gpu_count")) else 8
    has_multi = any(isinstance(s, str) and (s.startswith("multi_node_") or s == "pd_cluster") for s in offered)
    if not has_multi or not scalable:
        default_nodes = 1
    else:
        default_nodes = 2 if not fits_single_node(profile, variant, hw) else 1

    strategies = catalog.strategies
    strategy = req.strategy
    req_nodes = checked("nodes", req.nodes, 1, MAX_NODES)
    node_count = req_nodes if req_nodes is not None else default_nodes
    if req_nodes is not None and req_nodes > 1 and not scalable:
        refuse("nodes", f"{flag('nodes')} {req_nodes}: {hw} cannot scale beyond one node.", ["1"])
        node_count, req_nodes = 1, None

    if strategy is not None:
        spec = strategies.get(strategy)
        dt = get(spec, "deploy_type")
        all_offered = [s for s in offered if get(strategies.get(s), "deploy_type") not in (None, "kv_store_lb")]
        if strategy not in offered or not is_map(spec) or dt == "kv_store_lb":
            refuse("strategy", f"{flag('strategy')} {strategy!r} is not offered by {recipe.hf_id}.", all_offered)
            strategy = None
        elif not is_strategy_supported_on_hardware(r, strategy, profile, hw):
            ok = [s for s in all_offered if is_strategy_supported_on_hardware(r, s, profile, hw)]
            refuse("strategy", f"{flag('strategy')} {strategy!r} is not supported on {hw} for {recipe.hf_id}.", ok)
            strategy = None
        elif not is_strategy_reachable(r, strategy, dt, gpn, hw):
            refuse("strategy", f"{flag('strategy')} {strategy!r} needs more GPUs than {MAX_NODES} {hw} nodes provide.",
                   [s for s in all_offered if is_strategy_supported_on_hardware(r, s, profile, hw)
                    and is_strategy_reachable(r, s, get(strategies.get(s), "deploy_type"), gpn, hw)])
            strategy = None
        elif not scalable and (dt == "multi_node" or strategy == "pd_cluster"):
            refuse("strategy", f"{flag('strategy')} {strategy!r} needs several nodes and {hw} cannot scale out.",
                   [s for s in all_offered if get(strategies.get(s), "deploy_type") == "single_node"])
            strategy = None
        if strategy is not None:
            if req_nodes is None:
                if dt == "multi_node":
                    node_count = max(2, node_count, nodes_for_strategy(r, strategy, gpn, hw))
                elif dt == "single_node":
                    node_count = 1
            elif dt == "multi_node" and node_count < 2:
                refuse("nodes", f"{flag('strategy')} {strategy!r} runs on 2 or more nodes; got {flag('nodes')} {node_count}.",
                       [str(n) for n in range(max(2, nodes_for_strategy(r, strategy, gpn, hw)), MAX_NODES + 1)])
                node_count = max(2, nodes_for_strategy(r, strategy, gpn, hw))
            elif dt == "single_node" and node_count > 1:
                refuse("nodes", f"{flag('strategy')} {strategy!r} runs on one node; got {flag('nodes')} {node_count}.", ["1"])
                node_count = 1

    def pick_active(n: int) -> tuple[list[str], str, bool]:
        """§4.8 candidates and active strategy at ``n`` nodes, and whether it is a supported candidate."""
        cands = candidate_strategies(catalog, recipe, hw, n)
        rec = recommend_strategy(r, n)
        supported = [s for s in cands if is_strategy_supported_on_hardware(r, s, profile, hw)]
        if rec in supported:
            return cands, rec, True
        return cands, supported[0] if supported else (cands[0] if cands else rec), bool(supported)

    def floor_nodes(s: str) -> int:
        """§4.8 reconcile: the node count ``s`` is raised to (1 when nothing is raised)."""
        if s == "pd_cluster" or not scalable:
            return 1
        needed = nodes_for_strategy(r, s, gpn, hw)
        return needed if needed <= MAX_NODES else 1

    cands, active, ok = pick_active(node_count)
    if strategy is None and req_nodes is not None and not ok:
        alt = pick_active(default_nodes)
        if alt[2]:
            refuse("nodes", f"{flag('nodes')} {req_nodes}: no strategy {recipe.hf_id} offers on {hw} runs on "
                   f"{req_nodes} node(s).", [str(default_nodes)])
            node_count, req_nodes = default_nodes, None
            cands, active, ok = alt
    if strategy is None and req_nodes is None and node_count < floor_nodes(active):
        # the reconcile moved the node count: candidates and recommendation follow it
        node_count = floor_nodes(active)
        cands, active, ok = pick_active(node_count)
    recommended = active
    if strategy is None:
        strategy = active
    dt = get(strategies.get(strategy), "deploy_type")
    if dt == "single_node" and node_count > 1 and req_nodes is None:
        node_count = 1
        cands = candidate_strategies(catalog, recipe, hw, node_count)
    needed = floor_nodes(strategy)
    if node_count < needed:
        if req_nodes is not None:
            refuse("nodes", f"{flag('strategy')} {strategy!r} needs at least {needed} {hw} nodes; "
                   f"got {flag('nodes')} {node_count}.",
                   [str(n) for n in range(needed, MAX_NODES + 1)])
        node_count = needed
    # a node count whose tensor-parallel size the model's heads cannot split (select/nodes.py)
    issue = node_count_issue(r, strategy_split(as_map(strategies.get(strategy))), gpn, node_count)
    if issue is not None and issue.severity == "error" and req_nodes is not None:
        refuse("nodes", f"{flag('nodes')} {node_count}: {issue.problem()}.", [str(n) for n in issue.valid])
        node_count = min(issue.valid, key=lambda n: (abs(n - node_count), n), default=node_count)

    # --- features ---------------------------------------------------------------
    feats = as_map(r.get("features"))
    defaults = default_features(r, hw, vk)
    if req.features is not None:
        enabled = list(dict.fromkeys(req.features))
        for f in enabled:
            if f not in feats:
                refuse("features", f"Unknown feature {f!r}.", list(feats))
        enabled = [f for f in enabled if f in feats]
        if not enabled and req.features:
            enabled = list(defaults)  # lenient: a list of only unknown names is treated as absent
    else:
        enabled = list(defaults)
    for f in dict.fromkeys(req.add_features):
        if f in req.remove_features:
            refuse("feature", f"{flag('feature')} {f} and {flag('no-feature')} {f} contradict each other; "
                   f"give one of them.")
    for f in req.remove_features:
        if f not in feats:
            refuse("no-feature", f"Unknown feature {f!r}.", list(feats))
        enabled = [x for x in enabled if x != f]
    for f in req.add_features:
        if f not in feats:
            refuse("feature", f"Unknown feature {f!r}.", list(feats))
            continue
        for other in feature_conflicts(r, f):
            if other in req.add_features or (req.features is not None and other in req.features):
                refuse("feature", f"Features {f!r} and {other!r} are mutually exclusive; enable only one.")
            enabled = [x for x in enabled if x != other]
        if f not in enabled:
            enabled.append(f)
    if req.features is not None:
        for f in list(enabled):
            for other in feature_conflicts(r, f):
                if other in enabled and f in enabled:
                    refuse("features", f"Features {f!r} and {other!r} are mutually exclusive; enable only one.")
                    enabled = [x for x in enabled if x != other]
    explicit = set(req.add_features) | (set(req.features) if req.features is not None else set())
    for f in enabled:
        feat = as_map(feats.get(f))
        if f in explicit and not is_feature_allowed_for_strategy(feat, strategy):
            refuse("feature", f"Feature {f!r} is not available with strategy {strategy!r}.",
                   [s for s in as_list(feat.get("strategies")) if isinstance(s, str)])

    modes: list[tuple[str, str]] = []
    default_modes: dict[str, str] = {}
    for f, feat in feats.items():
        if not is_map(feat) or not truthy(feat.get("modes")):
            continue
        dm = resolve_mode_key(feat, f, variant, vk, profile, hw, None)
        if dm is not None:
            default_modes[f] = dm
    for f, m in req.fmode:
        feat = as_map(feats.get(f))
        if f not in feats or not truthy(feat.get("modes")):
            refuse("fmode", f"Feature {f!r} has no modes ({flag('fmode')} {f}={m}).",
                   [k for k, v in feats.items() if is_map(v) and truthy(v.get("modes"))])
            continue
        allowed = allowed_modes(feat, vk, profile, hw)
        if m not in allowed:
            refuse("fmode", f"{flag('fmode')} {f}={m}: mode {m!r} of feature {f!r} is not available for variant {vk!r} on {hw}.", allowed)
            continue
        modes.append((f, m))

    # --- advanced -----------------------------------------------------------------
    adv_by_id = {o.id: o for o in ADVANCED_OPTIONS}
    available_adv = [o.id for o in advanced_options_for(r, strategy)]
    advanced: list[tuple[str, tuple[str, ...]]] = []
    for a in req.advanced:
        if a not in available_adv:
            refuse("advanced", f"{flag('advanced')} {a!r} is unknown or not available for this recipe and "
                   f"strategy.", available_adv)
            continue
        advanced.append((a, adv_by_id[a].args))
    if req.extra_args:
        advanced.append(("arg", tuple(req.extra_args)))

    # --- KV offload ---------------------------------------------------------------------
    kv = req.kv_offload
    kv_instances: Any = None
    if kv is not None and kv not in ("", "off"):
        opts = kv_choices(catalog, recipe, hw, strategy)
        if kv not in opts:
            refuse("kv_offload", f"{flag('kv_offload')} {kv!r} is not available for {strategy!r} on {hw}.", opts)
            kv = None
        elif get(strategies.get(kv), "deploy_type") == "kv_store_lb":
            count = checked("kv_instances", req.kv_instances, 1, MAX_KV_INSTANCES)
            default_count = get(strategies.get(kv), "default_instances") or 2
            n = count if count is not None else default_count
            current = checked("kv_instance", req.kv_instance, 0, n - 1, f" for {n} Mooncake instances")
            if count is not None or current is not None:
                kv_instances = {"count": count, "current": current or 0}
    if (req.kv_instances is not None or req.kv_instance is not None) and \
            get(strategies.get(kv or ""), "deploy_type") != "kv_store_lb":
        refuse("kv_instances", f"{flag('kv_instances')} and {flag('kv_instance')} apply to a Mooncake KV store "
               f"only; pick one with {flag('kv_offload')}.",
               [k for k, spec_k in strategies.items() if get(spec_k, "deploy_type") == "kv_store_lb"])
    if kv is None or kv in ("", "off"):
        kv = None

    # --- PD pools ---------------------------------------------------------------------
    pd_nodes: Any = None
    default_pd = None
    co_located = False
    if strategy == "pd_cluster":
        default_pd = _default_pd(catalog, recipe, variant, hw)
        pool_modes = pd_pool_modes(r)
        if req.prefill_nodes == 0 and req.decode_nodes == 0:
            co_located = True
            node_count = 1
        else:
            pd_nodes = {}
            for role in ("prefill", "decode"):
                nodes = getattr(req, f"{role}_nodes")
                mode = getattr(req, f"{role}_mode")
                rank = getattr(req, f"{role}_rank")
                nodes = checked(f"{role}_nodes", nodes, 1, MAX_NODES)
                if mode is not None and mode not in pool_modes:
                    refuse(f"{role}_mode", f"{flag(role + '_mode')} {mode!r} is not a pool mode {recipe.hf_id} offers.",
                           pool_modes)
                    mode = None
                obj = dict(default_pd[role])
                if mode is not None and mode != obj["parallelism"]:
                    # the pool size follows the mode actually used (as clicking the mode pill does)
                    obj["parallelism"] = mode
                    obj["nodes"] = pd_pool_nodes(catalog, recipe, vk, hw, role, mode)
                if nodes is not None:
                    obj["nodes"] = nodes
                floor = nodes_for_strategy(r, obj["parallelism"], gpn, hw)
                if obj["nodes"] < floor:
                    if nodes is not None:
                        refuse(f"{role}_nodes", f"A {obj['parallelism']} {role} pool of {recipe.hf_id} on {hw} "
                               f"needs at least {floor} nodes; got {flag(role + '_nodes')} {nodes}.",
                               [str(n) for n in range(floor, MAX_NODES + 1)])
                    obj["nodes"] = floor
                if obj["nodes"] > MAX_POOL_NODES:  # derived from the recipe (issue #28.1): never walked
                    refuse("strategy", f"The {role} pool of {recipe.hf_id} on {hw} would need more than "
                           f"{MAX_POOL_NODES:,} nodes (from the recipe's vram_minimum_gb or strategy_min_gpus); "
                           "pick another strategy or hardware.")
                    obj["nodes"] = MAX_POOL_NODES
                rank = checked(f"{role}_rank", rank, 0, obj["nodes"] - 1,
                               f" for a {obj['nodes']}-node {role} pool")
                if rank is not None:
                    obj["rank"] = rank
                pd_nodes[role] = obj
    elif any(v is not None for v in (req.prefill_nodes, req.decode_nodes, req.prefill_mode, req.decode_mode,
                                     req.prefill_rank, req.decode_rank)):
        given = [k for k in ("prefill_nodes", "decode_nodes", "prefill_mode", "decode_mode", "prefill_rank",
                             "decode_rank") if getattr(req, k) is not None]
        refuse("strategy", f"{', '.join(flag(k) for k in given)}: prefill/decode pool options need "
               f"{flag('strategy')} pd_cluster (the strategy is {strategy!r}).")

    # --- frontend / install / router ---------------------------------------------------------
    frontend = req.frontend
    if frontend is not None and frontend not in catalog.frontends:
        refuse("frontend", f"{flag('frontend')} {frontend!r} is not a known frontend.", list(catalog.frontends))
        frontend = None
    pd_router = req.pd_router
    if pd_router is not None:
        routers = pd_router_choices(catalog, recipe)
        if strategy != "pd_cluster" or pd_router not in routers:
            if strategy != "pd_cluster":
                refuse("router", f"{flag('router')} applies to {flag('strategy')} pd_cluster only "
                       f"(the strategy is {strategy!r}).")
            else:
                refuse("router", f"{flag('router')} {pd_router!r} is not available for {recipe.hf_id}.", routers)
            pd_router = None
    tabs = install_tabs(r, variant, hw)
    install = req.install or (tabs[0] if tabs else "docker")
    if req.install is not None and req.install not in tabs:
        if req.install in ("pip", "docker"):
            refuse("install", f"{recipe.hf_id} does not offer a {req.install} install on {hw} "
                       f"({flag('install')} {req.install}).", tabs)
        else:
            refuse("install", f"{flag('install')} {req.install!r} is not an install method.", tabs)
        install = tabs[0] if tabs else "docker"

    sel = Selection(
        variant_key=vk, hw_id=hw, strategy=strategy, node_count=node_count, features=tuple(enabled),
        feature_modes=tuple(modes), advanced=tuple(advanced), pd_nodes=pd_nodes, kv_offload=kv,
        kv_instances=kv_instances, frontend=frontend, pd_router=pd_router,
    )
    return PageState(
        selection=sel, install=install, install_tabs=tuple(tabs), recommended_strategy=recommended,
        default_features=tuple(defaults), default_modes=default_modes, default_pd=default_pd,
        candidates=tuple(cands), notices=tuple(notices), pd_co_located=co_located, request=req,
    )


def advanced_options_for(recipe: Mapping[str, Any], strategy: str) -> list[AdvancedOption]:
    model = as_map(recipe.get("model"))
    out = []
    for o in ADVANCED_OPTIONS:
        if o.id == "dcp_8" and not truthy(model.get("supports_dcp")):
            continue
        if o.id == "no_flashinfer_autotune" and not truthy(model.get("flashinfer_autotune")):
            continue
        if o.id == "ep_weight_filter" and not (strategy.endswith("_tep") or strategy.endswith("_dep")):
            continue
        out.append(o)
    return out


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
    for k, s in catalog.strategies.items():
        if get(s, "deploy_type") != "kv_store_lb":
            continue
        reason = None
        if not kv_store_offered(r, k, p, hw):
            reason = "Mooncake needs scalable NVIDIA or AMD hardware the recipe does not opt out of"
        out.append((k, reason))
    return out


def pd_router_choices(catalog: Catalog, recipe: Recipe) -> list[str]:
    """PD router kinds (extensions §2.6): vllm-router, plus smg-grpc when the recipe opts in."""
    routers = get(catalog.strategies.get("pd_cluster"), "routers")
    ids = list(routers) if is_map(routers) else ["vllm-router"]
    if not is_map(get(recipe.model, "smg_grpc")):
        ids = [i for i in ids if i == "vllm-router"]
    return ids or ["vllm-router"]


def install_tabs(recipe: Mapping[str, Any], variant: Mapping[str, Any], hw: str) -> list[str]:
    """Install tabs present on this hardware (ext §2.5 per-hardware install merged over model.install)."""
    base = get(recipe.get("model"), "install")
    cfg = dict(base) if is_map(base) else {}
    over = get(get(variant.get("hardware_overrides"), hw), "install")
    if is_map(over):
        cfg.update(over)
    return [t for t in ("pip", "docker") if cfg.get(t) is not False]


def single_node_tp_hint(catalog: Catalog, recipe: Recipe, state: PageState) -> str | None:
    """ui.md hardware hint: single-node TP uses fewer GPUs than the node has."""
    sel = state.selection
    if sel.strategy != "single_node_tp":
        return None
    p = _profile(catalog, sel.hw_id)
    variant = as_map(as_map(recipe.data.get("variants")).get(sel.variant_key))
    tp = resolve_single_node_tp(recipe.data, variant, p, sel.strategy, sel.hw_id)
    g = p.get("gpu_count")
    if is_number(g) and is_number(tp) and tp < g:
        return f"TP={tp} uses {tp} of the node's {g} GPUs."
    return None

