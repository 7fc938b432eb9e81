"""Shared helpers for the validator tests: write a recipe directory, validate it, find findings."""

from __future__ import annotations

import textwrap
from pathlib import Path

from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.diagnostics import Finding
from vllm_recipes.catalog.validate import validate_catalog

#: A small recipe that validates cleanly against the bundled catalog.
GOOD = """\
meta:
  title: Test Model
  provider: Org
  hardware:
    h200: verified
model:
  model_id: org/Test
  base_args:
    - "--trust-remote-code"
features:
  reasoning:
    args: ["--reasoning-parser", "x"]
  spec:
    default_mode: mtp
    modes:
      mtp:
        args: ["--speculative-config", '{"method":"mtp"}']
      eagle:
        variants: [fp8]
        args: ["--speculative-config", '{"method":"eagle"}']
opt_in_features: [spec]
variants:
  default:
    precision: bf16
    vram_minimum_gb: 100
  fp8:
    model_id: org/Test-FP8
    precision: fp8
    vram_minimum_gb: 60
    default_modes:
      spec: eagle
compatible_strategies: [single_node_tp, single_node_tep]
default_strategy: single_node_tp
"""

REL = "models/org/Test.yaml"


def write_recipe(root: Path, text: str, rel: str = REL) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def validate_text(tmp_path: Path, text: str, rel: str = REL) -> list[Finding]:
    """Built-in checks only: checkers other modules register (dead-value lint) are not under test here."""
    write_recipe(tmp_path, text, rel)
    return validate_catalog(load_catalog(tmp_path))


def line_of(text: str, needle: str, nth: int = 1, *, start: bool = False) -> int:
    """1-based line number of the ``nth`` line containing (``start``: starting with) ``needle``."""
    seen = 0
    for i, line in enumerate(textwrap.dedent(text).splitlines(), 1):
        if line.startswith(needle) if start else needle in line:
            seen += 1
            if seen == nth:
                return i
    raise AssertionError(f"{needle!r} not in text")


def only(findings: list[Finding], code: str | None = None, key_path: str | None = None) -> Finding:
    got = [f for f in findings if (code is None or f.code == code) and (key_path is None or f.key_path == key_path)]
    assert len(got) == 1, f"expected one {code} finding at {key_path}, got: {[str(f) for f in findings]}"
    return got[0]
