"""A chosen frontend the recipe's own env contradicts (issue #27.9): refused (strict) or dropped with
a notice (the page), so the selection, the header and the command agree. The check hands its
resolution back, so a request that asks for a frontend resolves once."""

from __future__ import annotations

from dataclasses import dataclass, replace

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.render.frontend import frontend_in_effect
from vllm_recipes.select.options import flag, spell
from vllm_recipes.select.request import PageRequest, SelectionError
from vllm_recipes.select.state import PageState, build_state
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolve import resolve


@dataclass(frozen=True)
class Agreed:
    """A state whose frontend agrees with its command, and the resolution of that state when
    the check needed one (``None`` when no frontend was asked: nothing was resolved)."""

    state: PageState
    resolution: tuple[Ctx, Plan] | None = None

    def resolved(self, catalog: Catalog, recipe: Recipe) -> tuple[Ctx, Plan]:
        """The state's ``(ctx, plan)``: the one the check made, else resolved now."""
        return self.resolution or resolve(catalog, recipe, self.state.selection)


def agree_on_frontend(catalog: Catalog, recipe: Recipe, state: PageState, *, strict: bool) -> Agreed:
    """``state`` when its frontend is the one its command runs (or none was asked for);
    else a :class:`SelectionError` (strict) or the state without the choice and with a notice."""
    asked = state.selection.frontend
    if asked is None:
        return Agreed(state)
    ctx, plan = resolve(catalog, recipe, state.selection)
    runs = frontend_in_effect(ctx, plan)
    if runs.name == asked:
        return Agreed(state, (ctx, plan))
    where = f" ({runs.where})" if runs.where else ""
    message = (f"{flag('frontend')} {asked} does not apply to {recipe.hf_id} on {state.selection.hw_id}: "
               f"{runs.note}{where}, which runs the {runs.name} frontend.")
    if strict:
        raise SelectionError("frontend", message, [runs.name])
    return Agreed(replace(state, selection=replace(state.selection, frontend=None),
                          notices=(*state.notices, spell(message, "url"))))


def strict_state(catalog: Catalog, recipe: Recipe, request: PageRequest) -> Agreed:
    """The state ``request`` asks for, its frontend checked: what cannot be honoured is a :class:`SelectionError`."""
    return agree_on_frontend(catalog, recipe, build_state(catalog, recipe, request, strict=True), strict=True)
