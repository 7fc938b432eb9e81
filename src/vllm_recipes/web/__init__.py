"""The website and live JSON API (Starlette + Jinja2); see :func:`create_app`.

Nothing outside this package imports it: the core packages stay usable without
a web stack, and the web layer only calls select -> synth -> render.
"""

from .app import create_app

__all__ = ["create_app"]
