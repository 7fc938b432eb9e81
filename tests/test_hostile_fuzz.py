"""Bounded fuzz (CI): mutated real recipes through validate, build-api and the web app.

Every outcome must be a finding, a skipped recipe or a clean build: no traceback,
no hang, no 5xx answer, no file outside the output directory. The long run is
``tools/fuzz_recipes.py``; both use ``tools/fuzzlib.py``.
"""

from __future__ import annotations

import logging
import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import fuzzlib

SEEDS = fuzzlib.seeds()


@settings(max_examples=6, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_mutated_recipes_never_crash(seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    logging.getLogger("vllm_recipes").setLevel(logging.ERROR)
    rng = random.Random(seed)
    rel, text = SEEDS[seed % len(SEEDS)]
    mutated = fuzzlib.mutate(text, rng)
    out = fuzzlib.run_one(mutated, tmp_path_factory.mktemp("fuzz"), rng, rel=rel, server=True, limit=120)
    assert out.ok, (seed, out.tracebacks, out.hangs, out.server_errors, out.outside_writes)


@pytest.mark.parametrize("seed", [3, 10, 17])
def test_mutations_are_hostile(seed: int) -> None:
    """The mutator changes the file (a fuzz that tries nothing would prove nothing)."""
    _rel, text = SEEDS[seed % len(SEEDS)]
    assert fuzzlib.mutate(text, random.Random(seed)) != text
