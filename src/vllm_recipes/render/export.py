"""The one entry point of the deploy targets: a selection -> the files of one target. Pure: every target
renders the same :class:`Deployment`, built from the same resolved plan as ``vllm-recipes command``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolve import resolve

from . import compose, k8s, slurm, vllm_config
from .artifacts import Artifact, ExportOptions, stdout_text
from .workloads import Deployment, ExportError, build_deployment

#: target id -> (renderer, label shown on the website)
TARGETS: dict[str, tuple[Callable[[Deployment, ExportOptions], list[Artifact]], str]] = {
    "k8s": (k8s.render, "Kubernetes"),
    "compose": (compose.render, "Compose"),
    "slurm": (slurm.render, "Slurm"),
    "vllm-config": (vllm_config.render, "vLLM config"),
}

__all__ = ["TARGETS", "Artifact", "ExportError", "ExportOptions", "deployment_for", "export_artifacts",
           "selection_label", "stdout_text"]


def _at(sel: Selection, changes: Mapping[str, Any]) -> Selection:
    """``sel`` at another PD pool rank or Mooncake instance (the only axes a deployment spans)."""
    if "pd_rank" in changes:
        role, rank = changes["pd_rank"]
        pd = dict(sel.pd_nodes) if isinstance(sel.pd_nodes, Mapping) else {}
        cur = pd.get(role)
        pd[role] = {**(cur if isinstance(cur, Mapping) else {"nodes": cur} if cur is not None else {}), "rank": rank}
        return replace(sel, pd_nodes=pd)
    if "kv_instance" in changes:
        kvi = sel.kv_instances if isinstance(sel.kv_instances, Mapping) else (
            {"count": sel.kv_instances} if isinstance(sel.kv_instances, int) else {})
        return replace(sel, kv_instances={**kvi, "current": changes["kv_instance"]})
    raise ValueError(f"unknown change {changes!r}")


def deployment_for(catalog: Catalog, recipe: Recipe, selection: Selection, install: str = "docker",
                   co_located: bool = False, resolution: tuple[Ctx, Plan] | None = None
                   ) -> tuple[Ctx, Plan, Deployment]:
    """``resolution``: the selection's ``(ctx, plan)`` when the caller already has it."""
    ctx, plan = resolution or resolve(catalog, recipe, selection)

    def resolve_at(changes: dict[str, Any]) -> tuple[Ctx, Plan]:
        return resolve(catalog, recipe, _at(selection, changes))

    dep = build_deployment(ctx, plan, install, resolve_at, co_located=co_located, hf_id=recipe.hf_id)
    return ctx, plan, dep


def selection_label(selection: Selection, install: str) -> str:
    parts = [f"hardware={selection.hw_id}", f"variant={selection.variant_key}", f"strategy={selection.strategy}"]
    if not isinstance(selection.pd_nodes, Mapping):  # PD pools carry their own node counts (below)
        parts.append(f"nodes={selection.node_count}")
    if selection.features:
        parts.append("features=" + ",".join(selection.features))
    if selection.feature_modes:
        parts.append("modes=" + ",".join(f"{f}:{m}" for f, m in selection.feature_modes))
    if selection.kv_offload:
        parts.append(f"kv_offload={selection.kv_offload}")
    if isinstance(selection.pd_nodes, Mapping):
        for role in ("prefill", "decode"):
            v = selection.pd_nodes.get(role)
            if isinstance(v, Mapping):
                parts.append(f"{role}={v.get('nodes')}x{v.get('parallelism') or 'tp'}")
            elif v is not None:
                parts.append(f"{role}={v}")
    if selection.frontend:
        parts.append(f"frontend={selection.frontend}")
    if selection.pd_router:
        parts.append(f"router={selection.pd_router}")
    parts.append(f"install={install}")
    return " ".join(parts)


def export_artifacts(catalog: Catalog, recipe: Recipe, selection: Selection, target: str,
                     options: ExportOptions | None = None, co_located: bool = False,
                     resolution: tuple[Ctx, Plan] | None = None) -> list[Artifact]:
    """The files of ``target`` for one selection; :class:`ExportError` when the target cannot express it."""
    if target not in TARGETS:
        raise ExportError(f"unknown export target {target!r}; valid: {', '.join(TARGETS)}.")
    opts = options or ExportOptions()
    if not opts.selection_label:
        opts = replace(opts, selection_label=selection_label(selection, opts.install))
    _ctx, _plan, dep = deployment_for(catalog, recipe, selection, opts.install, co_located, resolution)
    return TARGETS[target][0](dep, opts)
