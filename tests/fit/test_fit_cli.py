"""``vllm-recipes fit`` end to end, the architecture checks in command/explain, --hardware auto, bad input."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.catalog.validate import validate_file

DATA = Path(__file__).parent / "data"
V4 = "deepseek-ai/DeepSeek-V4-Flash"
RECIPES = str(DATA / "recipes")
DENSE = "acme/Dense-8B"


def test_done_when_v4_flash_on_h200_at_128k(run_cli: Callable[..., Result]) -> None:
    res = run_cli("fit", V4, "--hardware", "h200", "--context", "131072")
    assert res.exit_code == 0, res.stdout
    for label in ("weights per GPU", "KV budget per GPU", "KV capacity (tokens)", "concurrency at 131,072"):
        assert label in res.stdout
    assert "strategy single_node_tep" in res.stdout and "verdict: starts" in res.stdout
    assert "not modelled exactly" in res.stdout  # compressed sparse KV: estimate and bound, never a silent guess
    obj = json.loads(run_cli("fit", V4, "--hardware", "h200", "--context", "131072", "--json").stdout)
    p = obj["processes"][0]
    assert obj["starts"] and p["parallelism"]["tp"] == 8 and p["context"] == 131072
    assert p["kv_tokens_bound"] < p["kv_tokens"] and p["exact"] is False
    # checkpoint 155.5 GiB, 95% experts split over 8 EP ranks, the rest over TP 8: 155.5 / 8
    assert p["weights_gib"] == pytest.approx(155.5 / 8, abs=0.01)


def test_pd_pools_are_planned_separately(run_cli: Callable[..., Result]) -> None:
    obj = json.loads(run_cli("fit", V4, "--hardware", "h200", "--strategy", "pd_cluster", "--json").stdout)
    roles = {p["role"]: p for p in obj["processes"]}
    assert set(roles) == {"prefill", "decode"}
    assert roles["prefill"]["max_num_seqs"] == 8 and roles["decode"]["max_num_seqs"] == 1536
    assert roles["decode"]["concurrency_all_ranks"] == roles["decode"]["concurrency"] * 8


def test_reverse_search_on_the_bundled_catalog(run_cli: Callable[..., Result]) -> None:
    res = run_cli("fit", "--gpus", "8", "--gpu-memory", "141", "--json")
    obj = json.loads(res.stdout)
    assert res.exit_code == 0 and obj["hardware"]["custom"] is True
    got = [(r["model"], r["variant"]) for r in obj["results"]]
    assert (V4, "default") in got
    scores = [(r["concurrency"], r["kv_tokens"]) for r in obj["results"]]
    assert scores == sorted(scores, reverse=True)  # best first
    res = run_cli("fit", "--gpus", "2", "--gpu-memory", "32")
    assert res.exit_code == 0 and "0 variant(s) start" in res.stdout


def test_reverse_search_on_a_recipes_dir(run_cli: Callable[..., Result]) -> None:
    obj = json.loads(run_cli("fit", "--recipes-dir", RECIPES, "--gpus", "1", "--gpu-memory", "24", "--context", "8192",
                             "--json").stdout)
    hit = next(r for r in obj["results"] if r["model"] == DENSE)
    assert hit["strategy"] == "single_node_tp" and hit["kv_tokens"] > 0


def test_architecture_checks_warn_in_command_and_fail_fit(run_cli: Callable[..., Result]) -> None:
    # a node count giving TP 12 is refused by the selection with the counts that split the heads
    # (select/nodes.py, issue #27); a TP set by hand still reaches the architecture checks
    res = run_cli("command", DENSE, "--recipes-dir", RECIPES, "--hardware", "gb200", "--strategy", "multi_node_tp",
                  "--nodes", "3")
    assert res.exit_code == 2 and "32 attention heads" in res.stderr and "Valid choices: 2, 4, 8." in res.stderr
    args = (DENSE, "--recipes-dir", RECIPES, "--hardware", "h100", "--arg", "--tensor-parallel-size", "--arg", "12")
    res = run_cli("command", *args)
    assert res.exit_code == 0 and "--tensor-parallel-size 12" in res.stdout
    assert "warning: tensor-parallel size 12 does not divide the model's 32 attention heads" in res.stderr
    assert "warning: tensor-parallel size 12" in run_cli("explain", *args).stderr
    res = run_cli("fit", *args)
    assert res.exit_code == 1 and "error: tensor-parallel size 12" in res.stdout and "verdict: does not start" in res.stdout
    res = run_cli("command", DENSE, "--recipes-dir", RECIPES, "--hardware", "h100", "--arg", "--max-model-len",
                  "--arg", "32768")
    assert "longer than the model's context of 8,192 tokens" in res.stderr
    # PP need not divide the layers: vLLM splits 32 layers over 3 stages as 11 + 11 + 10
    res = run_cli("fit", DENSE, "--recipes-dir", RECIPES, "--hardware", "h100", "--strategy", "multi_node_tp_pp",
                  "--nodes", "3")
    assert "pipeline-parallel size" not in res.stdout and "verdict: starts" in res.stdout, res.stdout


def test_named_and_custom_gpus(run_cli: Callable[..., Result]) -> None:
    obj = json.loads(run_cli("fit", DENSE, "--recipes-dir", RECIPES, "--gpu", "RTX 4090", "--gpus", "2", "--json").stdout)
    assert obj["hardware"]["custom"] and obj["hardware"]["gpu_memory_gib"] == 23.52
    assert obj["processes"][0]["parallelism"]["tp"] == 1  # vram_minimum_gb 20 fits one card: the recipe's TP rule
    obj = json.loads(run_cli("fit", DENSE, "--recipes-dir", RECIPES, "--gpu-memory", "16", "--gpus", "2", "--json").stdout)
    assert obj["hardware"]["label"] == "Custom: 2x GPU (16 GB each)"
    assert obj["processes"][0]["parallelism"]["tp"] == 2  # 20 GB does not fit one: TP spans the custom box
    res = run_cli("fit", V4, "--gpu", "RTX 5900")
    assert res.exit_code == 2 and "Did you mean: RTX 5090" in res.stderr


def test_hf_config_overrides_the_architecture(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    obj = json.loads(run_cli("fit", DENSE, "--recipes-dir", RECIPES, "--hardware", "h100", "--json",
                             "--hf-config", str(DATA / "gpt_oss_120b.json")).stdout)
    assert obj["architecture"]["source"] == "--hf-config gpt_oss_120b.json"
    bad = tmp_path / "config.json"
    bad.write_text("{nope")
    res = run_cli("fit", DENSE, "--recipes-dir", RECIPES, "--hf-config", str(bad))
    assert res.exit_code == 2 and "not JSON" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize("command", ["fit", "perf"])
def test_an_odd_mlp_only_layers_item_is_no_traceback(run_cli: Callable[..., Result], tmp_path: Path,
                                                       command: str) -> None:
    cfg = json.loads((DATA / "llama3_8b.json").read_text()) | {"num_experts": 8, "mlp_only_layers": [[3], True]}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    more = ("--isl", "128", "--osl", "16") if command == "perf" else ()
    res = run_cli(command, DENSE, "--recipes-dir", RECIPES, "--hardware", "h100", "--offline",
                  "--hf-config", str(tmp_path / "config.json"), *more)
    assert res.exit_code == 0, res.stdout + res.stderr


def test_hf_cache_is_read_offline(run_cli: Callable[..., Result], tmp_path: Path, catalog: Catalog,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A recipe without facts takes them from the local Hugging Face cache (never the network)."""
    pytest.importorskip("huggingface_hub")
    snap = tmp_path / "hub" / "models--acme--Cached-8B" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (tmp_path / "hub" / "models--acme--Cached-8B" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--Cached-8B" / "refs" / "main").write_text("abc123")
    (snap / "config.json").write_text((DATA / "llama3_8b.json").read_text())
    (snap / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 16_060_522_496}}))
    recipes = tmp_path / "recipes" / "models" / "acme"
    recipes.mkdir(parents=True)
    src = (DATA / "recipes" / "models" / "acme" / "Dense-8B.yaml").read_text()
    head, _, _ = src.partition("  architecture_facts:")
    rest = src.split("    checkpoint_gib: 14.96\n", 1)[1]
    (recipes / "Cached-8B.yaml").write_text(head.replace("acme/Dense-8B", "acme/Cached-8B") + rest)
    from vllm_recipes.fit import sources

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    arch = sources.architecture_from_cache("acme/Cached-8B")
    assert arch is not None and arch.num_kv_heads == 8
    assert sources.checkpoint_gib_from_cache("acme/Cached-8B") == pytest.approx(14.96, 0.01)
    assert sources.architecture_from_cache("acme/Absent") is None
    res = run_cli("fit", "acme/Cached-8B", "--recipes-dir", str(tmp_path / "recipes"), "--hardware", "h100",
                     "--json", env={"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"})
    obj = json.loads(res.stdout)
    assert obj["architecture"]["source"] == "Hugging Face cache (acme/Cached-8B)"
    assert obj["weights_source"] == "safetensors index in the Hugging Face cache"


def _fake_tool(tmp_path: Path, name: str, output: Path) -> None:
    """A recorded tool output behind the tool's name (the only GPU tool on PATH)."""
    tool = tmp_path / name
    tool.write_text(f"#!/bin/sh\nexec /bin/cat '{output}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


def test_hardware_auto(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    _fake_tool(tmp_path, "nvidia-smi", DATA / "smi" / "nvidia_8xh100.csv")
    res = run_cli("command", V4, "--hardware", "auto", env={"PATH": str(tmp_path)})
    assert res.exit_code == 0, res.stderr
    assert "# hardware: H100 (8x 80 GB), detected (nvidia-smi)" in res.stderr and "--tensor-parallel-size 8" in res.stdout
    res = run_cli("fit", V4, "--hardware", "auto", "--json", env={"PATH": str(tmp_path)})
    assert json.loads(res.stdout)["hardware"]["profile"] == "h100"


def test_hardware_auto_without_a_tool_exits_2(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    for cmd in ("fit", "command"):
        res = run_cli(cmd, V4, "--hardware", "auto", env={"PATH": str(tmp_path)})
        assert res.exit_code == 2 and "no GPU tool found" in res.stderr


def test_hardware_auto_with_garbage_exits_2(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    _fake_tool(tmp_path, "nvidia-smi", DATA / "smi" / "nvidia_garbage.csv")
    res = run_cli("fit", V4, "--hardware", "auto", env={"PATH": str(tmp_path)})
    assert res.exit_code == 2 and "nvidia-smi" in res.stderr and "Traceback" not in res.stderr


def test_bad_selection_names_choices(run_cli: Callable[..., Result]) -> None:
    res = run_cli("fit", V4, "--hardware", "h999")
    assert res.exit_code == 2 and "h200" in res.stderr
    res = run_cli("fit")
    assert res.exit_code == 2 and "Name a model" in res.stderr


def test_architecture_block_with_wrong_types_is_a_validation_error(tmp_path: Path) -> None:
    src = (DATA / "recipes" / "models" / "acme" / "Dense-8B.yaml").read_text()
    path = tmp_path / "Dense-8B.yaml"
    path.write_text(src.replace("num_kv_heads: 8", 'num_kv_heads: "8"').replace("checkpoint_gib: 14.96",
                                                                               "checkpoint_gib: [14.96]"))
    findings = validate_file(path, load_catalog(), "Dense-8B.yaml")
    errors = {f.key_path: f for f in findings if f.severity == "error"}
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "num_kv_heads" in t)
    kv = errors["model.architecture_facts.num_kv_heads"]
    assert (kv.file, kv.line) == ("Dense-8B.yaml", line) and "expected an integer" in kv.message
    assert "model.architecture_facts.checkpoint_gib" in errors
    path.write_text(src.replace("    head_dim: 128\n", ""))
    msgs = [f.message for f in validate_file(path, load_catalog(), "Dense-8B.yaml")]
    assert any("needs head_dim" in m for m in msgs)
