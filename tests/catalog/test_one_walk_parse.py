"""The one-walk construction (``_construct_frozen``) gives exactly what the full path gives.

The full path (``parse_yaml(..., one_walk=False)``: alias check, PyYAML's own
constructor, ``freeze``) is the reference: same values *and types*, same
repeated keys, same errors at the same place. A document the one walk does
not handle (merge keys, explicit tags, complex keys, limits) must fall back,
not differ.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_recipes.catalog.loader import BUNDLED_DIR
from vllm_recipes.catalog.yamlsource import FrozenDict, YamlLoadError, parse_yaml


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (``1 == True == 1.0`` is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(type(k) is type(k2) for k, k2 in zip(a, b, strict=True)) and all(
            _same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def _outcome(text: str, one_walk: bool) -> Any:
    try:
        doc = parse_yaml(text, "t.yaml", one_walk=one_walk)
    except YamlLoadError as exc:
        return ("error", str(exc))
    return ("ok", doc.data, doc.duplicate_keys)


def assert_same_parse(text: str) -> None:
    fast, full = _outcome(text, True), _outcome(text, False)
    assert fast[0] == full[0], (fast, full)
    if fast[0] == "error":
        assert fast == full
        return
    assert _same(fast[1], full[1]), (fast[1], full[1])
    assert fast[2] == full[2]


def test_every_bundled_file_parses_the_same() -> None:
    files = sorted(Path(BUNDLED_DIR).rglob("*.yaml"))
    assert len(files) > 5
    for path in files:
        assert_same_parse(path.read_text(encoding="utf-8"))


EDGE_CASES = {
    "scalars": "a: 1\nb: 1.5\nc: true\nd: null\ne: '1'\nf: 0x1f\ng: .inf\nh: .nan\ni: ~\nj: 1_000\nk: -0.0\n",
    "dates": "a: 2026-12-01\nb: 2026-12-01T10:00:00+02:00\nc: [2026-01-02]\n",
    "date key": "2026-12-01: x\n",
    "keys of several types": "1: a\ntrue: b\nnull: c\n1.5: d\n'x': e\n",
    "keys that collide": "1: a\ntrue: b\n",
    "repeated keys": "a: 1\nb: {c: 1, c: 2}\na: 3\n",
    "repeated quoted merge key": "'<<': 1\n'<<': 2\n",
    "merge keys": "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",
    "merge list": "a: &a {x: 1}\nb: &b {y: 2}\nc: {<<: [*a, *b], z: 3}\n",
    "anchors and aliases": "a: &v [1, {k: v}]\nb: *v\nc: *v\n",
    "explicit tags": "a: !!str 12\nb: !!int '7'\nc: !!float '1'\nd: !!binary aGVsbG8=\n",
    "sets and omaps": "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\n",
    "custom tag": "a: !custom 1\n",
    "complex key": "? [1, 2]\n: x\n",
    "block strings": "a: |\n  line one\n  line two\nb: >-\n  folded\n  text\n",
    "empty": "",
    "only a comment": "# nothing\n",
    "top-level list": "- 1\n- [2, 3]\n",
    "top-level scalar": "hello\n",
    "recursive alias": "a: &x [*x]\n",
    "alias bomb": "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                  "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                  "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e]\n",
    "deep nesting": "a: " + "[" * 205 + "]" * 205 + "\n",
    "scalar just too deep": "a: " + "[" * 200 + "1" + "]" * 200 + "\n",
    "scalar at the depth limit": "[" * 200 + "1" + "]" * 200 + "\n",
    "bad timestamp": "a: !!timestamp nope\n",
}


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_edge_cases_parse_the_same(name: str) -> None:
    assert_same_parse(EDGE_CASES[name])


def test_an_alias_shares_its_frozen_value() -> None:
    doc = parse_yaml("a: &v {b: [1, 2026-12-01, x]}\nc: *v\n", "t.yaml")
    assert doc.data == {"a": {"b": (1, "2026-12-01", "x")}, "c": {"b": (1, "2026-12-01", "x")}}
    assert isinstance(doc.data, FrozenDict) and isinstance(doc.data["a"], FrozenDict)
    assert doc.data["a"] is doc.data["c"]  # an alias shares the frozen value


def _values() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(-10**6, 10**6),
        st.floats(allow_nan=False, width=32), st.dates(dt.date(1990, 1, 1), dt.date(2100, 1, 1)),
        st.text("ab:-# 01yn.\n'\"", max_size=6), st.sampled_from(["yes", "on", "~", "0o17", "1e3", "<<", "true"]))
    keys = st.one_of(st.text("abxy01 -", min_size=1, max_size=4), st.integers(0, 3), st.booleans())
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_values(), share=st.booleans(), flow=st.booleans())
def test_random_documents_parse_the_same(data: Any, share: bool, flow: bool) -> None:
    doc = {"x": data, "y": data} if share else data  # the same object twice: the dumper writes an alias
    text = yaml.safe_dump(doc, default_flow_style=flow, allow_unicode=True, sort_keys=False)
    assert_same_parse(text)


@settings(max_examples=100, deadline=None)
@given(st.text(":-[]{}&*!?|>'\"#\n ab1<", max_size=40))
def test_arbitrary_text_parses_or_fails_the_same(text: str) -> None:
    assert_same_parse(text)
