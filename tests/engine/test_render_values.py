"""The value-only renderer (what the rendering memo keys on) equals the provenance-keeping one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.render.shell import (
    finalize,
    kept_positions,
    pair_lines,
    quote,
    render_invocation,
    render_values,
)
from vllm_recipes.synth.plan import Arg, Invocation, Source

TOKENS = st.sampled_from(["--a", "--b", "--grpc", "-c", "-1", "x", "1", "", "y z", "$HEAD_IP", "it's", "--a=1"])


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, max_size=14), st.lists(st.sampled_from(["--a", "--grpc", "-c", "x"]), max_size=2),
       st.sampled_from(["vllm serve", "python -m vllm.entrypoints.grpc"]))
def test_render_values_matches_render_invocation(tokens: list[str], drop: list[str], binary: str) -> None:
    src = Source("test")
    inv = Invocation("org/model", tuple(Arg(t, src, i) for i, t in enumerate(tokens)), binary, tuple(drop))
    text, argv, _fin = render_invocation(inv)
    assert render_values(binary, "org/model", tokens, tuple(drop)) == (text, tuple(argv))


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, max_size=14), st.lists(st.sampled_from(["--a", "--grpc", "-c", "x"]), max_size=2))
def test_kept_positions_are_the_tokens_finalize_keeps(tokens: list[str], drop: list[str]) -> None:
    src = Source("test")
    inv = Invocation("org/model", tuple(Arg(t, src, i) for i, t in enumerate(tokens)), "vllm serve", tuple(drop))
    kept = finalize(inv).tokens
    assert tuple(inv.args[i] for i in kept_positions(tokens, tuple(drop))) == kept
    assert all(a is b for a, b in zip((inv.args[i] for i in kept_positions(tokens, tuple(drop))), kept, strict=True))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12).filter(lambda s: not s.startswith("-")))
def test_remembered_quoting_is_quoting(value: str) -> None:
    expected = [f"--flag {quote(value)}"]
    assert pair_lines(["--flag", value]) == expected
    assert pair_lines(["--flag", value]) == expected  # the second call is answered from memory
