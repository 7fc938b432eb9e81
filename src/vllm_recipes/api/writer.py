"""Putting a built API on disk without ever exposing a half-written one.

Full builds are written into a temporary sibling directory and swapped in with
one atomic ``renameat2(RENAME_EXCHANGE)`` (two renames where that call is
missing), so readers see either the old or the new tree and a failed build
leaves the previous API untouched. Incremental builds (see
:mod:`vllm_recipes.api.incremental`) replace single files in place, each one
atomically, in an order that never leaves a dangling link (see :func:`commit_in_place`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .build import ApiBuildError, add_parent_dirs

#: The build cache of earlier versions, inside the API root (removed by the next full build).
CACHE_NAME = ".build-cache.json"


def cache_path(out: Path) -> Path:
    """The build cache of the API at ``out``: a sibling file, so ``out`` holds only the API.

    It is deleted before the tree changes and written after, so a crash in between
    leaves no cache (the next build is a full one) rather than one describing another tree.
    """
    return out.parent / f".{out.name}.cache.json"


class UnsafePathError(ApiBuildError):
    """An output path would leave the output directory: the build stops before writing."""


#: Longest path segment most filesystems accept (bytes).
_MAX_SEGMENT = 255


def unsafe_paths(paths: Iterable[str]) -> list[str]:
    """Relative output paths that could resolve outside the output directory (or are not portable).

    Safe: ``/``-separated, not absolute, no empty, ``.`` or ``..`` segment, no NUL or
    backslash, each segment at most 255 bytes. Checked on every path before a build writes
    anything, whatever validation let through (defence in depth).
    """
    bad = []
    for p in paths:
        segs = p.split("/")
        if (not p or "\x00" in p or "\\" in p
                or any(s in ("", ".", "..") or len(s.encode("utf-8", "surrogatepass")) > _MAX_SEGMENT
                       for s in segs)):
            bad.append(p)
    return bad


def check_paths(paths: Iterable[str]) -> None:
    """Raise :class:`UnsafePathError` naming the first offending paths, if any."""
    bad = unsafe_paths(paths)
    if bad:
        shown = ", ".join(repr(p[:120]) for p in bad[:3])
        raise UnsafePathError(f"refusing to build: {len(bad)} output path(s) would leave the output directory "
                              f"({shown}); nothing was written")

_O_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _parent_dirs(paths: Iterable[str]) -> list[str]:
    """Every directory the paths need, parents before children."""
    dirs: set[str] = set()
    for p in paths:
        add_parent_dirs(p, dirs)
    return sorted(dirs, key=lambda d: d.count("/"))


def write_files(root: Path, files: Mapping[str, bytes | None], link_from: Path | None = None) -> None:
    """Write ``files`` under an existing empty ``root``; ``None`` means "hard-link it from ``link_from``"."""
    check_paths(files)
    base = os.fspath(root) + "/"
    for d in _parent_dirs(files):
        os.mkdir(base + d)
    for path, data in files.items():
        if data is None:
            if link_from is None:
                raise ValueError(f"no bytes for {path}")
            src = os.path.join(link_from, path)
            try:
                os.link(src, base + path)
            except OSError:
                shutil.copyfile(src, base + path)
            continue
        fd = os.open(base + path, _O_WRITE, 0o666)
        try:
            n = os.write(fd, data)
            if n != len(data):
                _write_all(fd, data[n:])
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
    if err in (22, 38, 95):  # EINVAL / ENOSYS / EOPNOTSUPP: the filesystem cannot exchange
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


def check_replaceable(out: Path) -> None:
    """Refuse to swap away a directory that is not a JSON API (``build-api ~/Documents`` must not wipe it)."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a directory")
    if out.is_dir() and not (out / CACHE_NAME).exists() and not (out / "models.json").exists() \
            and not cache_path(out).exists() and any(os.scandir(out)):
        raise FileExistsError(f"{out} is a non-empty directory without a JSON API (no models.json); "
                              "refusing to replace it")


@contextlib.contextmanager
def build_lock(out: Path) -> Iterator[None]:
    """One builder per output directory at a time (``flock`` on a sibling lock file).

    The lock file is removed again unless OUT exists afterwards, so a refused or failed
    first build leaves nothing behind next to it."""
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


def resolve_out(out: str | os.PathLike[str]) -> Path:
    """The real output directory (a symlinked OUT is updated where it points, and stays a symlink)."""
    return Path(os.path.realpath(out))


def stale_siblings(out: Path) -> list[Path]:
    """Temporary trees of earlier builds next to ``out`` (crashed, or still being deleted)."""
    try:
        names = os.listdir(out.parent)
    except OSError:
        return []
    return [out.parent / n for n in names if n.startswith((f".{out.name}.build-", f".{out.name}.old-"))]


def discard_trees(paths: Iterable[Path], *, background: bool = False) -> None:
    """Delete old trees; with ``background`` a detached process does it and we return at once.

    The swap already happened, so nothing waits for the old files: a command-line build
    need not spend its last second unlinking tens of thousands of them. A deletion that is
    interrupted leaves a dot-sibling behind, which the next full build discards again.
    """
    paths = list(paths)
    if not paths:
        return
    if background and hasattr(os, "fork"):
        pid = os.fork()
        if pid == 0:  # child: fork the deleter and exit, so nobody has to reap it
            try:
                if os.fork() == 0:
                    os.setsid()
                    for p in paths:
                        shutil.rmtree(p, ignore_errors=True)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        return
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)


def new_build_dir(out: Path) -> Path:
    """An empty sibling of ``out`` (same filesystem, so the swap is a rename)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.build-", dir=out.parent))
    os.chmod(tmp, 0o777 & ~_umask())
    return tmp


def write_api_atomic(files: Mapping[str, bytes | None], out: Path, *, link_from: Path | None = None,
                     extra: Mapping[str, bytes] | None = None) -> None:
    """Write a whole API into a fresh sibling directory and swap it in; stale files cannot survive.

    ``extra`` files are written after the API files. On any error the sibling is
    removed and ``out`` is left exactly as it was.
    """
    out = resolve_out(out)
    check_replaceable(out)
    check_paths([*files, *(extra or {})])
    tmp = new_build_dir(out)
    try:
        write_files(tmp, files, link_from)
        for name, data in (extra or {}).items():
            (tmp / name).write_bytes(data)
        old = swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# In-place commits (incremental builds)
# --------------------------------------------------------------------------------------------

def _atomic_replace(root: str, path: str, data: bytes) -> None:
    target = os.path.join(root, path)
    d = os.path.dirname(target)
    os.makedirs(d, exist_ok=True)
    real_root, real_dir = os.path.realpath(root), os.path.realpath(d)
    if real_dir != real_root and not real_dir.startswith(real_root + os.sep):
        raise UnsafePathError(f"refusing to write {path}: {d} resolves outside {root}")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, 0o666 & ~_umask())
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def commit_in_place(out: Path, writes: Mapping[str, bytes], deletes: Iterable[str], *,
                    index: str = "models.json", cache: bytes | None = None) -> None:
    """Apply an incremental change set so a reader always sees whole files and live links.

    Order: drop the build cache (a crash from here on forces a full rebuild), add and
    replace files (each via write-to-temp + rename), replace the index last, then delete
    files nothing links to any more, prune empty directories, write the new cache.
    Every path is checked first: an unsafe one stops the commit before anything changes.
    """
    deletes = list(deletes)
    check_paths([*writes, *deletes])
    root = os.fspath(out)
    drop_cache(out)
    for path, data in writes.items():
        if path != index:
            _atomic_replace(root, path, data)
    if index in writes:
        _atomic_replace(root, index, writes[index])
    dirs: set[str] = set()
    for path in deletes:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(root, path))
        d = os.path.dirname(path)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    for d in sorted(dirs, key=lambda x: -x.count("/")):
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(root, d))  # only succeeds when empty
    if cache is not None:
        write_cache(out, cache)


def commit_swapped(out: Path, files: Mapping[str, bytes | None], cache: bytes, *, background: bool = False) -> None:
    """Replace the API at ``out`` by ``files`` (``None``: the file of that name in ``out``, hard-linked).

    An incremental build writes only what changed, yet readers and crashes see the
    old or the new tree as a whole: the new tree is assembled beside ``out`` and
    swapped in like a full build; the cache is dropped before and written after.
    """
    check_paths(files)
    tmp = new_build_dir(out)
    try:
        write_files(tmp, files, link_from=out)
        drop_cache(out)
        old = swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    write_cache(out, cache)
    discard_trees([old] if old is not None else [], background=background)


def drop_cache(out: Path) -> None:
    """Remove the build cache of ``out`` (before its tree changes)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(cache_path(out))


def write_cache(out: Path, data: bytes) -> None:
    """Write the build cache of ``out`` atomically (after its tree changed)."""
    p = cache_path(out)
    _atomic_replace(os.fspath(p.parent), p.name, data)


# --------------------------------------------------------------------------------------------
# --check
# --------------------------------------------------------------------------------------------

@dataclass
class TreeDiff:
    """How an API on disk differs from a fresh build."""

    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.changed)

    def lines(self) -> list[str]:
        out = [f"missing: {p}" for p in self.missing]
        out += [f"extra:   {p}" for p in self.extra]
        out += [f"changed: {p}" for p in self.changed]
        return out


def list_tree(out: Path) -> list[str]:
    """Every regular file under ``out`` (relative, ``/``-separated), the build cache excluded."""
    root = os.fspath(out)
    found: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(root, rel) if rel else root))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            p = f"{rel}/{e.name}" if rel else e.name
            if e.is_dir(follow_symlinks=False):
                stack.append(p)
            elif p != CACHE_NAME:
                found.append(p)
    return found


def diff_tree(files: Mapping[str, bytes], out: Path) -> TreeDiff:
    """Compare the expected files with what is on disk, byte for byte."""
    on_disk = set(list_tree(out))
    diff = TreeDiff()
    root = os.fspath(out)
    for path in sorted(files):
        if path not in on_disk:
            diff.missing.append(path)
            continue
        with open(os.path.join(root, path), "rb") as fh:
            if fh.read() != files[path]:
                diff.changed.append(path)
    diff.extra = sorted(on_disk - set(files))
    return diff
