"""Golden renderings of the bundled seed recipes, plus the seed-era behaviour the goldens cannot show.

Part 1 compares every file under ``tests/golden/expected/`` (json-api.md §2 layout,
produced by the reference implementation) with our own variant trees: the parent
recipe under its hf_id and every promoted variant under its model_id (json-api §5.5).
Before comparing, both sides lose the keys the expected set does not carry or that
are ours to write (see the README next to the expected files).

Part 2 derives the extensions.md behaviour by hand (frontend, exact-GPU feature
overrides, per-hardware VRAM and install, the nightly docker pull, feature
conflicts, unknown hardware ids): the reference knows none of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from seed_goldens import expected_renderings
from vllm_recipes.api.build import build_api
from vllm_recipes.api.tree import render_for_hardware, render_selection
from vllm_recipes.cli import engine_cmds  # noqa: F401  (registers `command` / `explain`)
from vllm_recipes.cli.main import cli
from vllm_recipes.render.install import hardware_install_block, install_block
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.defaults import listed_hardware
from vllm_recipes.select.gates import fits_single_node
from vllm_recipes.select.selection import Selection
from vllm_recipes.select.state import PageRequest, build_state, install_tabs
from vllm_recipes.synth.resolve import resolve

#: The project's own golden files (reference renderings of the seed recipes; README inside).
EXPECTED = Path(__file__).resolve().parent / "expected"
HAVE_EXPECTED = EXPECTED.is_dir()
assert HAVE_EXPECTED, f"golden files missing: {EXPECTED}"

V4 = "deepseek-ai/DeepSeek-V4-Flash"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"

#: Keys removed from both sides before comparing (expected/README.md); ``install`` is our
#: per-hardware addition (extensions §2.5), tested by hand below; ``vllm_lint`` is the release lint
#: (tests/lint/test_vllm_lint_seeds.py).
DROPPED_TOP = ("frontend", "strategy_spec", "hardware_profile", "mooncake_config_note", "install", "vllm_lint")
DROPPED_NESTED = {"master": ("description",), "store": ("description", "note")}


def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if k in DROPPED_TOP:
            continue
        if k in DROPPED_NESTED and isinstance(v, dict):
            v = {kk: vv for kk, vv in v.items() if kk not in DROPPED_NESTED[k]}
        out[k] = v
    return out


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Part 1: golden files
# ---------------------------------------------------------------------------------------------

def _all_trees(catalog) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every variant-tree file the JSON API writes (parent + promoted variants), decoded."""
    warnings: list[str] = []
    api = build_api(catalog, warnings.append)
    # tree files are <org>/<repo>/{hw,strategies}/...; recipe, strategy and index files are shallower
    files = {rel: json.loads(data) for rel, data in api.files.items() if rel.count("/") >= 3}
    return files, warnings


@pytest.fixture(scope="module")
def rendered(catalog):
    return _all_trees(catalog)


#: The reference files as we should write them today, keyed by our path (seed_goldens: deviations applied).
WANTED = expected_renderings(EXPECTED)
EXPECTED_FILES = sorted(WANTED)


@pytest.mark.parametrize("rel", EXPECTED_FILES or ["<none>"], ids=lambda r: r.removesuffix(".json"))
def test_golden_file(rendered, rel: str) -> None:
    files, _ = rendered
    assert rel in files, f"we render no {rel}"
    want = _dump(_strip(WANTED[rel]))
    got = _dump(_strip(files[rel]))
    assert got == want


def test_golden_set_is_complete(rendered) -> None:
    files, warnings = rendered
    assert len(EXPECTED_FILES) == 411
    assert warnings == []
    extra = sorted(set(files) - set(EXPECTED_FILES))
    # The reference skipped V4.1 on the DGX Station (per-hardware VRAM, extensions §2.4); we render it.
    assert extra == [f"{V41}/hw/dgx_station_gb300.json"]


def test_every_rendering_states_the_frontend(rendered) -> None:
    """extensions §2.1: JSON API renderings use the recipe default and say so."""
    files, _ = rendered
    assert files
    for rel, obj in files.items():
        assert obj["frontend"] == "rust", rel
        assert list(obj).index("frontend") == list(obj).index("env") + (2 if "docker_image" in obj else 1)


# ---------------------------------------------------------------------------------------------
# Part 2: seed-era behaviour, derived from extensions.md by hand
# ---------------------------------------------------------------------------------------------

def _resolve(catalog, hf_id: str, **kw: Any):
    return resolve(catalog, catalog.recipe(hf_id), Selection(**kw))


def _render(catalog, hf_id: str, **kw: Any) -> dict[str, Any]:
    ctx, plan = _resolve(catalog, hf_id, **kw)
    return rendering_object(ctx, plan)


V41_FEATURES = ("tool_calling", "reasoning", "encoder_parallel")


class TestFrontend:
    def test_rust_env_right_after_base_env(self, catalog) -> None:
        obj = _render(catalog, V41, hw_id="gb200", strategy="single_node_tp", features=V41_FEATURES)
        assert obj["frontend"] == "rust"
        assert list(obj["env"].items())[:2] == [("VLLM_ENGINE_READY_TIMEOUT_S", "3600"),
                                               ("VLLM_USE_RUST_FRONTEND", "1")]

    def test_v4_without_base_env_starts_with_frontend(self, catalog) -> None:
        obj = _render(catalog, V4, hw_id="mi300x", strategy="single_node_tep")
        assert obj["frontend"] == "rust"
        assert list(obj["env"]) == ["VLLM_USE_RUST_FRONTEND", "VLLM_ROCM_USE_AITER"]

    def test_every_serve_process_gets_it(self, catalog) -> None:
        pd = _render(catalog, V41, hw_id="gb200", strategy="pd_cluster", pd_nodes={"prefill": 1, "decode": 1})
        assert pd["env"] == {}
        for role in ("prefill", "decode"):
            assert list(pd[role]["env"])[:2] == ["VLLM_ENGINE_READY_TIMEOUT_S", "VLLM_USE_RUST_FRONTEND"]
            assert "-e VLLM_USE_RUST_FRONTEND=1" in pd[role]["docker_command"]
        assert "RUST" not in pd["router"]["command"]
        kv = _render(catalog, V41, hw_id="h200", strategy="multi_node_tp", node_count=2,
                     kv_offload="kv_store_centralized_mooncake")
        assert kv["env"]["VLLM_USE_RUST_FRONTEND"] == "1"
        assert "RUST" not in kv["master"]["command"] and "RUST" not in kv["router"]["command"]
        multi = _render(catalog, V41, hw_id="h200", strategy="multi_node_dep", node_count=2)
        assert list(multi["env"])[:2] == ["VLLM_ENGINE_READY_TIMEOUT_S", "VLLM_USE_RUST_FRONTEND"]

    def test_python_frontend_removes_it(self, catalog) -> None:
        obj = _render(catalog, V41, hw_id="gb200", strategy="single_node_tp", frontend="python")
        assert obj["frontend"] == "python"
        assert obj["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "3600"}
        assert "RUST" not in obj["docker_command"]

    def test_cli_frontend_python(self) -> None:
        res = CliRunner().invoke(cli, ["command", V41, "--frontend", "python", "--format", "json"])
        assert res.exit_code == 0, res.output
        obj = json.loads(res.output)
        assert obj["frontend"] == "python"
        assert "VLLM_USE_RUST_FRONTEND" not in obj["env"]
        res = CliRunner().invoke(cli, ["command", V41, "--format", "json"])
        assert json.loads(res.output)["env"]["VLLM_USE_RUST_FRONTEND"] == "1"

    def test_cli_rejects_unknown_frontend(self) -> None:
        res = CliRunner().invoke(cli, ["command", V41, "--frontend", "go"])
        assert res.exit_code == 2
        assert "go" in res.output and "python" in res.output and "rust" in res.output


STATION_COMMAND = """\
vllm serve deepseek-ai/DeepSeek-V4.1-Flash \\
  --tokenizer-mode deepseek_v41 \\
  --offload-backend uva \\
  --cpu-offload-gb 60 \\
  --cpu-offload-params routed_experts.w13_weight \\
  routed_experts.w2_weight \\
  --engram-config '{"cpu_offload":true}' \\
  --gpu-memory-utilization 0.97 \\
  --max-model-len 1048576 \\
  --max-num-batched-tokens 8192 \\
  --long-prefill-token-threshold 6144 \\
  --compilation-config '{"cudagraph_capture_sizes":[1,2,4,6,8,12,16,18,24,32,40,48,64,96,128]}' \\
  --tensor-parallel-size 1 \\
  --attention-config '{"backend":"FLASHMLA_MEGA_ATTN_DSV41"}' \\
  --kv-cache-dtype fp8_ds_mla \\
  --max-num-seqs 24 \\
  --tool-call-parser deepseek_v41 \\
  --enable-auto-tool-choice \\
  --reasoning-parser deepseek_v41 \\
  --mm-encoder-tp-mode data"""

SPEC_BASE = ('{"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic",'
             '"rejection_sample_method":"block","enable_adaptive_verification":true}')
SPEC_AMD = SPEC_BASE.replace('"enable_adaptive_verification":true', '"enable_adaptive_verification":false')
SPEC_STATION = '{"method":"dspark","num_speculative_tokens":5,"num_speculative_tokens_per_batch_size":[[1,4,5],[5,24,1]]}'


class TestDgxStation:
    """extensions §2.4 (per-hardware VRAM budget) and §2.3 (exact-GPU feature override)."""

    def test_fits_on_its_resident_budget(self, catalog) -> None:
        r = catalog.recipe(V41)
        variant = r.variants["default"]
        station = catalog.hardware_profiles["dgx_station_gb300"]
        assert variant["vram_minimum_gb"] == 614 and station["vram_gb"] == 252
        assert fits_single_node(station, variant, "dgx_station_gb300")
        assert not fits_single_node(station, variant)  # the physical comparison alone would not fit
        assert "dgx_station_gb300" in listed_hardware(catalog.hardware_profiles, variant, r.data)

    def test_json_api_renders_it(self, catalog) -> None:
        built = render_for_hardware(catalog, catalog.recipe(V41), "default", "dgx_station_gb300")
        assert built is not None
        rec = built.recommended
        assert (rec["strategy"], rec["variant"], rec["node_count"]) == ("single_node_tp", "default", 1)
        assert rec["command"] == STATION_COMMAND
        assert rec["env"] == {"VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_USE_RUST_FRONTEND": "1"}
        assert rec["docker_image"] == "vllm/vllm-openai:nightly"
        # single_node_tep/dep are unsupported there; multi-node, PD and Mooncake need a scalable profile.
        assert built.alternatives == []

    def test_page_default_state_renders_tp1(self, catalog) -> None:
        state = build_state(catalog, catalog.recipe(V41), PageRequest(hardware="dgx_station_gb300"))
        sel = state.selection
        assert (sel.variant_key, sel.strategy, sel.node_count) == ("default", "single_node_tp", 1)
        obj = _render(catalog, V41, **{k: getattr(sel, k) for k in ("variant_key", "hw_id", "strategy",
                                                                      "node_count", "features")})
        assert "--tensor-parallel-size 1" in obj["command"]

    @pytest.mark.parametrize(("hw", "strategy", "spec"), [
        ("dgx_station_gb300", "single_node_tp", SPEC_STATION),
        ("mi355x", "single_node_tp", SPEC_AMD),
        ("mi300x", "single_node_dep", SPEC_AMD),
        ("b200", "single_node_tp", SPEC_BASE),
        ("gb300", "single_node_tp", SPEC_BASE),
        ("h200", "single_node_tp", SPEC_BASE),
    ])
    def test_spec_decoding_override_by_exact_gpu(self, catalog, hw: str, strategy: str, spec: str) -> None:
        obj = _render(catalog, V41, hw_id=hw, strategy=strategy, features=(*V41_FEATURES, "spec_decoding"))
        argv = obj["argv"]
        assert argv.count("--speculative-config") == 1
        assert argv[argv.index("--speculative-config") + 1] == spec
        assert obj["command"].endswith(f"  --speculative-config '{spec}'")


class TestPerHardwareInstall:
    """extensions §2.5 on V4 variants that hide the pip tab on one profile."""

    def test_ascend_hides_pip(self, catalog) -> None:
        r = catalog.recipe(V4)
        variant = r.variants["default"]
        assert hardware_install_block(r.data, variant, "ascend_950pr_8x") == {
            "docker": {"command": "docker pull vllm/vllm-openai:latest"}}
        assert hardware_install_block(r.data, variant, "h200") == install_block(r.data) == {
            "pip": {"command": "uv venv\nsource .venv/bin/activate\nuv pip install -U vllm --torch-backend auto"},
            "docker": {"command": "docker pull vllm/vllm-openai:latest"},
        }
        assert install_tabs(r.data, variant, "ascend_950pr_8x") == ["docker"]
        assert install_tabs(r.data, variant, "h200") == ["pip", "docker"]

    def test_other_variants_follow_their_own_overrides(self, catalog) -> None:
        r = catalog.recipe(V4)
        w8a8 = r.variants["ascend_w8a8"]
        assert "pip" not in hardware_install_block(r.data, w8a8, "ascend_910c")
        nvfp4 = r.variants["nvfp4"]
        assert "pip" not in hardware_install_block(r.data, nvfp4, "dgx_spark_gb10")
        assert "pip" in hardware_install_block(r.data, nvfp4, "b200")

    def test_page_default_install_tab(self, catalog) -> None:
        r = catalog.recipe(V4)
        state = build_state(catalog, r, PageRequest(hardware="ascend_950pr_8x"))
        assert state.install == "docker" and state.install_tabs == ("docker",)
        state = build_state(catalog, r, PageRequest(hardware="h200"))
        assert state.install == "pip"


def test_nightly_recipe_pulls_the_nightly_image(catalog) -> None:
    """json-api §5.3 + our fix: a nightly_required recipe's docker pull matches its renderings."""
    r = catalog.recipe(V41)
    block = install_block(r.data)
    assert list(block) == ["docker"]  # model.install.pip: false
    assert block["docker"]["command"] == "docker pull vllm/vllm-openai:nightly"
    assert block["docker"]["note"].startswith("Serve from the image for your GPU vendor")
    assert _render(catalog, V41, hw_id="b200", strategy="single_node_tp")["docker_image"] == "vllm/vllm-openai:nightly"
    assert install_block(catalog.recipe(V4).data)["docker"]["command"] == "docker pull vllm/vllm-openai:latest"


class TestConflicts:
    """extensions §2.7: text_only / encoder_parallel are mutually exclusive (built in)."""

    def test_cli_rejects_both(self) -> None:
        res = CliRunner().invoke(cli, ["command", V41, "--feature", "text_only", "--feature", "encoder_parallel"])
        assert res.exit_code == 2
        assert "text_only" in res.output and "encoder_parallel" in res.output
        assert "mutually exclusive" in res.output

    def test_turning_one_on_turns_the_other_off(self) -> None:
        res = CliRunner().invoke(cli, ["command", V41, "--feature", "text_only", "--format", "json"])
        assert res.exit_code == 0, res.output
        argv = json.loads(res.output)["argv"]
        assert "--language-model-only" in argv and "--mm-encoder-tp-mode" not in argv
        res = CliRunner().invoke(cli, ["command", V41, "--format", "json"])
        argv = json.loads(res.output)["argv"]
        assert "--language-model-only" not in argv and "--mm-encoder-tp-mode" in argv


class TestUnknownHardware:
    """synthesis §1.3 / §14 and extensions §2.8: an unknown id is an empty profile that matches nothing."""

    def test_engine_renders_an_empty_profile(self, catalog) -> None:
        obj = _render(catalog, V4, hw_id="tpu_v9", strategy="single_node_tep",
                      features=("tool_calling", "reasoning", "spec_decoding"))
        assert obj["argv"][3:] == [
            "--trust-remote-code", "--kv-cache-dtype", "fp8", "--block-size", "256",
            "--enable-expert-parallel", "--tensor-parallel-size", "1",
            "--tokenizer-mode", "deepseek_v4", "--tool-call-parser", "deepseek_v4", "--enable-auto-tool-choice",
            "--reasoning-parser", "deepseek_v4", "--reasoning-config",
            '{"reasoning_parser":"deepseek_v4","reasoning_start_str":"","reasoning_end_str":""}',
            "--speculative-config", '{"method":"dspark","num_speculative_tokens":7,"draft_sample_method":"probabilistic"}',
        ]
        assert obj["env"] == {"VLLM_USE_RUST_FRONTEND": "1"}
        assert obj["docker_image"] == "vllm/vllm-openai:v0.28.0"  # plain string: the NVIDIA brand key
        assert obj["docker_argv"][2:4] == ["--gpus", "all"]

    def test_selectors_match_nothing(self, catalog) -> None:
        r = catalog.recipe(V4)
        assert render_selection(catalog, r, "default", "single_node_tep", "tpu_v9", 1, []) is not None
        assert "tpu_v9" not in listed_hardware(catalog.hardware_profiles, r.variants["default"], r.data)

    def test_cli_refuses_it(self) -> None:
        res = CliRunner().invoke(cli, ["command", V4, "--hardware", "tpu_v9"])
        assert res.exit_code == 2
        assert "unknown hardware profile 'tpu_v9'" in res.output
        assert "h200" in res.output  # the valid choices are listed


PD_SEL = {"hw_id": "gb200", "strategy": "pd_cluster", "features": V41_FEATURES,
          "pd_nodes": {"prefill": 1, "decode": {"nodes": 2, "parallelism": "dep"}}}


class TestSmgRouter:
    """extensions §2.6 on V4.1 (which opts in with ``model.smg_grpc``)."""

    def test_pools_run_grpc_without_parsers(self, catalog) -> None:
        http = _render(catalog, V41, **PD_SEL)
        grpc = _render(catalog, V41, pd_router="smg-grpc", **PD_SEL)
        for role in ("prefill", "decode"):
            assert "--tool-call-parser" in http[role]["argv"] and "--reasoning-parser" in http[role]["argv"]
            argv = grpc[role]["argv"]
            assert not {"--reasoning-parser", "--reasoning-config", "--tool-call-parser",
                        "--enable-auto-tool-choice", "deepseek_v41"} & set(argv[6:])
            assert argv[3:6] == ["--grpc", "--tokenizer-mode", "deepseek_v41"]
            assert "--mm-encoder-tp-mode" in argv  # other feature args stay
            assert grpc[role]["env"] == http[role]["env"]

    def test_gateway_command(self, catalog) -> None:
        grpc = _render(catalog, V41, pd_router="smg-grpc", **PD_SEL)
        lines = grpc["router"]["command"].split(" \\\n    ")
        assert lines[1:] == [
            "--pd-disaggregation",
            "--prefill grpc://$PREFILL_NODE_1:8001",
            "--decode grpc://$DECODE_NODE_1:8002", "--decode grpc://$DECODE_NODE_2:8002",
            "--reasoning-parser deepseek_v41", "--tool-call-parser deepseek_v41",
            "--host $ROUTER_HOST", "--port $ROUTER_PORT",
        ]

    def test_default_router_unchanged(self, catalog) -> None:
        assert _render(catalog, V41, pd_router="vllm-router", **PD_SEL) == _render(catalog, V41, **PD_SEL)
        assert _render(catalog, V41, **PD_SEL)["router"]["command"].startswith("vllm-router --policy round_robin")

    def test_recipes_without_smg_grpc(self, catalog) -> None:
        sel = dict(PD_SEL, features=("tool_calling", "reasoning"), hw_id="b200")
        assert _render(catalog, V4, pd_router="smg-grpc", **sel) == _render(catalog, V4, **sel)
        res = CliRunner().invoke(cli, ["command", V4, "--strategy", "pd_cluster", "--router", "smg-grpc"])
        assert res.exit_code == 2 and "smg-grpc" in res.output
        res = CliRunner().invoke(cli, ["command", V41, "--strategy", "pd_cluster", "--router", "smg-grpc",
                                       "--hardware", "gb200"])
        assert res.exit_code == 0, res.output
        assert "--pd-disaggregation" in res.output and "--grpc" in res.output
