"""``build-api`` renders a selection whose hardware reads like an earlier one's once (``api.tree.Rendered``):
each look-alike profile must still get its own ``hardware`` id, its own profile and only its own overrides."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

RECIPE = {
    "meta": {"title": "Small"},
    "model": {"model_id": "acme/Small"},
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 16,
                             # b300 reads like b200 (same GPU count and generation) but for this exact-id block
                             "hardware_overrides": {"b300": {"extra_args": ["--max-num-seqs", "7"]}}}},
    "compatible_strategies": ["single_node_tp", "single_node_dep"],
}


def test_look_alike_profiles_keep_their_own_id_profile_and_overrides(
        tmp_path: Path, recipe_writer: Callable[[Path, str, object], Path], run_cli: Callable[..., Result]) -> None:
    recipe_writer(tmp_path / "recipes", "acme/Small", RECIPE)
    out = tmp_path / "api"
    result = run_cli("build-api", "--recipes-dir", str(tmp_path / "recipes"), "-j", "1", str(out))
    assert result.exit_code == 0, result.output
    taxonomy = json.loads((out / "taxonomy.json").read_text())
    base = out / "acme" / "Small" / "hw"
    for hw in ("b200", "b300", "gb200", "gb300", "h100"):
        rec = json.loads((base / f"{hw}.json").read_text())
        dep = json.loads((base / hw / "strategies" / "single_node_dep.json").read_text())
        for obj in (rec, dep):
            assert obj["hardware"] == hw
            assert ("--max-num-seqs 7" in obj["command"]) == (hw == "b300"), (hw, obj["command"])
        assert rec["hardware_profile"] == taxonomy["hardware_profiles"][hw]
    b200 = json.loads((base / "b200.json").read_text())
    b300 = json.loads((base / "b300.json").read_text())
    assert b300["command"].replace(" \\\n  --max-num-seqs 7", "") == b200["command"]
