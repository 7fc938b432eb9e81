"""``fit`` and ``perf`` name their GPUs by the rule ``/api/fit`` and the MCP ``fit`` tool use
(``service.fit.fit_target``): one copy, its refusals spelled for each reader. Before, the CLI kept its own
copy, and ``--gpus`` alone said "--gpus needs --gpu-memory GB or --gpu NAME." where the API said
"Parameter 'gpus' needs gpu_memory or gpu."."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result

from vllm_recipes.catalog import Catalog
from vllm_recipes.cli.fit_cmds import target_from_options
from vllm_recipes.fit.hardware import DetectedGpu, detected_target
from vllm_recipes.service import Query, QueryError
from vllm_recipes.service.fit import fit_answer, fit_target

V4 = "deepseek-ai/DeepSeek-V4-Flash"


def _target(label: str, gib: float, gpus: int, profile: str | None, custom: bool, source: str,
            *notes: str) -> dict[str, Any]:
    return {"label": label, "gpu_memory_gib": gib, "gpus_per_node": gpus, "profile": profile, "custom": custom,
            "source": source, "notes": list(notes)}


@pytest.mark.parametrize(("gpu", "gpu_memory", "gpus", "expected"), [
    ("H100", None, 4, _target("Custom: 4x H100 (80 GB each)", 79.2, 4, "h100", True, "--gpu",
                              "custom profile based on h100 with 4 GPUs")),
    ("RTX 4090", None, None, _target("Custom: 1x RTX 4090 (24 GB each)", 23.52, 1, "rtx_4090_2x", True, "--gpu",
                                     "custom profile based on rtx_4090_2x with 1 GPU; give --gpus N for more")),
    ("RTX 4090", 24.0, 2, _target("RTX 4090 (2x 24 GB)", 23.52, 2, "rtx_4090_2x", False, "--gpu")),
    (None, 16.0, 2, _target("Custom: 2x GPU (16 GB each)", 16.0, 2, None, True, "--gpu-memory")),
    (None, 24.0, None, _target("Custom: 1x GPU (24 GB each)", 24.0, 1, None, True, "--gpu-memory")),
    (None, None, None, None),
])
def test_the_cli_names_the_gpus_the_site_does(catalog: Catalog, gpu: str | None, gpu_memory: float | None,
                                              gpus: int | None, expected: dict[str, Any] | None) -> None:
    """The targets written out (they are the CLI's before the two copies became one), for both readers."""
    kw: dict[str, Any] = {"gpu": gpu, "gpu_memory": gpu_memory, "gpus": gpus, "hardware": None}
    for target in (target_from_options(catalog, kw), fit_target(catalog, gpu, gpu_memory, gpus)):
        assert (target and target.to_dict()) == expected


@pytest.mark.parametrize("command", [["fit"], ["fit", V4], ["perf", V4, "--isl", "1000", "--osl", "100"]])
def test_gpus_alone_is_refused_in_the_cli_spelling(run_cli: Callable[..., Result], command: list[str]) -> None:
    res = run_cli(*command, "--gpus", "2")
    assert res.exit_code == 2
    assert res.stderr == "Error: --gpus needs --gpu-memory (GB per GPU) or --gpu (a GPU name).\n"


def test_gpus_alone_is_refused_in_the_api_spelling(catalog: Catalog) -> None:
    with pytest.raises(QueryError) as err:
        fit_answer(catalog, Query(V4), gpus=2)
    assert err.value.to_dict() == {"error": "gpus needs gpu_memory (GB per GPU) or gpu (a GPU name).",
                                   "param": "gpus", "choices": []}


def test_an_unknown_gpu_suggests_the_closest_names(run_cli: Callable[..., Result], catalog: Catalog) -> None:
    res = run_cli("fit", V4, "--gpu", "RTX 5900")
    assert res.exit_code == 2
    assert res.stderr == ("Error: Unknown GPU 'RTX 5900'; give its memory with --gpu-memory GB. "
                          "Did you mean: RTX 5090, RTX 5080, RTX 4090, RTX 4080, RTX 3090?\n")
    with pytest.raises(QueryError) as err:
        fit_target(catalog, "RTX 5900", None, None)
    assert str(err.value) == ("unknown GPU 'RTX 5900'; give its memory with --gpu-memory GB. "
                              "Valid choices: RTX 5090, RTX 5080, RTX 4090, RTX 4080, RTX 3090.")


@pytest.mark.parametrize(("gpus", "expected"), [
    (None, _target("Custom: 1x H100 (40 GB each)", 40.0, 1, "h100", True, "--gpu-memory",
                   "custom profile based on h100 (80 GB per GPU) with 40 GB each")),
    (8, _target("Custom: 8x H100 (70 GB each)", 70.0, 8, "h100", True, "--gpu-memory",
                "custom profile based on h100 (80 GB per GPU) with 70 GB each")),
])
def test_a_catalog_gpu_at_another_memory_is_planned_at_that_memory(run_cli: Callable[..., Result],
                                                                    gpus: int | None, expected: dict) -> None:
    """``--gpu H100 --gpu-memory 40`` (a MIG slice, memory held back) was refused as "Unknown GPU 'H100'; give
    its memory with --gpu-memory GB" although the memory was given: only a memory within 10% of the
    profile's matched it."""
    memory = str(int(expected["gpu_memory_gib"]))
    res = run_cli("fit", V4, "--gpu", "H100", "--gpu-memory", memory, *(["--gpus", str(gpus)] if gpus else []),
                  "--json")
    assert res.exit_code != 2, res.output  # planned (1: it does not start there), not refused
    assert json.loads(res.stdout)["hardware"] == expected


def test_a_custom_target_keeps_the_whole_profile_name(run_cli: Callable[..., Result]) -> None:
    """The label was cut at its first " (": "Custom: 1x DGX Station (200 GB each)" for DGX Station (GB300)."""
    res = run_cli("fit", "deepseek-ai/DeepSeek-V4.1-Flash", "--hardware", "dgx_station_gb300", "--gpu-memory", "200",
                  "--json")
    assert res.exit_code != 2, res.output
    assert json.loads(res.stdout)["hardware"]["label"] == "Custom: 1x DGX Station (GB300) (200 GB each)"


@pytest.mark.parametrize(("gpu", "memory", "label"), [("H100 NVL", "94", "Custom: 1x H100 NVL (94 GB each)"),
                                                      ("L4", "24", "Custom: 1x L4 (24 GB each)"),
                                                      ("GH200", "96", "Custom: 1x GH200 (96 GB each)")])
def test_a_gpu_whose_name_contains_a_profiles_is_not_planned_as_that_profile(
        run_cli: Callable[..., Result], gpu: str, memory: str, label: str) -> None:
    """Only a profile of that very name is planned at another memory ("H100 NVL" is not an H100)."""
    res = run_cli("fit", V4, "--gpu", gpu, "--gpu-memory", memory, "--json")
    assert res.exit_code != 2, res.output
    assert json.loads(res.stdout)["hardware"]["label"] == label


@pytest.mark.parametrize(("gpu", "label", "profile"), [
    ("GB200", "Custom: 1x GB200 (192 GB each)", "gb200"),  # was B200 (180 GB): "b200" is in "gb200"
    ("B300", "Custom: 1x B300 (268 GB each)", "b300"),  # was the DGX Station (GB300)
    ("GB300", "Custom: 1x GB300 (288 GB each)", "gb300"),  # was the DGX Station (GB300)
    ("L4", "Custom: 1x L4 (24 GB each)", None),  # was GB200 NVL4 (192 GB): "l4" is in "gb200nvl4"
    ("H20", "Custom: 1x H20 (96 GB each)", None),  # was H200 (141 GB)
    ("GH200", "Custom: 1x GH200 (96 GB each)", None),  # was H200 (141 GB)
    ("H100 NVL", "Custom: 1x H100 NVL (94 GB each)", None),  # was H100 (80 GB)
    ("NVIDIA H100 80GB HBM3", "Custom: 1x NVIDIA H100 80GB HBM3 (80 GB each)", "h100"),  # nvidia-smi's name
])
def test_a_gpu_name_means_that_gpu_before_any_name_containing_it(catalog: Catalog, gpu: str, label: str,
                                                                 profile: str | None) -> None:
    target = fit_target(catalog, gpu, None, None)
    assert target is not None
    assert (target.label, target.profile_id) == (label, profile)


def test_a_known_gpus_label_says_the_memory_it_is_planned_at(catalog: Catalog) -> None:
    """``--gpu A100 --gpu-memory 40`` was labelled "(80 GB each)" and planned at 40 GB."""
    target = fit_target(catalog, "A100", 40, None)
    assert target is not None
    assert target.label == "Custom: 1x A100 (40 GB each)"


@pytest.mark.parametrize(("gpu", "gpus", "profile", "custom"), [
    ("RTX Pro 6000", 8, "rtx_pro_6000_8x", False),  # a profile of 8 of that GPU is named after it too
    ("RTX Pro 6000", None, "rtx_pro_6000", False),
    ("RTX Pro 6000 8x", None, "rtx_pro_6000", False),  # one GPU unless --gpus says more
    ("rtx_5090_2x", None, "rtx_5090", False),
])
def test_a_profile_of_several_gpus_is_named_after_its_gpu(catalog: Catalog, gpu: str, gpus: int | None,
                                                          profile: str, custom: bool) -> None:
    target = fit_target(catalog, gpu, None, gpus)
    assert target is not None
    assert (target.profile_id, target.custom) == (profile, custom)


@pytest.mark.parametrize(("name", "mib", "count", "profile"), [
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, 8, "rtx_pro_6000_8x"),
    ("NVIDIA GB200", 189471, 1, "gb200"),  # was the B200 profile: "b200" is in "gb200"
    ("NVIDIA GB200", 189471, 4, "gb200"),
    ("NVIDIA H100 80GB HBM3", 81559, 8, "h100"),
])
def test_detected_gpus_take_the_profile_of_their_name(catalog: Catalog, name: str, mib: int, count: int,
                                                      profile: str) -> None:
    target = detected_target(catalog.hardware_profiles, [DetectedGpu(name, mib, "NVIDIA")] * count, "nvidia-smi")
    assert target.profile_id == profile
