"""Edge: architecture facts from files and the Hub - ``--hf-config``, the local Hugging Face cache, the Hub.

The cache is read offline (``try_to_load_from_cache``); only when it lacks a file and the network is
allowed is it downloaded into that same cache, so the next fit works offline.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from vllm_recipes.catalog.parsecache import cache_dir, write_atomic

from .architecture import Architecture, ArchitectureError, architecture_from_hf_config
from .checkpoints import CheckpointInfo, info_from_dict, summarize
from .memory import GIB


def read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArchitectureError(f"{what} {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArchitectureError(f"{what} {path}: cannot read it ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ArchitectureError(f"{what} {path}: not JSON ({exc.msg} at line {exc.lineno})") from None


def config_from_file(path: str | Path) -> tuple[Any, str]:
    """``--hf-config PATH``: a Hugging Face ``config.json`` and the source a report names."""
    p = Path(path)
    return read_json(p, "--hf-config"), f"--hf-config {p.name}"


def config_from_cache(repo_id: str) -> tuple[Any, str] | None:
    """The cached ``config.json`` of ``repo_id`` and its source (``None``: not cached; never downloads)."""
    p = cached_file(repo_id, "config.json")
    return None if p is None else (read_json(p, "cached config.json"), f"Hugging Face cache ({repo_id})")


def architecture_from_file(path: str | Path) -> Architecture:
    """The architecture of a ``--hf-config`` file (:class:`ArchitectureError` if it cannot be read)."""
    config, source = config_from_file(path)
    return architecture_from_hf_config(config, source=source)


def default_cache_dir() -> str | None:
    """``HF_HUB_CACHE`` or ``$HF_HOME/hub``, read at call time (``None``: the library's default)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    return os.path.join(os.environ["HF_HOME"], "hub") if os.environ.get("HF_HOME") else None


def cached_file(repo_id: str, filename: str) -> Path | None:
    """The local HF cache's copy of a repository file (``None``: not cached, or no `hf` extra)."""
    cache_dir = default_cache_dir()
    try:
        from huggingface_hub import constants
    except ImportError:  # the optional `hf` extra is not installed
        return None
    if not os.path.isdir(os.path.join(cache_dir or constants.HF_HUB_CACHE, "models--" + repo_id.replace("/", "--"))):
        return None  # nothing cached for this repository: no need to load the Hub client (~0.1 s, a page waits)
    from huggingface_hub import try_to_load_from_cache

    try:
        got = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
    except Exception:  # an invalid repo id or an unreadable cache: nothing cached for it
        return None
    return Path(got) if isinstance(got, str) else None


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` set to a true value (read at call time, like the library's own switch)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hub_endpoint() -> str | None:
    """``HF_ENDPOINT`` read at call time (a mirror, or a local Hub in tests); ``None``: the library's default."""
    return os.environ.get("HF_ENDPOINT") or None


#: seconds a TCP connection to the Hub (or the proxy in front of it) may take before the fit answers
#: "unknown": huggingface_hub's own retries take ~30 s to give up on a machine without network
HUB_CONNECT_TIMEOUT = 2.0
#: endpoint -> why it could not be reached; a failed connection is remembered for the process
UNREACHABLE: dict[str, str] = {}


def hub_unreachable() -> str | None:
    """Why the Hub cannot be reached now (``None``: a TCP connection opened). One short attempt per
    endpoint, to the proxy when one applies; a failure is kept in :data:`UNREACHABLE` for the process."""
    endpoint = hub_endpoint() or "https://huggingface.co"
    if endpoint in UNREACHABLE:
        return UNREACHABLE[endpoint]
    import urllib.request  # (with http.client and email: ~10 ms a recipe page need not wait for)

    url = urlsplit(endpoint)
    proxy = None if urllib.request.proxy_bypass(url.hostname or "") else urllib.request.getproxies().get(url.scheme)
    target = urlsplit(proxy if proxy and "://" in proxy else f"http://{proxy}") if proxy else url
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        socket.create_connection((target.hostname or "", port), timeout=HUB_CONNECT_TIMEOUT).close()
    except OSError as exc:
        why = f"cannot reach the Hub at {url.hostname} ({'proxy ' if proxy else ''}{target.hostname}:{port}: " \
              f"{exc.strerror or type(exc).__name__})"
        UNREACHABLE[endpoint] = why
        return why
    return None


@contextmanager
def _hub_call(repo_id: str, error: type[Exception], missing: str) -> Iterator[None]:
    """The Hub's exceptions as ``error`` in plain words; ``missing`` names what the repository may lack."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        NotASafetensorsRepoError,
        RepositoryNotFoundError,
    )

    try:
        yield
    except GatedRepoError:  # before RepositoryNotFoundError, its base class
        raise error(f"{repo_id} is gated: accept its licence on the Hub and log in (hf auth login)") from None
    except RepositoryNotFoundError:
        raise error(f"{repo_id} is not on the Hub (or is private)") from None
    except (EntryNotFoundError, NotASafetensorsRepoError):
        raise error(f"{repo_id} has no {missing}") from None
    except Exception as exc:  # network failures come in many classes; all mean "not now"
        raise error(f"cannot reach the Hub for {repo_id} ({type(exc).__name__})") from None


def architecture_from_hub(repo_id: str, *, offline: bool = False) -> tuple[Architecture | None, str]:
    """The cached ``config.json`` of ``repo_id``, else (online) the Hub's, downloaded into the Hugging Face
    cache; ``(None, why)`` when neither, ``why`` in plain words."""
    cached = architecture_from_cache(repo_id)
    if cached is not None:
        return cached, ""
    if offline or hub_offline():
        return None, f"{repo_id}: no config.json in the local Hugging Face cache (offline)"
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        return None, "huggingface_hub is not installed (pip install 'vllm-recipes[hf]')"
    if why := hub_unreachable():
        return None, why
    try:
        with _hub_call(repo_id, ArchitectureError, "config.json"):
            p = Path(hf_hub_download(repo_id, "config.json", cache_dir=default_cache_dir(),
                                     endpoint=hub_endpoint()))
    except ArchitectureError as exc:
        return None, str(exc)
    return architecture_from_hf_config(read_json(p, "config.json"), source=f"Hugging Face Hub ({repo_id})"), ""


def architecture_from_cache(repo_id: str) -> Architecture | None:
    """The architecture of the cached ``config.json`` (``None``: not cached; never downloads)."""
    got = config_from_cache(repo_id)
    if got is None:
        return None
    config, source = got
    return architecture_from_hf_config(config, source=source)


def checkpoint_gib_from_cache(repo_id: str) -> float | None:
    """``metadata.total_size`` of the cached ``model.safetensors.index.json``, in GiB."""
    p = cached_file(repo_id, "model.safetensors.index.json")
    if p is None:
        return None
    try:
        size = read_json(p, "cached safetensors index").get("metadata", {}).get("total_size")
    except (ArchitectureError, AttributeError):
        return None
    return size / GIB if isinstance(size, int | float) and size > 0 else None


# --- checkpoint sizes: the safetensors summary, cached ----------------------------------------

def _info_path(repo_id: str) -> Path | None:
    """``fit/checkpoints/<repo>.json`` in the package's cache directory (``None``: caching is off)."""
    d = cache_dir()
    return None if d is None else d / "fit" / "checkpoints" / (repo_id.replace("/", "--") + ".json")


def cached_info(repo_id: str) -> CheckpointInfo | None:
    """The cached summary of ``repo_id`` (never the network)."""
    p = _info_path(repo_id)
    if p is None or not p.is_file():
        return None
    try:
        return info_from_dict(json.loads(p.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def store_info(info: CheckpointInfo) -> None:
    """Write the summary atomically (a failed write only costs a later fetch)."""
    p = _info_path(info.repo_id)
    if p is None:
        return
    with suppress(OSError):
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(p, json.dumps(asdict(info), indent=1, sort_keys=True).encode("utf-8"))


class HubError(RuntimeError):
    """The Hub could not answer (offline, gated, missing); the message says which, in plain words."""


def fetch_info(repo_id: str, token: str | bool | None = None) -> CheckpointInfo:
    """Read the safetensors headers of ``repo_id`` from the Hub (no weights) and cache the summary."""
    try:
        from huggingface_hub import HfApi
    except ImportError:  # pragma: no cover - the optional `hf` extra is not installed
        raise HubError("huggingface_hub is not installed (pip install 'vllm-recipes[hf]')") from None
    if why := hub_unreachable():
        raise HubError(why)
    with _hub_call(repo_id, HubError, "safetensors weights"):
        meta = HfApi(endpoint=hub_endpoint()).get_safetensors_metadata(repo_id, token=token)
    tensors = ((name, t.dtype, t.data_offsets[1] - t.data_offsets[0])
               for fm in meta.files_metadata.values() for name, t in fm.tensors.items())
    info = summarize(repo_id, tensors)
    store_info(info)
    return info
