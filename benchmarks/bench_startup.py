"""Server start-up on a large catalog: time to the first 200, time to fully warm (not a test).

Generates a 170-recipe catalog (the build benchmark's generator: clones of the
bundled recipes with their hardware overrides, PD, Mooncake, feature modes and
variants), then, in one run:

* ``serve`` as shipped, twice: ``serve_cold`` with an empty parse cache (the
  first start on a catalog directory ever), then ``serve`` again with the cache the
  first start left (every later start; the cache is content-addressed,
  so an edited recipe is simply parsed again): spawn ``vllm-recipes serve``, poll a recipe page every
  10 ms and record when the address is announced, the first 200, and when
  ``/api/health`` reports the background warm-up done. Live latency of cold
  (never rendered) pages is sampled *during* the warm-up and *after* it: their
  ratio is what the warm-up costs a visitor.
* the baseline (``--baseline``, default on): the previous start-up, which
  pre-rendered every default page and the whole static API before listening.

    .venv/bin/python benchmarks/bench_startup.py [--recipes 170] [--no-baseline] [--json out.json]
    .venv/bin/python benchmarks/bench_startup.py --base-src /tmp/old/src [--repeat 3] [--wait-idle]  # vs another tree

Target (issue 14, C1): first 200 <= 1 s after start on a 170-recipe catalog.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_web import free_port
from catalog_gen import make_catalog  # the shared, varied catalog generator

SERVE = "from vllm_recipes.cli.main import main; main()"
BASELINE = ("import sys, uvicorn; from vllm_recipes.web.app import create_app; "
            "uvicorn.run(create_app(recipes_dir=sys.argv[1], api_jobs=None, build_api_now=True), "
            "host='127.0.0.1', port=int(sys.argv[2]), log_level='warning')")


def first_200(url: str, t0: float, proc: subprocess.Popen[bytes], limit: float = 300) -> float:
    while time.perf_counter() - t0 < limit:
        try:
            if httpx.get(url, timeout=120).status_code == 200:
                return time.perf_counter() - t0
        except httpx.HTTPError:
            if proc.poll() is not None:
                raise SystemExit("server exited during start-up") from None
        time.sleep(0.01)
    raise SystemExit("no 200 in time")


def cold_urls(base: str, catalog_dir: Path, skip: int, n: int) -> list[str]:
    """Pages nobody rendered yet (a non-default hardware of different recipes)."""
    files = sorted((catalog_dir / "models").rglob("*.yaml"))[skip:skip + n]
    urls = []
    for i, f in enumerate(files):
        hf = f"{f.parent.name}/{f.stem}"
        urls.append(f"{base}/{hf}?frontend={'python' if i % 2 else 'rust'}&hardware={('h100', 'h200', 'b200')[i % 3]}")
    return urls


def sample(urls: list[str]) -> list[float]:
    out = []
    with httpx.Client(timeout=120) as c:
        for u in urls:
            t = time.perf_counter()
            c.get(u)
            out.append((time.perf_counter() - t) * 1000)
    return out


def stop_serve(proc: subprocess.Popen[bytes]) -> None:
    """Stop a ``serve`` and everything it started (an older tree's warm-up child could outlive it)."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def spawn_serve(catalog_dir: Path, cache: Path, src: Path | None = None
                ) -> tuple[subprocess.Popen[bytes], str, float, float]:
    """``serve`` started (from ``src``, another source tree, if given): process, base URL, start, announced."""
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "VLLM_RECIPES_CACHE_DIR": str(cache)}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "serve", "--recipes-dir", str(catalog_dir), "--port",
                             str(port), "--log-level", "warning"], stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    assert proc.stderr is not None
    proc.stderr.readline()
    return proc, f"http://127.0.0.1:{port}", t0, time.perf_counter() - t0


def run_serve(catalog_dir: Path, page: str, cache: Path) -> dict[str, Any]:
    proc, base, t0, announced = spawn_serve(catalog_dir, cache)
    try:
        first = first_200(base + page, t0, proc)
        during = sample(cold_urls(base, catalog_dir, 10, 12))
        with httpx.Client(timeout=10) as c:
            while not (h := c.get(base + "/api/health").json())["warm"]:
                time.sleep(0.05)
        warm = time.perf_counter() - t0
        after = sample(cold_urls(base, catalog_dir, 40, 12))
        return {"announced_s": round(announced, 3), "first_200_s": round(first, 3), "fully_warm_s": round(warm, 3),
                "warm_error": h["warm_error"], "cold_page_ms_during_warmup": round(statistics.median(during), 1),
                "cold_page_ms_after_warmup": round(statistics.median(after), 1),
                "during_over_after": round(statistics.median(during) / statistics.median(after), 2)}
    finally:
        stop_serve(proc)


def first_start(catalog_dir: Path, page: str, cache: Path, src: Path | None) -> tuple[float, float]:
    """(announced, first 200) of one ``serve`` start, from ``src`` (another source tree) or this one."""
    proc, base, t0, announced = spawn_serve(catalog_dir, cache, src)
    try:
        return announced, first_200(base + page, t0, proc)
    finally:
        stop_serve(proc)


def _cpu_jiffies() -> tuple[int, int]:
    """(all, idle) jiffies of the machine so far (Linux ``/proc/stat``)."""
    with open("/proc/stat") as fh:
        values = [int(v) for v in fh.readline().split()[1:]]
    return sum(values), values[3] + values[4]


def wait_until_idle(share: float = 0.9, window: float = 0.4, limit: float = 120.0) -> None:
    """Wait (at most ``limit`` s) until the machine's cores were ``share`` idle over ``window`` s.

    On a shared machine another job's burst makes one start look twice as
    slow; starting each measured run in a quiet moment keeps the comparison
    about the two trees (``--wait-idle``; Linux only, else no wait).
    """
    if not os.path.exists("/proc/stat"):
        return
    end = time.monotonic() + limit
    while time.monotonic() < end:
        a = _cpu_jiffies()
        time.sleep(window)
        b = _cpu_jiffies()
        if (b[1] - a[1]) / max(1, b[0] - a[0]) >= share:
            return


def side_by_side(catalog_dir: Path, page: str, tmp: Path, base_src: Path, repeat: int,
                 wait_idle: bool = False) -> dict[str, Any]:
    """First and later starts of this tree and of ``base_src``, interleaved: medians and their ratio."""
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in ("cold", "warm", "base_cold", "base_warm")}
    for i in range(repeat):
        for tag, src in (("", None), ("base_", base_src)):
            cache = tmp / f"sbs-{tag}{i}"
            for kind in ("cold", "warm"):
                if wait_idle:
                    wait_until_idle()
                runs[f"{tag}{kind}"].append(first_start(catalog_dir, page, cache, src))
    out: dict[str, Any] = {}
    for k, v in runs.items():
        out[k] = {"announced_s": round(statistics.median(a for a, _ in v), 3),
                  "first_200_s": round(statistics.median(f for _, f in v), 3),
                  "first_200_all_s": [round(f, 3) for _, f in v]}
    for k in ("cold", "warm"):
        out[f"{k}_over_base"] = round(out[k]["first_200_s"] / out[f"base_{k}"]["first_200_s"], 2)
    return out


def run_baseline(catalog_dir: Path, page: str) -> dict[str, Any]:
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", BASELINE, str(catalog_dir), str(port)])
    try:
        return {"first_200_s": round(first_200(f"http://127.0.0.1:{port}{page}", t0, proc), 3)}
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def phases(catalog_dir: Path, cache: Path) -> dict[str, float]:
    """Where the time before the first 200 goes, measured in a fresh interpreter."""
    code = ("import time, json, sys; t0 = time.perf_counter(); import vllm_recipes.cli.main; "
            "from vllm_recipes.catalog import load_catalog; t1 = time.perf_counter(); "
            "c = load_catalog(sys.argv[1]); t2 = time.perf_counter(); "
            "import uvicorn; from vllm_recipes.web import create_app; t3 = time.perf_counter(); "
            "create_app(c, warm_in_background=True); t4 = time.perf_counter(); "
            "print(json.dumps({'cli_import_s': t1 - t0, 'load_catalog_s': t2 - t1, 'web_import_s': t3 - t2, "
            "'create_app_s': t4 - t3}))")
    out = subprocess.run([sys.executable, "-c", code, str(catalog_dir)], capture_output=True, text=True, check=True,
                         env={**os.environ, "VLLM_RECIPES_CACHE_DIR": str(cache)})
    return {k: round(v, 3) for k, v in json.loads(out.stdout).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipes", type=int, default=170)
    ap.add_argument("--no-baseline", action="store_true", help="skip the (slow) pre-render-everything baseline")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--base-src", type=Path, metavar="SRC",
                    help="also start serve from another source tree (e.g. a worktree's src/ at an older commit), "
                         "interleaved with this one, and report the ratios")
    ap.add_argument("--repeat", type=int, default=3, help="starts per tree with --base-src")
    ap.add_argument("--wait-idle", action="store_true",
                    help="with --base-src: begin each start only once the machine's cores were idle for 0.4 s")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        catalog_dir = make_catalog(Path(tmp), args.recipes)
        first = sorted((catalog_dir / "models").rglob("*.yaml"))[0]
        page = f"/{first.parent.name}/{first.stem}"
        cache = Path(tmp) / "cache"
        out: dict[str, Any] = {"recipes": args.recipes, "page": page}
        if args.base_src is not None:
            out["side_by_side"] = side_by_side(catalog_dir, page, Path(tmp), args.base_src.resolve(), args.repeat,
                                               args.wait_idle)
            print(json.dumps(out, indent=2))
            return
        # first start ever: nothing in the parse cache (what a new catalog directory costs once)
        out["phases_cold"] = phases(catalog_dir, Path(tmp) / "cache-cold")
        out["serve_cold"] = run_serve(catalog_dir, page, cache)
        # every later start: the parse cache holds the catalog (content-addressed, so never stale)
        out["phases"] = phases(catalog_dir, cache)
        out["serve"] = run_serve(catalog_dir, page, cache)
        if not args.no_baseline:
            out["baseline"] = run_baseline(catalog_dir, page)
            out["baseline_over_serve"] = round(out["baseline"]["first_200_s"] / out["serve"]["first_200_s"], 1)
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
