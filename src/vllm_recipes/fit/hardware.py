"""Where a fit runs: a catalog profile, a named GPU, a custom size, or the GPUs of this machine.

Pure: detection *parsers* take the text a tool printed (the tools themselves are
run by :mod:`vllm_recipes.fit.probe`, at the edge).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

#: GPUs that no catalog profile describes: per-GPU memory in GiB (vendor capacities)
KNOWN_GPUS: dict[str, tuple[str, float]] = {
    "A100 80GB": ("NVIDIA", 80), "A100 40GB": ("NVIDIA", 40), "A100": ("NVIDIA", 80),
    "H100 NVL": ("NVIDIA", 94), "H20": ("NVIDIA", 96), "GH200": ("NVIDIA", 96), "L40S": ("NVIDIA", 48),
    "L40": ("NVIDIA", 48), "L4": ("NVIDIA", 24), "A10G": ("NVIDIA", 24), "A10": ("NVIDIA", 24),
    "A6000": ("NVIDIA", 48), "RTX 6000 Ada": ("NVIDIA", 48), "RTX 4090": ("NVIDIA", 24),
    "RTX 3090": ("NVIDIA", 24), "RTX 5080": ("NVIDIA", 16), "RTX 4080": ("NVIDIA", 16), "V100": ("NVIDIA", 32),
    "T4": ("NVIDIA", 16), "MI250X": ("AMD", 128), "MI210": ("AMD", 64), "Ascend 910B": ("Huawei", 64),
}


#: what CUDA reports as total memory (the base of vLLM's requested memory) per vendor "GB", by normalised
#: name; other GPUs: the HBM factor (docs/decisions-fit.md §4)
REPORTED_FACTOR: tuple[tuple[str, float], ...] = (
    ("l40s", 0.925), ("l40", 0.925), ("a10g", 0.92), ("a10", 0.92), ("l4", 0.92), ("a40", 0.925),
    ("a6000", 0.99), ("rtxpro", 0.99), ("rtx", 0.98), ("mi3", 0.998),
)
HBM_FACTOR = 0.99


def reported_gib(name: str, nominal: float) -> float:
    """The total CUDA reports for a GPU sold as ``nominal`` GB (see :data:`REPORTED_FACTOR`)."""
    key = _norm(name)
    factor = next((f for k, f in REPORTED_FACTOR
                   if key.startswith(k) and not (k[-1].isdigit() and key[len(k):len(k) + 1].isdigit())),
                  HBM_FACTOR)
    return round(nominal * factor, 2)


class HardwareError(ValueError):
    """A hardware request that cannot be honoured; ``choices`` are close valid names."""

    def __init__(self, message: str, choices: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.choices = tuple(choices)


@dataclass(frozen=True, slots=True)
class GpuTarget:
    """The GPUs a fit is computed for."""

    label: str
    gpu_gib: float
    gpus_per_node: int
    #: catalog profile used for the command (its own id, or the template of a custom profile)
    profile_id: str | None
    custom: bool
    brand: str = "NVIDIA"
    source: str = "catalog"
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "gpu_memory_gib": round(self.gpu_gib, 2), "gpus_per_node": self.gpus_per_node,
                "profile": self.profile_id, "custom": self.custom, "source": self.source, "notes": list(self.notes)}


def _norm(name: str) -> str:
    s = name.lower()
    for word in ("nvidia", "geforce", "amd", "instinct", "huawei", "tesla", "blackwell", "server edition", "pcie",
                 "sxm5", "sxm4", "sxm", "hbm3e", "hbm3", "oam"):
        s = s.replace(word, " ")
    return re.sub(r"[^a-z0-9]+", "", s)


def profile_target(profiles: Mapping[str, Any], hw_id: str, source: str = "catalog") -> GpuTarget:
    p = profiles.get(hw_id)
    if not isinstance(p, Mapping):
        raise HardwareError(f"unknown hardware profile {hw_id!r}", close_names(hw_id, list(profiles)))
    n, per = _count_per_gpu(p)
    name = _display_name(profiles, hw_id)
    return GpuTarget(f"{name} ({n}x {per:g} GB)", reported_gib(name, per), n, hw_id, False,
                     str(p.get("brand") or "NVIDIA"), source)


def _custom_label(gpus: int, name: str, gb: float) -> str:
    """The label of a custom target: ``gpus`` of ``name`` at ``gb`` (vendor) GB each."""
    return f"Custom: {gpus}x {name} ({gb:g} GB each)"


def _display_name(profiles: Mapping[str, Any], hw_id: str) -> str:
    return str(profiles[hw_id].get("display_name") or hw_id)


def close_names(name: str, names: Sequence[str], n: int = 5) -> list[str]:
    by_norm = {_norm(x): x for x in names}
    hits = difflib.get_close_matches(_norm(name), list(by_norm), n=n, cutoff=0.5)
    sub = [x for k, x in by_norm.items() if _norm(name) and (_norm(name) in k or k in _norm(name))]
    return list(dict.fromkeys([*sub, *(by_norm[h] for h in hits)]))[:n]


def _count_per_gpu(p: Mapping[str, Any]) -> tuple[int, float]:
    """A profile's GPU count (at least 1) and memory per GPU in GB (0 when absent)."""
    count, vram = p.get("gpu_count"), p.get("vram_gb")
    n = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
    return n, (float(vram) if isinstance(vram, int | float) and not isinstance(vram, bool) else 0.0) / n


#: the " 8x" / "_8x" that names a profile of several of one GPU
_MULTI_GPU = re.compile(r"[\s_]+\d+x$")


def match_profile(profiles: Mapping[str, Any], name: str, gpu_gib: float | None, count: int | None,
                  exact: bool = False) -> str | None:
    """The catalog profile for GPUs called ``name`` (memory within 10%): one of that very name first, then one
    whose name contains it or is contained in it (``exact``: never), preferring the same GPU count."""
    key = _norm(name)
    found: list[tuple[bool, int, str]] = []
    for pid, p in profiles.items():
        if not isinstance(p, Mapping):
            continue
        display = _display_name(profiles, pid)
        disp = _norm(display)
        # named after this very GPU ("RTX Pro 6000 8x" / rtx_pro_6000_8x are N of the GPU "RTX Pro 6000")
        named = key in (_norm(_MULTI_GPU.sub("", display)), _norm(_MULTI_GPU.sub("", pid)))
        if not disp or not (named or (not exact and (disp in key or key in disp))):
            continue
        per = _count_per_gpu(p)[1]
        if gpu_gib is not None and per and abs(per - gpu_gib) / per > 0.1:
            continue
        same = 0 if count is None or p.get("gpu_count") == count else 1
        found.append((not named, same, pid))
    return min(found)[2] if found else None


def named_target(profiles: Mapping[str, Any], name: str, gpus: int | None, gpu_gib: float | None = None) -> GpuTarget:
    """``--gpu NAME [--gpus N]``: a catalog profile when one matches, else a known GPU as a custom profile."""
    n = gpus or 1  # the count the user gave; none given: one GPU, never the profile's silently
    known = {_norm(k): (k, v) for k, v in KNOWN_GPUS.items()}
    # (a known GPU's name is matched exactly: a loose match would take "L4" for "GB200 NVL4")
    pid = match_profile(profiles, name, gpu_gib, n, exact=_norm(name) in known)
    if pid is not None:
        t = profile_target(profiles, pid, "--gpu")
        if t.gpus_per_node == n:
            return t
        note = f"custom profile based on {pid} with {n} GPU{'s' if n > 1 else ''}"
        if not gpus:
            note += "; give --gpus N for more"
        return GpuTarget(_custom_label(n, name, _count_per_gpu(profiles[pid])[1]), t.gpu_gib, n, pid,
                         True, t.brand, "--gpu", notes=(note,))
    if gpu_gib is not None:
        same_name = match_profile(profiles, name, None, n, exact=True)
        if same_name is not None:  # a catalog GPU with another memory (a MIG slice, memory held back)
            per = _count_per_gpu(profiles[same_name])[1]
            t = custom_profile_target(profiles, same_name, gpu_gib, n)
            return replace(t, notes=(f"custom profile based on {same_name} ({per:g} GB per GPU) with "
                                     f"{gpu_gib:g} GB each",))
    hit = known.get(_norm(name))
    if hit is None:
        names = [str(p.get("display_name")) for p in profiles.values() if isinstance(p, Mapping)] + list(KNOWN_GPUS)
        raise HardwareError(f"unknown GPU {name!r}; give its memory with --gpu-memory GB",
                            close_names(name, list(dict.fromkeys(names))))
    label, (brand, mem) = hit
    nominal = gpu_gib or mem
    return GpuTarget(_custom_label(n, label, nominal), reported_gib(label, nominal), n, None, True,
                     brand, "--gpu")


def custom_target(gpu_gib: float, gpus: int) -> GpuTarget:
    if gpu_gib <= 0 or gpus <= 0:
        raise HardwareError("--gpu-memory and --gpus must be positive")
    label = _custom_label(gpus, "GPU", gpu_gib)
    return GpuTarget(label, gpu_gib, gpus, None, True, source="--gpu-memory")


def custom_profile_target(profiles: Mapping[str, Any], hw_id: str, gpu_gib: float, gpus: int | None) -> GpuTarget:
    """``--hardware ID --gpu-memory GB [--gpus N]``: that profile's GPUs (its count unless ``gpus``)
    of ``gpu_gib`` each."""
    base = profile_target(profiles, hw_id)
    n = gpus or base.gpus_per_node
    return GpuTarget(_custom_label(n, _display_name(profiles, hw_id), gpu_gib), gpu_gib, n, hw_id,
                     custom=True, brand=base.brand, source="--gpu-memory")


# --- detection output parsers -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DetectedGpu:
    name: str
    memory_mib: float
    brand: str


class DetectionError(ValueError):
    """A tool's output that cannot be read."""


def parse_nvidia_smi(text: str) -> list[DetectedGpu]:
    """``nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits`` (MiB)."""
    out = []
    for row in csv.reader(io.StringIO(text)):
        if not row or not "".join(row).strip():
            continue
        if len(row) < 2:
            raise DetectionError(f"nvidia-smi: expected 'name, memory' per line, got {','.join(row)!r}")
        name, mem = row[0].strip(), row[1].strip().removesuffix("MiB").strip()
        if name.lower() == "name":
            continue
        try:
            out.append(DetectedGpu(name, float(mem), "NVIDIA"))
        except ValueError:
            raise DetectionError(f"nvidia-smi: memory {row[1].strip()!r} is not a number") from None
    return out


def _json(text: str, tool: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise DetectionError(f"{tool}: output is not JSON ({exc.msg} at line {exc.lineno})") from None


def parse_rocm_smi(text: str) -> list[DetectedGpu]:
    """``rocm-smi --showproductname --showmeminfo vram --json``."""
    data = _json(text, "rocm-smi")
    if not isinstance(data, dict):
        raise DetectionError("rocm-smi: expected a JSON object of cards")
    out = []
    for card, info in data.items():
        if not str(card).startswith("card") or not isinstance(info, dict):
            continue
        name = next((str(v) for k, v in info.items() if k.lower() in ("card series", "card model", "device name",
                                                                       "market name")), card)
        total: Any = next((v for k, v in info.items() if k.lower().startswith("vram total memory")), None)
        try:
            out.append(DetectedGpu(name, float(total) / 2**20, "AMD"))
        except (TypeError, ValueError):
            raise DetectionError(f"rocm-smi: {card} has no readable 'VRAM Total Memory (B)'") from None
    return out


def parse_amd_smi(text: str) -> list[DetectedGpu]:
    """``amd-smi static --asic --vram --json`` (sizes as ``{"value", "unit"}`` or ``"N MB"``)."""
    data = _json(text, "amd-smi")
    if isinstance(data, dict):
        data = data.get("gpu_data", [data])
    if not isinstance(data, list):
        raise DetectionError("amd-smi: expected a JSON list of GPUs")
    out = []
    for g in data:
        if not isinstance(g, dict):
            continue
        asic: dict[str, Any] = g["asic"] if isinstance(g.get("asic"), dict) else {}
        size: Any = g["vram"].get("size") if isinstance(g.get("vram"), dict) else None
        value: Any
        if isinstance(size, dict):
            value, unit = size.get("value"), str(size.get("unit") or "MB")
        elif isinstance(size, str) and size.split():
            value, unit = size.split()[0], [*size.split(), "MB"][1]
        else:
            value, unit = size, "MB"
        try:
            mib = float(value) * {"MB": 1, "MIB": 1, "GB": 1024, "GIB": 1024, "B": 2**-20}[unit.upper()]
        except (TypeError, ValueError, KeyError):
            raise DetectionError(f"amd-smi: GPU {g.get('gpu')} has no readable vram size") from None
        out.append(DetectedGpu(str(asic.get("market_name") or f"GPU {g.get('gpu')}"), mib, "AMD"))
    return out


_NPU_ROW = re.compile(r"^\|\s*(\d+)\s+(\S[^|]*?)\s*\|\s*(\w+)\s*\|")
_NPU_HBM = re.compile(r"(\d+)\s*/\s*(\d+)\s*\|?\s*$")


def parse_npu_smi(text: str) -> list[DetectedGpu]:
    """The ``npu-smi info`` table: a name row per NPU, then a chip row ending in ``HBM used / total`` (MB)."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    if text.strip() and not any(ln.startswith(("+", "|")) for ln in lines):
        raise DetectionError("npu-smi: output is not the 'npu-smi info' table")
    out = []
    for i, ln in enumerate(lines):
        m = _NPU_ROW.match(ln)
        if not m or m.group(2).strip().isdigit() or i + 1 >= len(lines) or "Name" in ln:
            continue
        hbm = _NPU_HBM.search(lines[i + 1])
        if hbm is None:
            raise DetectionError(f"npu-smi: no HBM usage after NPU {m.group(1)}")
        out.append(DetectedGpu(f"Ascend {m.group(2).strip()}", float(hbm.group(2)), "Huawei"))
    return out


PARSERS = {"nvidia-smi": parse_nvidia_smi, "amd-smi": parse_amd_smi, "rocm-smi": parse_rocm_smi,
           "npu-smi": parse_npu_smi}


def detected_target(profiles: Mapping[str, Any], gpus: Sequence[DetectedGpu], tool: str) -> GpuTarget:
    """A catalog profile when one matches the detected GPUs, else a custom profile (smallest GPU sets the size)."""
    if not gpus:
        raise HardwareError(f"{tool} found no GPUs on this machine")
    names = sorted({g.name for g in gpus})
    smallest = min(g.memory_mib for g in gpus) / 1024
    notes: list[str] = []
    if len(names) > 1:
        notes.append(f"mixed GPUs ({', '.join(names)}): tensor parallelism runs at the smallest one's "
                     f"memory, {smallest:.1f} GiB")
    brand = gpus[0].brand
    pid = match_profile(profiles, names[0], smallest, len(gpus)) if len(names) == 1 else None
    if pid is not None:
        t = profile_target(profiles, pid, f"detected ({tool})")
        if t.gpus_per_node == len(gpus):
            return GpuTarget(t.label, smallest, t.gpus_per_node, pid, False, t.brand, t.source, notes=tuple(notes))
        notes.append(f"custom profile based on {pid} with {len(gpus)} GPUs")
    label = names[0] if len(names) == 1 else "mixed GPUs"
    return GpuTarget(f"Custom: {len(gpus)}x {label} ({smallest:.1f} GiB each)", smallest, len(gpus), pid, True,
                     brand, f"detected ({tool})", notes=tuple(notes))
