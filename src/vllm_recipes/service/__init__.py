"""The application layer: every question a front end asks, answered once.

``cli/``, ``web/`` and ``agents/`` turn their input (options, URL queries, MCP
arguments) into a typed :class:`Query` through the one parameter table
(:mod:`vllm_recipes.select.params`), call these functions, and show the answer
or the typed error (:mod:`.errors`: the parameter at fault and its valid
choices) in their own form. This package imports only the domain
(``catalog`` -> ``select`` -> ``synth`` -> ``render`` -> ``fit``/``lint``/``api``);
front ends never import one another.

Only the light names are re-exported here (the query, its errors, the recipe lookup): a
command that only looks a recipe up (``show``) does not pay for synthesis, rendering and
lint. The answers that need them are imported from :mod:`.answers`.
"""

from .errors import CannotExport, NotApplicable, QueryError, RecipeLoadError, UnknownRecipe
from .lookup import find_recipe
from .query import Query

__all__ = ["CannotExport", "NotApplicable", "Query", "QueryError", "RecipeLoadError", "UnknownRecipe", "find_recipe"]
