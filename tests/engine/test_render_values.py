"""The remembered quoting of flag/value lines is quoting."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.render.shell import pair_lines, quote


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12).filter(lambda s: not s.startswith("-")))
def test_remembered_quoting_is_quoting(value: str) -> None:
    expected = [f"--flag {quote(value)}"]
    assert pair_lines(["--flag", value]) == expected
    assert pair_lines(["--flag", value]) == expected  # the second call is answered from memory
