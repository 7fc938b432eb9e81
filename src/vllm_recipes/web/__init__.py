"""The website and live JSON API (Starlette + Jinja2); see :func:`create_app`.

No other package imports this one: the core stays usable without a web stack,
and the questions the pages and ``/api/*`` answer are asked of
:mod:`vllm_recipes.service`, like the CLI and the MCP server do.
"""

from .app import create_app

__all__ = ["create_app"]
