"""Whatever the input, the validator answers with findings, never with a traceback."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from validate_helpers import REL

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.catalog.diagnostics import Finding
from vllm_recipes.catalog.featuremodes import feature_mode_messages
from vllm_recipes.catalog.models import RecipeModel
from vllm_recipes.catalog.validate import validate_catalog, validate_document, validate_file
from vllm_recipes.catalog.yamlsource import YamlDocument, YamlLoadError, freeze, parse_yaml, thaw

BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def _write(root: Path, content: bytes) -> None:
    path = root / REL
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


@pytest.mark.parametrize(("content", "needle", "line"), [
    (b"", "empty", 1),
    (b"# only a comment\n", "empty", 1),
    (b"- a\n- b\n", "must be a mapping", 1),
    (b"just a string\n", "must be a mapping", 1),
    (b"\x00\x01\x02binary\xff", "NUL", 1),
    (b"meta: \xff\xfe\n", "UTF-8", 1),
    (BOMB.encode(), "expands to more than", 6),
    (b"a: " + b"[" * 300 + b"]" * 300 + b"\n", "nesting deeper", 1),
    (b"meta:\n\ttitle: x\n", "YAML syntax error", 2),
    (b"a: 1\n  b: 2\n", "YAML syntax error", 2),
])
def test_unreadable_files_become_findings(tmp_path: Path, content: bytes, needle: str, line: int) -> None:
    _write(tmp_path, content)
    findings = validate_catalog(load_catalog(tmp_path))
    assert len(findings) == 1, findings
    f = findings[0]
    assert (f.severity, f.code, f.file, f.line) == ("error", "yaml", REL, line)
    assert needle in f.message


def test_huge_file_is_refused_without_reading(tmp_path: Path) -> None:
    path = tmp_path / REL
    path.parent.mkdir(parents=True)
    with path.open("wb") as fh:  # sparse 50 MB file
        fh.truncate(50 * 1024 * 1024)
    findings = validate_catalog(load_catalog(tmp_path))
    assert [(f.code, f.line) for f in findings] == [("yaml", 1)]
    assert "the limit is" in findings[0].message


def test_bad_file_outside_the_catalog(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "r.yaml"
    path.parent.mkdir()
    path.write_bytes(BOMB.encode())
    findings = validate_file(path, load_catalog(BUNDLED_DIR), "r.yaml")
    assert [(f.file, f.code) for f in findings] == [("r.yaml", "yaml")]


def test_broken_data_files_are_reported(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "taxonomy.yaml").write_text("hardware_profiles: [1, 2]\n")
    (tmp_path / "strategies").mkdir()
    (tmp_path / "strategies" / "x.yaml").write_text("name: x\ndeploy_type: weird\nvllm_args: '--a'\n")
    findings = validate_catalog(load_catalog(tmp_path))
    keys = {(f.file, f.key_path, f.severity) for f in findings}
    assert ("taxonomy.yaml", "hardware_profiles", "error") in keys
    assert ("strategies/x.yaml", "vllm_args", "error") in keys
    assert ("strategies/x.yaml", "deploy_type", "warning") in keys


# --- hypothesis: random mutations of the seed recipes ----------------------------------------

_SEEDS = [r for r in load_catalog(BUNDLED_DIR).recipes]
_CATALOG = load_catalog(BUNDLED_DIR)

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True),
                     st.text(max_size=12), st.sampled_from(["{", "[1,", "{bad", "a b", "default", "h200",
                                                             "single_node_tp", "arch:sm90", "unsupported"]))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=6)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _mutate(data: Any, path: tuple, op: str, value: Any, name: str) -> Any:
    if not path:
        return value if op == "replace" else data
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if op == "delete":
        del parent[last]
    elif op == "rename" and isinstance(parent, dict):
        parent[name] = parent.pop(last)
    else:
        parent[last] = value
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(range(len(_SEEDS))), data=st.data())
def test_random_mutations_only_produce_findings(seed: int, data: st.DataObject) -> None:
    recipe = _SEEDS[seed]
    raw = thaw(recipe.data)
    for _ in range(data.draw(st.integers(1, 5))):
        paths = _paths(raw)
        path = data.draw(st.sampled_from(paths))
        op = data.draw(st.sampled_from(["delete", "replace", "rename"]))
        raw = _mutate(raw, path, op, data.draw(_values), data.draw(st.text(max_size=10)))
    doc = YamlDocument(recipe.doc.file, freeze(raw), recipe.doc.positions)
    findings = validate_document(doc, "recipe", _CATALOG)
    assert all(isinstance(f, Finding) for f in findings)
    assert not [f for f in findings if f.code == "internal"], findings
    for f in findings:
        assert f.line >= 1 and f.col >= 1 and f.severity in ("error", "warning")
        f.format()
    assert isinstance(feature_mode_messages(freeze(raw)), list)
    with contextlib.suppress(ValidationError):
        RecipeModel.model_validate(freeze(raw))


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_random_text_never_crashes(text: str) -> None:
    try:
        doc = parse_yaml(text, REL)
    except YamlLoadError:
        return
    findings = validate_document(doc, "recipe", _CATALOG)
    assert not [f for f in findings if f.code == "internal"], findings
