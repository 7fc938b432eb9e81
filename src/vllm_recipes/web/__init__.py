"""The website and live JSON API (Starlette + Jinja2); see :func:`create_app`.

The core packages never import this package: they stay usable without a web
stack, and the web layer only calls select -> synth -> render. Its
framework-free modules (``site`` indexes, ``urlstate``, the ``api`` payloads)
are shared with the other publisher that answers the same questions, the
agents' MCP server, so ``create_app`` (and with it Starlette and Jinja2) is
imported only when asked for.
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
