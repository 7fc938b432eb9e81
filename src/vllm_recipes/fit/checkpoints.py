"""Real checkpoint sizes: bytes by dtype and the routed experts' share, from safetensors metadata.

Read from the shards' headers, never the weights; pure: fetching and caching live in :mod:`.sources`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .memory import GIB

SOURCE = "safetensors metadata"


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint holds, from its safetensors headers (sizes in bytes)."""

    repo_id: str
    total_bytes: int
    #: tensors of routed experts (``.experts.`` in the name; shared experts are dense)
    expert_bytes: int = 0
    bytes_by_dtype: dict[str, int] = field(default_factory=dict)
    source: str = SOURCE

    @property
    def gib(self) -> float:
        return self.total_bytes / GIB

    @property
    def expert_fraction(self) -> float:
        return self.expert_bytes / self.total_bytes if self.total_bytes else 0.0

    def describe(self) -> str:
        parts = ", ".join(f"{d} {b / GIB:,.2f} GiB" for d, b in sorted(self.bytes_by_dtype.items(),
                                                                        key=lambda kv: -kv[1]))
        return f"{self.source} of {self.repo_id}: {self.gib:,.2f} GiB ({parts})"


def summarize(repo_id: str, tensors: Iterable[tuple[str, str, int]]) -> CheckpointInfo:
    """``(name, dtype, bytes)`` per tensor -> a :class:`CheckpointInfo`."""
    experts = 0
    by_dtype: Counter[str] = Counter()
    for name, dtype, size in tensors:
        by_dtype[dtype] += size
        if ".experts." in name and ".shared_experts." not in name:
            experts += size
    return CheckpointInfo(repo_id, by_dtype.total(), experts, dict(by_dtype))


def info_from_dict(data: Mapping[str, Any]) -> CheckpointInfo | None:
    try:
        return CheckpointInfo(str(data["repo_id"]), int(data["total_bytes"]), int(data.get("expert_bytes") or 0),
                              {str(k): int(v) for k, v in (data.get("bytes_by_dtype") or {}).items()},
                              str(data.get("source") or SOURCE))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
