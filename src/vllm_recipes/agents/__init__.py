"""Agents as first-class users: the tools an MCP client calls (``tools``) and the MCP server
(``server``). A publisher beside ``web/``: it answers through the same payload functions as the
page and ``/api/resolve``."""
