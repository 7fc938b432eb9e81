"""Findings in the formats CI systems read: GitHub Actions workflow commands and SARIF 2.1.0.

Generic over :class:`Finding` (validation, dead values, flag lint - whatever ``validate`` collects), so a
new checker shows up in CI without changes here. ``where`` maps a finding's catalog-relative file to the
path the CI knows (relative to the repository checkout).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

from vllm_recipes.catalog.diagnostics import Finding

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
#: rule id for findings that carry no code of their own
DEFAULT_RULE = "recipe"

Where = Callable[[Finding], str]


def _escape_data(text: str) -> str:
    """Workflow-command message escaping (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """Workflow-command property escaping: the message escapes plus ``:`` and ``,``."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(f: Finding, file: str) -> str:
    """``::error file=…,line=…,col=…,title=…::message`` for one finding."""
    level = "error" if f.is_error else "warning"
    title = f"{f.key_path} ({f.code})" if f.code else f.key_path
    props = ",".join(f"{k}={_escape_property(str(v))}"
                     for k, v in (("file", file), ("line", f.line), ("col", f.col), ("title", title)))
    return f"::{level} {props}::{_escape_data(f.message)}"


def _uri(path: str) -> str:
    """A relative URI reference for a repository path (``<bundled>/x`` stays readable, just escaped)."""
    return quote(path.replace("\\", "/"), safe="/")


def _result(f: Finding, where: Where, rules: Mapping[str, int]) -> dict[str, Any]:
    """One SARIF result: the finding at its file position, under its rule."""
    rule = f.code or DEFAULT_RULE
    return {
        "ruleId": rule,
        "ruleIndex": rules[rule],
        "level": "error" if f.is_error else "warning",
        "message": {"text": f"{f.key_path}: {f.message}"},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": _uri(where(f)), "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": max(1, f.line), "startColumn": max(1, f.col)},
        }}],
        "properties": {"keyPath": f.key_path},
    }


def sarif_log(findings: Iterable[Finding], where: Where, tool_version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run; rules are the finding codes, in first-seen order."""
    items = list(findings)
    rules = {rule: i for i, rule in enumerate(dict.fromkeys(f.code or DEFAULT_RULE for f in items))}
    results = [_result(f, where, rules) for f in items]
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "vllm-recipes",
                "version": tool_version,
                "rules": [{"id": rule, "name": rule, "shortDescription": {"text": f"recipe check: {rule}"}}
                          for rule in rules],
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
