"""Connections that never finish a request head are evicted oldest first (issue #28.5, round 2).

``benchmarks/bench_slow_clients.py`` measured the server with 1,100 slow connections and
``ulimit -n 1024``: the median normal request was fine but the p90 was 2.4 s and the slowest 9.5 s,
because once the descriptors ran out a new connection waited in the kernel's backlog until a head
timeout freed one (and the accept loop failed ~4,000 times a second meanwhile). Now, past a bound of
connections waiting for their head, the server closes the oldest such connection as a new one arrives,
so the descriptors never run out and a normal client is accepted at once. Real sockets, a real uvicorn.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from vllm_recipes.httplimits import server_config


def _hello(_request: object) -> PlainTextResponse:
    return PlainTextResponse("hello")


@pytest.fixture()
def port() -> Iterator[int]:
    app = Starlette(routes=[Route("/", _hello)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(server_config(app, header_timeout=30.0, max_waiting=8, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.05)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(10)
    sock.close()


def _closed_by_server(s: socket.socket, wait: float) -> bool:
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def _get(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := c.recv(4096):
            data += chunk
        return data


def test_the_oldest_waiting_connections_are_closed_past_the_bound(port: int) -> None:
    held = []
    for i in range(14):  # half send nothing, half a request line and part of a header
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 2:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        held.append(s)
        time.sleep(0.02)  # (accepted in this order)
    try:
        time.sleep(0.5)
        # 14 waiting, 8 allowed: the 6 oldest are closed long before the 30 s head timeout; the rest stay
        assert [_closed_by_server(s, 2.0) for s in held[:6]] == [True] * 6
        assert not any(_closed_by_server(s, 0.1) for s in held[6:])
        assert _get(port).startswith(b"HTTP/1.1 200")  # a normal client: evicts the oldest, then is answered
    finally:
        for s in held:
            s.close()


def _answer(s: socket.socket) -> bytes:
    """One whole keep-alive answer (head and the 5-byte body)."""
    data = b""
    while not data.endswith(b"hello") and (chunk := s.recv(4096)):
        data += chunk
    return data


def test_a_request_in_progress_is_never_evicted(port: int) -> None:
    """Only connections waiting for a head count: finished heads and keep-alive answers are not touched."""
    keep = socket.create_connection(("127.0.0.1", port), timeout=5)
    keep.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert _answer(keep).startswith(b"HTTP/1.1 200")
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(7)]
    try:
        time.sleep(0.3)  # 8 waiting (keep, idle after its answer, and 7 new): at the bound, nothing closed
        keep.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _answer(keep).startswith(b"HTTP/1.1 200")
    finally:
        keep.close()
        for s in held:
            s.close()
