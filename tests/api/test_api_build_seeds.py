"""The JSON API of the bundled catalog: golden files, plus the seed-era parts derived by hand.

Every file under ``tests/golden/expected/`` (reference output, json-api.md §2
layout) must equal our build after both sides lose the keys the reference does
not write or that are ours to word (expected/README.md): ``frontend``,
``strategy_spec``, ``hardware_profile``, the Mooncake prose fields, and our
per-hardware ``install`` (extensions §2.5).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from api_helpers import dump

from seed_goldens import expected_renderings, one_gpu_default_path
from vllm_recipes.api.build import ApiBuild, build_api, summary_text
from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.render.install import PIP_DEFAULT

#: The project's own golden files (tests/golden/expected, README inside).
EXPECTED = Path(__file__).resolve().parents[1] / "golden" / "expected"
assert EXPECTED.is_dir(), f"golden files missing: {EXPECTED}"

V4 = "deepseek-ai/DeepSeek-V4-Flash"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
DROPPED_TOP = ("frontend", "strategy_spec", "hardware_profile", "mooncake_config_note", "vllm_lint")
DROPPED_NESTED = {"master": ("description",), "store": ("description", "note")}


@pytest.fixture(scope="module")
def bundled() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def api(bundled: Catalog) -> ApiBuild:
    return build_api(bundled, jobs=1)


def _obj(api: ApiBuild, path: str) -> Any:
    return json.loads(api.files[path])


def _strip(obj: dict[str, Any], per_hw: bool) -> dict[str, Any]:
    out = {}
    for k, v in obj.items():
        if k in DROPPED_TOP or (per_hw and k == "install"):
            continue
        if k in DROPPED_NESTED and isinstance(v, dict):
            v = {kk: vv for kk, vv in v.items() if kk not in DROPPED_NESTED[k]}
        out[k] = v
    return out


def _expected_files() -> list[str]:
    return sorted(p.relative_to(EXPECTED).as_posix() for p in EXPECTED.rglob("*.json"))


def test_every_golden_file_matches(api: ApiBuild) -> None:
    files = _expected_files()
    assert len(files) == 411
    mismatched = []
    wanted = expected_renderings(EXPECTED)
    for rel in files:
        raw = (EXPECTED / rel).read_bytes()
        assert dump(json.loads(raw)) == raw, f"{rel}: golden file not in reference format"
        ours = one_gpu_default_path(rel)
        assert ours in api.files, f"missing {ours}"
        per_hw = "/hw/" in ours and "/strategies/" not in ours
        if dump(_strip(_obj(api, ours), per_hw)) != dump(_strip(wanted[ours], per_hw)):
            mismatched.append(rel)
    assert mismatched == []


def test_tree_files_are_the_golden_ones_plus_the_gb300_station(api: ApiBuild) -> None:
    trees = {p for p in api.files if p.count("/") >= 3}
    assert trees == set(expected_renderings(EXPECTED)) | {f"{V41}/hw/dgx_station_gb300.json"}


def test_v41_renderings_use_the_rust_frontend(api: ApiBuild) -> None:
    paths = [p for p in api.files if p.startswith(f"{V41}/")]
    assert len(paths) > 80
    for p in paths:
        o = _obj(api, p)
        keys = list(o)
        assert o["frontend"] == "rust", p
        assert keys[keys.index("docker_image") + 1] == "frontend", p  # right after the §8.2 head
    rc = _obj(api, f"{V41}.json")["recommended_command"]
    assert rc["frontend"] == "rust"
    assert rc["env"]["VLLM_USE_RUST_FRONTEND"] == "1"


def test_v41_renders_on_the_gb300_station_with_its_resident_budget(api: ApiBuild) -> None:
    # extensions §2.4: 244 GB resident budget on a 252 GB single-GPU box -> single node, TP 1
    station = _obj(api, f"{V41}/hw/dgx_station_gb300.json")
    assert station["hardware"] == "dgx_station_gb300"
    assert station["deploy_type"] == "single_node"
    argv = station["argv"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "1"
    assert "--tensor-parallel-size 1" in station["command"]
    assert "alternatives" not in station  # not scalable: no multi-node, no PD, no Mooncake
    by_hw = _obj(api, f"{V41}.json")["recommended_command"]["by_hardware"]
    assert by_hw["dgx_station_gb300"] == f"/{V41}/hw/dgx_station_gb300.json"


def test_nightly_recipe_pulls_the_nightly_image(api: ApiBuild) -> None:
    # decisions-api.md "nightly docker pull": the reference prints :latest here
    install = _obj(api, f"{V41}.json")["model"]["install"]
    assert list(install) == ["docker"]  # model.install.pip: false
    assert install["docker"]["command"] == "docker pull vllm/vllm-openai:nightly"
    v4 = _obj(api, f"{V4}.json")["model"]["install"]
    assert v4["pip"] == {"command": PIP_DEFAULT}
    assert v4["docker"] == {"command": "docker pull vllm/vllm-openai:latest"}


def test_per_hardware_install_where_a_variant_overrides_it(api: ApiBuild) -> None:
    # variants.default.hardware_overrides.dgx_spark_gb10.install: {pip: false}
    for base in (V4, "deepseek-ai/DeepSeek-V4-Flash-0731"):
        spark = _obj(api, f"{base}/hw/dgx_spark_gb10.json")
        assert list(spark)[-1] == "install"
        # the pull follows the image this hardware's rendering runs (docs/decisions.md)
        assert spark["docker_image"] == "eugr/spark-vllm-b12x:latest"
        assert spark["install"] == {"docker": {"command": "docker pull eugr/spark-vllm-b12x:latest"}}
        assert "install" not in _obj(api, f"{base}/hw/h200.json")
        assert "install" not in _obj(api, f"{base}/hw/dgx_spark_gb10/strategies/single_node_tp.json")
    # the recipe's recommended_command copies the default hw's file (h200: no override)
    assert "install" not in _obj(api, f"{V4}.json")["recommended_command"]


def test_parent_and_promoted_files(api: ApiBuild) -> None:
    parent = _obj(api, f"{V4}.json")
    assert list(parent)[:3] == ["hf_id", "meta", "recommended_command"]
    for gone in ("strategy_overrides", "compatible_strategies", "default_strategy", "dependencies"):
        assert gone not in parent
    promoted = {vk: v["json"] for vk, v in parent["variants"].items() if "json" in v}
    assert promoted == {
        "default": "/deepseek-ai/DeepSeek-V4-Flash-0731.json",
        "nvfp4": "/nvidia/DeepSeek-V4-Flash-NVFP4.json",
        "redhat_nvfp4": "/RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8.json",
        "dspark": "/deepseek-ai/DeepSeek-V4-Flash-DSpark.json",
        "ascend_w8a8": "/Eco-Tech/DeepSeek-V4-Flash-w8a8-mtp.json",
    }
    for vk, ptr in promoted.items():
        assert list(parent["variants"][vk])[-1] == "json"
        mid = ptr[1:-5]
        p = _obj(api, f"{mid}.json")
        assert p["hf_id"] == mid
        assert list(p["meta"])[-2:] == ["derived_from", "variant"]
        assert (p["meta"]["derived_from"], p["meta"]["variant"]) == (V4, vk)
        assert p["model"]["model_id"] == mid
        assert list(p["variants"]) == ["default"]
        assert "model_id" not in p["variants"]["default"] and "json" not in p["variants"]["default"]
        assert p["recommended_command"]["variant"] == vk
        assert all(u.startswith(f"/{mid}/hw/") for u in p["recommended_command"]["by_hardware"].values())
    index = _obj(api, "models.json")
    assert [e["hf_id"] for e in index] == [V4, V41] + [ptr[1:-5] for ptr in promoted.values()]
    assert index[0] == {"hf_id": V4, "title": parent["meta"]["title"], "provider": parent["meta"]["provider"],
                        "url": f"/{V4}", "json": f"/{V4}.json"}
    assert index[2]["derived_from"] == V4 and index[2]["url"] == f"/{V4}"


def test_console_summary(api: ApiBuild, bundled: Catalog) -> None:
    # counts from the golden layout: default-hw alternatives and per-hw files of the two parents
    alts = sum(len(list((EXPECTED / p / "strategies").glob("*.json"))) for p in (V4, V41))
    per_hw = sum(len(list((EXPECTED / p / "hw").glob("*.json"))) for p in (V4, V41)) + 1  # + gb300 station
    platforms = len(bundled.platforms["platforms"])
    assert api.summary.splitlines()[0] == (
        f"✓ JSON API: 2 models (2 with recommended_command, {alts} default-hw alternatives, "
        f"{per_hw} per-hw renderings), 5 promoted variants, 9 strategies, 2 kv-store deployments, "
        f"{platforms} platforms")
    assert api.summary == summary_text(api.counts)
    assert len(api.summary.splitlines()) == 12


def test_static_files_verbatim(api: ApiBuild, bundled: Catalog) -> None:
    assert api.files["taxonomy.json"] == dump(bundled.taxonomy)
    assert api.files["platforms.json"] == dump(bundled.platforms)
    assert list(_obj(api, "strategies.json")) == [
        "multi_node_dep", "multi_node_tep", "multi_node_tp", "multi_node_tp_dp", "multi_node_tp_pp",
        "pd_cluster", "single_node_dep", "single_node_tep", "single_node_tp"]
    assert list(_obj(api, "kv_store.json")) == ["kv_store_centralized_mooncake", "kv_store_distributed_mooncake"]
    for name, spec in bundled.strategies.items():
        folder = "kv_store" if name.startswith("kv_store_") else "strategies"
        assert api.files[f"{folder}/{name}.json"] == dump(spec)
    assert not any(p.startswith("quickstart/") for p in api.files)


def test_file_format(api: ApiBuild) -> None:
    for path, data in api.files.items():
        assert not data.endswith(b"\n"), path
        assert b"\\u" not in data or b"\\u00" in data, path  # only control characters are escaped
        assert dump(json.loads(data)) == data, path


def test_parallel_build_is_identical(bundled: Catalog, api: ApiBuild) -> None:
    assert build_api(bundled, jobs=2).files == api.files
