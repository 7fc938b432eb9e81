"""``validate``'s dead-value and release pass pauses the cyclic collector and gives the caller's setting back."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from vllm_recipes.catalog import load_catalog
from vllm_recipes.lint import vllm_validate

RECIPES = Path(__file__).parents[1] / "perf" / "data" / "recipes"


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_setting_is_restored(enabled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    during: list[bool] = []

    def serial(fn: Any, jobs: list[Any], **_: Any) -> list[Any]:
        during.append(gc.isenabled())
        return [fn(job) for job in jobs]

    monkeypatch.setattr(vllm_validate, "parallel_map", serial)
    catalog = load_catalog([RECIPES])
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        vllm_validate.dead_value_and_release_checker()(catalog)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
    assert during == [False]
