"""GPU detection parsers on recorded tool outputs, catalog matching, and named / custom GPUs."""

from __future__ import annotations

import pytest

from vllm_recipes.catalog import Catalog
from vllm_recipes.fit.hardware import (
    DetectionError,
    HardwareError,
    custom_target,
    detected_target,
    named_target,
    parse_amd_smi,
    parse_npu_smi,
    parse_nvidia_smi,
    parse_rocm_smi,
    reported_gib,
)
from vllm_recipes.fit.probe import NoGpuTool, detect_gpus


def test_nvidia_smi_maps_to_the_catalog_profile(smi: dict[str, str], catalog: Catalog) -> None:
    gpus = parse_nvidia_smi(smi["nvidia_8xh100.csv"])
    assert len(gpus) == 8 and gpus[0].memory_mib == 81559
    t = detected_target(catalog.hardware_profiles, gpus, "nvidia-smi")
    assert (t.profile_id, t.custom, t.gpus_per_node) == ("h100", False, 8)
    assert t.gpu_gib == pytest.approx(79.65, abs=0.01)  # the real size, not the nominal 80


def test_two_5090s_map_to_the_two_card_profile(smi: dict[str, str], catalog: Catalog) -> None:
    t = detected_target(catalog.hardware_profiles, parse_nvidia_smi(smi["nvidia_2x5090.csv"]), "nvidia-smi")
    assert t.profile_id == "rtx_5090_2x" and not t.custom


def test_mixed_gpus_are_a_custom_profile_sized_by_the_smallest(smi: dict[str, str], catalog: Catalog) -> None:
    t = detected_target(catalog.hardware_profiles, parse_nvidia_smi(smi["nvidia_mixed.csv"]), "nvidia-smi")
    assert t.custom and t.gpus_per_node == 2 and t.profile_id is None
    assert t.gpu_gib == pytest.approx(24564 / 1024)
    assert "mixed GPUs" in t.notes[0]


def test_no_gpus_and_garbage(smi: dict[str, str], catalog: Catalog) -> None:
    assert parse_nvidia_smi(smi["nvidia_none.csv"]) == []
    with pytest.raises(HardwareError, match="found no GPUs"):
        detected_target(catalog.hardware_profiles, [], "nvidia-smi")
    with pytest.raises(DetectionError, match="nvidia-smi"):
        parse_nvidia_smi(smi["nvidia_garbage.csv"])
    with pytest.raises(DetectionError, match="not a number"):
        parse_nvidia_smi("NVIDIA H100, lots\n")
    for parser in (parse_rocm_smi, parse_amd_smi):
        with pytest.raises(DetectionError, match="not JSON"):
            parser("<html>error</html>")
    with pytest.raises(DetectionError, match="VRAM"):
        parse_rocm_smi('{"card0": {"Card Series": "MI300X"}}')
    with pytest.raises(DetectionError, match="npu-smi"):
        parse_npu_smi("command not found")


def test_rocm_smi(smi: dict[str, str], catalog: Catalog) -> None:
    gpus = parse_rocm_smi(smi["rocm_mi300x.json"])
    assert [g.name for g in gpus] == ["AMD Instinct MI300X"] * 2
    assert gpus[0].memory_mib == 206141652992 / 2**20
    t = detected_target(catalog.hardware_profiles, gpus, "rocm-smi")
    assert t.profile_id == "mi300x" and t.custom and t.gpus_per_node == 2  # a 2-GPU box of the 8-GPU profile


def test_amd_smi_both_size_forms(smi: dict[str, str]) -> None:
    gpus = parse_amd_smi(smi["amd_smi_mi355x.json"])
    assert [g.memory_mib for g in gpus] == [294896, 294896]
    assert gpus[0].name == "AMD Instinct MI355X"


def test_npu_smi_table(smi: dict[str, str]) -> None:
    gpus = parse_npu_smi(smi["npu_910b.txt"])
    assert [(g.name, g.memory_mib) for g in gpus] == [("Ascend 910B3", 65536.0)] * 2


def test_probe_runs_the_first_tool_found(smi: dict[str, str]) -> None:
    tool, gpus = detect_gpus(which=lambda t: "/x/" + t if t == "rocm-smi" else None,
                             run=lambda argv: smi["rocm_mi300x.json"])
    assert tool == "rocm-smi" and len(gpus) == 2
    with pytest.raises(NoGpuTool):
        detect_gpus(which=lambda t: None)


def test_named_gpus(catalog: Catalog) -> None:
    profiles = catalog.hardware_profiles
    assert named_target(profiles, "RTX 5090", None).profile_id == "rtx_5090"
    assert named_target(profiles, "rtx 5090", 2).profile_id == "rtx_5090_2x"
    t = named_target(profiles, "RTX 5090", 4)
    assert t.custom and t.gpus_per_node == 4 and t.gpu_gib == 31.36  # what CUDA reports for a 32 GB card
    a100 = named_target(profiles, "A100 80GB", 8)
    assert a100.custom and a100.gpu_gib == 79.2 and a100.label.startswith("Custom:")  # "80 GB" is 79.2 GiB in CUDA


def test_a_named_gpu_without_a_count_is_one_gpu_said_so(catalog: Catalog) -> None:
    """The catalog's only RTX 4090 profile has 2 GPUs: ``--gpu "RTX 4090"`` alone is one card, never a silent 2."""
    t = named_target(catalog.hardware_profiles, "RTX 4090", None)
    assert t.gpus_per_node == 1 and t.custom and "--gpus N" in t.notes[0]
    assert named_target(catalog.hardware_profiles, "RTX 4090", 2).gpus_per_node == 2


def test_reported_memory_is_what_cuda_reports() -> None:
    """vLLM requests total x utilization of what CUDA reports: an 80 GB H100 is ~79.2 GiB, an L40S 44.4,
    an A10 or L4 ~22."""
    assert reported_gib("H100", 80) == 79.2
    assert reported_gib("L40S", 48) == 44.4
    assert reported_gib("NVIDIA A10", 24) == pytest.approx(22, abs=0.1)
    assert reported_gib("L4", 24) == pytest.approx(22, abs=0.1)
    assert reported_gib("A100 80GB", 80) == 79.2


def test_unknown_gpu_names_suggest_close_matches(catalog: Catalog) -> None:
    with pytest.raises(HardwareError) as err:
        named_target(catalog.hardware_profiles, "RTX 5900", 2)
    assert "RTX 5090" in err.value.choices
    with pytest.raises(HardwareError) as err:
        named_target(catalog.hardware_profiles, "H201", 8)
    assert "H200" in err.value.choices


def test_custom_target_is_marked() -> None:
    t = custom_target(32, 2)
    assert t.custom and t.label == "Custom: 2x GPU (32 GB each)" and t.to_dict()["custom"] is True
    with pytest.raises(HardwareError):
        custom_target(0, 2)
