"""Edge: the raw ``config.json`` of a model for its compute facts (``--hf-config`` or the local HF cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vllm_recipes.fit.architecture import Architecture, architecture_from_hf_config
from vllm_recipes.fit.sources import cached_file, read_json

from .architecture import ComputeFacts, facts_from_hf_config


def config_facts(path: str | None, repo_id: str) -> tuple[Architecture, ComputeFacts] | None:
    """Both views of a ``config.json`` (a path, else the offline HF cache; ``None`` when neither has one)."""
    p: Path | None = Path(path) if path else cached_file(repo_id, "config.json")
    if p is None:
        return None
    cfg: Any = read_json(p, "--hf-config" if path else "cached config.json")
    src = f"--hf-config {p.name}" if path else f"Hugging Face cache ({repo_id})"
    arch = architecture_from_hf_config(cfg, src)
    return arch, facts_from_hf_config(cfg, src, arch)
