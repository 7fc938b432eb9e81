"""``command`` and ``explain`` refuse ``--vllm`` on an omni recipe alike (one rule, in resolve_omni_request)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import Result

OMNI = {
    "meta": {"title": "Tiny omni", "provider": "Acme", "tasks": ["omni"], "hardware": {"h200": "verified"}},
    "model": {"model_id": "acme/Omni"},
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40}},
    "omni": {"port": 8091, "tasks": [{"id": "t2i", "label": "Text to image"}]},
}


@pytest.fixture(scope="module")
def recipes_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("omni")
    path = root / "models" / "acme" / "Omni.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(OMNI, sort_keys=False), encoding="utf-8")
    return root


@pytest.mark.parametrize("command", ["command", "explain"])
def test_vllm_does_not_apply_to_omni(run_cli: Callable[..., Result], recipes_dir: Path, command: str) -> None:
    ok = run_cli(command, "acme/Omni", "--recipes-dir", str(recipes_dir))
    assert ok.exit_code == 0, ok.output
    r = run_cli(command, "acme/Omni", "--recipes-dir", str(recipes_dir), "--vllm", "0.11")
    assert r.exit_code == 2
    assert r.stderr.strip() == ("Error: acme/Omni is an omni recipe; its vllm-omni commands are not linted, "
                                "so --vllm does not apply.")
