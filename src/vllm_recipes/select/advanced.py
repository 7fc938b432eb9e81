"""The builder's Advanced row: tuning presets (ui.md), and which of them a recipe offers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_recipes.jsvalues import as_map, truthy


@dataclass(frozen=True)
class AdvancedOption:
    id: str
    label: str
    args: tuple[str, ...]


#: Tuning presets of the builder's Advanced row (ui.md); ids are ours.
ADVANCED_OPTIONS: tuple[AdvancedOption, ...] = (
    AdvancedOption("max_batched_8k", "Max batched tokens 8192", ("--max-num-batched-tokens", "8192")),
    AdvancedOption("max_seqs_256", "Max sequences 256", ("--max-num-seqs", "256")),
    AdvancedOption("gpu_mem_095", "GPU memory utilization 0.95", ("--gpu-memory-utilization", "0.95")),
    AdvancedOption("max_model_len_auto", "Max model length auto", ("--max-model-len", "auto")),
    AdvancedOption("dcp_8", "Decode context parallel 8", ("--decode-context-parallel-size", "8")),
    AdvancedOption("no_flashinfer_autotune", "Disable FlashInfer autotune", ("--no-enable-flashinfer-autotune",)),
    AdvancedOption("ep_weight_filter", "EP weight filter", ("--enable-ep-weight-filter",)),
)


def advanced_options_for(recipe: Mapping[str, Any], strategy: str) -> list[AdvancedOption]:
    """The presets this recipe and strategy can use (model flags and expert-parallel strategies)."""
    model = as_map(recipe.get("model"))
    offered = {"dcp_8": truthy(model.get("supports_dcp")),
               "no_flashinfer_autotune": truthy(model.get("flashinfer_autotune")),
               "ep_weight_filter": strategy.endswith(("_tep", "_dep"))}
    return [o for o in ADVANCED_OPTIONS if offered.get(o.id, True)]
