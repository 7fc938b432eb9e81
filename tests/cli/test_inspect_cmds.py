"""``vllm-recipes validate / list / show``: output and exit codes."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.cli.inspect_cmds import print_overview, recipe_overview
from vllm_recipes.cli.main import cli

GOOD = """\
meta:
  title: Test Model
  provider: Org
  hardware:
    h200: verified
    mi300x: unsupported
model:
  model_id: org/Test
features:
  reasoning:
    args: ["--reasoning-parser", "deepseek_r1"]
variants:
  default:
    precision: bf16
    vram_minimum_gb: 100
  fp8:
    model_id: other/Test-FP8
    precision: fp8
compatible_strategies: [single_node_tp]
"""


def recipes(tmp_path: Path, text: str = GOOD, rel: str = "models/org/Test.yaml") -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return tmp_path


# --- validate --------------------------------------------------------------------------------

def test_validate_bundled_catalog_is_clean(run_cli: Callable[..., Result]) -> None:
    r = run_cli("validate")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().splitlines()[-1].startswith("0 errors, ")


def test_validate_reports_errors_with_positions(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    root = recipes(tmp_path, GOOD.replace("precision: fp8", "precision: 8").replace(
        "args: [", "argz: ["))
    r = run_cli("validate", "--recipes-dir", str(root))
    assert r.exit_code == 1
    lines = r.stdout.strip().splitlines()
    assert any(line.endswith("models/org/Test.yaml:18:5: error: variants.fp8.precision: "
                             'expected a string, got an integer (8)') for line in lines), lines
    assert any(":11:5: warning: features.reasoning.argz: unknown key 'argz' (did you mean 'args'?)" in line
               for line in lines), lines
    assert lines[-1] == "1 error, 1 warning in 1 file"


def test_validate_warnings_only_exit_zero(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    root = recipes(tmp_path, GOOD.replace("h200: verified", "h2000: verified"))
    r = run_cli("validate", "--recipes-dir", str(root))
    assert r.exit_code == 0
    assert r.stdout.strip().splitlines()[-1] == "0 errors, 1 warning in 1 file"


def test_validate_json(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    root = recipes(tmp_path, GOOD.replace("compatible_strategies: [single_node_tp]",
                                          "compatible_strategies: [single_node_tpx]"))
    r = run_cli("validate", "--json", "--recipes-dir", str(root))
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert [(d["severity"], d["key_path"], d["line"], d["col"], d["code"]) for d in data] == [
        ("error", "compatible_strategies[0]", 19, 25, "unknown-strategy")]
    assert data[0]["file"].endswith("models/org/Test.yaml")
    assert data[0]["message"] == "unknown strategy 'single_node_tpx' (did you mean 'single_node_tp' or 'single_node_tep'?)"


def test_validate_files_outside_recipes_dir(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    root = recipes(tmp_path / "mine", GOOD.replace("precision: bf16", "precision: [bf16]"), "models/acme/X.yaml")
    path = root / "models" / "acme" / "X.yaml"
    good = recipes(tmp_path / "ok", GOOD) / "models" / "org" / "Test.yaml"
    r = run_cli("validate", str(path), str(good))
    assert r.exit_code == 1
    lines = r.stdout.strip().splitlines()
    assert lines[0] == f"{path}:14:5: error: variants.default.precision: expected a string, got a list"
    assert lines[-1] == "1 error, 0 warnings in 2 files"


def test_validate_yaml_error(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    root = recipes(tmp_path, "meta: [\n")
    r = run_cli("validate", "--recipes-dir", str(root))
    assert r.exit_code == 1
    assert ": error: <root>: YAML syntax error" in r.stdout


def test_validate_missing_file_is_usage_error(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["validate", str(tmp_path / "nope.yaml")])
    assert r.exit_code == 2


@pytest.mark.parametrize("command", [["validate"], ["list"], ["show", "org/Test"]])
def test_bad_recipes_dir(tmp_path: Path, command: list[str]) -> None:
    r = CliRunner().invoke(cli, [*command, "--recipes-dir", str(tmp_path / "missing")])
    assert r.exit_code == 2
    assert "Recipes directory not found" in r.stderr


def test_recipes_dir_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    r = CliRunner().invoke(cli, ["list", "--recipes-dir", str(f)])
    assert r.exit_code == 2


def test_recipes_dir_from_environment(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    root = recipes(tmp_path)
    r = run_cli("list", "--json", env={"VLLM_RECIPES_DIR": str(root)})
    assert [d["hf_id"] for d in json.loads(r.stdout)] == ["org/Test"]


# --- list ------------------------------------------------------------------------------------

def test_list_bundled(run_cli: Callable[..., Result]) -> None:
    r = run_cli("list")
    assert r.exit_code == 0
    assert "deepseek-ai/DeepSeek-V4-Flash" in r.stdout
    assert "default, fp8, nvfp4" in r.stdout


def test_list_json(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    r = run_cli("list", "--json", "--recipes-dir", str(recipes(tmp_path)))
    assert json.loads(r.stdout) == [{"hf_id": "org/Test", "title": "Test Model", "provider": "Org",
                                     "variants": ["default", "fp8"], "file": "models/org/Test.yaml"}]


def test_list_notes_unloadable_files(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    root = recipes(tmp_path)
    recipes(root, "- not a recipe\n", "models/org/Bad.yaml")
    r = run_cli("list", "--recipes-dir", str(root))
    assert r.exit_code == 0 and "org/Test" in r.stdout
    assert "1 file could not be loaded" in r.stderr


# --- show ------------------------------------------------------------------------------------

def test_show_text(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    r = run_cli("show", "ORG/test", "--recipes-dir", str(recipes(tmp_path)))
    assert r.exit_code == 0
    out = r.stdout
    for section in ("Variants", "Hardware", "Strategies", "Features"):
        assert f"\n{section}\n" in out
    assert "✓ verified" in out and "✗ unsupported" in out
    assert "100 GB" in out and "single_node_tp" in out


def test_show_json_seed(run_cli: Callable[..., Result]) -> None:
    r = run_cli("show", "deepseek-ai/DeepSeek-V4-Flash", "--json")
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert data["hf_id"] == "deepseek-ai/DeepSeek-V4-Flash"
    assert [v["key"] for v in data["variants"]][:2] == ["default", "fp8"]
    strategies = {s["id"]: s for s in data["strategies"]}
    # compatible_strategies first, then strategy_hardware opt-ins (synthesis.md §3.6)
    assert list(strategies)[:5] == ["single_node_tp", "single_node_tep", "single_node_dep", "multi_node_dep",
                                    "pd_cluster"]
    assert strategies["multi_node_tp"]["opt_in"] and strategies["multi_node_tp"]["supported_on"] == ["dgx_spark_gb10"]
    assert strategies["single_node_tep"]["recommended"]
    hw = {h["id"]: h for h in data["hardware"]}
    assert hw["h200"]["status"] == "verified"
    assert "ascend_w8a8" in hw["ascend_910c"]["variants"]
    feats = {f["key"]: f for f in data["features"]}
    assert feats["spec_decoding"]["modes"] == ["mtp", "dspark", "dflash"]
    assert feats["spec_decoding"]["default_mode"] == "mtp"
    assert data["opt_in_features"] == ["spec_decoding"]


def test_show_variant_model_id_resolves_to_parent(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    r = run_cli("show", "other/Test-FP8", "--json", "--recipes-dir", str(recipes(tmp_path)))
    data = json.loads(r.stdout)
    assert (data["hf_id"], data["via_variant"]) == ("org/Test", "fp8")


def test_show_unknown_id_names_close_matches(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["show", "org/Tset", "--recipes-dir", str(recipes(tmp_path))])
    assert r.exit_code == 2
    assert "Unknown recipe 'org/Tset'" in r.stderr and "org/Test" in r.stderr


# --- show never crashes on odd recipes ----------------------------------------------------------

_odd = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 9), st.text(max_size=6),
              st.sampled_from(["default", "h200", "arch:sm90", "single_node_tp", "supported", "unsupported"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=5,
)
_KEYS = ["meta", "model", "features", "variants", "compatible_strategies", "strategy_hardware", "default_strategy",
         "opt_in_features", "hardware_opt_in_features", "omni"]


@settings(max_examples=60, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(_KEYS), _odd, max_size=4))
def test_show_overview_survives_odd_values(changes: dict) -> None:
    from vllm_recipes.catalog import BUNDLED_DIR, Recipe, load_catalog
    from vllm_recipes.catalog.yamlsource import YamlDocument, freeze, thaw

    catalog = load_catalog(BUNDLED_DIR)
    base = catalog.recipes[0]
    data = {**thaw(base.data), **changes}
    recipe = Recipe(base.hf_id, base.rel_path, YamlDocument(base.rel_path, freeze(data), base.doc.positions))
    ov = recipe_overview(catalog, recipe)
    json.dumps(ov, default=str)
    print_overview(ov, None)

