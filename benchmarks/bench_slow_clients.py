"""Slow clients against ``serve`` (issue #28.5): do normal requests still get answered, with a bounded log?

Usage::

    .venv/bin/python benchmarks/bench_slow_clients.py [--slow 1100] [--requests 40] [--hold 45] [--fd-limit 1024]

Starts ``vllm-recipes serve`` on 127.0.0.1 (bundled catalog) with ``ulimit -n --fd-limit``, then:

1. **idle**: ``--requests`` normal page requests, one fresh connection each: p50 / p90 / max;
2. **loaded**: ``--slow`` connections held open by a process of their own (their work must not slow the
   measuring client) - half of them half-open (connected, never
   a byte), half slow-header (a request line, then one header byte every 2 s) - and re-opened as soon as
   the server closes one, for at most ``--hold`` seconds and ``--max-opens`` connections in all; while they
   are held, the same normal requests again: how many were answered 200, p50 / p90 / max;
3. the server's log: lines written over the whole run, and tracebacks among them.

Pass: every loaded request answered 200, loaded p50 within 2x idle p50, fewer than 50 log lines besides
the access lines of the normal requests (whatever the number of slow connections), no traceback. Traffic goes to 127.0.0.1 only and every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PAGE = "/deepseek-ai/DeepSeek-V4.1-Flash"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str, timeout: float = 15.0) -> tuple[int, float]:
    """``GET path`` on a fresh connection: (status, seconds); status 0 when it failed or timed out."""
    t = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        r = conn.getresponse()
        r.read()
        status = r.status
    except (OSError, http.client.HTTPException):
        status = 0
    finally:
        conn.close()
    return status, time.perf_counter() - t


def measure(port: int, n: int) -> tuple[list[float], int]:
    times, ok = [], 0
    for _ in range(n):
        status, dt = get(port, PAGE)
        times.append(dt)
        ok += status == 200
        time.sleep(0.05)
    return times, ok


def fmt(times: list[float]) -> str:
    q = statistics.quantiles(times, n=10)
    return f"p50 {statistics.median(times) * 1000:.1f} ms, p90 {q[8] * 1000:.1f} ms, max {max(times) * 1000:.0f} ms"


class SlowClients:
    """``n`` connections kept open (re-opened when the server closes one), until :meth:`stop`."""

    def __init__(self, port: int, n: int, max_opens: int, stop: Any) -> None:
        self.port, self.n, self.max_opens = port, n, max_opens
        self.socks: list[tuple[socket.socket, bool]] = []
        self.opens = self.refused = self.closed_by_server = 0
        self._stop = stop

    def _open(self, slow_header: bool) -> None:
        if self.opens >= self.max_opens:
            return
        self.opens += 1
        s = socket.socket()
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", self.port))
            if slow_header:
                s.sendall(b"GET " + PAGE.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            s.setblocking(False)
            self.socks.append((s, slow_header))
        except OSError:
            self.refused += 1
            s.close()

    def fill(self) -> None:
        for i in range(self.n):
            self._open(slow_header=i % 2 == 1)

    def run(self, hold: float) -> None:
        """Every 2 s: a byte on each slow-header connection; re-open what the server closed."""
        end = time.monotonic() + hold
        while not self._stop.is_set() and time.monotonic() < end:
            alive = []
            for s, slow in self.socks:
                try:
                    if s.recv(1, socket.MSG_PEEK) == b"":  # closed by the server
                        raise ConnectionResetError
                except BlockingIOError:  # still open, nothing to read: the normal case
                    try:
                        if slow:
                            s.send(b"x")
                        alive.append((s, slow))
                        continue
                    except OSError:
                        pass
                except OSError:
                    pass
                self.closed_by_server += 1
                s.close()
            self.socks = alive
            while len(self.socks) < self.n and self.opens < self.max_opens:
                self._open(slow_header=len(self.socks) % 2 == 1)
            self._stop.wait(2.0)

    def stop(self) -> None:
        for s, _ in self.socks:
            s.close()
        self.socks = []


def hold_slow_clients(port: int, n: int, max_opens: int, hold: float, ready: Any, stop: Any, stats: Any) -> None:
    """In a process of its own (its work must not slow the measuring client): the slow connections."""
    clients = SlowClients(port, n, max_opens, stop)
    clients.fill()
    stats.put(("held", len(clients.socks)))
    ready.set()
    clients.run(hold)
    stats.put(("end", len(clients.socks), clients.opens, clients.refused, clients.closed_by_server))
    clients.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slow", type=int, default=1100, help="slow connections held at once")
    ap.add_argument("--requests", type=int, default=40, help="normal requests per phase")
    ap.add_argument("--hold", type=float, default=45.0, help="seconds the slow connections are held at most")
    ap.add_argument("--max-opens", type=int, default=8000, help="slow connections opened in all, at most")
    ap.add_argument("--fd-limit", type=int, default=1024, help="the server's file-descriptor limit (ulimit -n)")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.slow + 512
    if soft < want:  # this process holds the slow connections
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

    def limit_fds() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (args.fd_limit, max(args.fd_limit, hard)))

    work = Path(tempfile.mkdtemp(prefix="bench-slow-"))
    port = free_port()
    log_path = work / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "vllm_recipes", "serve", "--host", "127.0.0.1", "--port",
                                 str(port), "--log-level", "info"], stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=limit_fds)
    try:
        t0 = time.monotonic()
        while get(port, "/api/health", timeout=2)[0] != 200:
            if proc.poll() is not None or time.monotonic() - t0 > 120:
                print("server did not start:\n" + log_path.read_text())
                return 1
            time.sleep(0.3)
        measure(port, 5)  # warm the page
        idle, idle_ok = measure(port, args.requests)
        ready, stop, stats = multiprocessing.Event(), multiprocessing.Event(), multiprocessing.Queue()
        holder = multiprocessing.Process(target=hold_slow_clients, args=(port, args.slow, args.max_opens, args.hold,
                                                                         ready, stop, stats))
        t = time.perf_counter()
        holder.start()
        ready.wait(120)
        time.sleep(1.0)
        loaded, loaded_ok = measure(port, args.requests)
        stop.set()
        (_, held), (_, held_after, opens, refused, closed) = stats.get(timeout=60), stats.get(timeout=60)
        holder.join(30)
        load_s = time.perf_counter() - t
        time.sleep(1.0)
        after_ok = get(port, PAGE)[0] == 200
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    lines = log_path.read_text(errors="replace").splitlines()
    tracebacks = sum("Traceback" in line for line in lines)
    access = sum(f'"GET {PAGE} HTTP/1.1"' in line or '"GET /api/health' in line for line in lines)
    ratio = statistics.median(loaded) / statistics.median(idle)
    print(f"server: serve on 127.0.0.1 with ulimit -n {args.fd_limit}; page {PAGE}, one fresh connection "
          f"per request")
    print(f"idle:   {idle_ok}/{args.requests} answered 200; {fmt(idle)}")
    print(f"loaded: {args.slow} slow connections asked ({held} held 1 s in, {held_after} at the end; "
          f"{opens} opened in {load_s:.0f} s, {refused} refused, {closed} closed by the server); "
          f"{loaded_ok}/{args.requests} answered 200; {fmt(loaded)}")
    print(f"p50 loaded / idle: {ratio:.2f}; answering after: {after_ok}")
    print(f"server log: {len(lines)} lines, of which {access} access lines of the normal requests; "
          f"{len(lines) - access} others; {tracebacks} tracebacks")
    for line in [x for x in lines if '"GET ' not in x][:12]:
        print("   ", line[:200])
    ok = loaded_ok == args.requests and ratio <= 2.0 and len(lines) - access < 50 and not tracebacks and after_ok
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
