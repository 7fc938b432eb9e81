"""Shared data for the fit tests: public model configs and recorded GPU-tool outputs in ``data/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_recipes.fit.architecture import Architecture
from vllm_recipes.fit.sources import architecture_from_file

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def arch() -> dict[str, Architecture]:
    return {p.stem: architecture_from_file(p) for p in DATA.glob("*.json")}


@pytest.fixture(scope="session")
def smi() -> dict[str, str]:
    return {p.name: p.read_text() for p in (DATA / "smi").iterdir()}
