"""Shared data for the fit tests: public model configs and recorded GPU-tool outputs in ``data/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_recipes.fit.architecture import Architecture
from vllm_recipes.fit.sources import architecture_from_file, hub_offline

DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _hub_library_follows_the_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub reads ``HF_HUB_OFFLINE`` once, when first imported: imported under another test's
    patched environment (tests/perf sets it), the library would stay offline for the rest of the process.
    Each test starts with the library's switch as the environment says."""
    try:
        from huggingface_hub import constants
    except ImportError:  # the optional `hf` extra: nothing to reset
        return
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", hub_offline())


@pytest.fixture(scope="session")
def arch() -> dict[str, Architecture]:
    return {p.stem: architecture_from_file(p) for p in DATA.glob("*.json")}


@pytest.fixture(scope="session")
def smi() -> dict[str, str]:
    return {p.name: p.read_text() for p in (DATA / "smi").iterdir()}
