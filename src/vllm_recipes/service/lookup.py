"""Find the recipe a query names: its Hugging Face id or a variant's own model id, any letter case."""

from __future__ import annotations

from vllm_recipes.catalog import Catalog, Recipe

from .errors import QueryError, RecipeLoadError, UnknownRecipe


def find_recipe(catalog: Catalog, model: str | None) -> tuple[Recipe, str | None]:
    """``(recipe, None)`` for a recipe id, ``(parent, variant key)`` for a variant's model id.

    Raises :class:`RecipeLoadError` when the file is there but failed to load (file:line),
    :class:`UnknownRecipe` with the close matches otherwise.
    """
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


def check_hardware(catalog: Catalog, ids: tuple[str, ...]) -> None:
    """Every id is a hardware profile of the catalog; else a refusal naming the first that is not."""
    bad = [h for h in ids if h not in catalog.hardware_profiles]
    if bad:
        raise QueryError("hardware", f"Unknown hardware {bad[0]!r}.", list(catalog.hardware_profiles))
