"""GPU facts (peak FLOPs per dtype, memory bandwidth, interconnect) from the package's ``gpus.yaml``.

A hardware profile is matched by its id (``rtx_pro_6000_2x`` -> ``rtx_pro_6000``),
then by its display name, so the bundled and any public-layout catalog work alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class GpuSpec:
    key: str
    family: str
    tflops: tuple[tuple[str, float], ...]
    hbm_gb_s: float
    link: str
    link_gb_s: float
    scale_out_gb_s: float
    source: str

    def peak_flops(self, dtype: str) -> tuple[float, str]:
        """FLOP/s of ``dtype`` and the dtype that actually runs: without a native unit, vLLM's fallback
        kernels (Marlin and friends) dequantize the weights and multiply in 16 bits."""
        rates = dict(self.tflops)
        if dtype in rates:
            return rates[dtype] * 1e12, dtype
        return rates.get("bf16", 0.0) * 1e12, "bf16"


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", s.lower().replace("nvidia", "").replace("instinct", ""))


@cache
def specs() -> dict[str, GpuSpec]:
    raw: Mapping[str, Any] = yaml.safe_load(files("vllm_recipes.perf").joinpath("gpus.yaml").read_text("utf-8"))
    return {k: GpuSpec(k, str(v["family"]), tuple((str(d), float(x)) for d, x in v["tflops"].items()),
                       float(v["hbm_gb_s"]), str(v["link"]), float(v["link_gb_s"]), float(v["scale_out_gb_s"]),
                       str(v["source"])) for k, v in raw.items()}


@cache
def _index() -> tuple[dict[str, str], dict[str, str]]:
    raw: Mapping[str, Any] = yaml.safe_load(files("vllm_recipes.perf").joinpath("gpus.yaml").read_text("utf-8"))
    by_id = {p: k for k, v in raw.items() for p in v.get("profiles", ())}
    by_name = {_norm(n): k for k, v in raw.items() for n in v.get("names", ())}
    return by_id, by_name


def spec_for_profile(profile_id: str | None, display_name: str | None = None) -> GpuSpec | None:
    """The chip of a hardware profile (``None``: no GPU facts for it, the estimate says "unknown")."""
    by_id, _ = _index()
    if profile_id:
        key = by_id.get(re.sub(r"_\d+x$", "", profile_id))
        if key:
            return specs()[key]
    return spec_for_name(display_name) if display_name else None


def spec_for_name(name: str) -> GpuSpec | None:
    """A GPU by name (``--gpu``, detection): exact normalized name, else the longest name it contains."""
    _, by_name = _index()
    n = _norm(re.sub(r"\b\d+x\b|\bNVL\d+\b", "", name))
    if n in by_name:
        return specs()[by_name[n]]
    hits = sorted((k for k in by_name if k and k in n), key=len, reverse=True)
    return specs()[by_name[hits[0]]] if hits else None
