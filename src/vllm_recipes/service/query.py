"""The typed question every front end asks (which recipe, which choices), the recipe it names, and
the typed refusals: each names the parameter at fault and the valid choices; front ends map them to
their own form (exit 2, a 4xx, an MCP tool error)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.select.options import Style
from vllm_recipes.select.request import PageRequest, SelectionError

QueryError = SelectionError


@dataclass(frozen=True)
class Query:
    """One question about one recipe: ``model`` (a Hugging Face id or a variant's own model id,
    any letter case) and the user's choices (``None`` fields take the page's defaults)."""

    model: str
    request: PageRequest = field(default_factory=PageRequest)


class UnknownRecipe(QueryError):
    """No recipe (or variant model id) by that name; ``choices`` are the close matches."""

    def text(self, style: Style = "url") -> str:
        close = f" Did you mean: {', '.join(self.choices)}?" if self.choices else ""
        return self.template + close


class RecipeLoadError(QueryError):
    """The recipe's file exists but did not load (the message carries file:line)."""


class NotApplicable(QueryError):
    """The question does not apply to this recipe (export of an omni recipe, ...)."""


class CannotExport(QueryError):
    """The export target cannot express this selection; ``reason`` says why."""

    def __init__(self, target: str, reason: str) -> None:
        self.target, self.reason = target, reason
        super().__init__("to", f"Cannot export to {target}: {reason}")


def find_recipe(catalog: Catalog, model: str | None) -> tuple[Recipe, str | None]:
    """``(recipe, None)`` for a recipe id, ``(parent, variant key)`` for a variant's model id."""
    model = (model or "").strip()
    if not model:
        raise UnknownRecipe("model", "A recipe id is required (a model's Hugging Face id).")
    found = catalog.find(model)
    if found is not None:
        return found
    broken = catalog.load_error_for(model)
    if broken is not None:
        raise RecipeLoadError("model", f"Recipe {model!r} failed to load: {broken}")
    raise UnknownRecipe("model", f"Unknown recipe {model!r}.", catalog.close_matches(model))


def find_request(catalog: Catalog, query: Query) -> tuple[Recipe, PageRequest]:
    """The query's recipe and request: a variant's own model id chooses that variant unless the request names one."""
    recipe, vk = find_recipe(catalog, query.model)
    req = query.request
    return recipe, req if vk is None or req.variant is not None else replace(req, variant=vk)


def check_hardware(catalog: Catalog, ids: tuple[str, ...]) -> None:
    """Every id is a hardware profile of the catalog; else a refusal naming the first that is not."""
    bad = [h for h in ids if h not in catalog.hardware_profiles]
    if bad:
        raise QueryError("hardware", f"Unknown hardware {bad[0]!r}.", list(catalog.hardware_profiles))
