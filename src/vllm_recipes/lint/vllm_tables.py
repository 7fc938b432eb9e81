"""The shipped tables of vLLM's ``vllm serve`` command line, one view per release.

``vllm_data/latest.json`` is the full table of the newest release (flags,
config classes with their JSON keys, name registries, env vars);
``vllm_data/history.json`` says, for every release from 0.10 on, which
option strings, JSON keys, env vars and registry names exist and when a flag's
behaviour changed. Both are produced by ``tools/build_vllm_tables.py`` from the
releases' sources; nothing here imports vLLM.

A :class:`ReleaseView` is the table of one release as plain dicts and sets, so
the lint does only dictionary lookups (built once per release, then cached).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

Ranges = list[list[int]]

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``v0.31.0`` / ``0.31`` / ``0.31.0rc1`` -> ``(0, 31, 0)``; None when it is not a version."""
    m = _VERSION_RE.match(str(text).strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _in(ranges: Ranges | None, idx: int) -> bool:
    return bool(ranges) and any(a <= idx <= b for a, b in ranges)  # type: ignore[union-attr]


@dataclass(frozen=True, slots=True)
class FlagSpec:
    """How one flag parses in one release (see ``tools/vllm_cli_extract.py``)."""

    primary: str
    kind: str  # "switch", "value" or "json"
    type: str = "str"  # value flags: int, float, str, human_int, human_int_or_auto, json_or_str
    nargs: int | str | None = None
    choices: tuple[Any, ...] | None = None
    known: tuple[Any, ...] | None = None
    config: str | None = None
    negatable: bool = False
    deprecated: str | None = None
    repeat: bool = False

    @classmethod
    def from_entry(cls, primary: str, e: dict[str, Any]) -> FlagSpec:
        return cls(primary, e["kind"], e.get("type") or "str", e.get("nargs"),
                   tuple(e["choices"]) if e.get("choices") else None,
                   tuple(e["known"]) if e.get("known") else None, e.get("config"),
                   bool(e.get("negatable")), e.get("deprecated"), bool(e.get("repeat")))

    def describe(self) -> str:
        """``int``, ``switch (--no-x)``, ``JSON (CompilationConfig)``, ``one of a, b``, ``int ... (1 or more)``."""
        if self.kind == "switch":
            return "switch" + (" (negatable with --no-…)" if self.negatable else "")
        if self.kind == "json":
            return f"JSON ({self.config})" if self.config else "JSON"
        t = {"human_int": "int (1k/2M/1G suffixes ok)", "human_int_or_auto": "int or auto (1k/2M suffixes ok)",
             "json_or_str": "JSON or string"}.get(self.type, self.type)
        if self.choices:
            t = "one of " + ", ".join(str(c) for c in self.choices if c is not None)
        if self.nargs == "+":
            t += " (1 or more values)"
        elif self.nargs == "?":
            t += " (optional value)"
        elif isinstance(self.nargs, int):
            t += f" ({self.nargs} values)"
        return t


class Tables:
    """The history of every release plus the full newest table."""

    def __init__(self, latest: dict[str, Any], history: dict[str, Any]) -> None:
        self.latest = latest
        self.history = history
        self.releases: list[str] = history["releases"]
        self._parsed = [parse_version(r) for r in self.releases]
        self.configs: dict[str, Any] = latest["configs"]
        self._views: dict[int, ReleaseView] = {}

    @property
    def newest(self) -> str:
        return self.releases[-1]

    def index_of(self, version: str) -> int | None:
        """The table release for ``version``: same minor (one release per minor is shipped); None if unknown."""
        v = parse_version(version)
        if v is None:
            return None
        for i, r in enumerate(self._parsed):
            if r is not None and r[:2] == v[:2]:
                return i
        return None

    def nearest_index(self, version: str) -> int:
        """Like :meth:`index_of`, clamped to the first/newest release for versions outside the tables."""
        idx = self.index_of(version)
        if idx is not None:
            return idx
        v = parse_version(version)
        if v is None or (self._parsed[-1] is not None and v > self._parsed[-1]):
            return len(self.releases) - 1
        return 0

    def view(self, idx: int) -> ReleaseView:
        if idx not in self._views:
            self._views[idx] = ReleaseView(self, idx)
        return self._views[idx]

    # ---- windows ("added in", "removed in")
    def window(self, ranges: Ranges | None, idx: int) -> str:
        """Why a name is missing at release ``idx``: ``added in 0.31.0`` / ``removed in 0.30.0, last in 0.29.0``."""
        if not ranges:
            return f"in no vLLM release from {self.releases[0]} to {self.newest}"
        later = [a for a, _b in ranges if a > idx]
        earlier = [b for _a, b in ranges if b < idx]
        if earlier and (not later or idx - max(earlier) <= min(later) - idx):
            last = max(earlier)
            return f"removed in {self.releases[last + 1]}, last in {self.releases[last]}"
        return f"added in {self.releases[min(later)]}"

    def first_release(self, ranges: Ranges | None) -> str | None:
        return self.releases[ranges[0][0]] if ranges else None

    def spans(self, ranges: Ranges | None) -> str:
        """``0.10.2-0.29.0, 0.31.0-0.33.0``."""
        if not ranges:
            return "never"
        return ", ".join(self.releases[a] if a == b else f"{self.releases[a]}-{self.releases[b]}" for a, b in ranges)

    def flag_ranges(self, name: str) -> Ranges | None:
        return self.history["names"].get(name)

    def key_ranges(self, flag: str, path: str) -> Ranges | None:
        return self.history["keys"].get(flag, {}).get(path)

    def env_ranges(self, name: str) -> Ranges | None:
        return self.history["env"].get(name)

    def registry_ranges(self, registry: str, name: str) -> Ranges | None:
        return self.history["registries"].get(registry, {}).get(name)

    def primary_of(self, name: str) -> str:
        return self.history["aliases"].get(name, name)

    def flag_changes(self, primary: str) -> list[tuple[str, FlagSpec]]:
        """``(release, spec)`` at each release where the flag's behaviour changed."""
        return [(self.releases[i], FlagSpec.from_entry(primary, e)) for i, e in self.history["flags"].get(primary, [])
                if e is not None]


class ReleaseView:
    """Everything the lint needs about one release, as dicts and sets."""

    def __init__(self, tables: Tables, idx: int) -> None:
        self.tables = tables
        self.idx = idx
        self.release = tables.releases[idx]
        h = tables.history
        #: every accepted option string -> its primary option
        present = {name for name, ranges in h["names"].items() if _in(ranges, idx)}
        self.specs: dict[str, FlagSpec] = {}
        for primary, changes in h["flags"].items():
            entry = None
            for start, e in changes:
                if start <= idx:
                    entry = e
            if entry is not None and primary in present:
                self.specs[primary] = FlagSpec.from_entry(primary, entry)
        # an option string is its own primary in the releases where it is registered as one
        # (``--disable-log-requests`` before it became an alias of ``--enable-log-requests``)
        self.options: dict[str, str] = {
            name: name if name in self.specs else h["aliases"].get(name, name) for name in present}
        self.option_names = frozenset(self.options)
        self.keys: dict[str, frozenset[str]] = {
            flag: frozenset(p for p, r in paths.items() if _in(r, idx)) for flag, paths in h["keys"].items()}
        self.env: frozenset[str] = frozenset(n for n, r in h["env"].items() if _in(r, idx))
        self.registries: dict[str, frozenset[str]] = {
            reg: frozenset(n for n, r in names.items() if _in(r, idx)) for reg, names in h["registries"].items()}

    @property
    def is_newest(self) -> bool:
        return self.idx == len(self.tables.releases) - 1


@cache
def load_tables() -> Tables:
    """The shipped tables (read once per process)."""
    base = Path(__file__).with_name("vllm_data")
    latest = json.loads((base / "latest.json").read_text(encoding="utf-8"))
    history = json.loads((base / "history.json").read_text(encoding="utf-8"))
    return Tables(latest, history)
