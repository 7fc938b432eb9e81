"""The application layer: every question a front end asks, answered once.

``cli/``, ``web/`` and ``agents/`` turn their input (options, URL queries, MCP
arguments) into a typed :class:`Query` through the one parameter table
(:mod:`vllm_recipes.select.params`), call these functions, and show the answer
or the typed error (:mod:`.errors`: the parameter at fault and its valid
choices) in their own form. This package imports only the domain
(``catalog`` -> ``select`` -> ``synth`` -> ``render`` -> ``fit``/``lint``/``api``);
front ends never import one another.
"""

from .answers import (
    EXPORT_ARGUMENTS,
    Export,
    Resolved,
    Selected,
    export,
    resolve,
    resolve_payload,
    select,
    selection_dict,
)
from .errors import CannotExport, NotApplicable, QueryError, RecipeLoadError, UnknownRecipe
from .lookup import find_recipe
from .query import Query

__all__ = [
    "EXPORT_ARGUMENTS", "CannotExport", "Export", "NotApplicable", "Query", "QueryError", "RecipeLoadError", "Resolved", "Selected",
    "UnknownRecipe", "export", "find_recipe", "resolve", "resolve_payload", "select", "selection_dict",
]
