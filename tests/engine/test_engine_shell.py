"""Deduplication, quoting and text layout (synthesis.md §7)."""

from __future__ import annotations

import pytest
from engine_helpers import recipe, render, shell_words, tail
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.render.shell import (
    UnsafeValue,
    command_text,
    dedupe,
    dedupe_positions,
    pair_lines,
    quote,
    render_invocation,
    router_text,
)
from vllm_recipes.select.omni import resolve_omni_tasks
from vllm_recipes.synth.omni import resolve_omni
from vllm_recipes.synth.plan import Arg, Invocation, Source


def args(*tokens: str) -> list[Arg]:
    return [Arg(t, Source("test", "", (i,))) for i, t in enumerate(tokens)]


def deduped(*tokens: str) -> list[str]:
    kept, _ = dedupe(args(*tokens))
    return [a.value for a in kept]


class TestDedupe:
    """§7.1-§7.2."""

    def test_last_wins_at_its_position(self) -> None:
        assert deduped("--a", "1", "--b", "--a", "2", "--c") == ["--b", "--a", "2", "--c"]

    def test_boolean_then_valued(self) -> None:
        assert deduped("--a", "--b", "--a", "x") == ["--b", "--a", "x"]
        assert deduped("--a", "x", "--b", "--a") == ["--b", "--a"]

    def test_single_dash_and_negative_numbers_are_flags(self) -> None:
        assert deduped("-cc.x=1", "-cc.x=1") == ["-cc.x=1"]
        assert deduped("--offset", "-1", "--offset", "-1") == ["--offset", "-1"]
        # `-1` is its own flag unit: the first `--offset` became boolean and is shadowed by the second.
        kept, shadow = dedupe(args("--offset", "-1", "--offset", "-1"))
        assert [a.source.key_path for a in kept] == [(2,), (3,)]
        assert set(shadow) == {"--offset", "-1"}

    def test_flag_identity_is_the_exact_token(self) -> None:
        assert deduped("--x=1", "--x=2", "--x", "2") == ["--x=1", "--x=2", "--x", "2"]
        assert deduped("--block-size=64", "--block-size", "32") == ["--block-size=64", "--block-size", "32"]

    def test_positionals_always_kept(self) -> None:
        assert deduped("p", "--a", "1", "q", "p", "--a", "2") == ["p", "q", "p", "--a", "2"]

    def test_empty_strings_removed_first(self) -> None:
        assert deduped("--flag", "", "--v", "1") == ["--flag", "--v", "1"]
        assert deduped("--a", "1", "--a", "") == ["--a"]

    def test_shadowed_units_are_recorded_oldest_first(self) -> None:
        _, shadow = dedupe(args("--a", "1", "--a", "2", "--a", "3"))
        assert [u.value.value for u in shadow["--a"]] == ["1", "2"]

    def test_re_pairing_example(self) -> None:
        """§7.3: ``[--a, --b, v, p, --b, w]`` -> dedupe ``[--a, p, --b, w]`` -> lines ``--a p``, ``--b w``."""
        kept = deduped("--a", "--b", "v", "p", "--b", "w")
        assert kept == ["--a", "p", "--b", "w"]
        assert pair_lines(kept) == ["--a p", "--b w"]


def drop_reference(values: list[str], drop_flags: tuple[str, ...]) -> list[int]:
    """The drop rule written plainly: walk the tokens; a token in ``drop_flags`` goes together with its
    value (the next token, unless a flag); everything else is kept."""
    kept: list[int] = []
    i = 0
    while i < len(values):
        if values[i] in drop_flags:
            has_value = i + 1 < len(values) and not values[i + 1].startswith("-")
            i += 2 if has_value else 1
        else:
            kept.append(i)
            i += 1
    return kept


class TestDropFlags:
    """``drop_flags`` leave after dedupe, each with its value: the value itself is never looked up."""

    def test_a_dropped_value_that_is_itself_dropped_does_not_drop_the_next_token(self) -> None:
        assert dedupe_positions(("--a", "x", "y"), ("--a", "x")) == ((2,), ())

    @settings(max_examples=500)
    @given(
        st.lists(st.sampled_from(["--a", "--b", "-1", "x", "y", ""]), max_size=8),
        st.lists(st.sampled_from(["--a", "--b", "-1", "x", "y"]), max_size=3).map(tuple),
    )
    def test_matches_the_plain_rule(self, tokens: list[str], drop_flags: tuple[str, ...]) -> None:
        values = tuple(tokens)
        deduped = dedupe_positions(values, ())[0]
        expected = [deduped[j] for j in drop_reference([values[k] for k in deduped], drop_flags)]
        assert dedupe_positions(values, drop_flags)[0] == tuple(expected)


class TestRecipeTokens:
    """§7.1 as seen from a recipe: every non-truthy element is dropped before dedupe."""

    @pytest.mark.parametrize("falsy", ["", None, False, 0])
    def test_non_truthy_value_makes_the_flag_boolean(self, make_catalog, falsy) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model", "base_args": ["--flag", falsy, "--x", "1"]}))
        obj = render(cat)
        assert tail(obj["argv"]) == ["--flag", "--x", "1", "--tensor-parallel-size", "8"]
        assert obj["command"].startswith("vllm serve org/model \\\n  --flag \\\n  --x 1 \\\n")

    @pytest.mark.parametrize("falsy", ["", None, False, 0])
    def test_omni_args_are_pre_filtered_too(self, make_catalog, falsy) -> None:
        """§10.2: omni commands use the same §7 pipeline."""
        cat = make_catalog(recipe(meta={"title": "M", "tasks": ["omni"]}, omni={"tasks": ["t2v"]},
                                  model={"model_id": "org/model", "base_args": ["--flag", falsy, "--x", "1"]}))
        rec = cat.recipe("org/model")
        plan = resolve_omni(cat, rec, "default", resolve_omni_tasks(rec.data)[0], "h200")
        text, argv = render_invocation(plan.serve)
        assert argv[3:] == ["--flag", "--x", "1", "--omni"]
        assert text == "vllm serve org/model \\\n  --flag \\\n  --x 1 \\\n  --omni"

    def test_numbers_are_stringified(self, make_catalog) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model", "base_args": ["--seed", 7, "--ratio", 0.5]}))
        assert tail(render(cat)["argv"])[:4] == ["--seed", "7", "--ratio", "0.5"]


class TestPairing:
    """§7.3."""

    def test_pairs_and_singles(self) -> None:
        assert pair_lines(["--a", "1", "--b", "--c", "x y", "pos", "-1"]) == [
            "--a 1", "--b", "--c 'x y'", "pos", "-1"]

    def test_flags_and_positionals_quoted_like_values(self) -> None:
        """One rule for every token (issue #21): a flag or positional with shell syntax is quoted too."""
        assert pair_lines(["--x=a b", "it's"]) == ["'--x=a b' 'it'\\''s'"]
        assert pair_lines(["it's", "--x=a b"]) == ["'it'\\''s'", "'--x=a b'"]
        assert pair_lines(["--a", "1", "pos"]) == ["--a 1", "pos"]


class TestQuote:
    """§7.4."""

    @pytest.mark.parametrize(("value", "want"), [
        ('{"a":1}', """'{"a":1}'"""),
        ("a b", "'a b'"),
        ("it's", "'it'\\''s'"),
        ("${FOO}", "'${FOO}'"),
        ("$foo", "'$foo'"),
        ("$FOO_1", "'$FOO_1'"),  # only declared placeholders expand (issue #28 item 10)
        ("$_X", "'$_X'"),
        ("$HF_TOKEN", "'$HF_TOKEN'"),
        ("$HEAD_IP", "$HEAD_IP"),
        ("${IFACE_NAME}", "${IFACE_NAME}"),
        ("$PREFILL_NODE_2:8001", "$PREFILL_NODE_2:8001"),
        ("x $HEAD_IP y", "'x '$HEAD_IP' y'"),
        ("$HEAD_IPX", "'$HEAD_IPX'"),
        ("/usr/lib/x.so:$LD_PRELOAD", "/usr/lib/x.so:$LD_PRELOAD"),  # an inherited search path
        ("$1X", "'$1X'"),
        ("$FOO:8000", "'$FOO:8000'"),
        ("0.95", "0.95"),
        ("True", "True"),
        ("fp8", "fp8"),
        ("a/b=c:d@e,f+g%h-i_j.k", "a/b=c:d@e,f+g%h-i_j.k"),
        ("~/.cache", "'~/.cache'"),
        ("a*", "'a*'"),
        ("", ""),
        ("é", "'é'"),
    ])
    def test_examples(self, value, want) -> None:
        assert quote(value) == want

    @pytest.mark.parametrize(("value", "want"), [
        ("abc\n", "'abc\n'"),
        ("$FOO\n", "'$FOO\n'"),
        ("fp8\n", "'fp8\n'"),
    ])
    def test_trailing_newline_is_quoted(self, value, want) -> None:
        """JS ``$`` anchors at the end of input only; a value ending in a newline is not "safe"."""
        assert quote(value) == want

    def test_non_strings_unchanged(self) -> None:
        assert quote(5) == 5  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", ["it's", '{"a":"b c"}', "$x", "a\nb", "'", "\\", "`cmd`", "!x"])
    def test_round_trips_through_a_shell(self, value) -> None:
        assert shell_words(f"--v {quote(value)}") == ["--v", value]


class TestLayout:
    """§7.5-§7.6."""

    def test_text(self) -> None:
        assert command_text("vllm serve", "org/m", ["--a 1", "--b"]) == "vllm serve org/m \\\n  --a 1 \\\n  --b"
        assert command_text("vllm serve", "org/m", []) == "vllm serve org/m"

    def test_render_invocation(self) -> None:
        inv = Invocation("org/m", tuple(args("--a", "x y", "--a", "z w", "pos", "--flag")))
        text, argv = render_invocation(inv)
        assert argv == ["vllm", "serve", "org/m", "--a", "z w", "pos", "--flag"]
        assert text == "vllm serve org/m \\\n  --a 'z w' \\\n  pos \\\n  --flag"

    def test_model_id_is_a_name_or_refused(self) -> None:
        text, argv = render_invocation(Invocation("/models/my-model", tuple(args("--a"))))
        assert text == "vllm serve /models/my-model \\\n  --a"
        assert argv[2] == "/models/my-model"
        with pytest.raises(UnsafeValue):
            render_invocation(Invocation("/models/my model", tuple(args("--a"))))

    def test_router_layout(self) -> None:
        assert router_text(["vllm-router --policy x", "--a", "--b 1"]) == \
            "vllm-router --policy x \\\n    --a \\\n    --b 1"

    def test_argv_is_the_deduped_list(self, make_catalog) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model", "base_args": ["--a", "x y", "--a", "it's"]}))
        obj = render(cat)
        assert obj["argv"] == ["vllm", "serve", "org/model", "--a", "it's", "--tensor-parallel-size", "8"]
        assert obj["command"] == "vllm serve org/model \\\n  --a 'it'\\''s' \\\n  --tensor-parallel-size 8"
        assert shell_words(obj["command"]) == obj["argv"]
