"""The application layer: every question a front end asks, answered once, with typed errors. Only the light
names are re-exported (``show`` does not pay for synthesis and rendering); the answers live in :mod:`.answers`."""

from .query import CannotExport, NotApplicable, Query, QueryError, RecipeLoadError, UnknownRecipe, find_recipe

__all__ = ["CannotExport", "NotApplicable", "Query", "QueryError", "RecipeLoadError", "UnknownRecipe", "find_recipe"]
