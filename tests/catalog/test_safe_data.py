"""Only plain YAML is data; display-only keys never cost a recipe its place; one rule for publishing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from validate_helpers import GOOD

from vllm_recipes.catalog import YamlLoadError, load_catalog
from vllm_recipes.catalog.usable import usable_catalog
from vllm_recipes.catalog.yamlsource import parse_yaml
from vllm_recipes.cli.main import cli


@pytest.mark.parametrize(("text", "line", "col", "words"), [
    ("a: 1\nb: !!binary aGVsbG8=\n", 2, 4, "!!binary"),
    ("a:\n  zz: !!set {x, y}\n", 2, 7, "!!set"),
    ("v: .inf\n", 1, 4, "not a finite number"),
    ("v: [1, -.Inf]\n", 1, 8, "not a finite number"),
    ("v: .nan\n", 1, 4, "not a finite number"),
    ("features:\n  1: {args: []}\n", 2, 3, "1 is an integer"),
    ("meta:\n  hardware: {true: verified}\n", 2, 14, "true is a boolean"),
    ("x: {1.5: a}\n", 1, 5, "1.5 is a number"),
    ("x: {~: 1}\n", 1, 5, "is null"),
    ("? [a, b]\n: 1\n", 1, 3, "not a list or mapping"),
    ("!!binary aGVsbG8=\n", 1, 1, "!!binary"),
    ("v: !!omap [{a: 1}]\n", 1, 4, "!!omap"),
])
def test_anything_but_plain_data_is_a_load_error_at_its_line(text: str, line: int, col: int, words: str) -> None:
    with pytest.raises(YamlLoadError) as got:
        parse_yaml(text, "f.yaml")
    assert (got.value.position.line, got.value.position.col) == (line, col)
    assert words in got.value.message


def test_plain_data_still_loads() -> None:
    doc = parse_yaml("a: &x {b: 1.5}\nc: {<<: *x, d: 2}\ne: 2024-01-02\nf: 1e400\ng: null\n2024-01-01: h\n", "f.yaml")
    assert doc.data == {
        "a": {"b": 1.5}, "c": {"b": 1.5, "d": 2}, "e": "2024-01-02", "f": "1e400", "g": None, "2024-01-01": "h",
    }


def _write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return root


def test_a_strategies_file_that_is_binary_is_one_error_and_the_rest_loads(tmp_path: Path) -> None:
    root = _write(tmp_path, "models/org/Test.yaml", GOOD)
    _write(root, "strategies/evil.yaml", "!!binary aGVsbG8=\n")
    for name in ("single_node_tp", "single_node_tep", "multi_node_tp"):
        _write(root, f"strategies/{name}.yaml", f"name: {name}\n")
    cat, findings = usable_catalog(load_catalog(root))
    assert [r.hf_id for r in cat.recipes] == ["org/Test"]
    assert [(f.file, f.line) for f in findings] == [("strategies/evil.yaml", 1)]


#: the public shapes: a mapping-valued docker_source, meta.difficulty, a wrong type in a display key
DISPLAY = GOOD.replace("model:\n  model_id: org/Test\n", "model:\n  model_id: org/Test\n  docker_source:\n"
                       "    mount_path: /models\n    url: https://example.com\n").replace(
    "  provider: Org\n", "  provider: Org\n  difficulty: advanced\n  description: [not, text]\n")


def test_display_only_keys_never_cost_a_recipe_its_place(tmp_path: Path) -> None:
    root = _write(tmp_path, "models/org/Test.yaml", DISPLAY)
    cat, skipped = usable_catalog(load_catalog(root))
    assert [r.hf_id for r in cat.recipes] == ["org/Test"] and skipped == []
    got = CliRunner().invoke(cli, ["validate", "--recipes-dir", str(root)])
    assert got.exit_code == 0, got.output
    lines = [ln for ln in got.output.splitlines() if ("models/org/Test.yaml" in ln and "meta." in ln) or "model." in ln]
    # the wrong type is one warning; docker_source as a mapping and difficulty are part of the format
    assert len(lines) == 1 and "warning: meta.description" in lines[0] and "still published" in lines[0]
    assert CliRunner().invoke(cli, ["command", "org/Test", "--recipes-dir", str(root)]).exit_code == 0


BROKEN = GOOD.replace("opt_in_features: [spec]", "opt_in_features: [nope]")


@pytest.mark.parametrize("argv", [["command"], ["explain"], ["show"], ["fit"], ["export", "--to", "k8s"]])
def test_every_command_refuses_what_serve_leaves_out_with_file_and_line(tmp_path: Path, argv: list[str]) -> None:
    root = _write(tmp_path, "models/org/Test.yaml", BROKEN)
    cat, _ = usable_catalog(load_catalog(root))
    assert cat.recipes == ()  # serve and build-api leave it out
    got = CliRunner().invoke(cli, [*argv, "org/Test", "--recipes-dir", str(root)])
    assert (got.exit_code == 1 and got.exception is None) or isinstance(got.exception, SystemExit), got.output
    assert "models/org/Test.yaml:" in got.stderr and "opt_in_features" in got.stderr
    assert "Traceback" not in got.output


@pytest.mark.parametrize("argv", [["command"], ["show"], ["export", "--to", "k8s"], ["fit"]])
def test_a_recipe_that_does_not_load_is_a_file_line_error(tmp_path: Path, argv: list[str]) -> None:
    root = _write(tmp_path, "models/org/Test.yaml", GOOD + "zz:\n  1: x\n")
    got = CliRunner().invoke(cli, [*argv, "org/Test", "--recipes-dir", str(root)])
    assert got.exit_code == 2 and "models/org/Test.yaml:" in got.stderr and "must be strings" in got.stderr


@pytest.mark.parametrize("taxonomy", ["hardware_profiles: {h200: 5}\n", "hardware_profiles: [1, 2]\n", "[]\n"])
@pytest.mark.parametrize("argv", [["command"], ["show"], ["fit", "--offline"], ["export", "--to", "k8s"]])
def test_an_unusable_taxonomy_gives_errors_never_a_traceback(tmp_path: Path, taxonomy: str, argv: list[str]) -> None:
    root = _write(tmp_path, "models/org/Test.yaml", GOOD)
    _write(root, "taxonomy.yaml", taxonomy)
    got = CliRunner().invoke(cli, [*argv, "org/Test", "--recipes-dir", str(root)])
    assert got.exception is None or isinstance(got.exception, SystemExit), got.output
    assert "Traceback" not in got.output


def test_a_profile_that_is_not_a_mapping_is_left_out_with_its_line(tmp_path: Path) -> None:
    root = _write(tmp_path, "models/org/Test.yaml", GOOD)
    _write(root, "taxonomy.yaml", "hardware_profiles:\n  h100: {gpu_count: 8, vram_gb: 640}\n  h200: 5\n")
    cat, findings = usable_catalog(load_catalog(root))
    assert list(cat.hardware_profiles) == ["h100"]
    assert [(f.file, f.line, f.key_path) for f in findings if f.code == "type"][:1] == \
        [("taxonomy.yaml", 3, "hardware_profiles.h200")]
