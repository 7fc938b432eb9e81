"""Putting a built API on disk without ever exposing a half-written one.

:func:`publish` writes the whole tree, ``llms.txt`` and ``llms-full.txt`` too, into a sibling directory and
swaps it in with one ``renameat2(RENAME_EXCHANGE)`` (two renames where that is missing), so readers, and a
build killed at any moment, see the old or the new tree, whole. The replaced tree is deleted afterwards.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.catalog.loader import RecipesDirs

from .build import ApiBuild, ApiBuildError, ExtraRecipeKeys, Warn, build_api, parent_dirs
from .llms import llms_files

#: Makes the ``extra_recipe_keys`` hook of :func:`build_api` for a catalog (e.g. i18n translations).
HookFactory = Callable[[Catalog], ExtraRecipeKeys | None]


class UnsafePathError(ApiBuildError):
    """An output path would leave the output directory: the build stops before writing."""


#: Longest path segment most filesystems accept (bytes).
_MAX_SEGMENT = 255


def unsafe_paths(paths: Iterable[str]) -> list[str]:
    """Output paths that could leave the output directory or are not portable (checked before a build writes
    anything, whatever validation let through). Safe: ``/``-separated, not absolute, no empty, ``.`` or ``..``
    segment, no NUL or backslash, each segment at most 255 bytes."""
    return [p for p in paths if not p or "\x00" in p or "\\" in p
            or any(s in ("", ".", "..") or len(s.encode("utf-8", "surrogatepass")) > _MAX_SEGMENT
                   for s in p.split("/"))]


def check_paths(paths: Iterable[str]) -> None:
    """Raise :class:`UnsafePathError` naming the first offending paths, if any."""
    bad = unsafe_paths(paths)
    if bad:
        shown = ", ".join(repr(p[:120]) for p in bad[:3])
        raise UnsafePathError(f"refusing to build: {len(bad)} output path(s) would leave the output directory "
                              f"({shown}); nothing was written")


_O_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def write_files(root: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` under an existing empty ``root``; the paths are checked here too (defence in depth)."""
    check_paths(files)
    base = os.fspath(root) + "/"
    for d in sorted(parent_dirs(files)):  # (a parent sorts before its children)
        os.mkdir(base + d)
    for path, data in files.items():
        fd = os.open(base + path, _O_WRITE, 0o666)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _renameat2_exchange(a: str, b: str) -> bool:
    """Atomically exchange two paths (Linux >= 3.15, glibc >= 2.28); False when unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # the filesystem cannot exchange
        return False
    raise OSError(err, os.strerror(err), b)


def swap_into_place(new: Path, out: Path) -> Path | None:
    """Make ``new`` appear at ``out``; returns the old tree's new location (caller deletes it)."""
    if not out.exists() and not out.is_symlink():
        os.rename(new, out)
        return None
    if out.is_dir() and not out.is_symlink() and _renameat2_exchange(os.fspath(new), os.fspath(out)):
        return new
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    os.rmdir(old)
    os.rename(out, old)
    os.rename(new, out)
    return old


#: files only a JSON API holds (one of them is enough to call a directory an API)
API_MARKERS = ("models.json", "taxonomy.json", "strategies.json")


def check_replaceable(out: Path) -> None:
    """Refuse to swap away a directory that is not a JSON API (``build-api ~/Documents`` must not wipe it)."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a directory")
    if out.is_dir() and not any((out / name).exists() for name in API_MARKERS) and any(os.scandir(out)):
        raise FileExistsError(f"{out} is a non-empty directory without a JSON API (no models.json); "
                              "refusing to replace it")


@contextlib.contextmanager
def build_lock(out: Path) -> Iterator[None]:
    """One builder per output directory at a time (``flock`` on a sibling lock file), which is removed again
    unless OUT exists afterwards: a refused or failed first build leaves nothing behind next to it."""
    import fcntl

    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.parent / f".{out.name}.lock"
    fd = os.open(os.fspath(lock), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if not (out / "models.json").exists():
            lock.unlink(missing_ok=True)
        os.close(fd)


def stale_siblings(out: Path) -> list[Path]:
    """Temporary trees of earlier builds next to ``out`` (crashed, or still being deleted)."""
    try:
        names = os.listdir(out.parent)
    except OSError:
        return []
    return [out.parent / n for n in names if n.startswith((f".{out.name}.build-", f".{out.name}.old-"))]


def new_build_dir(out: Path) -> Path:
    """An empty sibling of ``out`` (same filesystem, so the swap is a rename)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.build-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    return tmp


def write_tree(files: Mapping[str, bytes], out: Path) -> None:
    """Write ``files`` into a fresh sibling of ``out`` and swap it in; delete the old tree (and any left
    by a build that was killed). On an error the sibling is removed and ``out`` is left as it was."""
    check_replaceable(out)
    check_paths(files)
    stale = stale_siblings(out)
    tmp = new_build_dir(out)
    try:
        write_files(tmp, files)
        old = swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for p in [*stale, *([old] if old is not None else [])]:
        shutil.rmtree(p, ignore_errors=True)


def publish(recipes_dir: RecipesDirs, out: str | os.PathLike[str], warn: Warn | None = None, *,
            hook_factory: HookFactory | None = None, llms: bool = True, jobs: int | None = None) -> ApiBuild:
    """``build-api``: build the API of the catalog at ``recipes_dir`` (with the llms files) and swap it in at
    ``out`` (one builder per ``out`` at a time). A file that does not load is skipped with its error, like
    a recipe with validation errors. Raises :class:`ApiBuildError` and ``OSError``."""
    catalog = load_catalog(recipes_dir)  # (FileNotFoundError for a missing directory)
    api = build_api(catalog, warn, extra_recipe_keys=hook_factory(catalog) if hook_factory else None, jobs=jobs,
                    strict=False)
    files = {**api.files, **llms_files(api.catalog)} if llms else api.files
    target = Path(os.path.realpath(out))  # a symlinked OUT is updated where it points, and stays a symlink
    with build_lock(target):
        write_tree(files, target)
    return api


# --check

@dataclass
class TreeDiff:
    """How an API on disk differs from a fresh build."""

    missing: list[str]
    extra: list[str]
    changed: list[str]

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.changed)

    def lines(self) -> list[str]:
        return [*(f"missing: {p}" for p in self.missing), *(f"extra:   {p}" for p in self.extra),
                *(f"changed: {p}" for p in self.changed)]


def list_tree(out: Path) -> list[str]:
    """Every regular file under ``out`` (relative, ``/``-separated)."""
    root = os.fspath(out)
    found: list[str] = []
    stack = [""]  # directories to list, each with its trailing "/"
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                stack.append(f"{rel}{e.name}/")
            else:
                found.append(rel + e.name)
    return found


def diff_tree(files: Mapping[str, bytes], out: Path) -> TreeDiff:
    """Compare the expected files with what is on disk, byte for byte."""
    on_disk = set(list_tree(out))
    missing = sorted(files.keys() - on_disk)
    extra = sorted(on_disk - files.keys())
    changed = []
    for path in sorted(files.keys() & on_disk):
        if (out / path).read_bytes() != files[path]:
            changed.append(path)
    return TreeDiff(missing=missing, extra=extra, changed=changed)
