"""Edge: architecture facts from files - a ``config.json`` path or the local Hugging Face cache.

The cache is read through ``huggingface_hub``'s offline lookup
(``try_to_load_from_cache``), which never touches the network. Without the
library (the ``hf`` extra) the cache is simply not consulted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .architecture import Architecture, ArchitectureError, architecture_from_hf_config

GIB = 2**30


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArchitectureError(f"{what} {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArchitectureError(f"{what} {path}: cannot read it ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ArchitectureError(f"{what} {path}: not JSON ({exc.msg} at line {exc.lineno})") from None


def architecture_from_file(path: str | Path) -> Architecture:
    """``--hf-config PATH``: a Hugging Face ``config.json``."""
    p = Path(path)
    return architecture_from_hf_config(_read_json(p, "--hf-config"), source=f"--hf-config {p.name}")


def default_cache_dir() -> str | None:
    """``HF_HUB_CACHE`` or ``$HF_HOME/hub``, read at call time (``None``: the library's default)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    return os.path.join(os.environ["HF_HOME"], "hub") if os.environ.get("HF_HOME") else None


def _cached(repo_id: str, filename: str, cache_dir: str | None) -> Path | None:
    cache_dir = cache_dir or default_cache_dir()
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # the optional `hf` extra is not installed
        return None
    try:
        got = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
    except Exception:  # an invalid repo id or an unreadable cache: nothing cached for it
        return None
    return Path(got) if isinstance(got, str) else None


def architecture_from_cache(repo_id: str, cache_dir: str | None = None) -> Architecture | None:
    """The cached ``config.json`` of ``repo_id``, or ``None`` when the cache has none (never downloads)."""
    p = _cached(repo_id, "config.json", cache_dir)
    if p is None:
        return None
    return architecture_from_hf_config(_read_json(p, "cached config.json"), source=f"Hugging Face cache ({repo_id})")


def checkpoint_gib_from_cache(repo_id: str, cache_dir: str | None = None) -> float | None:
    """``metadata.total_size`` of the cached ``model.safetensors.index.json``, in GiB."""
    p = _cached(repo_id, "model.safetensors.index.json", cache_dir)
    if p is None:
        return None
    try:
        size = _read_json(p, "cached safetensors index").get("metadata", {}).get("total_size")
    except (ArchitectureError, AttributeError):
        return None
    return size / GIB if isinstance(size, int | float) and size > 0 else None
