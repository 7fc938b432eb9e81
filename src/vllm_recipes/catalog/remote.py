"""Recipe sources that are not a local directory: git repositories and ``.tar.gz`` archives.

Specs: ``github:ORG/REPO[@REF]``, ``git+https|http|ssh|file://…[@REF]``, ``http(s)://…/NAME.tar.gz``.
Fetched trees live in ``<cache dir>/sources/<source key>/<commit or sha256>/`` (``refs.json``
remembers what each ref resolved to) and are used offline; ``catalog pull`` fetches again.
Archives are extracted with the ``data`` filter and size limits. Every failure is one
:class:`SourceError` line naming the source.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .parsecache import cache_dir, private_dir, write_atomic

if TYPE_CHECKING:
    import tarfile

GIT_PREFIXES = ("git+https://", "git+http://", "git+ssh://", "git+file://")
#: largest archive we download, and the most its files may add up to once extracted
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
MAX_EXTRACTED_BYTES = 1024 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 200_000
#: seconds a git command or a download may take
NETWORK_TIMEOUT = 300
_SHA = re.compile(r"^[0-9a-f]{40}$")


class SourceError(Exception):
    """A recipe source that cannot be fetched (and is not in the cache), in one line naming it."""


@dataclass(frozen=True)
class Source:
    """A parsed source spec."""

    spec: str
    kind: str  # "git" or "archive"
    url: str  # what git or urllib is given
    ref: str | None  # git ref (None: the remote's HEAD)

    @property
    def name(self) -> str:
        """The spec without its ``@REF`` (what the cache is keyed by, with the ref beside it)."""
        return self.spec if self.ref is None else self.spec[: -len(self.ref) - 1]

    @property
    def key(self) -> str:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", self.name.split("://", 1)[-1].removeprefix("github:"))[-60:]
        return f"{slug.strip('-')}-{hashlib.blake2b(self.name.encode(), digest_size=6).hexdigest()}"


@dataclass(frozen=True)
class LocalCopy:
    """Where a fetched source lives, and how to name it (``github:org/repo@<commit>``)."""

    label: str
    path: Path


def is_remote(spec: str) -> bool:
    """Whether ``spec`` names a remote source rather than a directory."""
    return spec.startswith(("github:", *GIT_PREFIXES)) or (
        spec.startswith(("https://", "http://")) and _is_archive_url(spec))


def _is_archive_url(url: str) -> bool:
    return urllib.parse.urlsplit(url).path.endswith((".tar.gz", ".tgz"))


def parse_source(spec: str) -> Source:
    """A spec as a :class:`Source`; raises :class:`SourceError` for one that is not a known form."""
    if spec.startswith("github:"):
        body, _, ref = spec.removeprefix("github:").partition("@")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", body):
            raise SourceError(f"{spec}: expected github:ORG/REPO[@REF]")
        return Source(spec, "git", f"https://github.com/{body.removesuffix('.git')}.git", ref or None)
    if spec.startswith(GIT_PREFIXES):
        scheme, _, rest = spec.removeprefix("git+").partition("://")
        host, _, path = rest.partition("/")  # (a user@ sits in the host part; the ref follows the path's first @)
        path, _, git_ref = path.partition("@")  # a ref may hold slashes: release/v2
        return Source(spec, "git", f"{scheme}://{host}/{path}", git_ref or None)
    if spec.startswith(("https://", "http://")) and _is_archive_url(spec):
        return Source(spec, "archive", spec, None)
    raise SourceError(f"{spec}: not a recipe source (a directory, github:ORG/REPO[@REF], git+https://...[@REF], "
                      "git+file:///...[@REF] or an http(s)://.../*.tar.gz archive)")


# --- The cache

def sources_dir() -> Path | None:
    """Where fetched sources live (``None``: the cache is off or not private; fetches go to a temporary dir)."""
    base = cache_dir()
    if base is None or not private_dir(base):
        return None
    folder = base / "sources"
    return folder if private_dir(folder) else None


def _read_refs(folder: Path) -> dict[str, Any]:
    try:
        got = json.loads((folder / "refs.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def _label(source: Source, resolved: str) -> str:
    return f"{source.name}@{resolved[:12]}"


def _tree_root(tree: Path) -> Path:
    """The recipe directory inside a fetched tree: the tree, or its single top-level folder."""
    try:
        entries = [e for e in tree.iterdir() if e.name not in (".git",)]
    except OSError:
        return tree
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink() \
            and not (tree / "models").is_dir():
        return entries[0]
    return tree


def cached_copy(source: Source) -> LocalCopy | None:
    """The cached tree of ``source`` at its ref (as last resolved), if there is one."""
    base = sources_dir()
    if base is None:
        return None
    folder = base / source.key
    entry = _read_refs(folder).get(source.ref or "")
    if source.kind == "git" and source.ref is not None and _SHA.match(source.ref):
        entry = {"resolved": source.ref}
    if not isinstance(entry, dict) or not isinstance(entry.get("resolved"), str):
        return None
    tree = folder / entry["resolved"]
    if not tree.is_dir():
        return None
    return LocalCopy(_label(source, entry["resolved"]), _tree_root(tree))


def local_copy(spec: str) -> LocalCopy:
    """The local tree of a remote source: from the cache when it is there, else fetched now."""
    source = parse_source(spec)
    return cached_copy(source) or pull(source)


def pull(source: Source) -> LocalCopy:
    """Fetch ``source`` (again) into the cache; a cached copy is kept and used if the fetch fails."""
    base = sources_dir()
    folder = base / source.key if base is not None else Path(tempfile.mkdtemp(prefix="vllm-recipes-source-"))
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        resolved = _fetch_git(source, folder) if source.kind == "git" else _fetch_archive(source, folder)
    except SourceError as exc:
        cached = cached_copy(source)
        if cached is None:
            raise SourceError(f"{source.spec}: {exc}; no cached copy") from None
        print(f"vllm-recipes: {source.spec}: {exc}; using the cached copy {cached.label}", file=sys.stderr)
        return cached
    if base is not None:
        refs = _read_refs(folder)
        refs[source.ref or ""] = {"spec": source.spec, "resolved": resolved,
                                  "fetched": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        write_atomic(folder / "refs.json", json.dumps(refs, indent=1, sort_keys=True).encode())
    return LocalCopy(_label(source, resolved), _tree_root(folder / resolved))


def _place(tmp: Path, folder: Path, resolved: str) -> None:
    """Move a finished tree to its final name (another process may have put the same one there first)."""
    dest = folder / resolved
    if dest.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return
    try:
        os.rename(tmp, dest)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not dest.exists():
            raise


# --- git

def _git(*args: str, cwd: Path | None = None) -> str:
    import subprocess  # (with tarfile: only a fetch needs them, not every load of a local directory)

    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env,
                              timeout=NETWORK_TIMEOUT, check=False)
    except FileNotFoundError:
        raise SourceError("git is not installed (needed for git sources)") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"git {args[0]} took more than {NETWORK_TIMEOUT} s") from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        fatal = [ln.removeprefix("fatal: ") for ln in lines if ln.startswith("fatal: ")]
        raise SourceError(f"cannot fetch ({(fatal or lines or [f'git {args[0]} failed'])[0]})")
    return proc.stdout


def _fetch_git(source: Source, folder: Path) -> str:
    """Shallow-fetch ``source`` at its ref into ``folder/<commit>``; returns the commit."""
    tmp = Path(tempfile.mkdtemp(prefix=".fetch-", dir=folder))
    try:
        _git("init", "-q", str(tmp))
        _git("fetch", "-q", "--depth", "1", "--no-tags", source.url, source.ref or "HEAD", cwd=tmp)
        commit = _git("rev-parse", "FETCH_HEAD", cwd=tmp).strip()
        _git("-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD", cwd=tmp)
        shutil.rmtree(tmp / ".git")
        _place(tmp, folder, commit)
        return commit
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- archives

def _download(url: str, dest: Path) -> str:
    """Download ``url`` to ``dest`` (at most :data:`MAX_ARCHIVE_BYTES`); returns its sha256."""
    import urllib.error  # (with urllib.request: HTTP and TLS, imported by a download, not by every load)
    import urllib.request

    digest = hashlib.sha256()
    size = 0
    try:
        with urllib.request.urlopen(url, timeout=NETWORK_TIMEOUT) as resp, dest.open("wb") as out:
            while chunk := resp.read(1 << 16):
                size += len(chunk)
                if size > MAX_ARCHIVE_BYTES:
                    raise SourceError(f"archive larger than {MAX_ARCHIVE_BYTES // (1024 * 1024)} MB; refused")
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise SourceError(f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise SourceError(f"cannot reach it ({exc.reason})") from None
    except (OSError, ValueError) as exc:
        raise SourceError(f"download failed ({exc})") from None
    return digest.hexdigest()


def safe_members(tf: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The regular files and directories of an archive, refusing what could escape or explode."""
    members: list[tarfile.TarInfo] = []
    total = 0
    for n, member in enumerate(tf):
        if n >= MAX_ARCHIVE_MEMBERS:
            raise SourceError(f"archive has more than {MAX_ARCHIVE_MEMBERS:,} entries; refused")
        name = member.name
        if name.startswith(("/", "\\")) or ".." in Path(name).parts or re.match(r"^[A-Za-z]:", name):
            raise SourceError(f"archive entry {name!r} points outside the archive; refused")
        if member.issym() or member.islnk():
            continue  # links are never recipe files: left out rather than followed
        if not (member.isfile() or member.isdir()):
            continue
        total += member.size
        if total > MAX_EXTRACTED_BYTES:
            raise SourceError(f"archive expands to more than {MAX_EXTRACTED_BYTES // (1024 * 1024)} MB; refused")
        members.append(member)
    return members


def _fetch_archive(source: Source, folder: Path) -> str:
    """Download and extract ``source`` into ``folder/<sha256>``; returns the digest."""
    import tarfile

    fd, name = tempfile.mkstemp(prefix=".download-", suffix=".tar.gz", dir=folder)
    os.close(fd)
    archive = Path(name)
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=folder))
    try:
        digest = _download(source.url, archive)
        if (folder / digest).is_dir():
            return digest
        try:
            with tarfile.open(archive, "r:gz") as tf:
                members = safe_members(tf)
                tf.extractall(tmp, members=members, filter="data")
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            raise SourceError(f"not a readable .tar.gz archive ({exc})") from None
        _place(tmp, folder, digest)
        return digest
    finally:
        archive.unlink(missing_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)


# --- What is cached (``catalog list``)

@dataclass(frozen=True)
class CachedSource:
    spec: str
    ref: str
    resolved: str
    fetched: str
    path: Path


def _existing_sources_dir() -> Path | None:
    """:func:`sources_dir` when it already exists (reading the cache creates nothing)."""
    base = cache_dir()
    return sources_dir() if base is not None and (base / "sources").is_dir() else None


def cached_sources() -> list[CachedSource]:
    """Every cached source and ref, with where its tree is."""
    base = _existing_sources_dir()
    if base is None:
        return []
    out: list[CachedSource] = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        for ref, entry in sorted(_read_refs(folder).items()):
            if isinstance(entry, dict) and isinstance(entry.get("resolved"), str):
                tree = folder / entry["resolved"]
                if tree.is_dir():
                    out.append(CachedSource(str(entry.get("spec", "")), ref, entry["resolved"],
                                            str(entry.get("fetched", "")), _tree_root(tree)))
    return out


def remove_cached_sources() -> int:
    """Delete every fetched source (``cache --clear``); returns how many trees were removed."""
    base = _existing_sources_dir()
    if base is None:
        return 0
    n = 0
    for folder in base.iterdir():
        if folder.is_dir() and not folder.is_symlink():
            n += sum(1 for p in folder.iterdir() if p.is_dir())
            with contextlib.suppress(OSError):
                shutil.rmtree(folder)
    with contextlib.suppress(OSError):
        base.rmdir()
    return n
