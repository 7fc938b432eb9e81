"""A large, varied benchmark catalog generated from the bundled seed recipes.

Real catalogs are not 170 copies of one file: recipes differ in hardware
overrides (exact GPU ids and generations), VRAM figures, strategy overrides,
features, PD and Mooncake support and promoted variants. Each generated recipe
is a seed (both seeds have all of these shapes) with deterministic, per-index
variations of exactly those axes, so a build or resolve benchmark on it sees
the same kind of sharing (and non-sharing) across hardware as on real recipes.

Used by ``bench_diff.py``, ``bench_fit.py`` and ``bench_vllm_lint.py`` (a
170-recipe catalog: a stress test, not a real catalog; ``bench_user.py``
measures the user-visible figures on real ones).
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import yaml

from vllm_recipes.catalog import BUNDLED_DIR

#: Exact GPU ids that get per-hardware overrides here and there (real recipes pin many).
EXACT_HW = ("h100", "h200", "b200", "gb200", "b300", "gb300", "mi300x", "mi325x", "mi355x", "rtx_pro_6000_8x")
#: Generation / brand keys used by recipe, variant and strategy hardware overrides.
GEN_KEYS = ("hopper", "blackwell", "amd")
TUNING_FLAGS = (("--max-num-seqs", ("64", "128", "256", "512")),
                ("--max-num-batched-tokens", ("8192", "16384", "32768")),
                ("--gpu-memory-utilization", ("0.85", "0.9", "0.92")),
                ("--block-size", ("16", "32", "64")),
                ("--max-model-len", ("65536", "131072", "262144")))
ENV_KEYS = ("VLLM_USE_DEEP_GEMM", "VLLM_ALL2ALL_BACKEND", "NCCL_P2P_LEVEL", "VLLM_MOE_DP_CHUNK_SIZE")


def seed_docs() -> list[tuple[str, dict[str, Any]]]:
    """The bundled seed recipes as plain data, ``(file stem, document)``."""
    seeds = sorted((BUNDLED_DIR / "models").rglob("*.yaml"))
    return [(p.stem, yaml.safe_load(p.read_text(encoding="utf-8"))) for p in seeds]


def make_catalog(dest: Path, n_recipes: int = 170, seed: int = 14) -> Path:
    """Write ``n_recipes`` recipes under ``dest/models/<org>/`` (strategies etc. come from the bundle)."""
    docs = seed_docs()
    models = dest / "models"
    for i in range(n_recipes):
        stem, doc = docs[i % len(docs)]
        org = f"org{i // len(docs):03d}"
        d = vary(doc, org, i, random.Random(seed * 100_003 + i))
        out = models / org / f"{stem}.yaml"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(yaml.safe_dump(d, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return dest


def _tuning(rng: random.Random, n: int) -> list[str]:
    out: list[str] = []
    for flag, values in rng.sample(TUNING_FLAGS, n):
        out += [flag, rng.choice(values)]
    return out


def _env(rng: random.Random) -> dict[str, str]:
    return {rng.choice(ENV_KEYS): rng.choice(("0", "1", "deepep_low_latency", "2048"))}


def _add_override(target: dict[str, Any], key: str, rng: random.Random, env: bool = False) -> None:
    ho = target.setdefault("hardware_overrides", {}) or {}
    target["hardware_overrides"] = ho
    blk = ho.setdefault(key, {}) or {}
    ho[key] = blk
    blk["extra_args"] = [*(blk.get("extra_args") or []), *_tuning(rng, rng.randint(1, 2))]
    if env:
        blk["extra_env"] = {**(blk.get("extra_env") or {}), **_env(rng)}


def vary(doc: dict[str, Any], org: str, i: int, rng: random.Random) -> dict[str, Any]:
    """One generated recipe: ``doc`` renamed into ``org`` and varied along the real axes."""
    d = copy.deepcopy(doc)
    d["meta"]["title"] = f"{d['meta'].get('title', '')} ({org})"
    model = d.get("model") or {}
    if isinstance(model.get("model_id"), str):
        model["model_id"] = f"{org}/{model['model_id'].split('/', 1)[1]}"
    variants = d.get("variants") or {}
    for vk, v in list(variants.items()):
        mid = v.get("model_id") if isinstance(v, dict) else None
        if isinstance(mid, str) and "/" in mid:
            src_org, name = mid.split("/", 1)
            v["model_id"] = f"{org}-{src_org}/{name}"      # a promoted variant of its own
        if vk != "default" and len(variants) > 2 and rng.random() < 0.25:
            _drop_variant(d, vk)
    # model-wide tuning and env (every hardware sees them)
    if rng.random() < 0.6:
        model["base_args"] = [*(model.get("base_args") or []), *_tuning(rng, rng.randint(1, 2))]
    if rng.random() < 0.3:
        model["base_env"] = {**(model.get("base_env") or {}), **_env(rng)}
    # VRAM: bigger or smaller models make other strategies / node counts the default
    for v in variants.values():
        if isinstance(v, dict) and isinstance(v.get("vram_minimum_gb"), int):
            v["vram_minimum_gb"] = max(8, int(v["vram_minimum_gb"] * rng.choice((0.25, 0.5, 1, 1, 2, 3))))
    # exact-GPU and generation overrides on variants, the recipe and strategy overrides
    for v in variants.values():
        if not isinstance(v, dict):
            continue
        for hw in rng.sample(EXACT_HW, rng.randint(0, 4)):
            _add_override(v, hw, rng, env=rng.random() < 0.3)
        if rng.random() < 0.3:
            _add_override(v, rng.choice(GEN_KEYS), rng)
    if rng.random() < 0.5:
        ho = d.setdefault("hardware_overrides", {}) or {}
        d["hardware_overrides"] = ho
        _add_override(d, rng.choice(GEN_KEYS), rng, env=rng.random() < 0.5)
    for sname, so in (d.get("strategy_overrides") or {}).items():
        if isinstance(so, dict) and sname != "pd_cluster" and rng.random() < 0.5:
            _add_override(so, rng.choice(EXACT_HW), rng, env=rng.random() < 0.3)
    # features: per-hardware args on plain features, extra tuning in modes
    for f in (d.get("features") or {}).values():
        if not isinstance(f, dict):
            continue
        if f.get("modes"):
            for m in f["modes"].values():
                if isinstance(m, dict) and isinstance(m.get("args"), list) and rng.random() < 0.3:
                    m["args"] = [*m["args"], *_tuning(rng, 1)]
        elif isinstance(f.get("args"), list) and rng.random() < 0.3:
            hw = rng.choice(EXACT_HW)
            ho = f.setdefault("hardware_overrides", {}) or {}
            f["hardware_overrides"] = ho
            ho[hw] = {"args": [*f["args"], *_tuning(rng, 1)]}
    return d


def _drop_variant(d: dict[str, Any], vk: str) -> None:
    """Remove a variant and every feature-mode reference to it (keeps the recipe valid)."""
    del d["variants"][vk]
    for f in (d.get("features") or {}).values():
        for m in ((f or {}).get("modes") or {}).values():
            if isinstance(m, dict) and isinstance(m.get("variants"), list) and vk in m["variants"]:
                m["variants"].remove(vk)
                if not m["variants"]:
                    m.pop("variants")
