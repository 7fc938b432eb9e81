"""Facts from the Hub, over real HTTP to a local Hub: config.json and safetensors metadata, cached, offline.

The recipe here has no ``architecture_facts`` (like every public recipe): the fit reads the model's
``config.json`` and its safetensors headers (tensor names, dtypes, byte offsets - never weights) from
``HF_ENDPOINT``, caches both, and then answers offline from the caches. Without any of them the verdict
is "unknown" (exit 3), and ``--offline`` never opens a connection.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import fit_cmds  # noqa: F401  (registers the command)
from vllm_recipes.cli.main import cli
from vllm_recipes.fit.checkpoints import summarize
from vllm_recipes.fit.memory import GIB

from .hub_server import Hub, serve

REPO = "acme/Hub-MoE"
#: a Qwen3-30B-A3B-shaped MoE (public config facts), fp8 experts, bf16 attention and embeddings
CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
    "vocab_size": 151936, "max_position_embeddings": 40960, "torch_dtype": "bfloat16",
}
RECIPE = """\
meta:
  title: "Hub MoE"
  provider: "Acme"
  description: "A recipe without architecture facts, like the public catalog's."
  date_added: 2026-01-01
  date_updated: 2026-01-02
  tasks: [text]
  hardware:
    h100: verified
model:
  model_id: "acme/Hub-MoE"
  min_vllm_version: "0.10.0"
  architecture: moe
  parameter_count: "30B"
  context_length: 40960
variants:
  default:
    precision: fp8
    vram_minimum_gb: 40
compatible_strategies:
  - single_node_tp
"""


def shards() -> dict[str, dict[str, tuple[str, list[int]]]]:
    h, v, e, w = 2048, 151936, 128, 768
    first: dict[str, tuple[str, list[int]]] = {"model.embed_tokens.weight": ("BF16", [v, h]),
                                               "lm_head.weight": ("BF16", [v, h])}
    second: dict[str, tuple[str, list[int]]] = {}
    for i in range(48):
        shard = first if i < 24 else second
        p = f"model.layers.{i}."
        shard.update({
            p + "self_attn.q_proj.weight": ("BF16", [32 * 128, h]), p + "self_attn.k_proj.weight": ("BF16", [512, h]),
            p + "self_attn.v_proj.weight": ("BF16", [512, h]), p + "self_attn.o_proj.weight": ("BF16", [h, 32 * 128]),
            p + "mlp.experts.gate_up_proj": ("F8_E4M3", [e, 2 * w, h]), p + "mlp.experts.down_proj": ("F8_E4M3", [e, h, w]),
            p + "mlp.experts.gate_up_proj_scale": ("F32", [e, 2 * w]), p + "mlp.gate.weight": ("BF16", [e, h]),
        })
    return {"model-00001-of-00002.safetensors": first, "model-00002-of-00002.safetensors": second}


EXPERT_BYTES = 48 * (128 * 2 * 768 * 2048 + 128 * 2048 * 768 + 128 * 2 * 768 * 4)
DENSE_BYTES = 2 * 151936 * 2048 * 2 + 48 * 2 * (2 * 4096 * 2048 + 2 * 512 * 2048) + 48 * 128 * 2048 * 2


@pytest.fixture()
def hub() -> Iterator[tuple[Hub, str]]:
    h = Hub()
    h.add(REPO, "config.json", CONFIG)
    h.add_sharded(REPO, shards())
    with serve(h) as url:
        yield h, url


@pytest.fixture()
def recipes(tmp_path: Path) -> str:
    d = tmp_path / "recipes" / "models" / "acme"
    d.mkdir(parents=True)
    (d / "Hub-MoE.yaml").write_text(RECIPE)
    return str(tmp_path / "recipes")


def env(tmp_path: Path, url: str | None = None, offline: bool = False) -> dict[str, str]:
    e = {"HF_HUB_CACHE": str(tmp_path / "hf"), "VLLM_RECIPES_CACHE_DIR": str(tmp_path / "vrc"),
         "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_TOKEN": ""}
    if url:
        e["HF_ENDPOINT"] = url
    if offline:
        e["HF_HUB_OFFLINE"] = "1"
    return e


def fit(recipes: str, environ: dict[str, str], *extra: str) -> tuple[int, dict]:
    res = CliRunner().invoke(cli, ["fit", REPO, "--recipes-dir", recipes, "--hardware", "h100", "--json", *extra],
                             env=environ)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, json.loads(res.stdout)


def test_summary_counts_bytes_by_dtype_and_the_routed_experts() -> None:
    info = summarize(REPO, [("model.layers.0.mlp.experts.down_proj", "F8_E4M3", 100),
                            ("model.layers.0.mlp.shared_experts.down_proj", "BF16", 100),
                            ("lm_head.weight", "BF16", 400)])
    assert (info.total_bytes, info.expert_bytes) == (600, 100)
    assert info.bytes_by_dtype == {"F8_E4M3": 100, "BF16": 500}


def test_architecture_and_checkpoint_from_the_hub_then_offline(hub: tuple[Hub, str], recipes: str,
                                                                tmp_path: Path) -> None:
    h, url = hub
    code, obj = fit(recipes, env(tmp_path, url))
    assert obj["architecture"]["source"] == f"Hugging Face Hub ({REPO})"
    assert obj["weights_source"].startswith("safetensors metadata")
    assert obj["checkpoint_gib"] == pytest.approx((EXPERT_BYTES + DENSE_BYTES) / GIB, abs=0.01)
    assert obj["verdict"] == "starts" and code == 0
    p = obj["processes"][0]
    tp = p["parallelism"]["tp"]
    # experts and the dense part both split by TP (no EP): bytes / TP, whatever the expert share
    assert p["weights_gib"] == pytest.approx((EXPERT_BYTES + DENSE_BYTES) / tp / GIB, abs=0.01)
    assert p["kv_bytes_per_token"] == 48 * 2 * max(1, 4 // tp) * 128 * 2
    assert not any("resolve/main/model-0000" in r and r.startswith("GET") and "range" in r for r in h.requests)
    # the Hub is gone: the same answer from the caches
    code2, again = fit(recipes, env(tmp_path), "--offline")
    assert again["architecture"]["source"] == f"Hugging Face cache ({REPO})"
    assert (code2, again["checkpoint_gib"], again["processes"]) == (code, obj["checkpoint_gib"], obj["processes"])


def test_expert_share_comes_from_the_tensor_names(hub: tuple[Hub, str], recipes: str, tmp_path: Path) -> None:
    """Under EP the experts split over every rank and the dense part is replicated: the share used is the
    checkpoint's own (tensor names), not a fixed 0.9."""
    _, url = hub
    _, obj = fit(recipes, env(tmp_path, url), "--arg", "--enable-expert-parallel")
    p = obj["processes"][0]
    tp = p["parallelism"]["tp"]
    assert p["parallelism"]["expert_parallel"]
    assert p["weights_gib"] == pytest.approx((DENSE_BYTES / tp + EXPERT_BYTES / tp) / GIB, abs=0.01)
    _, obj = fit(recipes, env(tmp_path, url), "--arg", "--enable-expert-parallel", "--arg",
                    "--data-parallel-size", "--arg", "2", "--arg", "--tensor-parallel-size", "--arg", "1")
    p = obj["processes"][0]
    assert (p["parallelism"]["tp"], p["parallelism"]["dp"]) == (1, 2)
    assert p["weights_gib"] == pytest.approx((DENSE_BYTES + EXPERT_BYTES / 2) / GIB, abs=0.01)


def test_unknown_without_any_source_and_offline_opens_no_connection(hub: tuple[Hub, str], recipes: str,
                                                                     tmp_path: Path) -> None:
    h, url = hub
    res = CliRunner().invoke(cli, ["fit", REPO, "--recipes-dir", recipes, "--hardware", "h100", "--offline"],
                             env=env(tmp_path, url))
    assert res.exit_code == 3, res.output
    assert "verdict: unknown" in res.stdout and "architecture of acme/Hub-MoE is not known yet" in res.stdout
    assert h.requests == []  # --offline: not one request, even with HF_ENDPOINT set
    code, obj = fit(recipes, env(tmp_path, url, offline=True))  # HF_HUB_OFFLINE does the same
    assert (code, obj["verdict"], obj["missing"]) == (3, "unknown", ["architecture"]) and h.requests == []


def test_a_hub_without_the_model_says_why(recipes: str, tmp_path: Path) -> None:
    with serve(Hub()) as url:
        code, obj = fit(recipes, env(tmp_path, url))
    assert (code, obj["verdict"]) == (3, "unknown")
    assert any("acme/Hub-MoE" in n and ("not on the Hub" in n or "no config.json" in n) for n in obj["notes"])


def test_weights_gib_overrides_and_hf_config_gives_the_layers(recipes: str, tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIG))
    code, obj = fit(recipes, env(tmp_path), "--offline", "--hf-config", str(cfg), "--weights-gib", "28.5")
    assert obj["checkpoint_gib"] == 28.5 and obj["weights_source"] == "--weights-gib"
    assert code == 0 and obj["verdict"] == "starts"
    # no size anywhere: the parameter count is the labelled last resort
    code, obj = fit(recipes, env(tmp_path), "--offline", "--hf-config", str(cfg))
    assert obj["weights_source"].startswith("estimate: parameter_count 30B at fp8")
    assert any(n.startswith("weights: estimate") for n in obj["notes"])


def test_the_page_says_the_architecture_is_not_known_yet(recipes: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """No flags on the page: plain words and a link to the model."""
    from starlette.testclient import TestClient

    from vllm_recipes.web import create_app

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("VLLM_RECIPES_CACHE_DIR", str(tmp_path / "vrc-empty"))
    body = TestClient(create_app(load_catalog(recipes))).get(f"/{REPO}").text
    import re

    sec = re.search(r'<section class="fit" id="fit".*?</section>', body, re.S)
    assert sec is not None
    text = sec.group(0)
    assert "architecture is not known yet" in text and f'href="https://huggingface.co/{REPO}"' in text
    assert "--" not in re.sub(r"<[^>]+>", "", text).replace("max-model-len", "")


def test_reverse_search_uses_the_cached_architecture(hub: tuple[Hub, str], recipes: str, tmp_path: Path) -> None:
    _, url = hub
    fit(recipes, env(tmp_path, url))  # caches config.json and the safetensors summary
    res = CliRunner().invoke(cli, ["fit", "--recipes-dir", recipes, "--gpu", "H100", "--gpus", "8", "--offline",
                                   "--json"], env=env(tmp_path))
    obj = json.loads(res.stdout)
    assert [r["model"] for r in obj["results"]] == [REPO] and obj["unknown_architecture"] == []
    assert obj["results"][0]["fit"]["weights_source"].startswith("safetensors metadata")  # the cached summary
