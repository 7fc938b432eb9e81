"""Defaults (synthesis.md §4): default hardware, compatible hardware, variant
fallback, strategy recommendation, single-node TP and default features."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import EMPTY, as_list, as_map, get, is_map, is_number, number_or, truthy

from .gates import (
    constraint,
    effective_vram_min,
    is_hardware_supported,
    is_listed,
    is_precision_compatible,
    is_variant_hardware_supported,
    offered_strategies,
    variant_runs_on,
    vram_min_gb,
)
from .lookups import keyed

_BRAND_RANK: Mapping[Any, int] = {"NVIDIA": 0, "AMD": 1}
#: ASCII punctuation and symbols in ICU root collation order (they sort before digits, then letters).
_ICU_PUNCT = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


def locale_key(s: str) -> tuple[Any, ...]:
    """Sort key approximating JS ``localeCompare`` (ICU root) for ids: punctuation < digits <
    letters, case-insensitive first, lower case before upper case on ties."""
    def weight(c: str) -> tuple[int, int | str]:
        if c in _ICU_PUNCT:
            return (1, _ICU_PUNCT.index(c))
        if c.isdigit():
            return (2, c)
        if c.isalpha():
            return (3, c.lower())
        return (0 if c.isspace() else 1, ord(c) + len(_ICU_PUNCT))
    return ([weight(c) for c in s], s.swapcase())


def pick_default_hardware(profiles: Mapping[str, Any], variant: Mapping[str, Any],
                          recipe: Mapping[str, Any]) -> str:
    """§4.1 ``pickDefaultHardware``."""
    compatible = selectable_hardware(profiles, variant, recipe)
    dh = get(recipe.get("meta"), "default_hardware")
    if truthy(dh) and dh in compatible:
        return dh
    public = _public_default(profiles, variant, compatible)
    return _one_gpu_default(profiles, variant, compatible, public) or public


def _public_default(profiles: Mapping[str, Any], variant: Mapping[str, Any], compatible: list[str]) -> str:
    """The public site's choice among the candidates when the recipe names none (§4.1)."""
    c = constraint(variant)
    preferred = ("b200", "gb200", "h200") if c and c.get("generation") == "blackwell" else ("h200",)
    for hw in preferred:
        if hw in compatible:
            return hw
    return min(compatible, default="h200",
               key=lambda h: (_BRAND_RANK.get(as_map(profiles[h]).get("brand"), 9), locale_key(h)))


def _gpu_share(profile: Mapping[str, Any]) -> float:
    """One GPU's share of the profile's VRAM (0 when unknown)."""
    vram, count = profile.get("vram_gb"), profile.get("gpu_count")
    if not (is_number(vram) and vram > 0):
        return 0
    return vram / count if is_number(count) and count > 0 else vram


def _one_gpu_default(profiles: Mapping[str, Any], variant: Mapping[str, Any], compatible: list[str],
                     public: str) -> str | None:
    """Our deviation from §4.1 (docs/decisions.md, "Default hardware of a one-GPU model"): a model
    that one GPU of the public default holds is not given a whole multi-GPU node when the recipe
    offers a one-GPU profile of the same brand that holds it; the smallest such (VRAM, then id) wins."""
    node = as_map(profiles.get(public))

    def holds(hw: str, p: Mapping[str, Any]) -> bool:
        need = effective_vram_min(variant, hw)
        return is_number(need) and 0 < need <= _gpu_share(p)

    if node.get("gpu_count") == 1 or not holds(public, node):
        return None
    one_gpu = [hw for hw in compatible if as_map(profiles[hw]).get("gpu_count") == 1
               and as_map(profiles[hw]).get("brand") == node.get("brand") and holds(hw, as_map(profiles[hw]))]
    return min(one_gpu, key=lambda h: (_gpu_share(as_map(profiles[h])), locale_key(h)), default=None)


def list_compatible_hardware(profiles: Mapping[str, Any], variant: Mapping[str, Any],
                             recipe: Mapping[str, Any]) -> list[str]:
    """§4.2: precision-compatible, not unsupported, variant-allowed (no restricted filter)."""
    return [
        hw for hw, p in profiles.items()
        if is_precision_compatible(as_map(p), variant) and is_hardware_supported(recipe, hw)
        and is_variant_hardware_supported(variant, hw, as_map(p))
    ]


def selectable_hardware(profiles: Mapping[str, Any], variant: Mapping[str, Any],
                        recipe: Mapping[str, Any]) -> list[str]:
    """Compatible hardware minus undeclared restricted profiles, in taxonomy order (§3.4, §4.2)."""
    return [hw for hw in list_compatible_hardware(profiles, variant, recipe)
            if is_listed(recipe, hw, as_map(profiles[hw]))]


def listed_hardware(profiles: Mapping[str, Any], variant: Mapping[str, Any], recipe: Mapping[str, Any]) -> list[str]:
    """JSON API hardware list: the selectable hardware with the default first (§11.2)."""
    return list(dict.fromkeys([pick_default_hardware(profiles, variant, recipe),
                               *selectable_hardware(profiles, variant, recipe)]))


def pick_fitting_variant(recipe: Mapping[str, Any], profile: Mapping[str, Any], hw_id: str) -> str | None:
    """§4.3: the largest variant (by effective VRAM) that runs on this hardware."""
    variants = as_map(recipe.get("variants"))
    fitting = [k for k, v in variants.items() if variant_runs_on(profile, as_map(v), hw_id)]
    return max(fitting, key=lambda k: vram_min_gb(as_map(variants[k]), hw_id), default=None)


def recommend_strategy(recipe: Mapping[str, Any], node_count: int = 1) -> str:
    """§4.4 ``recommendStrategy`` (the profile is not consulted)."""
    offered = offered_strategies(recipe)
    explicit = recipe.get("default_strategy")
    if truthy(explicit) and explicit in offered:
        if node_count > 1 and isinstance(explicit, str) and explicit.startswith("single_node_"):
            sibling = "multi_node_" + explicit[len("single_node_"):]
            if sibling in offered:
                return sibling
        else:
            return explicit
    if node_count > 1:
        for s in ("multi_node_tp", "multi_node_dep", "multi_node_tep"):
            if s in offered:
                return s
    if "single_node_tp" in offered:
        return "single_node_tp"
    return offered[0] if offered else "single_node_tp"


def resolve_single_node_tp(recipe: Mapping[str, Any], variant: Mapping[str, Any], profile: Mapping[str, Any],
                           strategy_name: str, hw_id: str | None) -> int | float:
    """§4.5 single-node TP size; extensions §2.4 for the VRAM budget."""
    gpu_count = number_or(profile.get("gpu_count"), 1)
    is_cpu = profile.get("generation") == "cpu"
    if strategy_name != "single_node_tp":
        return gpu_count
    for raw in (variant.get("tp"), get(get(get(recipe, "strategy_overrides"), "single_node_tp"), "tp")):
        tp = raw if is_number(raw) else keyed(raw, profile, hw_id)
        if is_number(tp) and tp > 0:
            return tp if is_cpu else min(tp, gpu_count)
    vram = profile.get("vram_gb")
    per_gpu = vram / gpu_count if truthy(vram) and is_number(vram) and truthy(gpu_count) else 0
    vmin = vram_min_gb(variant, hw_id)
    return 1 if vmin != 0 and per_gpu > 0 and vmin <= per_gpu else gpu_count


def default_features(recipe: Mapping[str, Any], hw_id: str | None, variant_key: str) -> list[str]:
    """§4.6: declaration order; opt-ins off unless a variant's ``default_modes`` forces them."""
    opt_in = set(x for x in as_list(recipe.get("opt_in_features")) if isinstance(x, str))
    if hw_id:
        opt_in |= set(x for x in as_list(get(recipe.get("hardware_opt_in_features"), hw_id)) if isinstance(x, str))
    forced = as_map(get(as_map(recipe.get("variants")).get(variant_key), "default_modes"))
    return [f for f in as_map(recipe.get("features")) if f in forced or f not in opt_in]


def variant_entry(recipe: Mapping[str, Any], variant_key: str) -> tuple[str, Mapping[str, Any]]:
    """§5.0: ``(key, data)`` of the variant, else of ``default``, else ``("default", {})``."""
    variants = as_map(recipe.get("variants"))
    for key in (variant_key, "default"):
        v = variants.get(key)
        if truthy(v) and isinstance(v, dict):
            return key, v
    return "default", EMPTY


def variant_or_default(recipe: Mapping[str, Any], variant_key: str) -> Mapping[str, Any]:
    """§5.0: the variant, else ``default``, else an empty one."""
    return variant_entry(recipe, variant_key)[1]


def recipe_hardware(catalog: Catalog, recipe: Recipe) -> list[str]:
    """The hardware the page offers for the recipe's default variant, default first."""
    variant = variant_or_default(recipe.data, "default")
    return listed_hardware(catalog.hardware_profiles, variant, recipe.data)


def effective_install_config(recipe: Mapping[str, Any], variant: Mapping[str, Any] | None,
                             hw_id: str | None) -> Any:
    """``model.install`` merged key by key with the variant's per-hardware ``install`` (ext §2.5)."""
    base = get(recipe.get("model"), "install")
    if variant is None or not hw_id:
        return base
    over = get(get(variant.get("hardware_overrides"), hw_id), "install")
    if not is_map(over):
        return base
    return {**(base if is_map(base) else {}), **over}
