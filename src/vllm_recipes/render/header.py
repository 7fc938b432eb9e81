"""One line naming what a selection resolved to (model, hardware, variant, strategy, nodes, frontend,
install), so a default is never a surprise: the CLI prints it above ``command`` and as ``explain``'s title.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vllm_recipes.catalog import Recipe
from vllm_recipes.catalog.diagnostics import plural
from vllm_recipes.select.state import PageState
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import KvStorePlan, PdPlan, PdRolePlan, Plan

from .frontend import frontend_in_effect

if TYPE_CHECKING:
    from vllm_recipes.select.omni import OmniSelection

#: ``(label, value, note)``; ``note`` says where a value came from when the user did not pick it
HeaderField = tuple[str, str, str]


def _pool(role: PdRolePlan) -> str:
    nodes = int(role.meta.get("nodes") or 0)
    mode = str(role.meta.get("parallelism") or "").upper()
    size = plural(nodes, "node") if nodes else "half a node"
    return f"{role.role} {size}{' ' + mode if mode else ''}"


def _nodes_text(plan: Plan) -> str:
    if isinstance(plan, PdPlan):
        return f"{_pool(plan.prefill)} + {_pool(plan.decode)}"
    if isinstance(plan, KvStorePlan):
        return f"{plural(plan.instances, 'instance')} x {plural(plan.node_count, 'node')}"
    return plural(int(getattr(plan, "node_count", 1) or 1), "node")


def format_header(model: str, fields: Sequence[HeaderField]) -> str:
    """``model · label value (note) · ...`` on one line."""
    parts = [model]
    for label, value, note in fields:
        text = f"{label} {value}" if label else value
        parts.append(f"{text} ({note})" if note else text)
    return " · ".join(parts)


def selection_header(recipe: Recipe, state: PageState, ctx: Ctx, plan: Plan) -> str:
    """The resolved selection of a serving recipe, defaults marked as such."""
    req, sel = state.request, state.selection

    def note(given: object, default_note: str) -> str:
        return "" if given is not None else default_note

    strategy_note = "" if req.strategy is not None else (
        "recommended" if sel.strategy == state.recommended_strategy else "default")
    fields: list[HeaderField] = [
        ("hardware", sel.hw_id, note(req.hardware, "default")),
        ("variant", sel.variant_key, note(req.variant, "default") if sel.variant_key != "default" else ""),
        ("strategy", sel.strategy, strategy_note),
        ("", _nodes_text(plan), ""),
    ]
    if sel.kv_offload:
        fields.append(("kv offload", sel.kv_offload, ""))
    runs = frontend_in_effect(ctx, plan)
    fields.append(("frontend", runs.name, runs.note or note(req.frontend, "recipe default")))
    fields.append(("install", state.install, note(req.install, "default")))
    return format_header(recipe.hf_id, fields)


def omni_selection_header(recipe: Recipe, osel: OmniSelection, hardware: str | None, variant: str | None,
                          task: str | None, install: str | None) -> str:
    """The resolved selection of an omni recipe (the given values mark what the user picked)."""
    fields: list[HeaderField] = [
        ("hardware", osel.hw_id, "" if hardware else "default"),
        ("variant", osel.variant_key, "" if variant or osel.variant_key == "default" else "default"),
    ]
    if osel.task is not None:
        fields.append(("task", osel.task.key, "" if task else "default"))
    fields.append(("install", osel.install, "" if install else "default"))
    return format_header(recipe.hf_id, fields)
