"""The MCP server driven by the SDK's own client: in process, over stdio and over streamable HTTP.

``resolve_command`` must answer exactly what ``vllm-recipes command --format json``
prints, for every hardware each seed recipe offers; every bad call must come back as
an MCP tool error naming the valid choices, with the server still answering after it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, MCPError, StdioServerParameters

from vllm_recipes.agents.server import create_server
from vllm_recipes.api.build import build_api
from vllm_recipes.api.translations import translations_hook
from vllm_recipes.catalog import Catalog
from vllm_recipes.cli import engine_cmds  # noqa: F401  (registers `command`)
from vllm_recipes.cli.main import cli
from vllm_recipes.select.defaults import listed_hardware, variant_or_default

V4 = "deepseek-ai/DeepSeek-V4-Flash"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
TOOLS = {"list_recipes", "show_recipe", "resolve_command", "explain", "export_deployment", "fit", "estimate_performance", "recommend"}


def run_async(main: Callable[[], Awaitable[Any]]) -> Any:
    """``anyio.run`` on a thread of its own: browser tests elsewhere in the session may keep an
    event loop running on the main thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, main).result()


def in_process(catalog: Catalog, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(create_server(catalog)) as client:
            return await body(client)
    return run_async(main)


def cli_json(*args: str) -> str:
    res = CliRunner().invoke(cli, ["command", *args, "--format", "json"])
    assert res.exit_code == 0, res.stderr
    return res.stdout


def test_tools_are_listed_with_catalog_enums(catalog: Catalog) -> None:
    listed = in_process(catalog, lambda c: c.list_tools())
    by_name = {t.name: t for t in listed.tools}
    assert set(by_name) == TOOLS
    props = by_name["resolve_command"].input_schema["properties"]
    assert props["hardware"]["enum"] == list(catalog.hardware_profiles)
    assert "pd_cluster" in props["strategy"]["enum"]
    assert "spec_decoding" in props["features"]["items"]["enum"]
    assert set(props["hf_id"]["enum"]) == {V4, V41}
    assert by_name["resolve_command"].input_schema["required"] == ["hf_id"]
    assert by_name["list_recipes"].input_schema["properties"]["hardware"]["enum"] == list(catalog.hardware_profiles)


def test_resolve_command_equals_the_cli_json_for_every_seed_hardware(catalog: Catalog) -> None:
    cases = []
    for hf in (V4, V41):
        recipe = catalog.recipe(hf)
        assert recipe is not None
        hws = listed_hardware(catalog.hardware_profiles, variant_or_default(recipe.data, "default"), recipe.data)
        cases += [(hf, hw) for hw in hws]
    assert len(cases) > 20

    async def body(client: Client) -> list[Any]:
        return [await client.call_tool("resolve_command", {"hf_id": hf, "hardware": hw}) for hf, hw in cases]

    results = in_process(catalog, body)
    for (hf, hw), res in zip(cases, results, strict=True):
        assert not res.is_error, (hf, hw, res.content)
        rendering = res.structured_content["rendering"]
        assert json.dumps(rendering, indent=2, ensure_ascii=False) + "\n" == cli_json(hf, "--hardware", hw), (hf, hw)
        assert res.structured_content["selection"]["hardware"] == hw
        assert [c["key"] for c in res.structured_content["commands"]]
        # the text content is the same answer, as JSON
        assert json.loads(res.content[0].text) == res.structured_content


def test_resolve_v41_gb200_over_stdio() -> None:
    """The real transport: the CLI entry point launched as a subprocess by the SDK client."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "vllm_recipes", "mcp"],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})

    async def main() -> tuple[Any, Any, Any, str]:
        async with Client(params) as client:
            recipes = await client.call_tool("list_recipes", {})
            ok = await client.call_tool("resolve_command", {"hf_id": V41, "hardware": "gb200"})
            bad = await client.call_tool("resolve_command", {"hf_id": V41, "hardware": "h9000"})
            try:  # an unknown resource is a JSON-RPC error; the server goes on answering
                await client.read_resource("recipe://nobody/nothing.json")
                missing = ""
            except MCPError as exc:
                missing = exc.message
            assert (await client.list_tools()).tools
            return recipes, ok, bad, missing

    recipes, ok, bad, missing = run_async(main)
    assert missing.startswith("Unknown resource 'recipe://nobody/nothing.json'.")
    assert {r["hf_id"] for r in recipes.structured_content["recipes"]} == {V4, V41}
    assert json.dumps(ok.structured_content["rendering"], indent=2, ensure_ascii=False) + "\n" \
        == cli_json(V41, "--hardware", "gb200")
    assert bad.is_error
    assert "h9000" in bad.content[0].text and "Valid choices: " in bad.content[0].text
    assert "gb200" in bad.structured_content["choices"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http_on_loopback() -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "vllm_recipes", "mcp", "--http", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)

        async def main() -> tuple[Any, Any]:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await client.list_tools(), await client.call_tool("show_recipe", {"hf_id": V41})

        tools, shown = run_async(main)
        assert {t.name for t in tools.tools} == TOOLS
        assert shown.structured_content["default_selection"]["hardware"] == "gb200"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize(("tool", "args", "param", "needle"), [
    ("resolve_command", {"hf_id": V41, "hardware": "h9000"}, "hardware", "gb200"),
    ("resolve_command", {"hf_id": "deepseek-ai/DeepSeek-V4.1-Flsh"}, "hf_id", V41),
    ("resolve_command", {"hf_id": V41, "strategy": "warp_drive"}, "strategy", "single_node_tp"),
    ("resolve_command", {"hf_id": V41, "colour": "red"}, "colour", "hardware"),
    ("resolve_command", {"hf_id": V41, "nodes": "two"}, "nodes", ""),
    ("resolve_command", {"hf_id": V41, "features": "spec_decoding", "fmode": ["x"]}, "fmode", ""),
    ("resolve_command", {}, "hf_id", ""),
    ("explain", {"hf_id": V41, "hardware": "tpu_v99"}, "hardware", "h200"),
    ("list_recipes", {"hardware": "h9000"}, "hardware", "h200"),
    ("list_recipes", {"fits_gpus": 0}, "fits_gpus", ""),
    ("show_recipe", {"hf_id": "nobody/nothing"}, "hf_id", ""),
    ("fit", {"gpus": 2}, "gpus", ""),
    ("fit", {"hf_id": V4, "gpu": "RTX 5099"}, "gpu", "RTX 5090"),
    ("fit", {"hf_id": V4, "context": "long"}, "context", ""),
    ("no_such_tool", {}, "name", "resolve_command"),
])
def test_bad_calls_are_tool_errors_naming_the_choices(catalog: Catalog, tool: str, args: dict[str, Any],
                                                      param: str, needle: str) -> None:
    async def body(client: Client) -> tuple[Any, Any]:
        bad = await client.call_tool(tool, args)
        after = await client.call_tool("list_recipes", {})  # the server still answers
        return bad, after

    bad, after = in_process(catalog, body)
    assert bad.is_error
    assert bad.structured_content["param"] == param
    assert needle in bad.content[0].text
    if needle:
        assert "Valid choices" in bad.content[0].text or "Did you mean" in bad.content[0].text \
            or needle in bad.structured_content["choices"]
    assert not after.is_error and after.structured_content["count"] == 2


def test_list_recipes_filters(catalog: Catalog) -> None:
    async def body(client: Client) -> list[Any]:
        return [await client.call_tool("list_recipes", a) for a in (
            {"query": "v4.1"}, {"hardware": "h200"}, {"hardware": "h200", "fits_gpus": 4},
            {"hardware": "h200", "fits_gpus": 8})]

    by_query, on_h200, four, eight = (r.structured_content for r in in_process(catalog, body))
    assert [r["hf_id"] for r in by_query["recipes"]] == [V41]
    assert {r["hf_id"] for r in on_h200["recipes"]} == {V4, V41}
    gpus = {r["hf_id"]: (r["hardware"], r["strategy"], r["gpus"]) for r in on_h200["recipes"]}
    # V4 recommends TEP over the whole node; V4.1 fits TP 4 on H200 (the command's --tensor-parallel-size)
    assert gpus == {V4: ("h200", "single_node_tep", 8), V41: ("h200", "single_node_tp", 4)}
    assert [r["hf_id"] for r in four["recipes"]] == [V41]
    assert eight["count"] == 2


def test_explain_matches_the_live_api_explanation(catalog: Catalog) -> None:
    from vllm_recipes.web.live_api import resolve_payload

    res = in_process(catalog, lambda c: c.call_tool("explain", {"hf_id": V41, "hardware": "b200"}))
    expected = resolve_payload(catalog, [("model", V41), ("hardware", "b200")])
    assert res.structured_content["explain"] == json.loads(json.dumps(expected["explain"]))
    flags = [row["name"] for sec in res.structured_content["explain"] for row in sec["entries"]]
    assert "--tensor-parallel-size" in flags


def test_resources_are_the_api_file_and_the_guide(catalog: Catalog) -> None:
    async def body(client: Client) -> tuple[Any, Any, Any]:
        listed = await client.list_resources()
        js = await client.read_resource(f"recipe://{V41}.json")
        guide = await client.read_resource(f"recipe://{V41}/guide.md")
        return listed, js, guide

    listed, js, guide = in_process(catalog, body)
    uris = {str(r.uri) for r in listed.resources}
    assert {f"recipe://{V4}.json", f"recipe://{V41}.json", f"recipe://{V41}/guide.md"} <= uris
    files = build_api(catalog, None, jobs=1, extra_recipe_keys=translations_hook(catalog)).files
    assert js.contents[0].text.encode() == files[f"{V41}.json"]
    recipe = catalog.recipe(V41)
    assert recipe is not None and guide.contents[0].text == recipe.data["guide"]


def test_fit_is_the_live_api_fit(catalog: Catalog) -> None:
    """One recipe on its hardware and the reverse search answer exactly what /api/fit answers."""
    from vllm_recipes.service.fit import fit_payload

    async def body(client: Client) -> tuple[Any, Any]:
        one = await client.call_tool("fit", {"hf_id": V4, "hardware": "h200", "context": 131072})
        search = await client.call_tool("fit", {"gpus": 8, "gpu_memory": 141})
        return one, search

    one, search = in_process(catalog, body)
    assert not one.is_error and not search.is_error
    expected = fit_payload(catalog, [("model", V4), ("hardware", "h200"), ("context", "131072")])
    assert one.structured_content == json.loads(json.dumps(expected))
    assert one.structured_content["processes"][0]["role"] == "serve"
    assert search.structured_content == json.loads(json.dumps(
        fit_payload(catalog, [("gpus", "8"), ("gpu_memory", "141")])))
    assert {r["model"] for r in search.structured_content["results"]} <= {V4, V41}
