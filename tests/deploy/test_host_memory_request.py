"""A pod asks the scheduler for the host memory its flags will fill.

DeepSeek-V4.1-Flash on 8xH100 moves its Engram tables (188.8 GiB, the recipe's
``architecture_facts.host_tables``) to pinned host memory with
``--engram-config '{"cpu_offload":true}'``. A request that leaves them out lets
the pod land on a node without that memory and be evicted under pressure.
Loaded recipes hold lists as tuples: the table must be read from either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from vllm_recipes.render.workloads import MEMORY_GIB_PER_GPU

MODEL = "deepseek-ai/DeepSeek-V4.1-Flash"
ENGRAM_GIB = 188.8


def _gib(quantity: str) -> float:
    assert quantity.endswith("Gi"), quantity
    return float(quantity[:-2])


def _containers(text: str) -> list[dict[str, Any]]:
    out = []
    for doc in yaml.safe_load_all(text):
        spec = (doc or {}).get("spec", {})
        pod = spec.get("template", {}).get("spec") or spec.get("leaderWorkerTemplate", {}).get(
            "workerTemplate", {}).get("spec") or {}
        out += pod.get("containers", [])
    return out


def test_k8s_request_covers_the_offloaded_engram_tables(run_cli: Any) -> None:
    result = run_cli("export", MODEL, "--hardware", "h100", "--to", "k8s", "-o", "-")
    assert result.exit_code == 0, result.stderr
    vllm = [c for c in _containers(result.stdout) if "resources" in c and "nvidia.com/gpu" in
            c["resources"].get("limits", {})]
    assert vllm, result.stdout
    for c in vllm:
        assert _gib(c["resources"]["requests"]["memory"]) >= 8 * MEMORY_GIB_PER_GPU + ENGRAM_GIB


def test_tables_count_only_when_their_flag_offloads_them(run_cli: Any, recipe_writer: Any,
                                                        tmp_path: Path) -> None:
    """A table whose flag is off stays in GPU memory: the request does not grow."""
    recipe = {
        "meta": {"title": "Tables"}, "model": {
            "model_id": "acme/Tables", "architecture_facts": {
                "source": "test", "attention": "compressed_sparse", "num_layers": 4, "hidden_size": 1024,
                "kv_elements_per_token": 576, "dtype_bytes": 1, "host_tables": [
                {"gib": 100, "flag": "--engram-config", "marker": '"cpu_offload":true'}]}},
        "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 60, "hardware_overrides": {
            "h100": {"extra_args": ["--engram-config", '{"cpu_offload":true}']}}}},
        "compatible_strategies": ["single_node_tp"],
    }
    recipe_writer(tmp_path, "acme/Tables", recipe)
    requested = {}
    for hw in ("h100", "h200"):
        result = run_cli("export", "acme/Tables", "--recipes-dir", str(tmp_path), "--hardware", hw,
                         "--to", "k8s", "-o", "-")
        assert result.exit_code == 0, result.stderr
        [container] = [c for c in _containers(result.stdout)
                       if "nvidia.com/gpu" in c.get("resources", {}).get("limits", {})]
        gpus = int(container["resources"]["limits"]["nvidia.com/gpu"])
        requested[hw] = _gib(container["resources"]["requests"]["memory"]) - gpus * MEMORY_GIB_PER_GPU
    assert requested["h100"] - requested["h200"] == 100


def test_compose_reservation_covers_the_offloaded_engram_tables(run_cli: Any) -> None:
    result = run_cli("export", MODEL, "--hardware", "h100", "--to", "compose", "-o", "-")
    assert result.exit_code == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    reserved = [s["deploy"]["resources"]["reservations"]["memory"] for s in services.values()
                if "deploy" in s]
    assert reserved
    for m in reserved:
        assert m.endswith("G") or m.endswith("g"), m
        assert float(m[:-1]) >= 8 * MEMORY_GIB_PER_GPU + ENGRAM_GIB
