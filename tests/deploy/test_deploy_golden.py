"""Golden artifacts of the issue's four representative selections, for every target.

A change to any target's output shows up here as a readable diff. Refresh
deliberately with ``UPDATE_DEPLOY_GOLDEN=1 pytest tests/deploy/test_deploy_golden.py``
and review the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from deploy_helpers import GOLDEN, export

from vllm_recipes.render.export import TARGETS, ExportError, stdout_text

EXPECTED = Path(__file__).resolve().parent / "golden"


def _render(catalog, seed: str, target: str) -> str:
    try:
        return stdout_text(export(catalog, seed, target))
    except ExportError as exc:
        return f"ExportError: {exc}\n"


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("seed", GOLDEN)
def test_golden_artifact(catalog, seed, target):
    path = EXPECTED / f"{seed}.{target}.txt"
    got = _render(catalog, seed, target)
    if os.environ.get("UPDATE_DEPLOY_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path.name}"
    assert got == path.read_text(encoding="utf-8")


def test_the_multi_node_golden_compose_is_a_refusal():
    text = (EXPECTED / "v41-h200-dep-2nodes.compose.txt").read_text()
    assert text.startswith("ExportError: Compose runs on one machine")
