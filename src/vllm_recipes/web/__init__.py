"""The website and live JSON API (Starlette + Jinja2); see :func:`create_app`.

No other package imports this one: the core stays usable without a web stack,
and the questions the pages and ``/api/*`` answer are asked of
:mod:`vllm_recipes.service`, like the CLI and the MCP server do. ``create_app``
(and with it Starlette and Jinja2) is imported only when asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(name)
