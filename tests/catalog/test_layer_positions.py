"""A finding in a layered catalog is placed in the file and at the line of the layer that wrote its key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from validate_helpers import GOOD

from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.validate import validate_catalog
from vllm_recipes.cli.main import cli
from vllm_recipes.lint.vllm_validate import vllm_release_checker

#: a KV option whose connector vLLM 0.10 lacks (a release-lint warning for a recipe declaring 0.10.0)
#: and whose group nobody defines (a catalog-validation warning); its args item is on line 7
KV = """\
kv_offload:
  simple:
    display_name: Simple
    group: nowhere
    args:
      - --kv-transfer-config
      - '{"kv_connector":"SimpleCPUOffloadConnector","kv_role":"kv_both"}'
"""
#: a few lines a layer writes to override a hardware profile's field
H200 = "hardware_profiles:\n  h200:\n    display_name: Our H200\n"
OLD = GOOD.replace("  model_id: org/Test\n", '  model_id: org/Test\n  min_vllm_version: "0.10.0"\n')


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _layers(tmp_path: Path, kv_in: str) -> tuple[Path, Path]:
    """Two layers, the KV option written by the ``lower`` or the ``upper`` one (the other has ``H200``)."""
    lower = _tree(tmp_path / "lower", {"taxonomy.yaml": KV if kv_in == "lower" else H200, "models/org/Test.yaml": OLD})
    upper = _tree(tmp_path / "upper", {"taxonomy.yaml": KV if kv_in == "upper" else H200})
    return lower, upper


@pytest.mark.parametrize("kv_in", ["lower", "upper"])
def test_findings_name_the_layer_that_wrote_the_key(tmp_path: Path, kv_in: str) -> None:
    lower, upper = _layers(tmp_path, kv_in)
    # the top layer is shown by its relative path, the lower ones by their full path
    want = "taxonomy.yaml" if kv_in == "upper" else f"{lower.resolve()}/taxonomy.yaml"
    catalog = load_catalog([lower, upper])
    found = validate_catalog(catalog, extra_checks=[vllm_release_checker()])
    lint = [f for f in found if f.code == "vllm-min-version" and f.key_path == "kv_offload.simple.args[1]"]
    group = [f for f in found if f.code == "unknown-group"]
    assert lint and group
    assert {(f.file, f.line) for f in lint} == {(want, 7)}
    assert {(f.file, f.line) for f in group} == {(want, 4)}

    args = ["--recipes-dir", str(lower), "--recipes-dir", str(upper)]
    shown = want if kv_in == "lower" else str(upper / "taxonomy.yaml")
    text = CliRunner().invoke(cli, ["validate", *args]).output.splitlines()
    assert any(ln.startswith(f"{shown}:7:9: warning: kv_offload.simple.args[1]: [vllm-min-version]") for ln in text)
    assert any(ln.startswith(f"{shown}:4:5: warning: kv_offload.simple.group:") for ln in text)
    listed = json.loads(CliRunner().invoke(cli, ["validate", "--json", *args]).stdout)
    kv = {(f["file"], f["line"]) for f in listed if f["key_path"].startswith("kv_offload.simple")}
    assert kv == {(shown, 7), (shown, 4)}


@pytest.mark.parametrize("kv_in", ["lower", "upper"])
def test_explain_names_the_layer_of_each_argument(tmp_path: Path, kv_in: str) -> None:
    lower, upper = _layers(tmp_path, kv_in)
    want = "taxonomy.yaml" if kv_in == "upper" else f"{lower.resolve()}/taxonomy.yaml"
    got = CliRunner().invoke(cli, ["explain", "org/Test", "--hardware", "h200", "--kv-offload", "simple",
                                   "--format", "json", "--recipes-dir", str(lower), "--recipes-dir", str(upper)])
    assert got.exit_code == 0, got.output
    rows = [e for e in json.loads(got.stdout)[0]["entries"] if e["name"] == "--kv-transfer-config"]
    assert [e["location"] for e in rows] == [f"{want}:6"]
