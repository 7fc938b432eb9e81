"""json-api.md section by section, on small catalogs written to tmp_path.

The taxonomy is trimmed to h100, h200, rtx_pro_6000 (1 GPU, 96 GB, not
scalable, restricted), rtx_5090 (32 GB, not scalable, restricted), mi300x (AMD)
and xeon6 (Intel, restricted); expectations are derived from the spec by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from api_helpers import PLAIN_HW, build, obj, recipe, write_dir

from vllm_recipes.api import tree as tree_mod
from vllm_recipes.api.build import ApiBuild, BuildCounts, FeatureModeError, build_api, summary_text
from vllm_recipes.catalog import load_catalog
from vllm_recipes.render.install import PIP_NIGHTLY

TAIL = [
    "  /models.json",
    "  /{hf_id}.json                                (e.g. /moonshotai/Kimi-K2.5.json)",
    "  /{hf_id}/strategies/{strategy}.json          (default-hw alternatives)",
    "  /{hf_id}/hw/{hw}.json                        (per-hardware rendering)",
    "  /{hf_id}/hw/{hw}/strategies/{strategy}.json  (per-(hw, strategy) alternatives)",
    "  /{variant_hf_id}.json                        (promoted variants, e.g. /zai-org/GLM-5.1-FP8.json)",
    "  /strategies.json",
    "  /kv_store.json",
    "  /kv_store/{id}.json                          (per-deployment spec)",
    "  /taxonomy.json",
    "  /platforms.json",
]


def _tree(api: ApiBuild, base: str) -> set[str]:
    return {p for p in api.files if p.startswith(base + "/")}


# --- §5.5 / §5.6 / §5.9 promotion and collisions ----------------------------------------------

def test_promotion_and_collisions(tmp_path: Path) -> None:
    variants = {
        "default": {"precision": "bf16", "vram_minimum_gb": 40, "description": "BF16"},
        "fp8": {"precision": "fp8", "vram_minimum_gb": 20, "model_id": "acme/Base-FP8", "description": "FP8"},
        "clash": {"precision": "bf16", "vram_minimum_gb": 40, "model_id": "acme/Other"},
        "self": {"precision": "bf16", "vram_minimum_gb": 40, "model_id": "acme/Base"},
        "local": {"precision": "int4", "vram_minimum_gb": 10, "model_id": "no-slash"},
    }
    root = write_dir(tmp_path / "c", {"acme/Base.yaml": recipe("acme/Base", variants=variants),
                                      "acme/Other.yaml": recipe("acme/Other")})
    api, warnings = build(root)
    assert warnings == [
        "  ⚠ skipping variant promotion: acme/Other (variant of acme/Base) collides with standalone recipe",
        "  ⚠ skipping variant promotion: acme/Base (variant of acme/Base) collides with standalone recipe",
    ]
    # 3 alternatives (multi_node_tp + 2 Mooncake) and 3 per-hw files per parent on h200/h100/mi300x
    assert api.summary.splitlines() == [
        "✓ JSON API: 2 models (2 with recommended_command, 6 default-hw alternatives, 6 per-hw renderings), "
        "1 promoted variants, 9 strategies, 2 kv-store deployments, 2 platforms (2 variant collisions skipped)",
        # the example paths name this build's models (issue #27 item 11), not the reference's
        *(line.replace("/moonshotai/Kimi-K2.5.json", "/acme/Base.json")
          .replace("/zai-org/GLM-5.1-FP8.json", "/acme/Base-FP8.json") for line in TAIL)]

    parent = obj(api, "acme/Base.json")
    assert list(parent["variants"]["fp8"])[-1] == "json"
    assert parent["variants"]["fp8"]["json"] == "/acme/Base-FP8.json"
    assert all("json" not in parent["variants"][k] for k in ("default", "clash", "self", "local"))
    assert not any(p.startswith("no-slash") for p in api.files)
    assert "derived_from" not in obj(api, "acme/Other.json")["meta"]  # the standalone recipe is untouched

    p = obj(api, "acme/Base-FP8.json")
    assert list(p) == ["hf_id", "meta", "recommended_command", "model", "features", "opt_in_features",
                       "variants", "hardware_overrides", "guide"]
    assert p["hf_id"] == "acme/Base-FP8"
    assert p["meta"] == {**parent["meta"], "derived_from": "acme/Base", "variant": "fp8"}
    assert p["model"] == {**parent["model"], "model_id": "acme/Base-FP8"}
    assert next(iter(p["model"])) == "model_id"  # kept in place
    assert p["variants"] == {"default": {"precision": "fp8", "vram_minimum_gb": 20, "description": "FP8"}}
    rc = p["recommended_command"]
    assert (rc["variant"], rc["hardware"], rc["strategy"]) == ("fp8", "h200", "single_node_tp")
    assert rc["argv"][:3] == ["vllm", "serve", "acme/Base-FP8"]  # the variant serves its own checkpoint
    assert rc["by_hardware"] == {hw: f"/acme/Base-FP8/hw/{hw}.json" for hw in PLAIN_HW}
    assert rc["alternatives"]["multi_node_tp"] == "/acme/Base-FP8/strategies/multi_node_tp.json"
    assert "acme/Base-FP8/hw/h100/strategies/multi_node_tp.json" in api.files

    assert obj(api, "models.json") == [
        {"hf_id": "acme/Base", "title": "Base", "provider": "acme", "url": "/acme/Base", "json": "/acme/Base.json"},
        {"hf_id": "acme/Other", "title": "Other", "provider": "acme", "url": "/acme/Other",
         "json": "/acme/Other.json"},
        {"hf_id": "acme/Base-FP8", "title": "Base", "provider": "acme", "url": "/acme/Base",
         "json": "/acme/Base-FP8.json", "derived_from": "acme/Base"},
    ]


def test_single_collision_and_model_id_replaced(tmp_path: Path) -> None:
    base = recipe("acme/Base", variants={
        "default": {"precision": "bf16", "vram_minimum_gb": 40},
        "clash": {"precision": "bf16", "vram_minimum_gb": 40, "model_id": "acme/Other"},
        "awq": {"precision": "int4", "vram_minimum_gb": 20, "model_id": "zed/Base-AWQ"},
    })
    root = write_dir(tmp_path / "c", {"acme/Base.yaml": base, "acme/Other.yaml": recipe("acme/Other")})
    api, _ = build(root)
    assert api.summary.splitlines()[0].endswith("2 platforms (1 variant collision skipped)")
    p = obj(api, "zed/Base-AWQ.json")
    # (a recipe without model.model_id fails validation and is skipped: decisions-hardening.md)
    assert list(p["model"]) == ["model_id", "min_vllm_version", "base_args", "base_env", "install"]
    assert p["model"]["model_id"] == "zed/Base-AWQ"


def test_two_variants_sharing_a_model_id(tmp_path: Path) -> None:
    # §5.9: both are promoted; the second render deletes the first's tree; its file wins
    variants = {
        "default": {"precision": "bf16", "vram_minimum_gb": 40},
        "a": {"precision": "bf16", "vram_minimum_gb": 40, "model_id": "acme/Shared"},
        "b": {"precision": "fp8", "vram_minimum_gb": 20, "model_id": "acme/Shared", "supported_hardware": ["h200"]},
    }
    root = write_dir(tmp_path / "c", {"acme/Multi.yaml": recipe("acme/Multi", variants=variants)})
    api, _ = build(root)
    parent = obj(api, "acme/Multi.json")
    assert parent["variants"]["a"]["json"] == parent["variants"]["b"]["json"] == "/acme/Shared.json"
    shared = obj(api, "acme/Shared.json")
    assert shared["meta"]["variant"] == "b"
    assert shared["recommended_command"]["by_hardware"] == {"h200": "/acme/Shared/hw/h200.json"}
    # variant a's per-hw files for h100/mi300x were removed by b's stale cleanup
    assert _tree(api, "acme/Shared") == {
        "acme/Shared/hw/h200.json", "acme/Shared/strategies/multi_node_tp.json",
        "acme/Shared/strategies/kv_store_centralized_mooncake.json",
        "acme/Shared/strategies/kv_store_distributed_mooncake.json"}
    index = obj(api, "models.json")
    assert [e["hf_id"] for e in index] == ["acme/Multi", "acme/Shared", "acme/Shared"]
    assert api.counts.promoted == 2


# --- §7.8 PD node picking ---------------------------------------------------------------------

def _pd(vram: int, **keys: Any) -> dict[str, Any]:
    return recipe("acme/PD", variants={"default": {"precision": "bf16", "vram_minimum_gb": vram}},
                  compatible_strategies=["single_node_tp", "multi_node_tp", "pd_cluster"], **keys)


def test_pd_colocated_when_both_roles_fit_one_node(tmp_path: Path) -> None:
    api, _ = build(write_dir(tmp_path / "c", {"acme/PD.yaml": _pd(100)}))
    pd = obj(api, "acme/PD/strategies/pd_cluster.json")
    assert (pd["deploy_type"], pd["node_count"]) == ("pd_cluster", 1)
    assert (pd["prefill"]["nodes"], pd["decode"]["nodes"]) == (0, 0)
    assert list(pd)[-5:] == ["prefill", "decode", "router", "router_config", "vllm_lint"]
    assert pd["prefill"]["docker_command"].count("-p 8001:8001") == 1
    assert pd["decode"]["docker_command"].count("-p 8002:8002") == 1


def test_pd_nodes_per_role(tmp_path: Path) -> None:
    # 2000 GB on h200 (1128 GB/node): ceil(2000/1128) = 2 nodes per role; on mi300x (1536): 2
    api, _ = build(write_dir(tmp_path / "c", {"acme/PD.yaml": _pd(2000)}))
    pd = obj(api, "acme/PD/strategies/pd_cluster.json")
    assert (pd["node_count"], pd["prefill"]["nodes"], pd["decode"]["nodes"]) == (1, 2, 2)
    # the variant does not fit one node and multi-node is offered: baseNodes 2, recommended multi_node_tp
    rc = obj(api, "acme/PD.json")["recommended_command"]
    assert (rc["strategy"], rc["node_count"], rc["deploy_type"]) == ("multi_node_tp", 2, "multi_node")
    assert rc["alternatives"]["single_node_tp"] == "/acme/PD/strategies/single_node_tp.json"
    assert obj(api, "acme/PD/strategies/single_node_tp.json")["node_count"] == 1


def test_pd_role_floor_from_the_pool_mode(tmp_path: Path) -> None:
    # prefill pool mode dep; strategy_min_gpus.multi_node_dep = 32 -> ceil(32/8) = 4 nodes
    data = _pd(2000, strategy_min_gpus={"multi_node_dep": 32},
               strategy_overrides={"pd_cluster": {"prefill": {"parallelism": "dep"}}})
    api, _ = build(write_dir(tmp_path / "c", {"acme/PD.yaml": data}))
    pd = obj(api, "acme/PD/strategies/pd_cluster.json")
    assert (pd["prefill"]["nodes"], pd["decode"]["nodes"]) == (4, 2)


def test_pd_skipped_beyond_four_nodes_per_role(tmp_path: Path) -> None:
    # 5000 GB: h200 needs ceil(5000/1128) = 5 > 4 nodes per role -> no PD; mi300x needs ceil(5000/1536) = 4
    api, _ = build(write_dir(tmp_path / "c", {"acme/PD.yaml": _pd(5000)}))
    assert "acme/PD/strategies/pd_cluster.json" not in api.files
    assert "pd_cluster" not in obj(api, "acme/PD.json")["recommended_command"]["alternatives"]
    pd = obj(api, "acme/PD/hw/mi300x/strategies/pd_cluster.json")
    assert (pd["prefill"]["nodes"], pd["decode"]["nodes"]) == (4, 4)


# --- §7.3 / §7.10 Mooncake alternatives -------------------------------------------------------

def test_mooncake_alternatives(tmp_path: Path) -> None:
    data = recipe("acme/Kv", meta={"title": "Kv", "hardware": {"xeon6": "verified"}},
                  kv_cache_strategy_hardware={"kv_store_distributed_mooncake": {"h100": "unsupported"}})
    big = recipe("acme/Big", variants={"default": {"precision": "bf16", "vram_minimum_gb": 2000}})
    api, _ = build(write_dir(tmp_path / "c", {"acme/Kv.yaml": data, "acme/Big.yaml": big}))
    kv = obj(api, "acme/Kv/strategies/kv_store_centralized_mooncake.json")
    assert (kv["strategy"], kv["deploy_type"], kv["serving_strategy"], kv["node_count"], kv["instances"]) == \
        ("kv_store_centralized_mooncake", "kv_store_lb", "single_node_tp", 1, kv["instances"])
    keys = list(kv)
    assert keys[:8] == ["hardware", "strategy", "variant", "node_count", "deploy_type", "env", "docker_image",
                        "frontend"]
    assert keys[8:11] == ["serving_strategy", "kv_min_vllm_version", "instances"]
    assert keys[-2:] == ["mooncake_config_note", "vllm_lint"]
    by_hw = obj(api, "acme/Kv.json")["recommended_command"]["by_hardware"]
    assert list(by_hw) == ["h200", "h100", "mi300x", "xeon6"]
    assert list(obj(api, "acme/Kv/hw/h100.json")["alternatives"]) == [
        "multi_node_tp", "kv_store_centralized_mooncake"]          # distributed: unsupported on h100
    assert list(obj(api, "acme/Kv/hw/mi300x.json")["alternatives"]) == [
        "multi_node_tp", "kv_store_centralized_mooncake", "kv_store_distributed_mooncake"]
    assert list(obj(api, "acme/Kv/hw/xeon6.json")["alternatives"]) == ["multi_node_tp"]  # Intel: no Mooncake
    # does not fit one node: instances are multi-node (serving strategy multi_node_tp, 2 nodes each)
    big_kv = obj(api, "acme/Big/strategies/kv_store_distributed_mooncake.json")
    assert (big_kv["serving_strategy"], big_kv["node_count"]) == ("multi_node_tp", 2)


# --- §7.1 non-scalable fallback, §6 step 3 restricted hardware ----------------------------------

def test_non_scalable_fallback_and_restricted_hardware(tmp_path: Path) -> None:
    data = recipe("acme/Fb", meta={"title": "Fb", "hardware": {"rtx_pro_6000": "verified", "rtx_5090": "verified"}},
                  variants={"default": {"precision": "bf16", "vram_minimum_gb": 120},
                            "fp8": {"precision": "fp8", "vram_minimum_gb": 60}})
    api, _ = build(write_dir(tmp_path / "c", {"acme/Fb.yaml": data, "acme/Plain.yaml": recipe("acme/Plain")}))
    rtx = obj(api, "acme/Fb/hw/rtx_pro_6000.json")
    assert (rtx["variant"], rtx["strategy"], rtx["node_count"]) == ("fp8", "single_node_tp", 1)
    assert "alternatives" not in rtx  # not scalable: no multi-node, no PD, no Mooncake
    assert not any(p.startswith("acme/Fb/hw/rtx_pro_6000/") for p in api.files)
    # rtx_5090 (32 GB): no variant fits -> dropped; undeclared restricted profiles never appear
    assert list(obj(api, "acme/Fb.json")["recommended_command"]["by_hardware"]) == [
        "h200", "h100", "rtx_pro_6000", "mi300x"]
    assert list(obj(api, "acme/Plain.json")["recommended_command"]["by_hardware"]) == PLAIN_HW


def test_declared_default_hardware_comes_first(tmp_path: Path) -> None:
    data = recipe("acme/Amd", meta={"title": "Amd", "default_hardware": "mi300x"})
    api, _ = build(write_dir(tmp_path / "c", {"acme/Amd.yaml": data}))
    rc = obj(api, "acme/Amd.json")["recommended_command"]
    assert rc["hardware"] == "mi300x"
    assert list(rc["by_hardware"]) == ["mi300x", "h100", "h200"]
    assert "acme/Amd/strategies/multi_node_tp.json" in api.files
    assert "acme/Amd/hw/h200/strategies/multi_node_tp.json" in api.files
    assert not any(p.startswith("acme/Amd/hw/mi300x/") for p in api.files)


# --- Appendix A GPU floors ----------------------------------------------------------------------

def test_gpu_floors(tmp_path: Path) -> None:
    floor = recipe("acme/Floor", strategy_min_gpus={"multi_node_tp": 24})
    single = recipe("acme/NoSingle", strategy_min_gpus={"single_node_tp": 16})
    api, _ = build(write_dir(tmp_path / "c", {"acme/Floor.yaml": floor, "acme/NoSingle.yaml": single}))
    # multi_node_tp: max(2, ceil(24 / 8)) = 3 nodes
    assert obj(api, "acme/Floor/strategies/multi_node_tp.json")["node_count"] == 3
    # single_node_tp unreachable (8 GPUs < 16): first non-kv, non-PD member of C, multi_node_tp at 2 nodes
    rc = obj(api, "acme/NoSingle.json")["recommended_command"]
    assert (rc["strategy"], rc["deploy_type"], rc["node_count"]) == ("multi_node_tp", "multi_node", 2)
    assert "single_node_tp" not in rc["alternatives"]
    assert list(rc)[-4:] == ["strategy_spec", "hardware_profile", "alternatives", "by_hardware"]


# --- §5.3 install, §5.7 deletions, §5.8 key order ------------------------------------------------

def test_install_synthesis_and_deletions(tmp_path: Path) -> None:
    nightly = recipe("acme/Night", dependencies=["pip install foo"], default_strategy="single_node_tp",
                     zzz_unknown={"kept": True}, kv_offload_support={"simple": "verified"})
    nightly["model"].update(min_vllm_version="0.30.0", nightly_required=True)
    tagged = recipe("acme/Tagged", dependencies=[])
    tagged["model"].update(docker_image={"cu129": "img:cu129", "cu130": "img:cu130"},
                           install={"pip": False, "docker": {"note": "from the tag"}})
    bare = recipe("acme/Bare")
    del bare["model"]
    api, _ = build(write_dir(tmp_path / "c", {"acme/Night.yaml": nightly, "acme/Tagged.yaml": tagged,
                                              "acme/Bare.yaml": bare}))
    night = obj(api, "acme/Night.json")
    assert list(night) == ["hf_id", "meta", "recommended_command", "model", "features", "opt_in_features",
                           "variants", "hardware_overrides", "guide", "zzz_unknown", "kv_offload_support"]
    assert night["model"]["install"] == {
        "pip": {"command": PIP_NIGHTLY, "note": "vLLM 0.30.0 isn't released yet — nightly required."},
        "docker": {"command": "docker pull vllm/vllm-openai:nightly"},  # decisions-api.md: reference says :latest
        "extras": ["pip install foo"],
    }
    assert list(night["model"])[-1] == "install"
    tag = obj(api, "acme/Tagged.json")
    assert tag["model"]["install"] == {"docker": {"command": "docker pull img:cu130", "note": "from the tag"}}
    assert "dependencies" not in tag
    # a recipe without its required model block fails validation: skipped, with the reason
    assert "acme/Bare.json" not in api.files
    assert any("skipping models/acme/Bare.yaml" in w for w in api.warnings)


# --- §1.3 dates, §1.4/§1.5 walk order and hf_id, §9 models.json -----------------------------------

def test_dates_are_utc_calendar_days(tmp_path: Path) -> None:
    text = """\
meta:
  title: Dated
  date_added: 2025-01-02T23:30:00-05:00
  date_updated: 2026-08-19
  quoted: "2024-05-06"
  naive: 2025-01-02 23:30:00
  history: [2025-03-04, {when: 2025-12-31T22:00:00-03:00}]
  tasks: [omni]
model:
  model_id: acme/Dated
variants:
  default: {precision: bf16}
"""
    api, _ = build(write_dir(tmp_path / "c", {"acme/Dated.yaml": text}))
    meta = obj(api, "acme/Dated.json")["meta"]
    assert meta["date_added"] == "2025-01-03"
    assert meta["date_updated"] == "2026-08-19"
    assert meta["quoted"] == "2024-05-06"
    assert meta["naive"] == "2025-01-02"
    assert meta["history"] == ["2025-03-04", {"when": "2026-01-01"}]


def test_walk_order_decides_models_json(tmp_path: Path) -> None:
    def omni(mid: str) -> dict[str, Any]:
        return recipe(mid, meta={"title": mid.split("/")[1], "tasks": ["omni"]})

    files = {rel: omni(hf) for rel, hf in [
        ("alpha/MiniMax-M2.yaml", "alpha/MiniMax-M2"), ("alpha/MiniMax-M2.1.yaml", "alpha/MiniMax-M2.1"),
        ("alpha/MiniMax-M2-Lite.yaml", "alpha/MiniMax-M2-Lite"), ("alpha/MiniMax-M2.5.yaml", "alpha/MiniMax-M2.5"),
        ("alpha/sub/Deep.yml", "alpha/Deep"), ("Zeta/Model.yaml", "Zeta/Model"), ("alpha/notes.txt", "x/y"),
    ]}
    files["alpha/notes.txt"] = "not a recipe"
    root = write_dir(tmp_path / "c", files)
    api, _ = build(root)
    assert [e["hf_id"] for e in obj(api, "models.json")] == [
        "Zeta/Model", "alpha/MiniMax-M2-Lite", "alpha/MiniMax-M2.1", "alpha/MiniMax-M2.5", "alpha/MiniMax-M2",
        "alpha/Deep"]
    deep = obj(api, "alpha/Deep.json")
    assert deep["hf_id"] == "alpha/Deep"
    assert "recommended_command" not in deep  # omni: no renderings (Appendix D.10)
    assert "install" in deep["model"]
    assert not any(p.startswith("alpha/Deep/") for p in api.files)
    assert api.counts.models == 6 and api.counts.with_recommended == 0


# --- §8.1 synthesis failures --------------------------------------------------------------------

def test_synthesis_failure_warns_per_render_and_drops_the_alternative(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tree_mod.resolve

    def flaky(catalog: Any, rec: Any, sel: Any) -> Any:
        if sel.strategy == "multi_node_tp":
            raise RuntimeError("boom")
        return real(catalog, rec, sel)

    monkeypatch.setattr(tree_mod, "resolve", flaky)
    data = recipe("acme/Flaky", variants={"default": {"precision": "bf16", "vram_minimum_gb": 40,
                                                       "model_id": "acme/Flaky-Alt"}})
    api, warnings = build(write_dir(tmp_path / "c", {"acme/Flaky.yaml": data}))
    line = "  ⚠ command synthesis failed for acme/Flaky / default / multi_node_tp: boom"
    assert warnings == [line] * 6  # 3 hardware x (parent tree + promoted tree of the same variant)
    assert "multi_node_tp" not in obj(api, "acme/Flaky.json")["recommended_command"]["alternatives"]
    assert "acme/Flaky/strategies/multi_node_tp.json" not in api.files


def test_failed_default_hardware_means_no_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tree_mod.resolve

    def broken_on_h200(catalog: Any, rec: Any, sel: Any) -> Any:
        if sel.hw_id == "h200":
            raise ValueError("no h200")
        return real(catalog, rec, sel)

    monkeypatch.setattr(tree_mod, "resolve", broken_on_h200)
    api, warnings = build(write_dir(tmp_path / "c", {"acme/X.yaml": recipe("acme/X")}))
    assert warnings == ["  ⚠ command synthesis failed for acme/X / default / single_node_tp: no h200"]
    assert "recommended_command" not in obj(api, "acme/X.json")
    assert not any(p.startswith("acme/X/") for p in api.files)
    assert api.summary.startswith("✓ JSON API: 1 models (0 with recommended_command, 0 default-hw alternatives, "
                                  "0 per-hw renderings)")


# --- §10.1 console line, §10.2 feature-mode validation ------------------------------------------

def test_summary_text_exact() -> None:
    c = BuildCounts(models=173, with_recommended=148, alternatives=729, per_hardware=1392, promoted=159,
                    strategies=9, kv_stores=2, platforms=2, collisions=6)
    text = summary_text(c)
    assert text.splitlines() == [
        "✓ JSON API: 173 models (148 with recommended_command, 729 default-hw alternatives, 1392 per-hw "
        "renderings), 159 promoted variants, 9 strategies, 2 kv-store deployments, 2 platforms "
        "(6 variant collisions skipped)", *TAIL]
    assert not text.endswith("\n")
    c.collisions = 0
    assert summary_text(c).splitlines()[0].endswith("2 platforms")


def test_feature_mode_validation_error(tmp_path: Path) -> None:
    bad = recipe("acme/Bad", features={
        "spec": {"args": [], "modes": {"mtp": {"args": "--x"}}},
        "empty": {"modes": {}},
    })
    root = write_dir(tmp_path / "c", {"acme/Bad.yaml": bad, "acme/Good.yaml": recipe("acme/Good")})
    with pytest.raises(FeatureModeError) as err:
        build_api(load_catalog(root), jobs=1)
    assert str(err.value) == (
        "Invalid feature modes in models/acme/Bad.yaml:\n"
        "  - features.spec cannot declare both args and modes\n"
        "  - features.spec.modes.mtp.args must be an array\n"
        "  - features.empty.modes must be a non-empty map")


# --- hook: extra recipe keys (translations) -----------------------------------------------------

def test_extra_recipe_keys_hook(tmp_path: Path) -> None:
    data = recipe("acme/T", variants={"default": {"precision": "bf16", "vram_minimum_gb": 40},
                                      "fp8": {"precision": "fp8", "vram_minimum_gb": 20, "model_id": "acme/T-FP8"}})
    root = write_dir(tmp_path / "c", {"acme/T.yaml": data, "acme/U.yaml": recipe("acme/U")})

    def hook(rec: Any) -> dict[str, Any] | None:
        if rec.hf_id == "acme/T":
            return {"translations": {"zh": {"path": "/acme/T?lang=zh", "stale": False}}}
        return None

    api, _ = build(root, extra_recipe_keys=hook)
    for path in ("acme/T.json", "acme/T-FP8.json"):
        t = obj(api, path)
        assert list(t)[-1] == "translations"
        assert t["translations"] == {"zh": {"path": "/acme/T?lang=zh", "stale": False}}
    assert "translations" not in obj(api, "acme/U.json")


# --- §4.5 quickstart ----------------------------------------------------------------------------

def test_quickstart_files(tmp_path: Path) -> None:
    root = write_dir(tmp_path / "c", {"acme/T.yaml": recipe("acme/T")})
    (root / "quickstart").mkdir()
    (root / "quickstart" / "b.yaml").write_text("hardware_profile: h200\nsteps: [one]\nwhen: 2025-01-02\n")
    (root / "quickstart" / "a.yaml").write_text("steps: [two]\n")
    (root / "quickstart" / "c.yml").write_text("hardware_profile: ignored\n")  # only .yaml
    api, _ = build(root)
    assert obj(api, "quickstart/h200.json") == {"hardware_profile": "h200", "steps": ["one"], "when": "2025-01-02"}
    assert obj(api, "quickstart/undefined.json") == {"steps": ["two"]}  # JS writes `undefined`
    assert not any(p.startswith("quickstart/ignored") for p in api.files)
    assert list(api.files)[-3:] == ["models.json", "quickstart/undefined.json", "quickstart/h200.json"]


def test_yaml_recommended_command_survives_when_nothing_renders(tmp_path: Path) -> None:
    # Appendix D.8: an omni recipe renders nothing, so a recommended_command key in the YAML stays
    data = recipe("acme/Omni", meta={"title": "Omni", "tasks": ["omni"]}, recommended_command={"note": "see guide"})
    api, _ = build(write_dir(tmp_path / "c", {"acme/Omni.yaml": data}))
    out = obj(api, "acme/Omni.json")
    assert list(out)[:3] == ["hf_id", "meta", "recommended_command"]
    assert out["recommended_command"] == {"note": "see guide"}
    assert api.counts.with_recommended == 1 and api.counts.per_hardware == 0
