"""The model cache a pod is given holds the checkpoint the recipe declares, in either form.

``architecture_facts.checkpoint_gib`` is one size for every variant or ``{variant: GiB}``; the
memory planner (``fit``) reads both. The deploy files must read the same size: a cache volume sized
from ``vram_minimum_gb`` instead is the wrong figure, and the download may not fit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

FACTS = {"source": "test", "attention": "gqa", "num_layers": 4, "num_attention_heads": 8, "num_kv_heads": 2,
         "head_dim": 64, "hidden_size": 512}


def _recipe(checkpoint_gib: Any) -> dict[str, Any]:
    return {
        "meta": {"title": "Sizes"},
        "model": {"model_id": "acme/Sizes",
                  "architecture_facts": {**FACTS, "checkpoint_gib": checkpoint_gib}},
        "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40},
                     "fp8": {"precision": "fp8", "vram_minimum_gb": 30, "model_id": "acme/Sizes-FP8"}},
        "compatible_strategies": ["single_node_tp"],
    }


def _serve_storage(run_cli: Any, root: Path, variant: str) -> str:
    result = run_cli("export", "acme/Sizes", "--recipes-dir", str(root), "--hardware", "h100",
                     "--variant", variant, "--to", "k8s", "-o", "-")
    assert result.exit_code == 0, result.stderr
    for doc in yaml.safe_load_all(result.stdout):
        for c in ((doc or {}).get("spec", {}).get("template", {}).get("spec") or {}).get("containers", []):
            if "nvidia.com/gpu" in c.get("resources", {}).get("limits", {}):
                return str(c["resources"]["requests"]["ephemeral-storage"])
    raise AssertionError(result.stdout)


@pytest.mark.parametrize(("checkpoint_gib", "variant", "gib"), [
    ({"default": 120, "fp8": 61.5}, "default", 120),
    ({"default": 120, "fp8": 61.5}, "fp8", 61.5),
    ({"*": 90, "fp8": 50}, "default", 90),
    (75, "fp8", 75),
])
def test_cache_volume_holds_the_declared_checkpoint(run_cli: Any, recipe_writer: Any, tmp_path: Path,
                                                    checkpoint_gib: Any, variant: str, gib: float) -> None:
    recipe_writer(tmp_path, "acme/Sizes", _recipe(checkpoint_gib))
    assert _serve_storage(run_cli, tmp_path, variant) == f"{math.ceil(math.ceil(gib) * 1.1)}Gi"
