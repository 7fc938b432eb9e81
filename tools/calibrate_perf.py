"""Fit the performance model's constants per GPU family on published vLLM measurements.

    python tools/calibrate_perf.py DATA_DIR [--write] [--prompts-factor F]

``DATA_DIR`` holds ``calibration.json`` (records: model, hf_id, gpu, tp/ep/dp/pp,
precision, isl, osl, concurrency, ttft_ms, tpot_ms, output_tok_s_per_gpu, notes)
and ``configs/<name>.config.json``. Nothing of it is copied into the package:
``--write`` stores only the fitted constants and the leave-one-model-out errors
in ``src/vllm_recipes/perf/params.json``.

Procedure (also in docs/decisions-perf-model.md):

1. every record is simulated like the benchmark that produced it (closed loop,
   10 x concurrency prompts, lengths uniform in [0.8 L, L] for the InferenceMAX
   rows, fixed otherwise) on the memory planner's plan of ``vllm serve --tensor-parallel-size TP``;
2. the five constants of each GPU family minimise the sum of squared log errors of
   TPOT, TTFT and output tokens/s/GPU (Nelder-Mead in log space, from a physical
   start point); measured throughput is the source's derived figure, compared with
   the same formula applied to the predicted TTFT and TPOT;
3. leave-one-model-out: for each model, refit without its records and predict
   them; the median and p90 |error| over all held-out predictions are the
   expected error the CLI, API and page quote;
4. the shipped constants are fitted on all records; ``default`` (families with no
   measurements) is the per-constant median of the fitted families.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from vllm_recipes.fit.architecture import architecture_from_hf_config
from vllm_recipes.fit.memory import ProcessShape, fit_process
from vllm_recipes.perf.architecture import checkpoint_gib, facts_from_hf_config
from vllm_recipes.perf.estimate import estimate_process
from vllm_recipes.perf.gpus import spec_for_name
from vllm_recipes.perf.model import Params
from vllm_recipes.perf.scheduler import Workload

#: GPU memory of the measured GPUs (GB as sold; the planner reads them as GiB, like catalog profiles)
#: ``--kv-cache-dtype`` of the runs (not recorded by the source): the InferenceMAX Llama-3.3-70B runs served
#: ModelOpt checkpoints whose quantization block carries FP8 KV scales, with an FP8 KV cache; the others the
#: default (the model dtype)
KV_DTYPE = {"Llama-3.1-70B": "fp8"}
GPU_MEMORY = {"H100-SXM": 80, "H200-SXM": 141, "B200": 180}
CONFIGS = {("Llama-3.1-70B", "fp8"): "llama-3.3-70b-instruct-fp8", ("Llama-3.1-70B", "nvfp4"): "llama-3.3-70b-instruct-fp4",
           ("gpt-oss-120b", "mxfp4"): "gpt-oss-120b", ("Qwen3-32B", "bf16"): "qwen3-32b"}
START = Params(bw_eff=0.65, flops_eff=0.5, layer_us=20.0, comm_us=10.0, step_ms=1.5, request_ms=30.0,
               gemm_half_rows=32.0, seq_us=20.0, prompt_us=5.0, eager_layer_us=100.0)
NAMES = ("bw_eff", "flops_eff", "layer_us", "comm_us", "step_ms", "request_ms", "gemm_half_rows", "seq_us",
         "prompt_us", "eager_layer_us")
BOUNDS = {"bw_eff": (0.2, 1.0), "flops_eff": (0.05, 1.0), "layer_us": (0.5, 200.0), "comm_us": (1.0, 200.0),
          "step_ms": (0.05, 20.0), "request_ms": (1.0, 200.0),
          "gemm_half_rows": (1.0, 4096.0), "seq_us": (0.1, 500.0), "prompt_us": (0.01, 100.0),
          "eager_layer_us": (1.0, 2000.0)}


@dataclass
class Case:
    rec: dict[str, Any]
    family: str
    run: Any  # Params -> (ttft_ms, tpot_ms, tok_s_per_gpu)


def osl_eff(rec: dict[str, Any]) -> float:
    return rec["osl"] * (0.9 if "OSL_eff=0.9" in rec.get("notes", "") else 1.0)


def derived_tput(rec: dict[str, Any], ttft_ms: float, tpot_ms: float) -> float:
    """The source's closed-loop formula, applied to predicted TTFT and TPOT (per GPU)."""
    o = osl_eff(rec)
    return rec["concurrency"] * o / ((ttft_ms + (o - 1) * tpot_ms) / 1e3) / rec["gpus"]


def make_case(rec: dict[str, Any], configs: Path, prompts_factor: float) -> Case:
    name = CONFIGS[(rec["model"], rec["precision"])]
    cfg = json.loads((configs / f"{name}.config.json").read_text())
    facts = facts_from_hf_config(cfg, name)
    arch = architecture_from_hf_config(cfg, name)
    gpu = spec_for_name(rec["gpu"].replace("-SXM", ""))
    assert gpu is not None, rec["gpu"]
    shape = ProcessShape(tp=rec["tp"], pp=rec["pp"], dp=rec["dp"], expert_parallel=rec["ep"] > 1,
                         kv_cache_dtype=KV_DTYPE.get(rec["model"], "auto"))
    fit = fit_process(arch, checkpoint_gib(facts, rec["precision"]), GPU_MEMORY[rec["gpu"]], shape,
                      rec["isl"] + rec["osl"], levers=False)
    # InferenceMAX: lengths uniform in [0.8 L, L]; the Qwen3 series does not state its distribution - taken
    # as the same spread (fixed lengths would keep every closed-loop wave in lockstep, which its TTFTs rule out)
    ratio = 0.8
    wl = Workload(rec["isl"], rec["osl"], concurrency=rec["concurrency"],
                  num_prompts=max(rec["concurrency"], round(prompts_factor * rec["concurrency"])), range_ratio=ratio)

    def run(p: Params) -> tuple[float, float, float]:
        e = estimate_process(facts, arch, fit, gpu, rec["precision"], p, wl)
        return e.ttft_ms, e.tpot_ms, derived_tput(rec, e.ttft_ms, e.tpot_ms)

    return Case(rec, gpu.family, run)


def errors(case: Case, p: Params) -> tuple[float, float, float]:
    """Signed relative errors (predicted / measured - 1) of TTFT, TPOT, tokens/s/GPU."""
    ttft, tpot, tput = case.run(p)
    r = case.rec
    return ttft / r["ttft_ms"]["reported"] - 1, tpot / r["tpot_ms"] - 1, tput / r["output_tok_s_per_gpu"] - 1


TTFT_WEIGHT = 0.5


def loss(cases: list[Case], p: Params) -> float:
    total = 0.0
    for c in cases:
        for e, w in zip(errors(c, p), (TTFT_WEIGHT, 1.0, 1.0), strict=True):
            total += w * math.log(max(1e-3, 1 + e)) ** 2
    return total / max(1, len(cases))


def to_params(x: list[float], names: tuple[str, ...] = NAMES) -> Params:
    """Constants from log values of ``names``; the others keep their start value."""
    vals = asdict(START)
    for n, v in zip(names, x, strict=True):
        lo, hi = BOUNDS[n]
        vals[n] = min(hi, max(lo, math.exp(v)))
    return Params(**vals)


def _nm_step(f: Any, pts: list[list[float]], vals: list[float]) -> tuple[list[list[float]], list[float]]:
    """One Nelder-Mead move on a simplex sorted best first: reflect, expand, contract or shrink."""
    n = len(pts) - 1
    c = [sum(p[j] for p in pts[:-1]) / n for j in range(n)]
    worst = pts[-1]
    xr = [c[j] + (c[j] - worst[j]) for j in range(n)]
    fr = f(xr)
    if fr < vals[0]:
        xe = [c[j] + 2 * (c[j] - worst[j]) for j in range(n)]
        fe = f(xe)
        pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
    elif fr < vals[-2]:
        pts[-1], vals[-1] = xr, fr
    else:
        xc = [c[j] + 0.5 * (worst[j] - c[j]) for j in range(n)]
        fc = f(xc)
        if fc < vals[-1]:
            pts[-1], vals[-1] = xc, fc
        else:
            best = pts[0]
            pts = [best] + [[best[j] + 0.5 * (p[j] - best[j]) for j in range(n)] for p in pts[1:]]
            vals = [vals[0]] + [f(p) for p in pts[1:]]
    return pts, vals


def nelder_mead(f: Any, x0: list[float], step: float = 0.4, iters: int = 160) -> list[float]:
    """Plain Nelder-Mead (no scipy in the dependencies)."""
    n = len(x0)
    pts = [x0] + [[x + (step if i == j else 0.0) for j, x in enumerate(x0)] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts, vals = _nm_step(f, [pts[i] for i in order], [vals[i] for i in order])
        if max(vals) - min(vals) < 1e-5:
            break
    return pts[min(range(n + 1), key=lambda i: vals[i])]


def fit_family(cases: list[Case], iters: int, sample: int, start: Params = START) -> Params:
    """Fit on at most ``sample`` records, spread evenly over the family's (ordered) records."""
    names = NAMES
    if len(cases) > sample:
        cases = [cases[round(i * (len(cases) - 1) / (sample - 1))] for i in range(sample)]
    x0 = [math.log(getattr(start, n)) for n in names]
    return to_params(nelder_mead(lambda x: loss(cases, to_params(x, names)), x0, iters=iters), names)


def fit_all(cases: list[Case], iters: int, sample: int, start: dict[str, Params] | None = None) -> dict[str, Params]:
    fams = sorted({c.family for c in cases})
    return {f: fit_family([c for c in cases if c.family == f], iters, sample, (start or {}).get(f, START))
            for f in fams}


def median_params(fams: dict[str, Params]) -> Params:
    return Params(**{f.name: statistics.median(getattr(p, f.name) for p in fams.values()) for f in fields(Params)})


def summary(errs: list[tuple[float, float, float]]) -> dict[str, dict[str, float]]:
    out = {}
    for i, name in enumerate(("ttft", "tpot", "output_tok_s_per_gpu")):
        a = sorted(abs(e[i]) for e in errs)
        out[name] = {"median": round(statistics.median(a), 3), "p90": round(a[min(len(a) - 1, int(0.9 * len(a)))], 3)}
    return out


#: SLA grid for the recommendation check (ms): every record against every pair
SLA_TTFT = (100, 200, 500, 1000, 2000, 5000, 10000)
SLA_TPOT = (5, 10, 15, 20, 30, 50, 100)


def sla_agreement(held: list[tuple[Case, tuple[float, float, float]]]) -> dict[str, float]:
    """How often held-out predictions agree with the measurements on meeting an SLA.

    ``per_config``: (record, SLA) pairs where "meets" is the same; ``fewest_gpus``: per group of records
    that differ only in GPU count / TP (same model, GPU, lengths, concurrency) and SLA, whether the
    fewest-GPU configuration the predictions pick is the one the measurements pick (or both say none).
    """
    same = total = 0
    groups: dict[tuple[Any, ...], list[tuple[Case, float, float]]] = {}
    for c, (e_ttft, e_tpot, _) in held:
        r = c.rec
        mt, mp = r["ttft_ms"]["reported"], r["tpot_ms"]
        groups.setdefault((r["model"], r["precision"], r["gpu"], r["isl"], r["osl"], r["concurrency"]), []).append(
            (c, mt * (1 + e_ttft), mp * (1 + e_tpot)))
        for t in SLA_TTFT:
            for p in SLA_TPOT:
                total += 1
                same += ((mt <= t and mp <= p) == (mt * (1 + e_ttft) <= t and mp * (1 + e_tpot) <= p))
    pick_same = picks = 0
    for members in groups.values():
        for t in SLA_TTFT:
            for p in SLA_TPOT:
                meas = [c.rec["gpus"] for c, _, _ in members if c.rec["ttft_ms"]["reported"] <= t
                        and c.rec["tpot_ms"] <= p]
                pred = [c.rec["gpus"] for c, pt, pp in members if pt <= t and pp <= p]
                picks += 1
                pick_same += (min(meas, default=0) == min(pred, default=0))
    return {"per_config": round(same / max(1, total), 3), "fewest_gpus": round(pick_same / max(1, picks), 3),
            "cases": total, "groups": picks}


def leave_one_model_out(cases: list[Case], evals: list[Case], iters: int, sample: int, full: dict[str, Params]) \
        -> tuple[list[tuple[Case, tuple[float, float, float]]], dict[str, Any]]:
    """Each model's records predicted with constants fitted on the other models only (started from ``full``)."""
    held: list[tuple[Case, tuple[float, float, float]]] = []
    per_model: dict[str, Any] = {}
    for m in sorted({c.rec["model"] for c in cases}):
        fams = fit_all([c for c in cases if c.rec["model"] != m], iters, sample, full)
        default = median_params(fams)
        errs = [errors(c, fams.get(c.family, default)) for c in evals if c.rec["model"] == m]
        held += [(c, e) for c, e in zip((c for c in evals if c.rec["model"] == m), errs, strict=True)]
        per_model[m] = {"records": len(errs), "calibrated_families": sorted(fams), **summary(errs)}
        print(m, json.dumps(per_model[m]), file=sys.stderr, flush=True)
    return held, per_model


def params_document(fams: dict[str, Params], loo: Any, per_model: Any, sla: Any, insample: Any, records: int,
                    models: int) -> dict[str, Any]:
    """``params.json``: the shipped constants, the default family, and the errors that say how far to trust them."""
    return {
        "procedure": "tools/calibrate_perf.py: per GPU family, Nelder-Mead on log constants minimising squared log "
                     f"errors of TTFT (weight {TTFT_WEIGHT}), TPOT and output tokens/s/GPU over published vLLM "
                     f"serving measurements ({records} records, {models} models); expected_error is "
                     "leave-one-model-out (|predicted/measured - 1|).",
        "families": {f: {k: round(v, 4) for k, v in asdict(p).items()} for f, p in fams.items()},
        "default": {k: round(v, 4) for k, v in asdict(median_params(fams)).items()},
        "expected_error": loo,
        "leave_one_model_out": per_model,
        "sla_agreement": sla,
        "in_sample": insample,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--prompts-factor", type=float, default=4.0, help="prompts x concurrency while fitting")
    ap.add_argument("--iters", type=int, default=120)
    ap.add_argument("--sample", type=int, default=40, help="records per family the optimiser sees")
    ap.add_argument("--ttft-weight", type=float, default=TTFT_WEIGHT, help="weight of TTFT in the loss")
    args = ap.parse_args()
    globals()["TTFT_WEIGHT"] = args.ttft_weight
    records = json.loads((args.data / "calibration.json").read_text())
    cases = [make_case(r, args.data / "configs", args.prompts_factor) for r in records]
    evals = [make_case(r, args.data / "configs", 10.0) for r in records]  # as benchmarked: 10 x concurrency
    full = fit_all(cases, args.iters, args.sample)  # the shipped constants; also the start of each fold
    print("full fit", {f: asdict(p) for f, p in full.items()}, file=sys.stderr, flush=True)
    held, per_model = leave_one_model_out(cases, evals, args.iters, args.sample, full)
    loo, sla = summary([e for _, e in held]), sla_agreement(held)
    insample = summary([errors(c, full[c.family]) for c in evals])
    print("leave-one-model-out", json.dumps(loo), "sla agreement", json.dumps(sla), "in-sample", json.dumps(insample),
          file=sys.stderr)
    out = params_document(full, loo, per_model, sla, insample, len(cases), len(per_model))
    if args.write:
        path = Path(__file__).resolve().parents[1] / "src/vllm_recipes/perf/params.json"
        path.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {path}", file=sys.stderr)
    else:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
