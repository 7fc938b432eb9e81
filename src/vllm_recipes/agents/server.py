"""The MCP server: :class:`AgentTools` and the recipe resources over the Model Context Protocol, on the SDK's
low-level ``Server`` so the tool schemas are exactly the catalog-derived ones (type hints cannot carry
per-catalog enums). Every failed call is a tool error naming the valid choices; none stops the server."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from vllm_recipes import __version__
from vllm_recipes.catalog import Catalog

from .tools import AgentTools, ToolError, recipe_guide_uri, recipe_json_uri

log = logging.getLogger("vllm_recipes.mcp")

SERVER_NAME = "vllm-recipes"
INSTRUCTIONS = (
    "Exact vLLM deployment commands from declarative serving recipes. Start with list_recipes, look at "
    "one with show_recipe, then resolve_command for the commands of a selection (omitted choices take the "
    "page's defaults) and explain for why each flag is there. Errors name the valid choices."
)


class RecipeResources:
    """Each recipe's JSON-API file and its guide Markdown, read-only."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._api: dict[str, bytes] | None = None
        self._lock = threading.Lock()

    def list(self) -> list[types.Resource]:
        out = []
        for recipe in self.catalog.recipes:
            out.append(types.Resource(uri=recipe_json_uri(recipe.hf_id), name=f"{recipe.hf_id}.json",
                                      title=f"{recipe.title}: recipe JSON",
                                      description="The recipe's JSON-API file (every hardware's rendering).",
                                      mime_type="application/json"))
            if isinstance(recipe.data.get("guide"), str):
                out.append(types.Resource(uri=recipe_guide_uri(recipe.hf_id), name=f"{recipe.hf_id}/guide.md",
                                          title=f"{recipe.title}: deployment guide",
                                          description="The recipe's guide (Markdown).",
                                          mime_type="text/markdown"))
        return out

    def _api_files(self) -> dict[str, bytes]:
        """The static JSON API, built once on first read (the same bytes ``build-api`` writes)."""
        with self._lock:
            if self._api is None:
                from vllm_recipes.api.translations import api_files

                self._api = api_files(self.catalog)
            return self._api

    def read(self, uri: str) -> tuple[str, str]:
        """``(text, mime type)`` of a resource URI; :class:`ToolError` for unknown ones."""
        rest = uri.removeprefix("recipe://")
        if rest != uri and rest.endswith("/guide.md"):
            recipe = self.catalog.recipe(rest.removesuffix("/guide.md"))
            guide = recipe.data.get("guide") if recipe else None
            if isinstance(guide, str):
                return guide, "text/markdown"
        elif rest != uri and rest.endswith(".json"):
            recipe = self.catalog.recipe(rest.removesuffix(".json"))
            data = self._api_files().get(recipe.hf_id + ".json") if recipe else None
            if data is not None:
                return data.decode("utf-8"), "application/json"
        raise ToolError(f"Unknown resource {uri!r}.", "uri", [str(r.uri) for r in self.list()][:20])


def create_server(catalog: Catalog) -> Server[Any]:
    """An MCP server over ``catalog`` (run it with :func:`run_stdio` or its ``streamable_http_app``)."""
    tools = AgentTools(catalog)
    resources = RecipeResources(catalog)

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in tools.tools])

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = tools.call(params.name, params.arguments)
        except ToolError as exc:
            return _error(exc.to_dict())
        except Exception as exc:  # an engine failure: a readable tool error, never a dead server
            log.exception("tool %s failed", params.name)
            return _error({"error": f"The call could not be answered: {type(exc).__name__}: {exc}",
                           "param": None, "choices": []})
        text = json.dumps(result, indent=2, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=result)

    async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources.list())

    async def read_resource(_ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text, mime = resources.read(uri)
        except ToolError as exc:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime)])

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)


def _error(body: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=body["error"])],
                                structured_content=body, is_error=True)


def frame_error(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC answer to a frame that is not a message: -32700 when it is not JSON, else -32600
    (issue #28 item 10; the SDK's stdio transport drops such frames without a word)."""
    import pydantic

    not_json = isinstance(exc, pydantic.ValidationError) and any(
        e.get("type") == "json_invalid" for e in exc.errors())
    code, what = (types.PARSE_ERROR, "Parse error") if not_json else (types.INVALID_REQUEST, "Invalid Request")
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=what))


async def run_stdio(server: Server[Any]) -> None:
    """Serve one client over stdin/stdout until it closes; an unparsable frame gets a JSON-RPC error."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def relay() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(SessionMessage(frame_error(item)))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            await server.run(receive, write_stream, server.create_initialization_options())
