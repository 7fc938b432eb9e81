"""The live server under hostile requests (not run in CI; tests/web/test_web_hardening.py is the bounded version).

Usage::

    .venv/bin/python tools/fuzz_server.py [--urls 10000] [--idle 200] [--seed 15]

Starts ``vllm-recipes serve`` on a copy of the bundled catalog that also holds
recipes failing validation, with a secret file inside the recipes directory
(not a catalog file) and one beside it, then:

1. sends ``--urls`` fuzzed URLs and query strings (huge values, ``%00``,
   repeated params, traversal forms; ``tools/fuzzlib.py``) and counts answers
   >= 500 and answers containing a secret (both must be 0);
2. opens ``--idle`` idle half-open connections (a request line and no end) and
   times normal requests from another client meanwhile;
3. sends a 100 KB URL and a query of 10,000 parameters (414/400 expected).
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzzlib

from vllm_recipes.catalog import BUNDLED_DIR

SECRET = "CANARY-4b1d-outside-the-catalog"


def make_dir(work: Path) -> tuple[Path, list[str]]:
    root = work / "recipes"
    shutil.copytree(BUNDLED_DIR / "models", root / "models")
    seed = yaml.safe_load((BUNDLED_DIR / "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml").read_text())
    evil = root / "models" / "evil"
    evil.mkdir()
    for name, change in {"Overrides": ("strategy_overrides", ["x"]), "Strategies": ("compatible_strategies", [1, {}]),
                         "Big": ("hardware_overrides", {"h200": {"tp": 2 ** 70}})}.items():
        d = dict(seed)
        d[change[0]] = change[1]
        (evil / f"{name}.yaml").write_text(yaml.safe_dump(d, sort_keys=False))
    (root / "secret.txt").write_text(SECRET)
    (work / "secret.txt").write_text(SECRET)
    (work / "secret.json").write_text(f'{{"s": "{SECRET}"}}')
    ids = ["deepseek-ai/DeepSeek-V4.1-Flash", "deepseek-ai/DeepSeek-V4-Flash", "evil/Overrides", "evil/Big"]
    return root, ids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", type=int, default=10_000)
    ap.add_argument("--idle", type=int, default=200)
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fuzz-server-"))
    root, ids = make_dir(work)
    port = free_port()
    log = open(work / "server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "vllm_recipes", "serve", "--port", str(port), "--recipes-dir",
                             str(root), "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    bad = 0
    try:
        t0 = time.monotonic()
        while True:
            try:
                if httpx.get(url + "/robots.txt", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - t0 > 120 or proc.poll() is not None:
                print("server did not start")
                return 1
            time.sleep(0.2)
        rng = random.Random(args.seed)
        statuses: dict[int, int] = {}
        leaks = errors5 = 0
        worst: list[str] = []
        t = time.perf_counter()
        with httpx.Client(base_url=url, timeout=30) as client:
            for _ in range(args.urls):
                u = fuzzlib.fuzz_url(rng, ids)
                try:
                    r = client.get(u)
                    status, body = r.status_code, r.text
                except httpx.InvalidURL:
                    status, body = fuzzlib.raw_status(port, u), ""
                statuses[status] = statuses.get(status, 0) + 1
                if status >= 500 or status == 0:
                    errors5 += 1
                    worst.append(f"{status} {u[:200]}")
                if SECRET in body:
                    leaks += 1
                    worst.append(f"LEAK {u[:200]}")
        dt = time.perf_counter() - t
        print(f"fuzzed URLs: {args.urls} in {dt:.1f} s; statuses {dict(sorted(statuses.items()))}")
        print(f"  answers >= 500 (or no answer): {errors5}; answers containing a secret: {leaks}")
        for w in worst[:10]:
            print("   ", w)
        bad += errors5 + leaks

        base = []
        for _ in range(20):
            t = time.perf_counter()
            httpx.get(url + "/deepseek-ai/DeepSeek-V4.1-Flash", timeout=30)
            base.append(time.perf_counter() - t)
        socks = []
        for _ in range(args.idle):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /deepseek-ai HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        during, ok = [], 0
        for _ in range(20):
            t = time.perf_counter()
            r = httpx.get(url + "/deepseek-ai/DeepSeek-V4.1-Flash", timeout=30)
            during.append(time.perf_counter() - t)
            ok += r.status_code == 200
        for s in socks:
            s.close()
        med = sorted(base)[len(base) // 2] * 1000
        med2 = sorted(during)[len(during) // 2] * 1000
        print(f"{args.idle} idle half-open connections: {ok}/20 other requests answered 200; median page "
              f"{med2:.1f} ms with them vs {med:.1f} ms without (ratio {med2 / med:.2f}), max {max(during) * 1000:.0f} ms")
        bad += 20 - ok

        big = fuzzlib.raw_status(port, "/" + "a" * 100_000)
        bigq = fuzzlib.raw_status(port, "/deepseek-ai/DeepSeek-V4.1-Flash?q=" + "a" * 100_000)
        many = fuzzlib.raw_status(port, "/deepseek-ai/DeepSeek-V4.1-Flash?" + "&".join(f"p{i}=1" for i in range(10_000)))
        print(f"100 KB path -> {big}; 100 KB query -> {bigq}; 10,000 query params -> {many}")
        bad += sum(s not in (400, 414) for s in (big, bigq, many))
        alive = httpx.get(url + "/robots.txt", timeout=10).status_code == 200
        print(f"server still answering: {alive}")
        bad += not alive
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
        tail = (work / "server.log").read_text(errors="replace")
        print(f"server log: {tail.count('Traceback')} tracebacks; "
              f"{tail.count('skipping')} 'skipping' lines at start")
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
