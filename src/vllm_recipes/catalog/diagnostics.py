"""Validation findings: one problem, at one ``file:line:col``, under one key path.

Apart from the checks so that other stages can make and print findings without the validator.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from .yamlsource import KeyPath, YamlDocument, YamlLoadError, format_key_path

if TYPE_CHECKING:
    from .loader import Catalog

Severity = Literal["error", "warning", "info"]

@dataclass(frozen=True, slots=True)
class Finding:
    """One validation result. ``key_path`` is dotted (``variants.default.extra_args[2]``)."""

    severity: Severity
    file: str
    line: int
    col: int
    key_path: str
    message: str
    #: stable machine-readable class of the finding (``type``, ``unknown-key``, ...)
    code: str = ""

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def format(self, file: str | None = None) -> str:
        """``path:line:col: severity: key.path: message`` (``file`` overrides the shown path)."""
        return f"{file or self.file}:{self.line}:{self.col}: {self.severity}: {self.key_path}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return self.format()


#: An extra check run by :func:`validate_catalog` (e.g. the engine's dead-value lint).
Checker = Callable[["Catalog"], list[Finding]]


def finding_at(doc: YamlDocument, path: KeyPath, severity: Severity, message: str,
               code: str = "") -> Finding:
    """A finding located at ``path`` of ``doc`` (or its nearest ancestor that exists)."""
    pos = doc.position(path)  # (in a merged shared file: the file of the layer the value came from)
    return Finding(severity, pos.file, pos.line, pos.col, format_key_path(path), message, code)


def finding_from_load_error(exc: YamlLoadError) -> Finding:
    """A file that could not be read or parsed, at the parser's position."""
    pos = exc.position
    return Finding("error", pos.file, pos.line, pos.col, format_key_path(()), exc.message, "yaml")


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Stable order: by file, then position, errors before warnings."""
    return sorted(findings, key=lambda f: (f.file, f.line, f.col, _SEVERITY_ORDER.get(f.severity, 2),
                                           f.key_path, f.message))


def plural(n: int, word: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def format_findings_summary(findings: Iterable[Finding], files: int) -> str:
    """``2 errors, 1 warning in 3 files``."""
    n = Counter(f.severity for f in findings)
    notes = f", {plural(n['info'], 'note')}" if n["info"] else ""
    return f"{plural(n['error'], 'error')}, {plural(n['warning'], 'warning')}{notes} in {plural(files, 'file')}"


_EXAMPLE = re.compile(r" \(e\.g\. [^()]*\)$")


def findings_not_in(before: Iterable[Finding], after: Iterable[Finding]) -> list[Finding]:
    """Findings of ``after`` that ``before`` did not have, by file, severity, code, key path and message
    (positions ignored: lines move). A shared file's finding names one of the recipes that meet it in
    its message, so there the message is not compared."""
    def key(f: Finding) -> tuple[str, str, str, str, str]:
        shared = not f.file.removeprefix("<bundled>/").startswith("models/") and "/models/" not in f.file
        return f.file, f.severity, f.code, f.key_path, "" if shared and f.code else _EXAMPLE.sub("", f.message)

    old = set(map(key, before))
    return [f for f in after if key(f) not in old]
