"""Answers to a :class:`Query`: the one place every front end turns "this model, these choices"
into a selection, a plan, an explanation, deploy files or the ``/api/resolve`` payload, so they
cannot disagree. The omni/serve split is decided here, once, by :func:`select`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.lint.vllm_plan import with_vllm_lint
from vllm_recipes.render.deployment import Block, deployment_blocks
from vllm_recipes.render.explain import explain_json, sections_json
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.aliases import canonical
from vllm_recipes.select.options import flag
from vllm_recipes.select.params import OMNI_NAMES, PARAMS
from vllm_recipes.select.request import PageRequest
from vllm_recipes.select.state import PageState
from vllm_recipes.synth.context import Ctx, recipe_frontend
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolve import resolve as resolve_selection

from .frontends import strict_state
from .query import CannotExport, NotApplicable, Query, find_request
from .url import canonical_params, encode, page_url, recipe_url

if TYPE_CHECKING:
    from vllm_recipes.render.artifacts import Artifact
    from vllm_recipes.render.export import ExportOptions
    from vllm_recipes.select.omni import OmniSelection
    from vllm_recipes.synth.omni import OmniPlan


@dataclass(frozen=True)
class Selected:
    """The recipe a query names and its complete selection: ``state`` for a ``vllm serve``
    recipe, ``omni`` for an omni recipe (exactly one of them is set)."""

    recipe: Recipe
    state: PageState | None = None
    omni: OmniSelection | None = None
    #: ``state``'s ``(ctx, plan)`` when selecting already resolved it (the frontend check)
    resolution: tuple[Ctx, Plan] | None = None


@dataclass(frozen=True)
class Resolved:
    """A selection and its plan (``ctx``/``plan`` or ``omni_plan``, like :class:`Selected`)."""

    selected: Selected
    ctx: Ctx | None = None
    plan: Plan | None = None
    omni_plan: OmniPlan | None = None


def select(catalog: Catalog, query: Query) -> Selected:
    """The query's recipe and selection; what cannot be honoured is a :class:`~.query.QueryError` naming
    the valid choices."""
    recipe, req = find_request(catalog, query)
    if recipe.is_omni:
        return Selected(recipe, omni=_select_omni(catalog, recipe, req))
    agreed = strict_state(catalog, recipe, req)
    return Selected(recipe, state=agreed.state, resolution=agreed.resolution)


def _select_omni(catalog: Catalog, recipe: Recipe, req: PageRequest) -> OmniSelection:
    """An omni recipe takes hardware, variant, task and install only. (The omni modules are imported
    where an omni recipe needs them: a ``vllm serve`` command does not pay for them.)"""
    from vllm_recipes.select.omni import resolve_omni_tasks, select_omni

    for p in PARAMS:
        if p.name not in OMNI_NAMES and getattr(req, p.field) not in (None, ()):
            raise NotApplicable(p.name, f"{recipe.hf_id} is an omni recipe; it takes "
                                f"{', '.join(flag(n) for n in OMNI_NAMES)} only (got {flag(p.name)}).")
    hw = req.hardware and canonical(req.hardware, catalog.hardware_profiles)
    vk = req.variant and canonical(req.variant, recipe.variants)
    task = req.task and canonical(req.task, [t.key for t in resolve_omni_tasks(recipe.data)])
    return select_omni(catalog, recipe, hw, vk, task, req.install)


def resolve(catalog: Catalog, query: Query) -> Resolved:
    """The query's plan (strict)."""
    selected = select(catalog, query)
    recipe = selected.recipe
    if selected.omni is not None:
        from vllm_recipes.synth.omni import resolve_omni

        o = selected.omni
        return Resolved(selected, omni_plan=resolve_omni(catalog, recipe, o.variant_key, o.task, o.hw_id))
    assert selected.state is not None
    ctx, plan = selected.resolution or resolve_selection(catalog, recipe, selected.state.selection)
    return Resolved(selected, ctx=ctx, plan=plan)


def selection_dict(catalog: Catalog, recipe: Recipe, st: PageState, query: str | None = None) -> dict[str, Any]:
    """A selection as ``/api/resolve`` (and the MCP tools) show it, with its canonical URL."""
    if query is None:
        query = encode(canonical_params(catalog, recipe, st))
    sel = st.selection
    return {
        "model": recipe.hf_id,
        "hardware": sel.hw_id,
        "variant": sel.variant_key,
        "strategy": sel.strategy,
        "recommended_strategy": st.recommended_strategy,
        "nodes": sel.node_count,
        "features": list(sel.features),
        "fmode": dict(sel.feature_modes),
        "advanced": [a for a, _ in sel.advanced],
        "kv_offload": sel.kv_offload,
        "kv_instances": sel.kv_instances,
        "pd_nodes": sel.pd_nodes,
        "frontend": sel.frontend or recipe_frontend(recipe.data),
        "install": st.install,
        "router": sel.pd_router,
        "query": query,
        "url": page_url("/" + recipe.hf_id, query),
    }


def resolve_payload(catalog: Catalog, query: Query, context: int | None = None) -> dict[str, Any]:
    """Everything ``/api/resolve`` returns (and the MCP ``resolve_command``/``explain`` tools);
    ``context`` is the Fit summary's context length. Raises :class:`~.query.QueryError`."""
    from .fit import fit_summary  # (the memory planner: imported by the answers that show it)

    resolved = resolve(catalog, query)
    recipe = resolved.selected.recipe
    if resolved.omni_plan is not None:
        return _omni_payload(catalog, resolved)
    st, ctx, plan = resolved.selected.state, resolved.ctx, resolved.plan
    assert st is not None and ctx is not None and plan is not None
    blocks = deployment_blocks(ctx, plan, st.install)
    return {
        "rendering": with_vllm_lint(rendering_object(ctx, plan), ctx, plan),
        "explain": explain_json(catalog, plan),
        "selection": selection_dict(catalog, recipe, st),
        "commands": [b.as_json() for b in blocks],
        "fit": fit_summary(catalog, recipe, ctx, plan, context),
    }


def _omni_payload(catalog: Catalog, resolved: Resolved) -> dict[str, Any]:
    from vllm_recipes.render.omni import explain_omni, omni_rendering_object, render_omni

    recipe, osel, plan = resolved.selected.recipe, resolved.selected.omni, resolved.omni_plan
    assert osel is not None and plan is not None
    rendered = render_omni(catalog, recipe, osel, plan)
    return {
        "rendering": omni_rendering_object(osel, plan, rendered),
        "explain": sections_json(explain_omni(catalog, plan)),
        "selection": {"model": recipe.hf_id, "hardware": osel.hw_id, "variant": osel.variant_key,
                      "task": osel.task.key if osel.task else None, "install": osel.install},
        "commands": [Block("serve", "vLLM", rendered.shown, "serve").as_json()],
    }


@dataclass(frozen=True)
class Export:
    """The deploy files of one selection."""

    recipe: Recipe
    state: PageState
    target: str
    artifacts: list[Artifact]

    @property
    def media_type(self) -> str:
        """The files' one media type (a kustomization aside), else ``text/plain``."""
        kinds = {a.media_type for a in self.artifacts if a.path != "kustomization.yaml"}
        return kinds.pop() if len(kinds) == 1 else "text/plain"


#: The export options besides the selection and the target, with their help (CLI, /api/export, MCP).
EXPORT_ARGUMENTS: dict[str, str] = {
    "namespace": "Kubernetes namespace (default: default).",
    "name": "Object / job name, a DNS label (default: from the model id).",
    "pvc": "Kubernetes PersistentVolumeClaim for the Hugging Face cache (default: emptyDir).",
    "image": "Container image (default: the image the Docker command uses).",
}


def export(catalog: Catalog, query: Query, target: str, options: ExportOptions | None = None) -> Export:
    """The query's deployment for ``target``: :class:`NotApplicable` for an omni recipe,
    :class:`CannotExport` when the target cannot express the selection."""
    from vllm_recipes.render.export import ExportError, ExportOptions, export_artifacts  # (only when asked)

    selected = select(catalog, query)
    recipe, state = selected.recipe, selected.state
    if state is None:
        raise NotApplicable("model", f"{recipe.hf_id} is an omni recipe; export supports `vllm serve` recipes only.")
    opts = options or ExportOptions()
    opts = replace(opts, install=state.install,
                   page_url=opts.page_url or recipe_url(recipe.hf_id, canonical_params(catalog, recipe, state)))
    try:
        artifacts = export_artifacts(catalog, recipe, state.selection, target, opts, co_located=state.pd_co_located,
                                     resolution=selected.resolution)
    except ExportError as exc:
        raise CannotExport(target, str(exc)) from None
    return Export(recipe, state, target, artifacts)
