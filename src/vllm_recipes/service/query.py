"""The typed question every front end asks: which recipe, and which choices."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_recipes.select.request import PageRequest


@dataclass(frozen=True)
class Query:
    """One question about one recipe: ``model`` (a Hugging Face id or a variant's own model
    id, any letter case) and the user's choices (``None`` fields take the page's defaults).

    Front ends build it from their input through the parameter table
    (:mod:`vllm_recipes.select.params`): :func:`.url.query_from_items` for URLs,
    :func:`.params.request_from_args` for typed tool arguments, ``cli/options.py`` for options.
    """

    model: str
    request: PageRequest = field(default_factory=PageRequest)
