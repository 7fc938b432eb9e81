"""Reading a recipe directory at a git revision (``git:REV[:SUBDIR]``) into memory, with git plumbing
only (``ls-tree``, one ``cat-file --batch``): the user's working tree and index are left alone.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from .fileset import is_catalog_file

GIT_PREFIX = "git:"


class GitSourceError(Exception):
    """A ``git:`` source that cannot be read (no repository, unknown revision, missing directory)."""


def is_git_spec(spec: str) -> bool:
    return spec.startswith(GIT_PREFIX)


def parse_git_spec(spec: str) -> tuple[str, str | None]:
    """``git:REV[:SUBDIR]`` -> ``(REV, SUBDIR or None)``."""
    body = spec.removeprefix(GIT_PREFIX)
    rev, sep, subdir = body.partition(":")
    if not rev:
        raise GitSourceError(f"{spec!r}: expected git:REV[:SUBDIR], e.g. git:HEAD~1 or git:main:recipes")
    return rev, (subdir.strip("/") if sep else None)


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitSourceError("git is not installed (needed to read git: sources)") from None
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitSourceError(msg[-1] if msg else f"git {' '.join(args)} failed")
    return proc.stdout


_LS_TREE = re.compile(rb"^(\d+) (\w+) ([0-9a-f]+)\t(.*)$", re.S)


def read_git_files(rev: str, subdir: str | None = None, cwd: str | os.PathLike[str] = ".") -> dict[str, bytes]:
    """``{path relative to SUBDIR: bytes}`` of the catalog files at ``rev``; ``subdir`` defaults to where
    ``cwd`` sits in its repository (``git:HEAD~1`` inside a recipe directory compares that directory)."""
    where = Path(cwd)
    if subdir is None:
        subdir = _git(where, "rev-parse", "--show-prefix").decode().strip().strip("/")
    try:
        _git(where, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except GitSourceError:
        raise GitSourceError(f"unknown git revision {rev!r}") from None
    try:
        listing = _git(where, "ls-tree", "--full-tree", "-r", "-z", f"{rev}:{subdir}")
    except GitSourceError:
        raise GitSourceError(f"{subdir or '.'!r} is not a directory at revision {rev!r}") from None
    wanted: list[tuple[str, str]] = []
    for entry in listing.split(b"\0"):
        m = _LS_TREE.match(entry)
        # regular files only: symlinks (120000) and submodules are not recipe sources
        if m is None or m.group(2) != b"blob" or m.group(1) == b"120000":
            continue
        rel = m.group(4).decode("utf-8", "surrogateescape")
        if is_catalog_file(rel):
            wanted.append((rel, m.group(3).decode()))
    if not wanted:
        return {}
    raw = _git(where, "cat-file", "--batch", stdin="".join(f"{oid}\n" for _, oid in wanted).encode())
    files: dict[str, bytes] = {}
    pos = 0
    for rel, _oid in wanted:
        nl = raw.index(b"\n", pos)
        size = int(raw[pos:nl].split()[2])
        files[rel] = raw[nl + 1:nl + 1 + size]
        pos = nl + 1 + size + 1
    return files

