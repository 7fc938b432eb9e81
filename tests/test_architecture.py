"""The pipeline's one-way data flow, enforced: each stage imports only stages to its left."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "src" / "vllm_recipes"
#: modules any stage may import: they import nothing of this package (checked below)
LEAVES = {"jsvalues", "parallel"}
#: stage -> packages it may import (besides itself and the leaves)
ALLOWED = {
    "catalog": set(),
    "select": {"catalog"},
    "synth": {"catalog", "select"},
    "render": {"catalog", "select", "synth"},
    "fit": {"catalog", "select", "synth", "render"},
}
WEB_FRAMEWORKS = ("starlette", "uvicorn", "jinja2", "fastapi")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vllm_recipes."):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module:
            out.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("vllm_recipes.")}
    return out


@pytest.mark.parametrize("stage", sorted(ALLOWED))
def test_stage_imports_only_to_its_left(stage: str) -> None:
    for path in (PKG / stage).rglob("*.py"):
        bad = _imports(path) - ALLOWED[stage] - {stage} - LEAVES
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


@pytest.mark.parametrize("leaf", sorted(LEAVES))
def test_leaves_import_nothing_of_the_package(leaf: str) -> None:
    assert _imports(PKG / f"{leaf}.py") == set()


def test_loading_the_bundled_catalog_and_resolving_imports_no_web_framework() -> None:
    code = (
        "import sys\n"
        "from vllm_recipes.catalog import load_catalog\n"
        "from vllm_recipes.select.page import PageRequest, build_state\n"
        "from vllm_recipes.synth.resolve import resolve\n"
        "from vllm_recipes.render.deployment import deployment_blocks\n"
        "c = load_catalog(); r = c.recipe('deepseek-ai/DeepSeek-V4.1-Flash')\n"
        "ctx, plan = resolve(c, r, build_state(c, r, PageRequest()).selection)\n"
        "deployment_blocks(ctx, plan)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {WEB_FRAMEWORKS!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
