"""Rendering of an omni plan (synthesis.md §10): text, argv, docker form and JSON object, in one place for
what the CLI prints, the omni page shows and ``/api/resolve`` returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.select.defaults import variant_or_default
from vllm_recipes.select.omni import OmniSelection
from vllm_recipes.synth.omni import OmniPlan

from .deployment import export_lines
from .docker import DockerMeta, docker_meta, docker_run_text
from .explain import ExplainRow, explain_env, explain_invocation
from .shell import render_invocation


@dataclass(frozen=True)
class OmniRendering:
    command: str
    argv: list[str]
    env: list[tuple[str, Any]]
    meta: DockerMeta
    docker_command: str
    #: what a user copies for the selected install method (exports + command, or docker run)
    shown: str


def render_omni(catalog: Catalog, recipe: Recipe, osel: OmniSelection, plan: OmniPlan) -> OmniRendering:
    text, argv = render_invocation(plan.serve)
    variant = variant_or_default(recipe.data, osel.variant_key)
    meta = docker_meta(recipe.data, variant, catalog.hardware_profiles.get(osel.hw_id) or {}, osel.hw_id)
    env = [(e.key, e.value) for e in plan.env]
    docker = docker_run_text(text, env, meta)
    shown = docker if osel.install == "docker" else "\n".join([*export_lines(plan.env), text])
    return OmniRendering(text, argv, env, meta, docker, shown)


def omni_rendering_object(osel: OmniSelection, plan: OmniPlan, rendered: OmniRendering) -> dict[str, Any]:
    """The JSON shape of an omni selection (the JSON API renders no omni commands; this is ours)."""
    return {"hardware": osel.hw_id, "variant": osel.variant_key, "task": osel.task.key if osel.task else None,
            "command": rendered.command, "argv": rendered.argv, "env": dict(rendered.env),
            "modelId": plan.model_id, "docker_image": rendered.meta.image, "docker_command": rendered.docker_command}


def explain_omni(catalog: Catalog, plan: OmniPlan) -> list[tuple[str, list[ExplainRow]]]:
    return [("vLLM (omni)", explain_invocation(catalog, plan.serve) + explain_env(catalog, plan.env))]
