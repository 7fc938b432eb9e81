"""Helpers for the JSON API tests: small recipe directories written to tmp_path.

A recipes directory gets ``models/<org>/<repo>.yaml`` files and a taxonomy
trimmed to a handful of profiles (so hardware lists are short enough to derive
by hand); strategies and kv stores come from the bundled catalog.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from vllm_recipes.api.build import ApiBuild, build_api
from vllm_recipes.catalog import BUNDLED_DIR, load_catalog

#: Kept profiles, in bundled taxonomy order: h100, h200, rtx_pro_6000, rtx_5090, mi300x, xeon6.
HARDWARE = ("h100", "h200", "rtx_pro_6000", "rtx_5090", "mi300x", "xeon6")
#: The unrestricted ones, default (h200) first: what a plain recipe renders on.
PLAIN_HW = ["h200", "h100", "mi300x"]


def trimmed_taxonomy(hardware: tuple[str, ...] = HARDWARE) -> dict[str, Any]:
    tax = yaml.safe_load((BUNDLED_DIR / "taxonomy.yaml").read_text(encoding="utf-8"))
    tax["hardware_profiles"] = {k: v for k, v in tax["hardware_profiles"].items() if k in hardware}
    return tax


def recipe(model_id: str, **keys: Any) -> dict[str, Any]:
    """A small dense recipe that fits every kept profile but rtx_5090."""
    out: dict[str, Any] = {
        "meta": {"title": model_id.split("/")[1], "provider": model_id.split("/")[0],
                 "date_added": "2026-01-01", "tasks": ["text"]},
        "model": {"model_id": model_id, "min_vllm_version": "0.10.0", "base_args": [], "base_env": {}},
        "features": {},
        "opt_in_features": [],
        "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40, "description": "BF16"}},
        "compatible_strategies": ["single_node_tp", "multi_node_tp"],
        "hardware_overrides": {},
        "strategy_overrides": {},
        "guide": "Serve it.",
    }
    out.update(keys)
    return out


def write_dir(root: Path, recipes: dict[str, dict[str, Any] | str], *,
              hardware: tuple[str, ...] = HARDWARE) -> Path:
    """``recipes``: path under ``models/`` (e.g. ``acme/Tiny.yaml``) -> data or raw YAML text."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "taxonomy.yaml").write_text(yaml.safe_dump(trimmed_taxonomy(hardware), sort_keys=False,
                                                       allow_unicode=True), encoding="utf-8")
    for rel, data in recipes.items():
        p = root / "models" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        p.write_text(text, encoding="utf-8")
    return root


def build(root: Path, jobs: int = 1, **kw: Any) -> tuple[ApiBuild, list[str]]:
    warnings: list[str] = []
    api = build_api(load_catalog(root), warnings.append, jobs=jobs, **kw)
    return api, warnings


def obj(api: ApiBuild, path: str) -> Any:
    data = api.files[path]
    assert data is not None
    return json.loads(data)


def dump(value: Any) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode()
