"""The complete selection the engine consumes (synthesis.md §1.7 plus seed-era axes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: user mode picks ``(feature, mode)``
FeatureModes = tuple[tuple[str, str], ...]

@dataclass(frozen=True)
class Selection:
    """Every input of one resolve. Built by a front-end (page state, JSON API, CLI)."""

    variant_key: str = "default"
    hw_id: str = ""
    strategy: str = "single_node_tp"
    node_count: int = 1
    #: enabled features, in emission order
    features: tuple[str, ...] = ()
    feature_modes: FeatureModes = ()
    #: advanced options as ``(option id, tokens)``, in order
    advanced: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: ``None`` or ``{"prefill": int | {nodes?, rank?, parallelism?}, "decode": ...}``
    pd_nodes: Any = None
    #: a taxonomy ``kv_offload`` key or a Mooncake deployment id
    kv_offload: str | None = None
    #: ``None``, an int, or ``{"count": n, "current": i}``
    kv_instances: Any = None
    #: frontend id (extensions §2.1); ``None`` means the recipe default
    frontend: str | None = None
    #: PD router kind (extensions §2.6); ``None`` means ``vllm-router``
    pd_router: str | None = None

    def mode_for(self, feature: str) -> str | None:
        return mode_for(self.feature_modes, feature)


def mode_for(modes: Sequence[tuple[str, str]], feature: str) -> str | None:
    """The user's mode for ``feature`` (the page state refuses two different picks; the first one stands)."""
    for f, m in modes:
        if f == feature:
            return m
    return None
