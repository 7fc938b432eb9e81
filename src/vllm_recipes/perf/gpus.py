"""GPU facts (peak FLOPs per dtype, memory bandwidth, interconnect) from the package's ``gpus.yaml``.

A profile is matched by id, then by display name; its own ``gpu_facts`` override the package's figures.
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


#: the fields of :class:`GpuSpec` a profile's ``gpu_facts`` may set
FACT_FIELDS = ("family", "tflops", "hbm_gb_s", "link", "link_gb_s", "scale_out_gb_s", "source")


def _spec(key: str, v: Mapping[str, Any]) -> GpuSpec:
    return GpuSpec(key, str(v.get("family") or ""), tuple((str(d), float(x)) for d, x in (v.get("tflops") or {}).items()),
                   float(v.get("hbm_gb_s") or 0), str(v.get("link") or ""), float(v.get("link_gb_s") or 0),
                   float(v.get("scale_out_gb_s") or 0), str(v.get("source") or ""))


def with_profile_facts(spec: GpuSpec | None, key: str, facts: Any, where: str) -> GpuSpec | None:
    """``spec`` with the fields a hardware profile's ``gpu_facts`` set (``where``: the file that says so,
    named in the source); a chip the package does not know needs at least ``tflops`` and ``hbm_gb_s``."""
    if not isinstance(facts, Mapping) or not facts:
        return spec
    base: dict[str, Any] = {} if spec is None else \
        {k: getattr(spec, k) for k in FACT_FIELDS} | {"tflops": dict(spec.tflops)}
    own = {k: facts[k] for k in FACT_FIELDS if facts.get(k) is not None}
    merged = {**base, **own}
    if not merged.get("tflops") or not merged.get("hbm_gb_s"):
        return spec
    said = str(own.get("source") or "")
    merged["source"] = f"{where} gpu_facts ({', '.join(k for k in own if k != 'source')})" \
        + (f": {said}" if said else "") + (f"; other figures: {spec.source}" if spec is not None else "")
    return _spec(spec.key if spec is not None else key, merged)


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", s.lower().replace("nvidia", "").replace("instinct", ""))


@cache
def _table() -> tuple[dict[str, GpuSpec], dict[str, str], dict[str, str]]:
    """The package's chips, and chip keys by profile id and by normalized name."""
    raw: Mapping[str, Any] = yaml.safe_load(files("vllm_recipes.perf").joinpath("gpus.yaml").read_text("utf-8"))
    by_id = {p: k for k, v in raw.items() for p in v.get("profiles", ())}
    by_name = {_norm(n): k for k, v in raw.items() for n in v.get("names", ())}
    return {k: _spec(k, v) for k, v in raw.items()}, by_id, by_name


def spec_for_profile(profile_id: str | None, display_name: str | None = None) -> GpuSpec | None:
    """The chip of a hardware profile (``None``: no GPU facts for it, the estimate says "unknown")."""
    specs, by_id, _ = _table()
    if profile_id:
        key = by_id.get(re.sub(r"_\d+x$", "", profile_id))
        if key:
            return specs[key]
    return spec_for_name(display_name) if display_name else None


def spec_for_name(name: str) -> GpuSpec | None:
    """A GPU by name (``--gpu``, detection): exact normalized name, else the longest name it contains."""
    specs, _, by_name = _table()
    n = _norm(re.sub(r"\b\d+x\b|\bNVL\d+\b", "", name))
    if n in by_name:
        return specs[by_name[n]]
    hits = sorted((k for k in by_name if k and k in n), key=len, reverse=True)
    return specs[by_name[hits[0]]] if hits else None
