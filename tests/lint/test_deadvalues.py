"""Dead-value lint: recipe values that no offered selection ever renders."""

from __future__ import annotations

from pathlib import Path

import yaml

from vllm_recipes.catalog import load_catalog
from vllm_recipes.lint.deadvalues import dead_value_findings


def _findings(catalog, hf_id):  # type: ignore[no-untyped-def]
    return {f.key_path: f for f in dead_value_findings(catalog, catalog.recipe(hf_id))}


def test_v4_seed_ascend_values_are_reported_with_file_line_and_winning_layer() -> None:
    catalog = load_catalog()
    found = _findings(catalog, "deepseek-ai/DeepSeek-V4-Flash")
    dp = found["variants.ascend_w8a8.extra_args[0]"]
    assert "`--data-parallel-size 2`" in dp.message
    assert "parallelism" in dp.message and "always shadowed" in dp.message
    assert dp.file == "models/deepseek-ai/DeepSeek-V4-Flash.yaml"
    src = (catalog.root / dp.file).read_text().splitlines()
    assert src[dp.line - 1].strip() == '- "--data-parallel-size"'
    env = found["variants.ascend_w8a8.extra_env.ASCEND_RT_VISIBLE_DEVICES"]
    assert "recipe-generation" in env.message
    assert src[env.line - 1].strip().startswith("ASCEND_RT_VISIBLE_DEVICES:")
    assert all(f.severity == "warning" for f in found.values())


def test_v41_seed_has_no_dead_values() -> None:
    catalog = load_catalog()
    assert _findings(catalog, "deepseek-ai/DeepSeek-V4.1-Flash") == {}


def _write(tmp: Path, recipe: dict) -> Path:
    p = tmp / "models" / "acme" / "Tiny.yaml"
    p.parent.mkdir(parents=True)
    p.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return tmp


def test_shadowed_and_inapplicable_values(tmp_path: Path) -> None:
    recipe = {
        "meta": {"title": "Tiny", "provider": "Acme"},
        "model": {"model_id": "acme/Tiny", "base_args": ["--max-num-seqs", "64", "--trust-remote-code"]},
        "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 20}},
        "compatible_strategies": ["single_node_tp"],
        "hardware_overrides": {"hopper": {"extra_args": ["--max-num-seqs", "128"]},
                               "tpu": {"extra_args": ["--tpu-only"]}},
    }
    catalog = load_catalog(_write(tmp_path, recipe))
    found = _findings(catalog, "acme/Tiny")
    # hopper is offered (h100/h200), so base --max-num-seqs 64 is shadowed there,
    # but it still renders on blackwell/amd: alive.
    assert "model.base_args[0]" not in found
    # trillium/ironwood are restricted and not declared: the tpu block never applies.
    assert "never applicable" in found["hardware_overrides.tpu.extra_args[0]"].message
    assert set(found) == {"hardware_overrides.tpu.extra_args[0]"}
