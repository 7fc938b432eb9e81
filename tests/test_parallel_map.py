"""``parallel.parallel_map``: ``[fn(x) for x in items]`` in input order, however the work is spread."""

from __future__ import annotations

import pytest

from vllm_recipes.parallel import parallel_map


def _square(x: int) -> int:
    return x * x


@pytest.mark.parametrize("jobs", [1, 2])
def test_results_come_back_in_input_order_with_a_size(jobs: int) -> None:
    items = list(range(20))
    # the largest (last) items start first: the results still follow the input
    assert parallel_map(_square, items, jobs=jobs, min_items=4, size=float) == [x * x for x in items]


def test_too_few_items_run_serially_in_order() -> None:
    items = [3, 1, 2]
    assert parallel_map(_square, items, jobs=2, min_items=8, size=float) == [9, 1, 4]
