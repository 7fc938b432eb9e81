"""``vllm-recipes mcp``: the agent tools over the Model Context Protocol (stdio or streamable HTTP)."""

from __future__ import annotations

import sys

import click

from .main import cli, failing, load_or_exit, recipes_dir_option

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _help() -> str:
    from vllm_recipes.agents.tools import TOOLS

    return ("Serve the recipe tools to MCP clients (agents): " + ", ".join(TOOLS) + ", plus each recipe's "
            "JSON and guide as resources. Without --http, speaks MCP on stdin/stdout (what desktop clients "
            "launch).")


@cli.command("mcp", help=_help())
@click.option("--http", "http_port", type=click.IntRange(1, 65535), default=None,
              help="Serve streamable HTTP on this port (endpoint /mcp) instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface for --http (loopback by default; anything else is reachable by others).")
@recipes_dir_option
def mcp_cmd(http_port: int | None, host: str, recipes_dir: tuple[str, ...]) -> None:
    # (the mcp SDK is a regular dependency; say so if it is missing)
    with failing(ImportError, say=lambda exc: f"the MCP server needs the 'mcp' package ({exc}); "
                 "pip install 'mcp>=2,<3'."):
        import anyio

        from vllm_recipes.agents.server import create_server, run_stdio
    catalog = load_or_exit(recipes_dir)
    server = create_server(catalog)
    if http_port is None:
        anyio.run(run_stdio, server)
        return
    import uvicorn

    from vllm_recipes.httplimits import quieting_accept_errors, server_settings

    if host not in LOOPBACK:
        click.echo(f"vllm-recipes mcp: listening on {host}, not loopback: any host that reaches it can call "
                   "the tools.", err=True)
    click.echo(f"vllm-recipes mcp: {len(catalog.recipes)} recipes; streamable HTTP on "
               f"http://{host}:{http_port}/mcp", err=True)
    # (the streamable-HTTP app, endpoint /mcp, with DNS-rebinding protection for host, and serve's limits:
    # its 10 s head timeout is ample for agents, which send a whole request at once; one line per failed
    # accept(), not a traceback)
    app = quieting_accept_errors(server.streamable_http_app(host=host))
    with failing(OSError, say=lambda exc: f"cannot listen on {host}:{http_port}: {exc.strerror or exc}"):
        uvicorn.run(app, host=host, port=http_port, log_level="warning", **server_settings())
    sys.exit(0)
