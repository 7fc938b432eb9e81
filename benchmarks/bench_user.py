"""The user-visible figures, for this source tree and (optionally) another one, same run (not a test).

Each figure is the wall time a user waits, measured in a fresh process:

* ``serve_cold_s`` / ``serve_warm_s``: ``serve`` spawned until a recipe page
  answers 200, with an empty cache directory, then again with the cache the
  first start left;
* ``new_selection_ms``: a recipe page for a selection nobody asked for yet
  (the server side of a click in the builder): the start page's hardware pills,
  median of up to 9. Every tree knows ``hardware`` and lists the same profiles, so
  each click is a new selection for each tree (a parameter one tree ignores
  would fall back to a page it has already rendered);
* ``command_s``: ``vllm-recipes command MODEL``;
* ``validate_s``: ``vllm-recipes validate`` of the whole catalog, empty cache;
* ``build_api_s``: ``vllm-recipes build-api OUT`` of the whole catalog, empty cache;
* ``*_cpu_s``: the CPU seconds of those commands and their workers (what a busy
  shared machine distorts least).

    .venv/bin/python benchmarks/bench_user.py [--recipes-dir DIR] [--base-src /tmp/base/src]
        [--also main=/path/to/main/src] [--repeat 1]

Runs alternate between the trees so that a busy neighbour on a shared machine
slows both alike; the median of ``--repeat`` runs is reported.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

CLI = "from vllm_recipes.cli.main import main; main()"
HARDWARE_PILL = re.compile(r'<a class="pill[^"]*" href="([^"]+[?&]hardware=[^"]+)"')
HERE = Path(__file__).resolve().parent.parent / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_for(src: Path, cache: Path) -> dict[str, str]:
    """An installed tool's environment: bytecode is written and reused, as after ``pip install``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(src), "VLLM_RECIPES_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(src: Path, cache: Path, *args: str, check: bool = True) -> tuple[float, float]:
    """(wall s, CPU s of the command and its workers): CPU time barely moves on a busy machine."""
    c0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", CLI, *args], env=env_for(src, cache), check=check,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, _children_cpu() - c0


def serve(src: Path, cache: Path, rdir: list[str], page: str, clicks: int) -> tuple[float, float]:
    """(first 200 s, median ms of a new selection's page: ``clicks`` of the first page's hardware pills)."""
    port = free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CLI, "serve", *rdir, "--port", str(port), "--log-level",
                             "warning"], env=env_for(src, cache), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                got = httpx.get(base + page, timeout=60)
                if got.status_code == 200:
                    break
            if proc.poll() is not None or time.perf_counter() - t0 > 300:
                raise SystemExit("serve did not answer")
            time.sleep(0.01)
        first = time.perf_counter() - t0
        pills = [u for u in dict.fromkeys(html.unescape(h) for h in HARDWARE_PILL.findall(got.text)) if u != page]
        ms = []
        with httpx.Client(timeout=60) as c:
            for url in pills[:clicks]:
                t = time.perf_counter()
                assert c.get(base + url).status_code == 200, url
                ms.append((time.perf_counter() - t) * 1000)
        return first, statistics.median(ms) if ms else float("nan")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def one_run(src: Path, rdir: list[str], model: str, tmp: Path) -> dict[str, float]:
    cache = Path(tempfile.mkdtemp(dir=tmp))
    page = f"/{model}"
    out: dict[str, float] = {}
    out["serve_cold_s"], _ = serve(src, cache, rdir, page, 0)
    out["serve_warm_s"], out["new_selection_ms"] = serve(src, cache, rdir, page, 9)
    out["command_s"], out["command_cpu_s"] = timed(src, cache, "command", model, *rdir)
    out["validate_s"], out["validate_cpu_s"] = timed(src, Path(tempfile.mkdtemp(dir=tmp)), "validate", *rdir,
                                                     check=False)  # (its exit status reports findings)
    build_out = Path(tempfile.mkdtemp(dir=tmp)) / "public"
    out["build_api_s"], out["build_api_cpu_s"] = timed(src, Path(tempfile.mkdtemp(dir=tmp)), "build-api",
                                                       str(build_out), *rdir)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipes-dir", help="catalog to measure (default: the bundled one)")
    ap.add_argument("--model", help="recipe for command and the pages (default: the first in models/)")
    ap.add_argument("--base-src", type=Path, help="another tree's src/ to measure in the same run")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=SRC",
                    help="more trees to measure in the same run (repeatable)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    rdir = ["--recipes-dir", args.recipes_dir] if args.recipes_dir else []
    root = Path(args.recipes_dir) if args.recipes_dir else HERE / "vllm_recipes" / "data"
    model = args.model or "/".join(sorted((root / "models").rglob("*.yaml"))[0].with_suffix("").parts[-2:])
    trees = {"this": HERE, **({"base": args.base_src.resolve()} if args.base_src else {}),
             **{n: Path(p).resolve() for n, _, p in (a.partition("=") for a in args.also)}}
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
    for src in trees.values():  # compile every module once, as an install does, so no run pays for it
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
    with tempfile.TemporaryDirectory() as t:
        for _ in range(args.repeat):
            for name, src in trees.items():
                runs[name].append(one_run(src, rdir, model, Path(t)))
    result = {name: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]} for name, rs in runs.items()}
    if "base" in result:
        result["this_over_base"] = {k: round(result["this"][k] / result["base"][k], 2) for k in result["this"]}
    print(json.dumps({"catalog": str(root), "model": model, **result}, indent=1))


if __name__ == "__main__":
    main()
