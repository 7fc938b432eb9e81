"""Agents as first-class users: the MCP tools (``tools``) and server (``server``), answering through
:mod:`vllm_recipes.service` like the page and ``/api/resolve``."""
