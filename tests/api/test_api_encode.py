"""The API's one encoder writes json-api.md §3's bytes (``json.dumps(indent=2, ensure_ascii=False)``) for any
value a catalog can hold, including those orjson alone would write otherwise (small or non-finite floats,
integers beyond 64 bits, non-string keys, very deep nesting)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.api.build import encode
from vllm_recipes.catalog.yamlsource import FrozenDict


def reference(value: Any) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8")


scalars = (st.none() | st.booleans() | st.text() | st.floats()
           | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
           | st.sampled_from([1e-5, 1e-7, -3.5e-9, 1e-10, 1e16, 1e22, float("inf"), float("nan"), -0.0, 155.5]))
keys = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
values = st.recursive(scalars, lambda inner: (st.lists(inner) | st.lists(inner).map(tuple)
                                              | st.dictionaries(st.text(), inner)
                                              | st.dictionaries(st.text(), inner).map(FrozenDict)
                                              | st.dictionaries(keys, inner)), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(values)
def test_encode_writes_what_json_dumps_writes(value: Any) -> None:
    assert encode(value) == reference(value)


def test_the_values_orjson_spells_otherwise() -> None:
    for value in (1e-05, 1e-07, float("inf"), float("nan"), 2 ** 64, {1: "a"}, {"a": [0.00012, 3e-5]}):
        assert encode({"v": value}) == reference({"v": value})
    deep: Any = "x"
    for _ in range(400):
        deep = [deep]
    assert encode(deep) == reference(deep)
