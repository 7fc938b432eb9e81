"""`vllm-recipes command` / `explain` end to end through click."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import Result

from vllm_recipes.cli import engine_cmds  # noqa: F401  (registers the commands)

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"


def test_default_is_gb200_tp2_with_rust_frontend(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41)
    code, out = res.exit_code, res.stdout
    assert code == 0
    assert "docker run --gpus all" in out  # pip is disabled by the recipe -> docker tab
    assert "-e VLLM_USE_RUST_FRONTEND=1" in out
    assert "--tensor-parallel-size 2" in out
    obj = json.loads(run_cli("command", V41, "--format", "json").stdout)
    assert obj["hardware"] == "gb200" and obj["frontend"] == "rust"
    assert list(obj["env"]) == ["VLLM_ENGINE_READY_TIMEOUT_S", "VLLM_USE_RUST_FRONTEND"]


def test_station_spec_decoding_uses_the_station_override(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--hardware", "dgx_station_gb300", "--feature", "spec_decoding")
    code, out = res.exit_code, res.stdout
    assert code == 0
    assert "--tensor-parallel-size 1" in out
    assert '"num_speculative_tokens_per_batch_size":[[1,4,5],[5,24,1]]' in out
    assert "--offload-backend uva" in out


def test_pd_on_mi355x_prints_prefill_decode_and_router(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--hardware", "mi355x", "--strategy", "pd_cluster")
    code, out = res.exit_code, res.stdout
    assert code == 0
    for title in ("# Prefill", "# Decode", "# Router"):
        assert title in out
    assert "vllm-router --policy round_robin" in out
    assert "--device=/dev/kfd" in out


def test_pd_co_located_layout_and_smg_router(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--strategy", "pd_cluster", "--prefill-nodes", "0", "--decode-nodes", "0", "--router", "smg-grpc", "--install", "docker", "--format", "json")
    code, out = res.exit_code, res.stdout
    assert code == 0, out
    obj = json.loads(out)
    assert obj["prefill"]["nodes"] == 0 and obj["prefill"]["env"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert obj["router"]["command"].startswith("smg launch \\\n    --pd-disaggregation")
    assert "--reasoning-parser" not in obj["prefill"]["argv"]
    assert obj["prefill"]["argv"][3] == "--grpc"


def test_multi_node_prints_every_rank(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--hardware", "h200", "--strategy", "multi_node_tp", "--nodes", "3", "--install", "docker")
    code, out = res.exit_code, res.stdout
    assert code == 0
    assert "# Head" in out and "# Node 1" in out and "# Node 2" in out
    assert out.count("--headless") == 2


@pytest.mark.parametrize("args, needle", [
    (("--hardware", "tpu9000"), "Valid choices: "),
    (("--strategy", "multi_node_tp_pp"), "is not offered"),
    (("--feature", "nope"), "Unknown feature 'nope'"),
    (("--feature", "text_only", "--feature", "encoder_parallel"), "mutually exclusive"),
    (("--mode", "reasoning=high"), "has no modes"),
    (("--hardware", "dgx_station_gb300", "--strategy", "single_node_tep"), "not supported on dgx_station_gb300"),
    (("--kv-offload", "lmcache", "--strategy", "multi_node_tp"), "not available"),
    (("--task", "t2v"), "omni recipes only"),
])
def test_bad_selections_exit_2_naming_valid_choices(run_cli: Callable[..., Result], args: tuple[str, ...], needle: str) -> None:
    res = run_cli("command", V41, *args)
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 2
    assert needle in err


def test_unknown_recipe_suggests_close_matches(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", "deepseek-ai/DeepSeek-V4.1-Flesh")
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 2 and "Did you mean: deepseek-ai/DeepSeek-V4.1-Flash" in err


def test_variant_model_id_selects_the_variant(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", "nvidia/DeepSeek-V4-Flash-NVFP4", "--format", "json")
    code, out = res.exit_code, res.stdout
    assert code == 0
    assert json.loads(out)["variant"] != "default"


def test_explain_json_accounts_for_every_token_with_locations(run_cli: Callable[..., Result]) -> None:
    res = run_cli("explain", V41, "--hardware", "b200", "--json")
    code, out = res.exit_code, res.stdout
    assert code == 0
    sections = json.loads(out)
    entries = sections[0]["entries"]
    seqs = next(e for e in entries if e["name"] == "--max-num-seqs")
    assert seqs["value"] == "8" and seqs["layer"] == "strategy-override-exact-gpu"
    assert seqs["location"].startswith("models/deepseek-ai/DeepSeek-V4.1-Flash.yaml:")
    assert seqs["shadowed"][0]["value"] == "128"
    assert seqs["shadowed"][0]["layer"] == "strategy-override-generation"
    rust = next(e for e in entries if e["name"] == "VLLM_USE_RUST_FRONTEND")
    assert rust["layer"] == "frontend"
    tp = next(e for e in entries if e["name"] == "--tensor-parallel-size")
    assert tp["layer"] == "parallelism" and tp["location"] is None


def test_explain_table_renders(run_cli: Callable[..., Result]) -> None:
    res = run_cli("explain", V41)
    code, out = res.exit_code, res.stdout
    assert code == 0 and "strategy-override-generation" in out


def test_omni_recipe(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    recipe = {
        "meta": {"title": "Tiny video", "provider": "Acme", "tasks": ["omni"]},
        "model": {"model_id": "acme/Video", "base_args": ["--trust-remote-code"]},
        "variants": {"default": {"precision": "bf16", "extra_args": ["--ignored-for-default"]}},
        "omni": {"port": 8091, "tasks": [{"id": "t2v", "extra_args": ["--flow-shift", "5.0"]}, "i2v", "bogus"]},
    }
    p = tmp_path / "models" / "acme" / "Video.yaml"
    p.parent.mkdir(parents=True)
    p.write_text(yaml.safe_dump(recipe, sort_keys=False))
    res = run_cli("command", "acme/Video", "--recipes-dir", str(tmp_path))
    code, out = res.exit_code, res.stdout
    assert code == 0
    assert out.strip() == ("vllm serve acme/Video \\\n  --trust-remote-code \\\n  --flow-shift 5.0 \\\n"
                           "  --port 8091 \\\n  --omni")
    res = run_cli("command", "acme/Video", "--recipes-dir", str(tmp_path), "--task", "bogus")
    code, err = res.exit_code, res.stderr
    assert code == 2 and "t2v, i2v" in err


def test_install_method_the_recipe_disables_is_refused(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--install", "pip")
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 2 and "does not offer a pip install" in err and "Valid choices: docker" in err


def test_out_of_range_pool_rank_is_refused(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--strategy", "pd_cluster", "--prefill-nodes", "2", "--prefill-rank", "5")
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 2 and "--prefill-rank must be between 0 and 1 for a 2-node prefill pool; got 5." in err


def test_instance_counts_without_mooncake_are_refused(run_cli: Callable[..., Result]) -> None:
    res = run_cli("command", V41, "--kv-instances", "3")
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 2 and "kv_store_centralized_mooncake" in err


def test_pool_nodes_below_the_pool_floor_are_refused(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    recipe = {
        "meta": {"title": "Big", "provider": "Acme"},
        "model": {"model_id": "acme/Big"},
        "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 100}},
        "compatible_strategies": ["single_node_tp", "multi_node_dep", "pd_cluster"],
        "strategy_min_gpus": {"dep": 16},
    }
    p = tmp_path / "models" / "acme" / "Big.yaml"
    p.parent.mkdir(parents=True)
    p.write_text(yaml.safe_dump(recipe, sort_keys=False))
    res = run_cli("command", "acme/Big", "--recipes-dir", str(tmp_path), "--hardware", "h200", "--strategy", "pd_cluster", "--prefill-mode", "dep", "--prefill-nodes", "1")
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 2 and "needs at least 2 nodes" in err
    res = run_cli("command", "acme/Big", "--recipes-dir", str(tmp_path), "--hardware", "h200", "--strategy", "pd_cluster", "--prefill-mode", "dep", "--format", "json")
    code, out = res.exit_code, res.stdout
    assert code == 0 and json.loads(out)["prefill"]["nodes"] == 2


def test_omni_recipe_without_pip_defaults_to_docker(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    recipe = {
        "meta": {"title": "Tiny image", "provider": "Acme", "tasks": ["omni"]},
        "model": {"model_id": "acme/Image", "install": {"pip": False}},
        "variants": {"default": {"precision": "bf16"}},
        "omni": {"tasks": ["t2i"]},
    }
    p = tmp_path / "models" / "acme" / "Image.yaml"
    p.parent.mkdir(parents=True)
    p.write_text(yaml.safe_dump(recipe, sort_keys=False))
    res = run_cli("command", "acme/Image", "--recipes-dir", str(tmp_path))
    code, out = res.exit_code, res.stdout
    assert code == 0 and out.startswith("docker run")
    res = run_cli("command", "acme/Image", "--recipes-dir", str(tmp_path), "--install", "pip")
    code, _out, err = res.exit_code, res.stdout, res.stderr
    assert code == 2 and "Valid choices: docker" in err
