"""Website and live-API benchmark (not a test): latency, throughput, soak, page weight.

Starts ``uvicorn`` on 127.0.0.1 in a subprocess (so client and server do not
share a GIL) and drives it with httpx async clients. Every loop is bounded in
count and time and talks to loopback only.

    .venv/bin/python benchmarks/bench_web.py               # quick run (soak 10 s)
    .venv/bin/python benchmarks/bench_web.py --soak 60     # 50 clients x 60 s
    .venv/bin/python benchmarks/bench_web.py --json out.json

Targets (issue #5): recipe page weight <= 100 KB (HTML + CSS + JS), page server
time p50 <= 10 ms, static JSON >= 2,000 req/s, p99 <= 50 ms, soak zero errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RECIPE = "/deepseek-ai/DeepSeek-V4.1-Flash"
RESOLVE = "/api/resolve?model=deepseek-ai/DeepSeek-V4.1-Flash"
STATIC = ["/models.json", "/taxonomy.json", "/deepseek-ai/DeepSeek-V4.1-Flash.json",
          "/deepseek-ai/DeepSeek-V4.1-Flash/hw/b200.json", "/strategies.json"]
VARIANT_QUERIES = ["", "hardware=h100", "hardware=mi355x", "strategy=pd_cluster", "nodes=2", "frontend=python",
                   "kv_offload=simple", "kv_offload=kv_store_centralized_mooncake", "hardware=b200&strategy=single_node_dep",
                   "features=tool_calling,reasoning", "advanced=max_seqs_256", "hardware=gb300&nodes=3"]

COLD_HW = ["h100", "h200", "b200", "b300", "gb300", "mi300x", "mi325x", "mi350x", "mi355x", "gb200"]
COLD_STRATEGIES = ["single_node_tp", "single_node_tep", "single_node_dep", "pd_cluster"]


@dataclass
class Result:
    name: str
    clients: int
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    server_p50_ms: float | None = None
    server_p99_ms: float | None = None
    notes: dict[str, object] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        srv = f"  server p50 {self.server_p50_ms:.2f} ms p99 {self.server_p99_ms:.2f} ms" \
            if self.server_p50_ms is not None else ""
        return (f"{self.name:<40} c={self.clients:<3} n={self.requests:<6} err={self.errors:<3} "
                f"{self.rps:8.0f} req/s  p50 {self.p50_ms:6.2f} ms  p99 {self.p99_ms:7.2f} ms{srv}")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_server(port: int, app: str = "create_app(api_jobs=None, build_api_now=True)") -> subprocess.Popen[bytes]:
    """uvicorn in a subprocess serving ``app`` (an expression over ``create_app``); returns once it answers."""
    code = ("import uvicorn; from vllm_recipes.web.app import create_app; "
            f"uvicorn.run({app}, host='127.0.0.1', port={port}, "
            "log_level='warning', access_log=False)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/robots.txt", timeout=1)
            return proc
        except httpx.HTTPError:
            if proc.poll() is not None:
                raise SystemExit("server exited during startup") from None
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not start")


def server_ms(r: httpx.Response) -> float | None:
    m = re.search(r"dur=([\d.]+)", r.headers.get("server-timing", ""))
    return float(m.group(1)) if m else None


class RawClient:
    """A minimal HTTP/1.1 keep-alive GET client on asyncio streams.

    httpx tops out near 1,000 requests/s per process on this machine, well below
    what the server does; the raw client measures the server, httpx a real client.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, float | None]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n".encode())
        await self.writer.drain()
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = head.split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, srv = 0, None
        for line in lines[1:]:
            k, _, v = line.partition(":")
            k = k.strip().lower()
            if k == "content-length":
                length = int(v)
            elif k == "server-timing":
                m = re.search(r"dur=([\d.]+)", v)
                srv = float(m.group(1)) if m else None
        if length:
            await self.reader.readexactly(length)
        return status, srv

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def run_load(base: str, name: str, paths: list[str], clients: int, total: int | None,
                   seconds: float | None, expect: int = 200, raw: bool = False) -> Result:
    """``clients`` workers (one connection each) cycling through ``paths`` until ``total``
    requests or ``seconds`` elapse; ``raw`` uses :class:`RawClient` instead of httpx."""
    lat: list[float] = []
    srv: list[float] = []
    errors = 0
    count = 0
    stop_at = time.perf_counter() + seconds if seconds else None
    host, port = base.removeprefix("http://").split(":")

    async def worker(wid: int) -> None:
        nonlocal errors, count
        client: RawClient | httpx.AsyncClient = RawClient(host, int(port)) if raw else \
            httpx.AsyncClient(base_url=base, timeout=30, limits=httpx.Limits(max_connections=1))
        i = wid
        try:
            while True:
                if total is not None and count >= total:
                    return
                if stop_at is not None and time.perf_counter() >= stop_at:
                    return
                count += 1
                path = paths[i % len(paths)]
                i += clients
                t0 = time.perf_counter()
                try:
                    if isinstance(client, RawClient):
                        status, s = await client.get(path)
                    else:
                        r = await client.get(path)
                        status, s = r.status_code, server_ms(r)
                    ok = status == expect
                    if s is not None:
                        srv.append(s)
                except (httpx.HTTPError, OSError, asyncio.IncompleteReadError, ValueError):
                    ok = False
                    if isinstance(client, RawClient):
                        await client.close()
                        client = RawClient(host, int(port))
                lat.append((time.perf_counter() - t0) * 1000)
                if not ok:
                    errors += 1
        finally:
            if isinstance(client, RawClient):
                await client.close()
            else:
                await client.aclose()

    t_start = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(clients)))
    elapsed = time.perf_counter() - t_start
    label = name + (" [raw]" if raw else " [httpx]")
    return Result(label, clients, len(lat), errors, elapsed, pct(lat, 50), pct(lat, 99),
                  pct(srv, 50) if srv else None, pct(srv, 99) if srv else None)


def wire_bytes(url: str, encoding: str) -> int:
    """Bytes on the wire for ``url`` with ``Accept-Encoding: encoding`` (not decoded)."""
    with httpx.stream("GET", url, headers={"Accept-Encoding": encoding}, timeout=10) as r:
        return sum(len(chunk) for chunk in r.iter_raw())


def page_weight(base: str) -> dict[str, int]:
    html = httpx.get(base + RECIPE, timeout=10)
    assets = re.findall(r'(?:href|src)="(/static/[^"?]+)', html.text)
    sizes = {"html": len(html.content)}
    for a in dict.fromkeys(assets):
        sizes[a] = len(httpx.get(base + a, timeout=10).content)
    sizes["total"] = sum(sizes.values())
    for enc in ("gzip", "br"):
        sizes[f"total_{enc}"] = sum(wire_bytes(base + p, enc) for p in [RECIPE, *dict.fromkeys(assets)])
    return sizes


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    port = free_port()
    proc = start_server(port)
    base = f"http://127.0.0.1:{port}"
    results: list[Result] = []
    try:
        weight = page_weight(base)
        varied = [f"{RECIPE}?{q}" if q else RECIPE for q in VARIANT_QUERIES]
        # warm-up: fill the caches the way a real visitor mix would
        await run_load(base, "warm-up", [*varied, RESOLVE, *STATIC], 4, 200, None)
        n = args.requests
        cold = [f"{RECIPE}?hardware={hw}&strategy={st}&frontend={fe}" for hw in COLD_HW for st in COLD_STRATEGIES
                for fe in ("python", "rust")]
        results.append(await run_load(base, f"recipe page (cold, {len(cold)} distinct)", cold, 1, len(cold), None))
        resolves = [RESOLVE + ("&" + q if q else "") for q in VARIANT_QUERIES]
        fragments = [p.replace("Flash", "Flash/builder", 1) for p in varied]
        for raw in (False, True):
            results.append(await run_load(base, "recipe page (same URL)", [RECIPE], 1, n, None, raw=raw))
            results.append(await run_load(base, "recipe page (12 selections)", varied, 1, n, None, raw=raw))
            results.append(await run_load(base, "recipe page (12 selections)", varied, 50, n * 5, None, raw=raw))
            results.append(await run_load(base, "builder fragment (12 sel.)", fragments, 50, n * 5, None, raw=raw))
            results.append(await run_load(base, "/api/resolve", resolves, 1, n, None, raw=raw))
            results.append(await run_load(base, "/api/resolve", resolves, 50, n * 5, None, raw=raw))
            results.append(await run_load(base, "static JSON", STATIC, 1, n, None, raw=raw))
            results.append(await run_load(base, "static JSON", STATIC, 50, n * 10, None, raw=raw))
        mixed = varied + resolves + STATIC + ["/", "/browse", "/api/search.json", "/models.json"]
        results.append(await run_load(base, f"soak mixed ({args.soak:.0f} s)", mixed, 50, None, args.soak))
        results.append(await run_load(base, f"soak mixed ({args.soak:.0f} s)", mixed, 50, None, args.soak, raw=True))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {"page_weight_bytes": weight, "results": [asdict(r) | {"rps": r.rps} for r in results],
            "lines": [r.line() for r in results]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=400, help="requests per single-client phase (default 400)")
    ap.add_argument("--soak", type=float, default=10.0, help="seconds of the 50-client soak phase (default 10)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = ap.parse_args()
    if args.requests < 1 or args.soak <= 0 or args.soak > 3600:
        ap.error("requests must be >= 1 and 0 < soak <= 3600")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    out = asyncio.run(main_async(args))
    w = out["page_weight_bytes"]
    assert isinstance(w, dict)
    print(f"recipe page weight: {w['total'] / 1024:.1f} KB uncompressed, {w['total_gzip'] / 1024:.1f} KB gzip, "
          f"{w['total_br'] / 1024:.1f} KB brotli "
          f"(" + ", ".join(f"{k} {v / 1024:.1f} KB" for k, v in w.items() if not k.startswith("total")) + ")")
    for line in out["lines"]:  # type: ignore[union-attr]
        print(line)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    errors = sum(r["errors"] for r in out["results"])  # type: ignore[index,union-attr]
    print(f"errors: {errors}")


if __name__ == "__main__":
    main()
