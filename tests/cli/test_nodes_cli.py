"""Multi-node output and node counts on the command line (issue #27 items 7 and 8).

Our own fixtures: a dense 32B model whose recipe gives its attention heads (64), and a MoE
whose architecture is unknown. The node-count rule lives in ``select/nodes.py``: the selection
refuses what vLLM would refuse, the release lint reports the same finding, the page marks it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import engine_cmds  # noqa: F401  (registers the commands)
from vllm_recipes.cli.main import cli
from vllm_recipes.web import create_app

DENSE = """\
meta:
  title: "Dense-32B"
  provider: "Example Labs"
  description: "A made-up dense 32B model."
  date_added: 2026-03-01
  date_updated: 2026-03-01
  tasks: [text]
model:
  model_id: example-labs/Dense-32B
  architecture: dense
  parameter_count: "32B"
  architecture_facts:
    source: "our fixture"
    attention: gqa
    num_layers: 64
    num_attention_heads: 64
    num_kv_heads: 8
    head_dim: 128
    hidden_size: 5120
variants:
  default:
    precision: bf16
    vram_minimum_gb: 70
compatible_strategies: [single_node_tp, multi_node_tp]
"""

MOE = """\
meta:
  title: "Big-MoE"
  provider: "Example Labs"
  description: "A made-up MoE whose architecture facts are not given."
  date_added: 2026-03-01
  date_updated: 2026-03-01
  tasks: [text]
model:
  model_id: example-labs/Big-MoE
  architecture: moe
  parameter_count: "1T"
variants:
  default:
    precision: fp8
    vram_minimum_gb: 1000
compatible_strategies: [single_node_tp, multi_node_tp, multi_node_dep, pd_cluster]
"""


@pytest.fixture(scope="module")
def recipes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nodes-catalog")
    d = root / "models" / "example-labs"
    d.mkdir(parents=True)
    (d / "Dense-32B.yaml").write_text(DENSE, encoding="utf-8")
    (d / "Big-MoE.yaml").write_text(MOE, encoding="utf-8")
    return root


def test_pd_pools_say_which_node_is_shown_and_how_to_print_the_others(run_cli: Callable[..., Result], recipes: Path) -> None:
    res = run_cli("command", "example-labs/Big-MoE", "--hardware", "h200", "--strategy", "pd_cluster", "--prefill-nodes", "2", "--decode-nodes", "3", "--recipes-dir", str(recipes))
    code, out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0
    assert "# showing prefill node 0 of nodes 0-1; --prefill-rank 1 prints node 1" in err
    assert "# showing decode node 0 of nodes 0-2; --decode-rank N (0-2) prints node N" in err
    assert "# showing" not in out  # stdout stays exactly the command
    # following the hint prints the other node of the pool
    res = run_cli("command", "example-labs/Big-MoE", "--hardware", "h200", "--strategy", "pd_cluster", "--prefill-nodes", "2", "--decode-nodes", "3", "--prefill-rank", "1", "--recipes-dir", str(recipes))
    code, other, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and other != out
    assert "# showing prefill node 1 of nodes 0-1; --prefill-rank 0 prints node 0" in err
    prefill = lambda text: text.split("# Decode")[0]  # noqa: E731
    assert re.search(r"--node-rank 1\b|--data-parallel-start-rank 8\b", prefill(other))
    assert not re.search(r"--node-rank 1\b|--data-parallel-start-rank 8\b", prefill(out))


def test_mooncake_instances_say_how_to_print_the_others() -> None:
    args = ["command", "deepseek-ai/DeepSeek-V4-Flash", "--hardware", "h200",
            "--kv-offload", "kv_store_centralized_mooncake", "--kv-instances", "2"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0 and "# showing Mooncake instance 1 of 2; --kv-instance 1 prints instance 2" in res.stderr
    res = CliRunner().invoke(cli, [*args, "--kv-instance", "1"])
    assert res.exit_code == 0 and "instance 2 of 2" in res.stdout


def test_single_pool_plans_print_no_hint(run_cli: Callable[..., Result], recipes: Path) -> None:
    res = run_cli("command", "example-labs/Big-MoE", "--hardware", "h200", "--strategy", "multi_node_tp", "--nodes", "2", "--recipes-dir", str(recipes))
    code, out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and "# Node 1" in out and "# showing" not in err  # every node is printed


def test_a_node_count_the_heads_cannot_split_is_refused_with_the_valid_counts(run_cli: Callable[..., Result], recipes: Path) -> None:
    res = run_cli("command", "example-labs/Dense-32B", "--hardware", "h100", "--strategy", "multi_node_tp", "--nodes", "5", "--recipes-dir", str(recipes))
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 2
    assert "5 nodes give tensor-parallel size 40, which does not divide the model's 64 attention heads" in err
    assert "Valid choices: 2, 4, 8." in err
    for n in ("2", "4", "8"):
        res = run_cli("command", "example-labs/Dense-32B", "--hardware", "h100", "--strategy", "multi_node_tp", "--nodes", n, "--recipes-dir", str(recipes))
        code, out = res.exit_code, res.stdout
        assert code == 0 and f"--tensor-parallel-size {int(n) * 8}" in out


def test_unknown_architecture_warns_with_the_power_of_two_rule_and_the_lint_agrees(run_cli: Callable[..., Result], recipes: Path) -> None:
    res = run_cli("command", "example-labs/Big-MoE", "--hardware", "h200", "--strategy", "multi_node_tp", "--nodes", "3", "--recipes-dir", str(recipes))
    code, out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and "--tensor-parallel-size 24" in out
    assert "warning [node-count]" in err and "node counts that split evenly: 2, 4, 8, 16" in err
    obj = json.loads(run_cli("command", "example-labs/Big-MoE", "--hardware", "h200", "--strategy", "multi_node_tp", "--nodes", "3", "--format", "json", "--recipes-dir", str(recipes)).stdout)
    assert [f["code"] for f in obj["vllm_lint"]["findings"]] == ["node-count"]
    # expert parallelism over 3 x 8 GPUs: the experts split unevenly too
    res = run_cli("command", "example-labs/Big-MoE", "--hardware", "h200", "--strategy", "multi_node_dep", "--nodes", "3", "--recipes-dir", str(recipes))
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and "expert-parallel size 24" in err
    res = run_cli("command", "example-labs/Big-MoE", "--hardware", "h200", "--strategy", "multi_node_tp", "--nodes", "4", "--recipes-dir", str(recipes))
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and "node-count" not in err


def test_the_page_disables_node_counts_the_heads_cannot_split(recipes: Path) -> None:
    with TestClient(create_app(load_catalog(recipes))) as client:
        body = client.get("/example-labs/Dense-32B?hardware=h100&strategy=multi_node_tp&nodes=2").text
        pill5 = re.search(r'<span class="pill is-disabled"[^>]*data-key="node-count:n-5"', body)
        assert pill5 and "does not divide the model&#39;s 64 attention heads" in pill5.group(0)
        assert re.search(r'<a class="pill" href="[^"]*nodes=4" data-nav data-key="node-count:n-4"', body)
        # a URL asking for 5 nodes is canonicalised to a valid count, with a notice
        body = client.get("/example-labs/Dense-32B?hardware=h100&strategy=multi_node_tp&nodes=5").text
        assert "does not divide the model" in body and "--tensor-parallel-size 32" in body
