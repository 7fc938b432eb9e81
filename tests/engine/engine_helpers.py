"""Helpers for the engine tests: write small recipes as YAML, load them, resolve and render.

Recipes are Python dicts saved to ``<root>/models/<org>/<repo>.yaml``; the loader
falls back to the bundled taxonomy, strategies and kv_store for everything else.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolve import resolve

HF = "org/model"


def write_catalog(root: Path, recipes: dict[str, dict[str, Any]]) -> Catalog:
    for hf_id, data in recipes.items():
        path = root / "models" / f"{hf_id}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return load_catalog(root)


def recipe(**keys: Any) -> dict[str, Any]:
    """A minimal recipe (model id ``org/model``) with ``keys`` merged on top."""
    out: dict[str, Any] = {
        "meta": {"title": "Model"},
        "model": {"model_id": HF},
        "variants": {"default": {"precision": "bf16"}},
        "compatible_strategies": ["single_node_tp"],
    }
    out.update(keys)
    return out


def selection(**kw: Any) -> Selection:
    kw.setdefault("hw_id", "h200")
    if "features" in kw:
        kw["features"] = tuple(kw["features"])
    if "feature_modes" in kw and isinstance(kw["feature_modes"], dict):
        kw["feature_modes"] = tuple(kw["feature_modes"].items())
    if "advanced" in kw and isinstance(kw["advanced"], list | tuple) and kw["advanced"] and \
            isinstance(kw["advanced"][0], str):
        kw["advanced"] = (("test", tuple(kw["advanced"])),)
    return Selection(**kw)


def resolve_sel(catalog: Catalog, hf_id: str = HF, **kw: Any) -> tuple[Ctx, Plan]:
    rec = catalog.recipe(hf_id)
    assert rec is not None, hf_id
    return resolve(catalog, rec, selection(**kw))


def render(catalog: Catalog, hf_id: str = HF, **kw: Any) -> dict[str, Any]:
    ctx, plan = resolve_sel(catalog, hf_id, **kw)
    return rendering_object(ctx, plan)


def tail(argv: list[str]) -> list[str]:
    """argv after ``vllm serve <model>``."""
    assert argv[:2] == ["vllm", "serve"]
    return argv[3:]


def lines(command: str) -> list[str]:
    """The argument lines of a command text (without the ``vllm serve <model>`` line)."""
    parts = command.split(" \\\n  ")
    return parts[1:]


def shell_words(text: str) -> list[str]:
    """Bash-style word splitting after joining line continuations."""
    return shlex.split(text.replace("\\\n", ""))
