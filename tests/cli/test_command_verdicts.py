"""The publishing rule stays exact when ``command`` remembers a recipe's clean verdict.

``validation_errors`` in ``catalog/usable.py`` lets a command skip the pydantic models for a recipe already found to
have no validation error, under the digest of everything the check reads. These tests change
each input (the recipe's bytes, a shared file it refers to) after a clean verdict was remembered
and expect the refusal the check gives; and they check what the verdict is for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.usable import usable_catalog

SOLO = """name: solo_tp
deploy_type: single_node
display_name: Solo
hardware_match: {min_gpus: 1, max_gpus: 8, multi_node: false}
vllm_args: []
parallel_flag: --tensor-parallel-size
"""
TINY = {"meta": {"title": "Tiny"}, "model": {"model_id": "acme/Tiny"},
        "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 10}},
        "compatible_strategies": ["solo_tp"]}


@pytest.fixture
def recipes(tmp_path: Path, recipe_writer: Callable[[Path, str, object], Path]) -> Path:
    """A recipes directory: ``acme/Tiny`` on its own strategy ``solo_tp``."""
    root = tmp_path / "recipes"
    (root / "strategies").mkdir(parents=True)
    (root / "strategies" / "solo_tp.yaml").write_text(SOLO, encoding="utf-8")
    recipe_writer(root, "acme/Tiny", TINY)
    return root


@pytest.fixture
def cache(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    return {"VLLM_RECIPES_CACHE_DIR": str(folder)}


def test_the_verdict_is_remembered_and_the_command_stays_the_same(
        recipes: Path, cache: dict[str, str], run_cli: Callable[..., Result]) -> None:
    first = run_cli("command", "acme/Tiny", "--recipes-dir", str(recipes), env=cache)
    second = run_cli("command", "acme/Tiny", "--recipes-dir", str(recipes), env=cache)
    assert first.exit_code == second.exit_code == 0
    assert first.stdout == second.stdout and "vllm serve acme/Tiny" in first.stdout
    assert list(Path(cache["VLLM_RECIPES_CACHE_DIR"]).glob("clean-*.pickle"))


def test_a_recipe_edited_after_a_clean_verdict_is_refused(
        recipes: Path, cache: dict[str, str], run_cli: Callable[..., Result],
        recipe_writer: Callable[[Path, str, object], Path]) -> None:
    assert run_cli("command", "acme/Tiny", "--recipes-dir", str(recipes), env=cache).exit_code == 0
    broken = {**TINY, "variants": {"default": {"precision": "bf16", "vram_minimum_gb": "10"}}}
    recipe_writer(recipes, "acme/Tiny", broken)
    res = run_cli("command", "acme/Tiny", "--recipes-dir", str(recipes), env=cache)
    assert res.exit_code == 1
    assert 'vram_minimum_gb: expected a number, got a string ("10")' in res.stderr


def test_a_shared_file_changed_after_a_clean_verdict_is_checked_again(
        recipes: Path, cache: dict[str, str], run_cli: Callable[..., Result]) -> None:
    assert run_cli("command", "acme/Tiny", "--recipes-dir", str(recipes), env=cache).exit_code == 0
    (recipes / "strategies" / "solo_tp.yaml").unlink()  # the recipe's bytes are the same; its reference is gone
    res = run_cli("command", "acme/Tiny", "--recipes-dir", str(recipes), env=cache)
    assert res.exit_code == 1
    assert "compatible_strategies[0]: unknown strategy 'solo_tp'" in res.stderr


def test_without_a_cache_the_recipe_is_checked_every_time(
        recipes: Path, run_cli: Callable[..., Result], recipe_writer: Callable[[Path, str, object], Path]) -> None:
    off = {"VLLM_RECIPES_CACHE_DIR": "off"}
    assert run_cli("command", "acme/Tiny", "--recipes-dir", str(recipes), env=off).exit_code == 0
    recipe_writer(recipes, "acme/Tiny", {**TINY, "compatible_strategies": ["nope"]})
    assert run_cli("command", "acme/Tiny", "--recipes-dir", str(recipes), env=off).exit_code == 1


def test_serve_skips_the_same_recipes_with_remembered_verdicts(
        recipes: Path, cache: dict[str, str], recipe_writer: Callable[[Path, str, object], Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``usable_catalog`` (serve, validate, the MCP server) reads and writes the same verdicts."""
    monkeypatch.setenv("VLLM_RECIPES_CACHE_DIR", cache["VLLM_RECIPES_CACHE_DIR"])
    recipe_writer(recipes, "acme/Broken", {**TINY, "model": {"model_id": "acme/Broken"},
                                           "compatible_strategies": ["nope"]})
    runs = [usable_catalog(load_catalog(str(recipes))) for _ in range(2)]
    kept = [[r.hf_id for r in c.recipes] for c, _ in runs]
    found = [[f.format() for f in findings] for _, findings in runs]
    assert kept[0] == kept[1] == ["acme/Tiny"]
    assert found[0] == found[1] and any("unknown strategy 'nope'" in f for f in found[0])


def test_a_remembered_recipe_is_rendered_without_building_the_validation_models(
        recipes: Path, cache: dict[str, str]) -> None:
    """What the verdict is for: the pydantic models are ~half of what ``command`` costs."""
    code = ("import sys\nfrom vllm_recipes.cli.main import cli\n"
            f"try:\n    cli(['command', 'acme/Tiny', '--recipes-dir', {str(recipes)!r}])\n"
            "except SystemExit as exc:\n    print(exc.code, 'pydantic' in sys.modules, file=sys.stderr)\n")
    env = {**os.environ, **cache}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
            for _ in range(2)]
    assert [r.stderr.splitlines()[-1] for r in runs] == ["0 True", "0 False"]
    assert runs[0].stdout == runs[1].stdout
