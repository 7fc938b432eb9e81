"""The MCP ``export_deployment`` tool answers with the CLI's files and refuses with the target's reason."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from vllm_recipes.agents.tools import AgentTools, ToolError
from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import export_cmds  # noqa: F401  (registers `export`)
from vllm_recipes.cli.main import cli

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"


@pytest.fixture(scope="module")
def tools() -> AgentTools:
    return AgentTools(load_catalog())


def test_export_tool_gives_the_cli_bytes_and_files(tools: AgentTools) -> None:
    got = tools.call("export_deployment", {"hf_id": V41, "hardware": "h200", "strategy": "multi_node_dep",
                                           "nodes": 2, "to": "k8s", "namespace": "serving"})
    cli_out = CliRunner().invoke(cli, ["export", V41, "--hardware", "h200", "--strategy", "multi_node_dep",
                                       "--nodes", "2", "--to", "k8s", "--namespace", "serving"]).stdout
    assert got["text"] == cli_out
    assert got["media_type"] == "text/yaml"
    assert [f["path"] for f in got["files"]] == ["configmap-deepseek-v4-1-flash-settings.yaml",
                                                  "leaderworkerset-deepseek-v4-1-flash.yaml",
                                                  "service-deepseek-v4-1-flash-api.yaml", "kustomization.yaml"]


def test_export_tool_schema_and_refusals(tools: AgentTools) -> None:
    tool = next(t for t in tools.tools if t.name == "export_deployment")
    assert tool.input_schema["required"] == ["hf_id", "to"]
    assert tool.input_schema["properties"]["to"]["enum"] == ["k8s", "compose", "slurm", "vllm-config"]
    with pytest.raises(ToolError, match="Compose runs on one machine"):
        tools.call("export_deployment", {"hf_id": V41, "hardware": "h200", "strategy": "multi_node_dep",
                                         "to": "compose"})
    with pytest.raises(ToolError) as exc:
        tools.call("export_deployment", {"hf_id": V41, "to": "helm"})
    assert exc.value.param == "to"
    with pytest.raises(ToolError, match="Unknown argument"):
        tools.call("export_deployment", {"hf_id": V41, "to": "k8s", "replicas": "3"})
