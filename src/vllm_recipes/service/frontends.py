"""A chosen frontend the recipe's own env contradicts (issue #27.9).

Public recipes may switch the Rust frontend on in a hardware block's env
(``VLLM_USE_RUST_FRONTEND=1``); a command picked with the Python frontend would
still run Rust. We do not rewrite the recipe's env: a contradicting choice is
refused (strict: the CLI, ``/api/*``, the MCP tools), naming the frontend that runs,
or dropped with a notice (the page), so the selection, the header and the command agree.
"""

from __future__ import annotations

from dataclasses import replace

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.render.frontend import frontend_in_effect
from vllm_recipes.select.options import flag, spell
from vllm_recipes.select.state import PageState, SelectionError
from vllm_recipes.synth.resolve import resolve


def agree_on_frontend(catalog: Catalog, recipe: Recipe, state: PageState, *, strict: bool) -> PageState:
    """``state`` when its frontend is the one its command runs (or none was asked for);
    else a :class:`SelectionError` (strict) or the state without the choice and with a notice."""
    asked = state.selection.frontend
    if asked is None:
        return state
    ctx, plan = resolve(catalog, recipe, state.selection)
    runs = frontend_in_effect(ctx, plan)
    if runs.name == asked:
        return state
    where = f" ({runs.where})" if runs.where else ""
    message = (f"{flag('frontend')} {asked} does not apply to {recipe.hf_id} on {state.hw_id}: "
               f"{runs.note}{where}, which runs the {runs.name} frontend.")
    if strict:
        raise SelectionError("frontend", message, [runs.name])
    return replace(state, selection=replace(state.selection, frontend=None),
                   notices=(*state.notices, spell(message, "url")))
