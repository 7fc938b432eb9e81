"""json-api.md §10.2 feature-mode validation: the JSON API builder's exact messages.

Kept free of pydantic so the builder (and every CLI start) stays cheap to import.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vllm_recipes.jsvalues import as_map, first_truthy, get
from vllm_recipes.jsvalues import js_str as _js_str
from vllm_recipes.jsvalues import truthy as _js_truthy

from .yamlsource import KeyPath


def _entries(obj: Any) -> list[tuple[Any, Any]]:
    """``Object.entries``: maps by key, lists and strings by index, anything else nothing."""
    if isinstance(obj, dict):
        return list(obj.items())
    if isinstance(obj, list | tuple | str):
        return list(enumerate(obj))
    return []


_ABSENT = object()


def _js_get(obj: Any, key: Any, absent: Any = None) -> Any:
    """``obj[key]`` with JS key coercion (property names are strings, as every loaded key is); ``absent``
    when it has no such key."""
    name = _js_str(key)
    if isinstance(obj, dict):
        return obj.get(name, absent)
    if isinstance(obj, list | tuple | str):
        if name == "length":
            return len(obj)
        if name.isdigit() and (name == "0" or not name.startswith("0")) and int(name) < len(obj):
            return obj[int(name)]
    return absent


def feature_mode_issues(recipe: Any) -> list[tuple[KeyPath, str]]:
    """§10.2 messages, in the builder's order, each with the key path it is about."""
    r = recipe if isinstance(recipe, dict) else {}
    features = first_truthy(r.get("features"), {})  # JS ``recipe.features || {}``
    variants = first_truthy(r.get("variants"), {})
    out: list[tuple[KeyPath, str]] = []
    for fk, feature in _entries(features):
        if isinstance(feature, dict) and "modes" in feature:
            out += _feature_issues(fk, feature, variants)
    for vk, variant in _entries(variants):
        dms = get(variant, "default_modes")
        if _js_truthy(dms):
            out += [issue for fk, mk in _entries(dms)
                    if (issue := _default_mode_issue(vk, fk, mk, features)) is not None]
    return out


def _feature_issues(fk: Any, feature: dict[str, Any], variants: Any) -> list[tuple[KeyPath, str]]:
    """A modal feature: modes a non-empty map, no args beside them, a known default, a mode per variant."""
    f = _js_str(fk)
    base: KeyPath = ("features", fk)
    modes = feature["modes"]
    mode_items = list(modes.items()) if isinstance(modes, dict) else []
    if not mode_items:
        return [((*base, "modes"), f"features.{f}.modes must be a non-empty map")]
    out: list[tuple[KeyPath, str]] = []
    if "args" in feature:
        out.append(((*base, "args"), f"features.{f} cannot declare both args and modes"))
    default_mode = feature.get("default_mode")
    mode_names = [_js_str(k) for k, _ in mode_items]
    if _js_truthy(default_mode) and not (isinstance(default_mode, str) and default_mode in mode_names):
        out.append(((*base, "default_mode"),
                    f"features.{f}.default_mode references unknown mode {_js_str(default_mode)}"))
    for mk, mode in mode_items:
        out += _mode_issues((*base, "modes", mk), f"features.{f}.modes.{_js_str(mk)}", mode, variants)
    for vk, _ in _entries(variants):
        if not any(_mode_available(mode, vk) for _, mode in mode_items):
            out.append(((*base, "modes"), f"features.{f} has no mode available for variant {_js_str(vk)}"))
    return out


def _mode_issues(mp: KeyPath, prefix: str, mode: Any, variants: Any) -> list[tuple[KeyPath, str]]:
    """One mode: its args an array, its variants an array of known variant keys."""
    md = as_map(mode)
    out: list[tuple[KeyPath, str]] = []
    if not isinstance(md.get("args"), list | tuple):
        out.append(((*mp, "args"), f"{prefix}.args must be an array"))
    mv = md.get("variants")
    if mv is None:
        return out
    if not isinstance(mv, list | tuple):
        return [*out, ((*mp, "variants"), f"{prefix}.variants must be an array")]
    return out + [((*mp, "variants", i), f"{prefix}.variants references unknown variant {_js_str(v)}")
                  for i, v in enumerate(mv) if _js_get(variants, v, _ABSENT) is _ABSENT]


def _default_mode_issue(vk: Any, fk: Any, mk: Any, features: Any) -> tuple[KeyPath, str] | None:
    """``variants.<v>.default_modes.<f>: <m>``: a known modal feature's mode, available for that variant."""
    path: KeyPath = ("variants", vk, "default_modes", fk)
    v, f = _js_str(vk), _js_str(fk)
    feature = _js_get(features, fk)
    if not _js_truthy(feature):
        return path, f"variants.{v}.default_modes references unknown feature {f}"
    modes = _js_get(feature, "modes")
    if not _js_truthy(modes):
        return path, f"variants.{v}.default_modes references non-modal feature {f}"
    mode = _js_get(modes, mk)
    if not _js_truthy(mode):
        return path, f"variants.{v}.default_modes.{f} references unknown mode {_js_str(mk)}"
    mv = _js_get(mode, "variants")
    if isinstance(mv, list | tuple) and mv and _js_str(vk) not in mv:  # (JS includes() of the key's string)
        return path, (f"variants.{v}.default_modes.{f} selects mode {_js_str(mk)}, "
                      "which is unavailable for that variant")
    return None


def _mode_available(mode: Any, variant_key: Any) -> bool:
    mv = get(mode, "variants")
    return not isinstance(mv, list | tuple) or not mv or _js_str(variant_key) in mv


def feature_mode_messages(recipe: Any) -> list[str]:
    """The §10.2 messages alone, in order (what the JSON API builder reports)."""
    return [msg for _, msg in feature_mode_issues(recipe)]


def feature_mode_error(rel_path: str, messages: Sequence[str]) -> str:
    """The builder's error text: ``Invalid feature modes in <path>:\\n  - <m1>\\n  - <m2>``."""
    return f"Invalid feature modes in {rel_path}:\n  - " + "\n  - ".join(messages)
