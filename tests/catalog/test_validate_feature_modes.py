"""json-api.md §10.2 feature-mode validation: every rule, exact message text, exact order."""

from __future__ import annotations

from pathlib import Path

import yaml
from validate_helpers import line_of, validate_text

from vllm_recipes.catalog.featuremodes import feature_mode_error, feature_mode_issues, feature_mode_messages

ALL_RULES = """\
meta: {title: t}
model: {model_id: o/r}
features:
  empty:
    modes: {}
  nulled:
    modes:
  listed:
    modes: [a, b]
  both:
    args: ~
    default_mode: nope
    modes:
      a:
        args: "--x"
        variants: fp8
      b:
        args: [--b]
        variants: [default, ghost]
  narrow:
    modes:
      only:
        args: [--o]
        variants: [fp8]
  plain:
    args: [--p]
  skipped: ~
  nomodes:
    description: d
variants:
  default:
    precision: bf16
    default_modes:
      unknownfeat: x
      plain: y
      narrow: only
  fp8:
    precision: fp8
    default_modes:
      both: zzz
      narrow: only
  int8:
    precision: int8
    default_modes:
      both: b
"""

EXPECTED = [
    "features.empty.modes must be a non-empty map",
    "features.nulled.modes must be a non-empty map",
    "features.listed.modes must be a non-empty map",
    "features.both cannot declare both args and modes",
    "features.both.default_mode references unknown mode nope",
    "features.both.modes.a.args must be an array",
    "features.both.modes.a.variants must be an array",
    "features.both.modes.b.variants references unknown variant ghost",
    "features.narrow has no mode available for variant default",
    "features.narrow has no mode available for variant int8",
    "variants.default.default_modes references unknown feature unknownfeat",
    "variants.default.default_modes references non-modal feature plain",
    "variants.default.default_modes.narrow selects mode only, which is unavailable for that variant",
    "variants.fp8.default_modes.both references unknown mode zzz",
    "variants.int8.default_modes.both selects mode b, which is unavailable for that variant",
]


def test_messages_in_builder_order() -> None:
    data = yaml.safe_load(ALL_RULES)
    assert feature_mode_messages(data) == EXPECTED


def test_issue_paths() -> None:
    data = yaml.safe_load(ALL_RULES)
    paths = [p for p, _ in feature_mode_issues(data)]
    assert paths[0] == ("features", "empty", "modes")
    assert paths[3] == ("features", "both", "args")
    assert paths[7] == ("features", "both", "modes", "b", "variants", 1)
    assert paths[10] == ("variants", "default", "default_modes", "unknownfeat")


def test_findings_carry_positions(tmp_path: Path) -> None:
    fs = [f for f in validate_text(tmp_path, ALL_RULES) if f.code == "feature-mode"]
    assert {f.message for f in fs} == set(EXPECTED)
    by_msg = {f.message: f for f in fs}
    f = by_msg["features.both.modes.b.variants references unknown variant ghost"]
    assert f.line == line_of(ALL_RULES, "variants: [default, ghost]") and f.col == 29
    f = by_msg["features.both.modes.a.args must be an array"]
    assert (f.line, f.key_path) == (line_of(ALL_RULES, 'args: "--x"'), "features.both.modes.a.args")


def test_no_duplicate_type_finding_for_the_same_problem(tmp_path: Path) -> None:
    fs = validate_text(tmp_path, ALL_RULES)
    at_a_args = [f for f in fs if f.key_path == "features.both.modes.a.args"]
    assert [f.code for f in at_a_args] == ["feature-mode"]


def test_clean_recipe_has_no_messages() -> None:
    data = {"features": {"f": {"modes": {"a": {"args": []}}}}, "variants": {"default": {}}}
    assert feature_mode_messages(data) == []


def test_js_string_conversion_in_messages() -> None:
    data = {"features": {"f": {"default_mode": 2.0, "modes": {"a": {"args": [], "variants": [True]}}}},
            "variants": {"default": {}}}
    assert feature_mode_messages(data) == [
        "features.f.default_mode references unknown mode 2",
        "features.f.modes.a.variants references unknown variant true",
        "features.f has no mode available for variant default",
    ]


def test_non_mapping_inputs_do_not_crash() -> None:
    for data in (None, [], "x", 3, {"features": [1, {"modes": 5}]}, {"features": {"f": {"modes": {"a": None}}}},
                 {"variants": ["a"], "features": {"f": {"modes": {"m": {"args": [], "variants": ["0"]}}}}}):
        assert isinstance(feature_mode_messages(data), list)


def test_error_text_matches_builder() -> None:
    text = feature_mode_error("models/o/r.yaml", ["a", "b"])
    assert text == "Invalid feature modes in models/o/r.yaml:\n  - a\n  - b"
