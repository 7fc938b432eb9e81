"""One list of MCP tools: the server, ``mcp --help``, the README and docs/agents.md name the same ones."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from vllm_recipes.agents.tools import TOOLS, AgentTools
from vllm_recipes.catalog import Catalog

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_lists_every_tool_of_the_one_list(catalog: Catalog) -> None:
    assert [t.name for t in AgentTools(catalog).tools] == list(TOOLS)


def test_mcp_help_names_the_tools(run_cli: Callable[..., Result]) -> None:
    res = run_cli("mcp", "--help")
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    assert all(f"{name}," in text or f"{name} " in text for name in TOOLS), text


def test_readme_and_agents_doc_name_the_same_tools() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    agents = readme[readme.index("## Agents"):]
    paragraph = agents[: agents.index("resources.")]
    assert re.findall(r"`([a-z_]+)`", paragraph.split("tools", 1)[1]) == list(TOOLS)
    doc = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    assert re.findall(r"^  \| `([a-z_]+)` \|", doc, flags=re.M) == list(TOOLS)
