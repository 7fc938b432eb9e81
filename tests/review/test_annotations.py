"""``validate --format github`` (workflow annotations) and ``--format sarif`` (checked against the SARIF schema)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.catalog.diagnostics import Finding
from vllm_recipes.cli.main import cli
from vllm_recipes.review.annotations import github_annotation, sarif_log

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0-subset.schema.json").read_text())
VALIDATOR = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)

BROKEN = """\
meta:
  title: Broken
model:
  model_id: org/Broken
variants:
  default:
    precision: fp8
    bogus_key: 1
default_strategy: no_such_strategy
"""

ANNOTATION = re.compile(r"^::(error|warning) file=([^,]*),line=(\d+),col=(\d+),title=([^:]*)::(.*)$")


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    (tmp_path / "models" / "org").mkdir(parents=True)
    (tmp_path / "models" / "org" / "Broken.yaml").write_text(BROKEN)
    (tmp_path / "models" / "org" / "Unparsable.yaml").write_text("meta: [oops\n")
    return tmp_path


def test_github_annotations_point_at_each_finding(recipes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(recipes)
    res = CliRunner().invoke(cli, ["validate", "--recipes-dir", ".", "--format", "github"])
    assert res.exit_code == 1
    lines = res.output.strip().splitlines()
    annotations = [ANNOTATION.match(line) for line in lines[:-1]]
    assert all(annotations), lines
    by_file = {(m.group(2), m.group(1)) for m in annotations if m}
    assert ("models/org/Unparsable.yaml", "error") in by_file
    bogus = next(m for m in annotations if m and "bogus_key" in m.group(5))
    assert (bogus.group(2), bogus.group(3), bogus.group(4)) == ("models/org/Broken.yaml", "8", "5")
    strategy = next(m for m in annotations if m and "default_strategy" in m.group(5))
    assert strategy.group(1) == "error" and strategy.group(3) == "9"
    assert re.match(r"^\d+ errors?, \d+ warnings? in \d+ files?$", lines[-1])


def test_sarif_log_validates_against_the_schema(recipes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(recipes)
    res = CliRunner().invoke(cli, ["validate", "--recipes-dir", ".", "--format", "sarif"])
    assert res.exit_code == 1
    log = json.loads(res.output)
    VALIDATOR.validate(log)
    results = log["runs"][0]["results"]
    rules = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} >= {
        "models/org/Broken.yaml", "models/org/Unparsable.yaml"}
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)
    assert {r["level"] for r in results} == {"error", "warning"}


def test_the_schema_rejects_what_sarif_forbids() -> None:
    good = sarif_log([Finding("error", "a b.yaml", 3, 4, "x", "m", "type")], lambda f: f.file, "1")
    VALIDATOR.validate(good)
    assert good["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "a%20b.yaml"
    for broken in ({**good, "version": "2.0.0"}, {"version": "2.1.0"},
                   {**good, "runs": [{"tool": {"driver": {}}}]},
                   {**good, "runs": [{**good["runs"][0], "results": [{"level": "fatal", "message": {"text": "x"}}]}]}):
        assert not VALIDATOR.is_valid(broken)


@settings(max_examples=60, deadline=None)
@given(message=st.text(max_size=40), file=st.text(min_size=1, max_size=20), key=st.text(max_size=20),
       line=st.integers(0, 10_000))
def test_annotations_survive_any_text(message: str, file: str, key: str, line: int) -> None:
    f = Finding("warning", file, line, 1, key, message, "code")
    text = github_annotation(f, file)
    assert "\n" not in text and "\r" not in text
    m = ANNOTATION.match(text)
    assert m is not None
    unescape = {"%25": "%", "%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","}
    decoded = re.sub(r"%(25|0D|0A|3A|2C)", lambda x: unescape[x.group(0)], m.group(2))
    assert decoded == file
    assert re.sub(r"%(25|0D|0A)", lambda x: unescape[x.group(0)], m.group(6)) == message
    VALIDATOR.validate(sarif_log([f], lambda g: g.file, "0"))


def test_json_and_format_conflict_is_a_usage_error(recipes: Path) -> None:
    res = CliRunner().invoke(cli, ["validate", "--recipes-dir", str(recipes), "--json", "--format", "sarif"])
    assert res.exit_code == 2 and "conflicts" in res.output
