"""Every error and warning class of the validator, each on a small bad file, at its exact position."""

from __future__ import annotations

from pathlib import Path

import pytest
from validate_helpers import GOOD, REL, line_of, only, validate_text, write_recipe

from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.validate import validate_catalog


def test_good_recipe_is_clean(tmp_path: Path) -> None:
    assert validate_text(tmp_path, GOOD) == []


# --- errors ---------------------------------------------------------------------------------

def test_yaml_syntax_error_has_parser_position(tmp_path: Path) -> None:
    text = "meta:\n  title: x\nmodel: [unclosed\nvariants: {}\n"
    f = only(validate_text(tmp_path, text), "yaml")
    assert f.severity == "error" and f.file == REL
    assert f.line == 4 and f.key_path == "<root>"
    assert "YAML syntax error" in f.message


def test_wrong_type(tmp_path: Path) -> None:
    text = GOOD.replace("vram_minimum_gb: 100", 'vram_minimum_gb: "100"')
    f = only(validate_text(tmp_path, text), "type")
    assert (f.severity, f.key_path) == ("error", "variants.default.vram_minimum_gb")
    assert f.line == line_of(text, 'vram_minimum_gb: "100"') and f.col == 5
    assert f.message == 'expected a number, got a string ("100")'


def test_wrong_type_inside_list_points_at_item(tmp_path: Path) -> None:
    text = GOOD.replace('- "--trust-remote-code"', '- "--trust-remote-code"\n    - 8')
    f = only(validate_text(tmp_path, text), "type")
    assert f.key_path == "model.base_args[1]"
    assert f.line == line_of(text, "- 8") and f.col == 7
    assert f.message.startswith("expected a string")


def test_yaml11_boolean_hint(tmp_path: Path) -> None:
    text = GOOD.replace("h200: verified", "h200: yes")
    f = only(validate_text(tmp_path, text), "type", "meta.hardware.h200")
    assert "quote" in f.message


def test_shape_union_wrong_shape(tmp_path: Path) -> None:
    text = GOOD.replace("model_id: org/Test\n", "model_id: org/Test\n  docker_image: [a]\n")
    f = only(validate_text(tmp_path, text), "type", "model.docker_image")
    assert f.message.startswith("expected an image string, a brand map")
    assert f.line == line_of(text, "docker_image")


@pytest.mark.parametrize(("old", "new", "key_path", "needle"), [
    ("meta:\n  title: Test Model\n  provider: Org\n  hardware:\n    h200: verified\n", "", "meta", None),
    ("  model_id: org/Test\n", "", "model.model_id", "model:"),
    ("    precision: fp8\n", "", "variants.fp8.precision", "  fp8:"),
])
def test_missing_required_key(tmp_path: Path, old: str, new: str, key_path: str, needle: str | None) -> None:
    text = GOOD.replace(old, new)
    f = only(validate_text(tmp_path, text), "missing-key", key_path)
    assert f.severity == "error"
    assert f.line == (line_of(text, needle) if needle else 1)


def test_missing_default_variant(tmp_path: Path) -> None:
    text = GOOD.replace("  default:\n    precision: bf16\n", "  other:\n    precision: bf16\n")
    fs = validate_text(tmp_path, text)
    f = only(fs, "missing-key", "variants.default")
    assert f.line == line_of(text, "variants:", start=True) and f.message == "required key 'default' is missing"


@pytest.mark.parametrize(("old", "new", "key_path", "needle"), [
    ("compatible_strategies: [single_node_tp, single_node_tep]",
     "compatible_strategies: [single_node_tp, single_node_tpx]", "compatible_strategies[1]", "single_node_tpx"),
    ("default_strategy: single_node_tp", "default_strategy: multinode", "default_strategy", "default_strategy"),
    ("default_strategy: single_node_tp",
     "default_strategy: single_node_tp\nstrategy_overrides:\n  single_node_tq:\n    tp: 2",
     "strategy_overrides.single_node_tq", "single_node_tq"),
    ("default_strategy: single_node_tp",
     "default_strategy: single_node_tp\nstrategy_hardware:\n  pd:\n    h200: supported",
     "strategy_hardware.pd", "  pd:"),
    ('args: ["--reasoning-parser", "x"]',
     'args: ["--reasoning-parser", "x"]\n    strategies: [single_node_tp, nope]',
     "features.reasoning.strategies[1]", "nope"),
])
def test_unknown_strategy(tmp_path: Path, old: str, new: str, key_path: str, needle: str) -> None:
    text = GOOD.replace(old, new)
    f = only(validate_text(tmp_path, text), "unknown-strategy")
    assert (f.severity, f.key_path, f.line) == ("error", key_path, line_of(text, needle))


def test_kv_store_is_not_a_serving_strategy(tmp_path: Path) -> None:
    text = GOOD.replace("[single_node_tp, single_node_tep]", "[single_node_tp, kv_store_distributed_mooncake]")
    f = only(validate_text(tmp_path, text), "unknown-strategy")
    assert "KV-store deployment" in f.message and f.key_path == "compatible_strategies[1]"


def test_did_you_mean_for_strategy(tmp_path: Path) -> None:
    text = GOOD.replace("default_strategy: single_node_tp", "default_strategy: single_node_tpp")
    f = only(validate_text(tmp_path, text), "unknown-strategy")
    assert f.message == "unknown strategy 'single_node_tpp' (did you mean 'single_node_tp' or 'single_node_tep'?)"


@pytest.mark.parametrize(("old", "new", "key_path", "needle"), [
    ("opt_in_features: [spec]", "opt_in_features: [spec, reasonin]", "opt_in_features[1]", "opt_in_features"),
    ("opt_in_features: [spec]", "opt_in_features: [spec]\nhardware_opt_in_features:\n  h200:\n    - tools",
     "hardware_opt_in_features.h200[0]", "- tools"),
    ('args: ["--reasoning-parser", "x"]', 'args: ["--reasoning-parser", "x"]\n    conflicts_with: [specx]',
     "features.reasoning.conflicts_with[0]", "conflicts_with"),
])
def test_unknown_feature(tmp_path: Path, old: str, new: str, key_path: str, needle: str) -> None:
    text = GOOD.replace(old, new)
    f = only(validate_text(tmp_path, text), "unknown-feature")
    assert (f.severity, f.key_path, f.line) == ("error", key_path, line_of(text, needle))


def test_unknown_feature_in_default_modes_uses_builder_message(tmp_path: Path) -> None:
    text = GOOD.replace("      spec: eagle", "      specs: eagle")
    f = only(validate_text(tmp_path, text), "feature-mode")
    assert f.message == "variants.fp8.default_modes references unknown feature specs"
    assert f.key_path == "variants.fp8.default_modes.specs" and f.line == line_of(text, "specs: eagle")


def test_bad_json_argument(tmp_path: Path) -> None:
    text = GOOD.replace('\'{"method":"eagle"}\'', '\'{"method": eagle}\'')
    f = only(validate_text(tmp_path, text), "bad-json")
    assert f.severity == "error"
    assert f.key_path == "features.spec.modes.eagle.args[1]"
    assert f.line == line_of(text, '{"method": eagle}')
    assert f.message.startswith("argument looks like JSON but does not parse")


def test_json_with_spaces_is_fine(tmp_path: Path) -> None:
    text = GOOD.replace('\'{"method":"eagle"}\'', '\'{"method": "eagle", "k": [1, 2]}\'')
    assert validate_text(tmp_path, text) == []


def test_duplicate_key(tmp_path: Path) -> None:
    text = GOOD + "default_strategy: single_node_tep\n"
    f = only(validate_text(tmp_path, text), "duplicate-key")
    assert (f.severity, f.key_path) == ("error", "default_strategy")
    assert f.line == line_of(text, "default_strategy", nth=2)


def test_unknown_kv_option_and_store(tmp_path: Path) -> None:
    text = GOOD + "kv_offload_support:\n  offload_cpu: verified\nkv_cache_strategy_hardware:\n  mooncake:\n    h200: unsupported\n"
    fs = validate_text(tmp_path, text)
    f = only(fs, "unknown-kv-offload")
    assert f.key_path == "kv_offload_support.offload_cpu" and "did you mean 'offloading_cpu'" in f.message
    g = only(fs, "unknown-kv-store")
    assert g.key_path == "kv_cache_strategy_hardware.mooncake" and g.line == line_of(text, "mooncake:")


def test_unknown_frontend(tmp_path: Path) -> None:
    text = GOOD.replace("model_id: org/Test\n", "model_id: org/Test\n  default_frontend: node\n")
    f = only(validate_text(tmp_path, text), "unknown-frontend")
    assert f.key_path == "model.default_frontend" and f.line == line_of(text, "default_frontend")


def test_pool_modes_and_parallelism(tmp_path: Path) -> None:
    text = GOOD + ("strategy_overrides:\n  pd_cluster:\n    pool_modes: [tp, ep]\n"
                   "    decode:\n      parallelism: dp\n")
    fs = validate_text(tmp_path, text)
    assert {f.key_path for f in fs if f.code == "unknown-pool-mode"} == {
        "strategy_overrides.pd_cluster.pool_modes[1]", "strategy_overrides.pd_cluster.decode.parallelism"}


# --- warnings --------------------------------------------------------------------------------

@pytest.mark.parametrize(("old", "new", "key_path", "needle"), [
    ("    h200: verified", "    h200: verified\n    h2000: verified", "meta.hardware.h2000", "h2000"),
    ("  provider: Org", "  provider: Org\n  default_hardware: b2000", "meta.default_hardware", "b2000"),
    ("    precision: bf16", "    precision: bf16\n    supported_hardware: [h200, mi999x]",
     "variants.default.supported_hardware[1]", "mi999x"),
    ("    precision: bf16", "    precision: bf16\n    tp:\n      hoper: 4", "variants.default.tp.hoper", "hoper"),
    ("    precision: bf16", "    precision: bf16\n    hardware_overrides:\n      blackwel:\n        extra_args: [--x]",
     "variants.default.hardware_overrides.blackwel", "blackwel"),
])
def test_unknown_hardware_is_a_warning(tmp_path: Path, old: str, new: str, key_path: str, needle: str) -> None:
    text = GOOD.replace(old, new)
    f = only(validate_text(tmp_path, text), "unknown-hardware")
    assert (f.severity, f.key_path, f.line) == ("warning", key_path, line_of(text, needle))


def test_unknown_task(tmp_path: Path) -> None:
    text = GOOD.replace("  provider: Org", "  provider: Org\n  tasks: [text, txet]")
    f = only(validate_text(tmp_path, text), "unknown-task")
    assert (f.severity, f.key_path, f.line) == ("warning", "meta.tasks[1]", line_of(text, "tasks:"))
    assert f.message.startswith("unknown task 'txet' (did you mean 'text'?)")


def test_arch_selector_known_iff_some_profile_has_it(tmp_path: Path) -> None:
    text = GOOD.replace("    precision: bf16", "    precision: bf16\n    supported_hardware: [arch:sm90, arch:sm42]")
    f = only(validate_text(tmp_path, text), "unknown-hardware")
    assert f.key_path == "variants.default.supported_hardware[1]"
    assert f.message.startswith("no hardware profile has arch 'sm42'")


def test_generation_and_brand_keys_are_known(tmp_path: Path) -> None:
    text = GOOD + ("hardware_overrides:\n  hopper: {extra_args: [--a]}\n  nvidia: {extra_args: [--b]}\n"
                   "  amd: {extra_env: {X: '1'}}\n")
    assert validate_text(tmp_path, text) == []


def test_whitespace_in_argument(tmp_path: Path) -> None:
    text = GOOD.replace('- "--trust-remote-code"', '- "--max-num-seqs 8"')
    f = only(validate_text(tmp_path, text), "arg-whitespace")
    assert (f.severity, f.key_path, f.line, f.col) == ("warning", "model.base_args[0]", 9, 7)


def test_unknown_key_did_you_mean(tmp_path: Path) -> None:
    text = GOOD.replace("    vram_minimum_gb: 60", "    vram_minimum_gb: 60\n    extra_arg: [--x]")
    f = only(validate_text(tmp_path, text), "unknown-key")
    assert f.severity == "warning" and f.key_path == "variants.fp8.extra_arg"
    assert f.message == "unknown key 'extra_arg' (did you mean 'extra_args'?)"
    assert f.line == line_of(text, "extra_arg:") and f.col == 5


def test_unknown_top_level_key(tmp_path: Path) -> None:
    text = GOOD + "hardware_override:\n  hopper: {}\n"
    f = only(validate_text(tmp_path, text), "unknown-key")
    assert f.key_path == "hardware_override" and "did you mean 'hardware_overrides'" in f.message


def test_duplicate_recipe_id_warns(tmp_path: Path) -> None:
    write_recipe(tmp_path, GOOD, "models/org/Test.yml")
    fs = validate_text(tmp_path, GOOD)
    f = only(fs, "duplicate-id")
    assert f.severity == "warning" and f.file == "models/org/Test.yml"


def test_seed_era_keys_are_accepted(tmp_path: Path) -> None:
    """extensions.md keys: default_frontend, smg_grpc, per-hardware vram/install, conflicts_with."""
    text = GOOD.replace("model_id: org/Test\n", (
        "model_id: org/Test\n  default_frontend: rust\n"
        "  smg_grpc: {reasoning_parser: r, tool_call_parser: t}\n"
        "  install: {pip: false, docker: {note: n}}\n"
        "  docker_image: {nvidia: {cu129: a, cu130: b}, amd: c}\n"
    )).replace("    vram_minimum_gb: 100\n", (
        "    vram_minimum_gb: 100\n    supported_hardware: [arch:sm90, h200]\n"
        "    hardware_overrides:\n      h200:\n        vram_minimum_gb: 90\n"
        "        install: {pip: false}\n        docker_image: img:tag\n"
    )).replace('args: ["--reasoning-parser", "x"]', 'args: ["--reasoning-parser", "x"]\n    conflicts_with: [spec]')
    text += ("strategy_min_gpus: {single_node_tp: 2, h200: {multi_node_tp: 16}}\n"
             "hardware_notes:\n  h200: plain note\n  b200: {title: t, body: b, link: {label: l, href: '#x'}}\n")
    assert validate_text(tmp_path, text) == []


def test_files_filter(tmp_path: Path) -> None:
    write_recipe(tmp_path, GOOD.replace("precision: bf16", "precision: 1"), "models/org/A.yaml")
    write_recipe(tmp_path, GOOD.replace("precision: bf16", "precision: 2"), "models/org/B.yaml")
    cat = load_catalog(tmp_path)
    assert {f.file for f in validate_catalog(cat)} == {"models/org/A.yaml", "models/org/B.yaml"}
    assert {f.file for f in validate_catalog(cat, files=["models/org/B.yaml"])} == {"models/org/B.yaml"}
