"""The service's typed refusals: each names the parameter at fault and the valid choices.

:class:`QueryError` is the selection code's :class:`~vllm_recipes.select.request.SelectionError`
(a refusal while building a selection is one kind of bad query); the subclasses say
what else a query can get wrong. Front ends map them to their own form: exit 2 on the
command line, 400/404/422 on the web, an MCP tool error.
"""

from __future__ import annotations

from vllm_recipes.select.options import Style
from vllm_recipes.select.request import SelectionError

QueryError = SelectionError


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
