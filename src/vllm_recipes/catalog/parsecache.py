"""A content-addressed cache of parsed recipe files: every command starts by loading the catalog.

Entries are keyed by the digest of a file's bytes (the pack salted with our and PyYAML's
versions), so they cannot be stale. Packs another user could write are not used and the
unpickler accepts only :class:`~.yamlsource.FrozenDict`; every cache failure only costs the
parse. ``VLLM_RECIPES_CACHE_DIR=off`` turns it off. What it is worth: docs/decisions-catalog.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from .yamlsource import FrozenDict, Position, YamlDocument, check_raw, parse_yaml, read_raw

ENV_CACHE_DIR = "VLLM_RECIPES_CACHE_DIR"
#: bump when the frozen data a parse produces changes shape
CACHE_FORMAT = 2
_SALT = f"{CACHE_FORMAT}|{__version__}|{yaml.__version__}|{getattr(yaml, '__with_libyaml__', False)}".encode()
_OFF = {"", "off", "0", "none", "false"}


def cache_dir() -> Path | None:
    """Where packs live, or ``None`` when the cache is turned off."""
    env = os.environ.get(ENV_CACHE_DIR)
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "vllm-recipes"


class _FrozenOnlyUnpickler(pickle.Unpickler):
    """Builtin containers and scalars, plus FrozenDict; anything else is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == (FrozenDict.__module__, "FrozenDict"):
            return FrozenDict
        raise pickle.UnpicklingError(f"refused class {module}.{name} in the parse cache")


def _trusted(st: os.stat_result) -> bool:
    """Owned by us and writable by nobody else (what could plant data there could change commands)."""
    if not hasattr(os, "getuid"):  # no POSIX ownership to check
        return True
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def private_dir(folder: Path) -> bool:
    """Create ``folder`` (mode 0700) if missing; whether it is ours alone and so fit to hold a cache
    (a planted pack would change commands, a planted compiled template would run code)."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return folder.is_dir() and _trusted(folder.stat())
    except OSError:
        return False


def pack_path(root: Path, kind: str = "parsed") -> Path | None:
    """The ``kind`` pack of the recipes directory ``root`` (``None``: cache off or not private)."""
    folder = cache_dir()
    if folder is None or not private_dir(folder):
        return None
    where = hashlib.blake2b(str(root.resolve()).encode(), digest_size=12).hexdigest()
    return folder / f"{kind}-{where}.pickle"


def read_pack(pack: Path | None) -> dict[str, Any]:
    """The entries of ``pack`` when it is ours and of this version; else none."""
    if pack is None:
        return {}
    try:
        with pack.open("rb") as fh:
            if not _trusted(os.fstat(fh.fileno())):
                return {}
            got = _FrozenOnlyUnpickler(io.BytesIO(fh.read())).load()
    except Exception:  # unreadable, damaged, truncated or foreign: the cache is only an optimisation
        return {}
    if not isinstance(got, dict) or got.get("salt") != _SALT or not isinstance(got.get("payload"), dict):
        return {}
    return got["payload"]


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one step: a reader sees the old file or the new one, never half.
    ``mode`` is set before the rename, so the file never shows at ``path`` with mkstemp's 0600."""
    import tempfile  # (only a cold or changed catalog writes: a warm load does not pay for it)

    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_pack(pack: Path, payload: dict[str, Any]) -> None:
    """Replace ``pack``; a cache that cannot be written is simply not written."""
    blob = pickle.dumps({"salt": _SALT, "payload": payload}, protocol=pickle.HIGHEST_PROTOCOL)
    with contextlib.suppress(OSError):
        write_atomic(pack, blob)


class ParseCache:
    """The parsed files of one load of a recipes directory (:meth:`save` when done): by the digest of
    the file's bytes, ``(frozen data, ((key path, line, col), ...) of repeated keys)``."""

    def __init__(self, root: Path) -> None:
        self._pack = pack_path(root)
        self._old = read_pack(self._pack)
        self._used: dict[str, Any] = {}

    def read(self, path: Path, file: str) -> YamlDocument:
        """The document of ``path`` (shown as ``file``): cached, else parsed."""
        raw = read_raw(path, file)
        text = check_raw(raw, file)
        key = hashlib.blake2b(raw, digest_size=20).hexdigest()
        got = self._old.get(key)
        if isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], tuple):
            self._used[key] = got
            repeats = tuple((p, Position(file, line, col)) for p, line, col in got[1])
            return YamlDocument(file, got[0], duplicate_keys=repeats, source=text)
        doc = parse_yaml(text, file)
        self._used[key] = (doc.data, tuple((p, pos.line, pos.col) for p, pos in doc.duplicate_keys))
        return doc

    def save(self) -> None:
        """Write the pack when this load parsed anything new (or dropped entries no file uses)."""
        if self._pack is not None and self._used != self._old:
            write_pack(self._pack, self._used)


#: the files this package writes into the cache directory (nothing else there is ever removed)
CACHE_FILE_PATTERNS = ("parsed-*.pickle", "clean-*.pickle", ".parsed-*", ".clean-*", "templates/__jinja2_*.cache")


def cache_files() -> list[tuple[Path, int]]:
    """Every file of ours in the cache directory, with its size (empty when the cache is off)."""
    folder = cache_dir()
    if folder is None or not folder.is_dir():
        return []
    out: list[tuple[Path, int]] = []
    for pattern in CACHE_FILE_PATTERNS:
        for path in sorted(folder.glob(pattern)):
            with contextlib.suppress(OSError):
                if path.is_file() and not path.is_symlink():
                    out.append((path, path.stat().st_size))
    return out


def clear_cache() -> int:
    """Remove the files of ours (:data:`CACHE_FILE_PATTERNS`); returns how many were removed."""
    removed = 0
    for path, _size in cache_files():
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed
