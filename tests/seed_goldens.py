"""The seed goldens (tests/golden/expected) as our renderer should write them today.

The reference files are kept exactly as the reference wrote them; our two documented deviations (co-located
DEP sizes, the default hardware of a one-GPU model) are applied here, once, for every test that compares
against them (:func:`expected_renderings`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def colocated_dep_fix(obj: dict[str, Any]) -> dict[str, Any]:
    """The reference's rendering with our documented deviation (docs/decisions.md, "Co-located PD DEP"):
    a co-located DEP pool runs one rank per GPU it owns (half the node), not one per GPU of the node."""
    new_intra: list[int] = []
    old_intra: list[int] = []
    for role in ("prefill", "decode"):
        r = obj.get(role)
        if not isinstance(r, dict) or r.get("nodes") != 0 or r.get("parallelism") != "dep":
            continue
        old, new = r["dpLocal"], max(1, r["poolGpus"] // r["tp"])
        old_intra.append(old)
        new_intra.append(new)
        r.update(dpLocal=new, dpSize=new)
        for key in ("argv", "docker_argv"):
            toks = r.get(key) or []
            for i in range(1, len(toks)):
                if toks[i - 1] in ("--data-parallel-size", "--data-parallel-size-local") and toks[i] == str(old):
                    toks[i] = str(new)
        for key in ("command", "docker_command"):
            if isinstance(r.get(key), str):
                r[key] = re.sub(rf"(--data-parallel-size(?:-local)? ){old}\b", rf"\g<1>{new}", r[key])
    router = obj.get("router")
    if new_intra and isinstance(router, dict) and isinstance(router.get("command"), str):
        router["command"] = router["command"].replace(f"--intra-node-data-parallel-size {max(old_intra)}",
                                                      f"--intra-node-data-parallel-size {max(new_intra)}")
    return obj


#: Variant trees whose default hardware our one-GPU rule moves (docs/decisions.md, "Default hardware
#: of a one-GPU model"): the NVFP4 variants of V4-Flash (170 GB) fit one B200 GPU, and the recipe offers
#: the one-GPU DGX Station (GB300). Base path -> (the reference's default, ours).
ONE_GPU_DEFAULTS = {
    "nvidia/DeepSeek-V4-Flash-NVFP4": ("b200", "dgx_station_gb300"),
    "RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8": ("b200", "dgx_station_gb300"),
}


def _moved_prefixes(rel: str) -> tuple[str, str, str] | None:
    for base, (old, new) in ONE_GPU_DEFAULTS.items():
        if rel.startswith(base + "/"):
            return base, old, new
    return None


def one_gpu_default_path(rel: str) -> str:
    """Where we write what the reference wrote at ``rel``: the default hardware's strategy files live
    under ``<base>/strategies/``, every other hardware's under ``<base>/hw/<hw>/strategies/``."""
    moved = _moved_prefixes(rel)
    if moved is None:
        return rel
    base, old, new = moved
    if rel.startswith(f"{base}/strategies/"):
        return f"{base}/hw/{old}/strategies/" + rel.removeprefix(f"{base}/strategies/")
    if rel.startswith(f"{base}/hw/{new}/strategies/"):
        return f"{base}/strategies/" + rel.removeprefix(f"{base}/hw/{new}/strategies/")
    return rel


def one_gpu_default_fix(rel: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The reference's links (``alternatives``) with the default hardware moved as above."""
    moved = _moved_prefixes(rel)
    if moved is None:
        return obj
    alts = obj.get("alternatives")
    if isinstance(alts, dict):
        obj["alternatives"] = {k: "/" + one_gpu_default_path(v.removeprefix("/")) if isinstance(v, str) else v
                               for k, v in alts.items()}
    return obj


def expected_renderings(root: Path) -> dict[str, dict[str, Any]]:
    """Every reference file under ``root`` as we should write it today, keyed by our path:
    both documented deviations applied (co-located DEP sizes, the one-GPU default hardware)."""
    out: dict[str, dict[str, Any]] = {}
    for p in sorted(root.rglob("*.json")):
        rel = p.relative_to(root).as_posix()
        obj = json.loads(p.read_text(encoding="utf-8"))
        out[one_gpu_default_path(rel)] = one_gpu_default_fix(rel, colocated_dep_fix(obj))
    return out
