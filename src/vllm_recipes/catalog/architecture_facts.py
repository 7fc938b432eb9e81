"""The keys of ``model.architecture_facts`` the deploy files read as well as the memory planner:
checkpoint sizes (a cache volume holds the download) and host tables (host memory a flag fills).
One reading for both (:mod:`vllm_recipes.fit.architecture` reads the rest of the block)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_recipes.jsvalues import is_number


@dataclass(frozen=True, slots=True)
class HostTable:
    """Weights a flag can move to host memory (e.g. DeepSeek-V4.1's Engram tables)."""

    gib: float
    flag: str
    #: substring of the flag's value that means "offloaded"
    marker: str


def checkpoint_sizes(value: Any) -> tuple[tuple[str, float], ...]:
    """``checkpoint_gib`` (one size for every variant, ``"*"``, or ``{variant: GiB}``) as ``(key, GiB)``."""
    if isinstance(value, Mapping):
        return tuple({str(k): float(v) for k, v in value.items() if is_number(v)}.items())
    return (("*", float(value)),) if is_number(value) else ()


def checkpoint_for(sizes: tuple[tuple[str, float], ...], variant_key: str) -> float | None:
    """The size of ``variant_key``'s checkpoint, else the one for every variant."""
    found = dict(sizes)
    return found.get(variant_key, found.get("*"))


def host_tables(value: Any) -> tuple[HostTable, ...]:
    """``host_tables``: the entries with a size and a flag."""
    return tuple(HostTable(float(t["gib"]), str(t["flag"]), str(t.get("marker") or ""))
                 for t in value or () if isinstance(t, Mapping) and is_number(t.get("gib"))
                 and isinstance(t.get("flag"), str))
