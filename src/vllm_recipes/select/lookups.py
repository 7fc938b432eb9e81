"""Hardware-keyed lookups (synthesis.md §2). They are deliberately *not* unified:
each recipe field uses a specific keyspace and the differences change bytes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_recipes.jsvalues import is_list, is_map, truthy


def gen(profile: Mapping[str, Any]) -> Any:
    """§2.1: ``generation`` (or legacy ``gpu_generation``), first element of a list."""
    g = profile.get("generation") if truthy(profile.get("generation")) else profile.get("gpu_generation")
    return (g[0] if g else None) if is_list(g) else g


def brand_lower(profile: Mapping[str, Any]) -> str | None:
    b = profile.get("brand")
    return b.lower() if isinstance(b, str) else None


def keyed(m: Any, profile: Mapping[str, Any], hw_id: str | None) -> Any:
    """§2.2 full keyed lookup: exact id > generation > brand > ``default`` (first present)."""
    hit = keyed_with_key(m, profile, hw_id)
    return hit[1] if hit else None


def keyed_with_key(m: Any, profile: Mapping[str, Any], hw_id: str | None) -> tuple[str | int, Any] | None:
    """Like :func:`keyed` but also returns which key matched (for provenance)."""
    if not is_map(m):
        return None
    table: Mapping[Any, Any] = m
    for k in (hw_id or None, gen(profile), brand_lower(profile), "default"):
        if isinstance(k, str | int) and table.get(k) is not None:
            return k, table[k]
    return None


def gen_or_nvidia_with_key(m: Any, profile: Mapping[str, Any]) -> tuple[str, Any] | None:
    """§2.3: ``m[gen]`` if truthy, else ``m.nvidia`` on NVIDIA hardware."""
    if not is_map(m):
        return None
    g = gen(profile)
    if isinstance(g, str) and truthy(m.get(g)):
        return g, m[g]
    if profile.get("brand") == "NVIDIA" and m.get("nvidia") is not None:
        return "nvidia", m["nvidia"]
    return None
