"""Edge: the raw ``config.json`` of a model for its compute facts (``--hf-config`` or the local HF cache)."""

from __future__ import annotations

from vllm_recipes.fit.architecture import Architecture, architecture_from_hf_config
from vllm_recipes.fit.sources import config_from_cache, config_from_file

from .architecture import ComputeFacts, facts_from_hf_config


def config_facts(path: str | None, repo_id: str) -> tuple[Architecture, ComputeFacts] | None:
    """Both views of a ``config.json`` (a path, else the offline HF cache; ``None`` when neither has one)."""
    got = config_from_file(path) if path else config_from_cache(repo_id)
    if got is None:
        return None
    config, source = got
    arch = architecture_from_hf_config(config, source=source)
    return arch, facts_from_hf_config(config, source=source, arch=arch)
