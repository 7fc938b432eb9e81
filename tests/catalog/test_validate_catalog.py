"""Whole-catalog validation: the bundled catalog, fallbacks, extra checkers, files outside the catalog."""

from __future__ import annotations

from pathlib import Path

from validate_helpers import GOOD, REL, line_of, write_recipe

from vllm_recipes.catalog import BUNDLED_DIR, Catalog, load_catalog
from vllm_recipes.catalog.diagnostics import Finding, finding_at, format_findings_summary
from vllm_recipes.catalog.validate import (
    catalog_with_file,
    validate_catalog,
    validate_file,
    validated_files,
)


def test_bundled_catalog_validates_clean() -> None:
    catalog = load_catalog(BUNDLED_DIR)
    assert catalog.recipes, "the seed recipes are bundled"
    assert catalog.load_errors == ()
    # the built-in checks find nothing at all ...
    assert [str(f) for f in validate_catalog(catalog)] == []
    # ... and registered checkers (the engine's dead-value lint) may warn, but not fail
    assert [str(f) for f in validate_catalog(catalog) if f.severity == "error"] == []


def test_bundled_catalog_checks_every_file() -> None:
    catalog = load_catalog(BUNDLED_DIR)
    files = validated_files(catalog)
    assert "taxonomy.yaml" in files
    assert any(f.startswith("strategies/") for f in files)
    assert any(f.startswith("kv_store/") for f in files)
    assert "models/deepseek-ai/DeepSeek-V4-Flash.yaml" in files


def test_models_only_directory_falls_back_to_bundled_data(tmp_path: Path) -> None:
    write_recipe(tmp_path, GOOD)
    catalog = load_catalog(tmp_path)
    assert "h200" in catalog.hardware_profiles
    assert "single_node_tp" in catalog.serving_strategies
    assert "kv_store_centralized_mooncake" in catalog.kv_stores
    assert validate_catalog(catalog) == []
    # the bundled fallbacks are not re-validated as part of the user's directory
    assert validated_files(catalog) == [REL]


def test_user_taxonomy_is_used_for_hardware_ids(tmp_path: Path) -> None:
    write_recipe(tmp_path, GOOD)
    (tmp_path / "taxonomy.yaml").write_text(
        "hardware_profiles:\n  mybox:\n    brand: NVIDIA\n    generation: hopper\n    gpu_count: 8\n")
    findings = validate_catalog(load_catalog(tmp_path))
    assert [(f.code, f.key_path) for f in findings] == [("unknown-hardware", "meta.hardware.h200")]


def test_extra_checkers(tmp_path: Path) -> None:
    write_recipe(tmp_path, GOOD)
    catalog = load_catalog(tmp_path)

    def dead_values(cat: Catalog) -> list[Finding]:
        doc = cat.recipes[0].doc
        return [finding_at(doc, ("variants", "fp8", "precision"), "warning", "dead value", "dead-value")]

    def broken(cat: Catalog) -> list[Finding]:
        raise RuntimeError("boom")

    findings = validate_catalog(catalog, extra_checks=[dead_values, broken])
    assert [(f.code, f.severity) for f in findings if f.code == "dead-value"] == [("dead-value", "warning")]
    f = next(f for f in findings if f.code == "dead-value")
    assert (f.file, f.key_path) == (REL, "variants.fp8.precision")
    internal = [f for f in findings if f.code == "internal"]
    assert len(internal) == 1 and "boom" in internal[0].message
    assert validate_catalog(catalog, files=["other.yaml"], extra_checks=[dead_values]) == []


def test_file_outside_catalog_gets_hf_id_from_path(tmp_path: Path) -> None:
    text = GOOD.replace("precision: fp8", "precision: [fp8]")
    path = write_recipe(tmp_path / "mine", text, "models/acme/Box.yaml")
    catalog = load_catalog(BUNDLED_DIR)
    cat, key, kind = catalog_with_file(catalog, path, "Box.yaml")
    assert (key, kind) == ("Box.yaml", "recipe")
    assert cat.recipe("acme/Box") is not None and catalog.recipe("acme/Box") is None
    findings = validate_file(path, catalog, "Box.yaml")
    assert [(f.file, f.key_path, f.line) for f in findings] == [
        ("Box.yaml", "variants.fp8.precision", line_of(text, "precision: [fp8]"))]


def test_file_inside_catalog_uses_catalog_path(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, GOOD.replace("precision: bf16", "precision: 16"))
    catalog = load_catalog(tmp_path)
    findings = validate_file(path, catalog)
    assert [(f.file, f.key_path) for f in findings] == [(REL, "variants.default.precision")]


def test_summary_line() -> None:
    f = Finding("error", "a", 1, 1, "k", "m")
    w = Finding("warning", "a", 1, 1, "k", "m")
    assert format_findings_summary([f, f, w], 3) == "2 errors, 1 warning in 3 files"
    assert format_findings_summary([], 1) == "0 errors, 0 warnings in 1 file"
    assert f.format() == "a:1:1: error: k: m"
