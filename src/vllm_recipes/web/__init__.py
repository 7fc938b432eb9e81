"""The website and live JSON API (Starlette + Jinja2): :func:`create_app`. The core never imports it;
pages and ``/api/*`` ask :mod:`vllm_recipes.service`, like the CLI and the MCP server."""

from .app import create_app

__all__ = ["create_app"]
