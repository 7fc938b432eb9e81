"""Fixtures for the engine tests (helpers live in engine_helpers.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import HF, write_catalog

from vllm_recipes.catalog import Catalog, load_catalog


@pytest.fixture(scope="session")
def bundled() -> Catalog:
    return load_catalog()


@pytest.fixture
def make_catalog(tmp_path: Path) -> Callable[..., Catalog]:
    """``make_catalog(recipe_dict)`` or ``make_catalog({hf_id: recipe_dict, ...})``."""
    counter = iter(range(1000))

    def make(data: dict[str, Any]) -> Catalog:
        root = tmp_path / f"cat{next(counter)}"
        return write_catalog(root, {HF: data} if "model" in data else data)

    return make
