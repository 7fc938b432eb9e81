"""``validate`` skips a selection whose hardware reads like an earlier one's (``synth.context.Hardware``):
a value that only one of two look-alike profiles renders must still be linted and counted as reached."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result

RECIPE = {
    "meta": {"title": "Small"},
    "model": {"model_id": "acme/Small"},
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 16,
                             # b300 reads like b200 (same GPU count and generation) but for this exact-id block
                             "hardware_overrides": {"b300": {"extra_args": ["--no-such-flag-on-b300"]}}}},
    "compatible_strategies": ["single_node_tp"],
}


def test_a_value_only_one_look_alike_profile_renders_is_linted_and_reached(
        tmp_path: Path, recipe_writer: Callable[[Path, str, object], Path], run_cli: Callable[..., Result]) -> None:
    recipe_writer(tmp_path, "acme/Small", RECIPE)
    result = run_cli("validate", "--recipes-dir", str(tmp_path))
    lines = [line for line in result.stdout.splitlines() if "no-such-flag-on-b300" in line]
    assert any("[vllm-unknown-flag]" in line and "--hardware b300" in line for line in lines), result.stdout
    assert not any("dead-value" in line for line in lines), result.stdout
    # and a profile that reads alike gets no finding of another's block
    assert not any("--hardware b200" in line for line in lines), result.stdout
