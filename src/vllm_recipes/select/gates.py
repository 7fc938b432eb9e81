"""Gates and predicates (synthesis.md §3, extensions.md §2.2/§2.4).

Pure functions over frozen recipe/catalog data. ``hw_id`` is passed wherever the
effective per-hardware VRAM budget (extensions §2.4) can change the answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from vllm_recipes.catalog.loader import MAX_POOL_NODES, POOL_MODES
from vllm_recipes.jsvalues import (
    EMPTY,
    as_list,
    as_map,
    first_present,
    get,
    is_list,
    is_map,
    is_number,
    number_or,
    truthy,
)

from .lookups import gen, keyed

MAX_NODES = 16
#: Pairs that conflict even when no recipe says so (extensions §2.7).
BUILTIN_CONFLICTS = (("text_only", "encoder_parallel"),)

_TP_POOL_RE = re.compile(r"(^|_)tp(_pp|_dp)?$")


def _allows(allow: Any, value: Any) -> bool:
    """An allowlist admits ``value``; an absent or empty one admits everything."""
    return not is_list(allow) or len(allow) == 0 or value in allow


# --- §3.1 precision -------------------------------------------------------

def constraint(variant: Mapping[str, Any]) -> Mapping[str, Any] | None:
    ph = variant.get("precision_hardware")
    if truthy(ph):
        return ph if is_map(ph) else None
    if variant.get("precision") in ("nvfp4", "fp4"):
        return {"brand": "NVIDIA", "generation": "blackwell"}
    return None


def is_precision_compatible(profile: Mapping[str, Any], variant: Mapping[str, Any]) -> bool:
    c = constraint(variant)
    if not c:
        return True
    if truthy(c.get("brand")) and profile.get("brand") != c.get("brand"):
        return False
    if not truthy(c.get("generation")):
        return True
    g = profile.get("generation") if truthy(profile.get("generation")) else profile.get("gpu_generation")
    return c.get("generation") in (g if is_list(g) else [g])


# --- §3.2-3.4 allowlists ---------------------------------------------------

def is_hardware_supported(recipe: Mapping[str, Any], hw_id: str) -> bool:
    return get(get(get(recipe, "meta"), "hardware"), hw_id) != "unsupported"


def is_variant_hardware_supported(variant: Mapping[str, Any], hw_id: str,
                                  profile: Mapping[str, Any] = EMPTY) -> bool:
    """The variant's ``supported_hardware`` allowlist, when it has one, names ``hw_id``."""
    allow = variant.get("supported_hardware")
    return not is_list(allow) or len(allow) == 0 or names_hardware(allow, hw_id, profile)


def names_hardware(entries: Iterable[Any], hw_id: str, profile: Mapping[str, Any]) -> bool:
    """Some entry is ``hw_id`` or ``arch:<arch>`` of its profile (extensions §2.2; other values name nothing)."""
    return any(isinstance(e, str) and (profile.get("arch") == e[5:] if e.startswith("arch:") else e == hw_id)
               for e in entries)


def is_listed(recipe: Mapping[str, Any], hw_id: str, profile: Mapping[str, Any]) -> bool:
    """§3.4: restricted profiles are offered only when the recipe declares them."""
    hw = get(get(recipe, "meta"), "hardware")
    return not truthy(profile.get("restricted")) or (is_map(hw) and hw_id in hw)


# --- §3.5 fit and scalability ---------------------------------------------

def effective_vram_min(variant: Mapping[str, Any], hw_id: str | None) -> Any:
    """The variant's GPU-resident budget on ``hw_id`` (extensions §2.4)."""
    if hw_id:
        ho = get(get(variant, "hardware_overrides"), hw_id)
        if is_map(ho) and is_number(ho.get("vram_minimum_gb")):
            return ho["vram_minimum_gb"]
    return variant.get("vram_minimum_gb")


def vram_min_gb(variant: Mapping[str, Any], hw_id: str | None) -> float:
    """:func:`effective_vram_min` as a number, 0 when unset."""
    v = effective_vram_min(variant, hw_id)
    return v if is_number(v) and truthy(v) else 0


def fits_single_node(profile: Mapping[str, Any], variant: Mapping[str, Any] | None,
                     hw_id: str | None = None) -> bool:
    node = number_or(profile.get("vram_gb"), 0)
    model = vram_min_gb(variant or EMPTY, hw_id)
    return model <= 0 or node <= 0 or model <= node


def is_scalable(profile: Mapping[str, Any]) -> bool:
    return profile.get("scalable") is not False


def spans_nodes(strategy: str, deploy_type: Any) -> bool:
    """Whether a strategy needs hardware that scales past one node: multi-node deployments and PD."""
    return deploy_type == "multi_node" or strategy == "pd_cluster"


def variant_runs_on(profile: Mapping[str, Any], variant: Mapping[str, Any], hw_id: str | None) -> bool:
    return (is_precision_compatible(profile, variant)
            and (not hw_id or is_variant_hardware_supported(variant, hw_id, profile))
            and (is_scalable(profile) or fits_single_node(profile, variant, hw_id)))


def pd_fits_single_node(profile: Mapping[str, Any] | None, variant: Mapping[str, Any] | None,
                        hw_id: str | None = None) -> bool:
    if profile is None or variant is None or number_or(profile.get("gpu_count"), 0) < 2:
        return False
    return number_or(profile.get("vram_gb"), 0) >= 2 * vram_min_gb(variant, hw_id)


# --- §3.6 strategies --------------------------------------------------------

def is_strategy_supported_on_hardware(recipe: Mapping[str, Any], s: str, profile: Mapping[str, Any],
                                      hw_id: str | None) -> bool:
    gate = keyed(get(get(recipe, "strategy_hardware"), s), profile, hw_id)
    return gate != "unsupported" if gate is not None else s in as_list(recipe.get("compatible_strategies"))


def offered_strategies(recipe: Mapping[str, Any]) -> list[str]:
    """§3.6 ``effectiveCompatibleStrategies``: listed, then ``supported`` opt-ins."""
    out = list(as_list(recipe.get("compatible_strategies")))
    for s, m in as_map(recipe.get("strategy_hardware")).items():
        if s not in out and is_map(m) and any(v == "supported" for v in m.values()):
            out.append(s)
    return out


# --- §3.7 GPU floors ----------------------------------------------------------

def _min_gpus_from_block(block: Any, key: str) -> Any:
    if is_number(block):
        return block
    if not is_map(block):
        return 0
    v = first_present(block.get(key), block.get("multi_node_" + key), block.get("single_node_" + key))
    return 0 if v is None else v


def min_gpus_for_strategy(recipe: Mapping[str, Any], key: str, hw_id: str | None) -> Any:
    cfg = recipe.get("strategy_min_gpus")
    if is_number(cfg):
        return cfg
    if not is_map(cfg):
        return 0
    a = _min_gpus_from_block(cfg, key)
    b = _min_gpus_from_block(cfg.get(hw_id), key) if hw_id else 0
    try:
        return max(a, b)
    except TypeError:
        return a if is_number(a) else (b if is_number(b) else 0)


def bounded_nodes(n: float) -> int:
    """A derived node count, at most one over :data:`MAX_POOL_NODES` (issue #28.1): ``vram_minimum_gb:
    1e300`` must give "over the limit", never a 300-digit count that every loop then walks."""
    if not math.isfinite(n) or n > MAX_POOL_NODES:
        return MAX_POOL_NODES + 1
    return max(1, math.ceil(n))


def node_gpus(gpu_count: Any) -> int | float:
    """A hardware profile's GPUs per node from its ``gpu_count``, else 8. The catalog holds a present count
    to a positive number (``PosNum``), so the fallback serves an absent count (a profile without one, or an
    unknown hardware id's empty profile) and a count the catalog never checked. synth's ``_gpu_count``
    differs on purpose: there an absent count is one GPU."""
    return gpu_count if is_number(gpu_count) and gpu_count > 0 else 8


def nodes_for_strategy(recipe: Mapping[str, Any], key: str, gpus_per_node: Any, hw_id: str | None) -> int:
    mg = min_gpus_for_strategy(recipe, key, hw_id)
    per = node_gpus(gpus_per_node)
    if not is_number(mg) or math.isnan(mg / per):
        return 1
    return bounded_nodes(mg / per)


def is_strategy_reachable(recipe: Mapping[str, Any], key: str, deploy_type: Any, gpus_per_node: Any,
                          hw_id: str | None) -> bool:
    max_nodes = MAX_NODES if deploy_type in ("multi_node", "pd_cluster") else 1
    per = node_gpus(gpus_per_node)
    mg = min_gpus_for_strategy(recipe, key, hw_id)
    return not is_number(mg) or max_nodes * per >= mg


def follower_ranks(n: Any) -> list[int]:
    n = n if is_number(n) else 1
    return list(range(1, int(n))) if n > 1 else []


# --- §3.8 PD pool modes ---------------------------------------------------------

def pd_pool_modes(recipe: Mapping[str, Any]) -> list[str]:
    found: set[str] = set()
    for s in offered_strategies(recipe):
        if not isinstance(s, str):
            continue
        if (last := s.rsplit("_", 1)[-1]) in ("dep", "tep"):
            found.add(last)
        elif _TP_POOL_RE.search(s):
            found.add("tp")
    modes = [m for m in POOL_MODES if m in (found or {"tp"})]
    restrict = get(get(get(recipe, "strategy_overrides"), "pd_cluster"), "pool_modes")
    return [m for m in modes if _allows(restrict, m)] or modes


# --- §3.9 feature modes ----------------------------------------------------------

def allowed_modes(feature: Mapping[str, Any], variant_key: str, profile: Mapping[str, Any],
                  hw_id: str | None) -> list[str]:
    """The feature's modes for this variant (its ``variants`` allowlist) that its ``hardware`` table does
    not mark ``unsupported`` on this generation or id."""
    modes = feature.get("modes") if is_map(feature) else None
    if not is_map(modes):
        return []
    g = gen(profile)

    def allowed(mode: Mapping[str, Any]) -> bool:
        allow, hw = mode.get("variants"), mode.get("hardware")
        if not _allows(allow, variant_key):
            return False
        return not is_map(hw) or not ((isinstance(g, str) and hw.get(g) == "unsupported")
                                      or (hw_id and hw.get(hw_id) == "unsupported"))

    return [k for k, m in modes.items() if allowed(as_map(m))]


def resolve_mode_key(feature: Mapping[str, Any], feature_key: str, variant: Mapping[str, Any],
                     variant_key: str, profile: Mapping[str, Any], hw_id: str | None,
                     selected: str | None) -> str | None:
    allowed = allowed_modes(feature, variant_key, profile, hw_id)
    if not allowed:
        return None
    for cand in (selected, get(get(variant, "default_modes"), feature_key), feature.get("default_mode")):
        if truthy(cand) and cand in allowed:
            return cand
    return allowed[0]


def default_mode_for(feature: Mapping[str, Any]) -> str | None:
    """UI helper: ``default_mode`` if it names a mode, else the first mode key."""
    modes = as_map(feature.get("modes"))
    dm = feature.get("default_mode")
    if truthy(dm) and dm in modes:
        return dm
    return next(iter(modes), None)


# --- §3.10 feature strategy allowlist ------------------------------------------

def is_feature_allowed_for_strategy(feature: Mapping[str, Any], strategy_name: str) -> bool:
    return _allows(feature.get("strategies") if is_map(feature) else None, strategy_name)


def feature_conflicts(recipe: Mapping[str, Any], feature_key: str) -> list[str]:
    """Features that ``feature_key`` switches off (its own list, the reverse, built-ins)."""
    feats = as_map(recipe.get("features"))
    own = [o for o in as_list(get(feats.get(feature_key), "conflicts_with"))
           if isinstance(o, str) and o != feature_key]
    reverse = [k for k, f in feats.items()
               if k != feature_key and feature_key in as_list(get(f, "conflicts_with"))]
    builtin = [b if feature_key == a else a for a, b in BUILTIN_CONFLICTS if feature_key in (a, b)]
    return list(dict.fromkeys([*own, *reverse, *builtin]))


# --- §3.11 KV offload options -----------------------------------------------------

def kv_offload_allowed_for_strategy(opt: Any, strategy_name: str, strategy: Mapping[str, Any]) -> bool:
    return (is_map(opt) and strategy.get("deploy_type") not in ("pd_cluster", "kv_store_lb")
            and _allows(opt.get("strategies"), strategy_name))


def kv_offload_supported_for_recipe(opt: Mapping[str, Any], key: str, recipe: Mapping[str, Any]) -> bool:
    support = get(get(recipe, "kv_offload_support"), key)
    return support == "verified" if truthy(opt.get("requires_opt_in")) else support != "unsupported"


def kv_offload_brand_supported(opt: Mapping[str, Any], profile: Mapping[str, Any]) -> bool:
    return _allows(opt.get("brands"), profile.get("brand"))


def kv_store_offered(recipe: Mapping[str, Any], kv_id: str, profile: Mapping[str, Any], hw_id: str) -> bool:
    """§3.12 front-end gate for a Mooncake topology on this hardware."""
    return (is_scalable(profile) and profile.get("brand") in ("NVIDIA", "AMD")
            and get(get(recipe.get("kv_cache_strategy_hardware"), kv_id), hw_id) != "unsupported")

