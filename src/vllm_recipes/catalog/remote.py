"""Recipe sources that are not a local directory (filled in below)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REMOTE_PREFIXES = ("github:", "git+https://", "git+http://", "git+file://", "git+ssh://", "https://", "http://")


class SourceError(Exception):
    """A remote recipe source that can neither be fetched nor found in the cache (one line)."""


@dataclass(frozen=True)
class LocalCopy:
    label: str
    path: Path


def is_remote(spec: str) -> bool:
    return spec.startswith(REMOTE_PREFIXES)


def local_copy(spec: str) -> LocalCopy:
    raise SourceError(f"{spec}: remote sources are not supported yet")
