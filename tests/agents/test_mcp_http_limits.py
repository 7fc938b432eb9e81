"""``mcp --http`` serves with ``serve``'s slow-client limits (``httplimits.server_settings``, one copy).

Before, it ran uvicorn's defaults: a client that never finished its request head held the connection (and a
descriptor) for as long as it liked, connections were not capped, heads were bound at h11's 16 KiB, and
``X-Forwarded-*`` from a loopback peer was trusted. Real sockets, a real ``mcp --http`` process."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import Result

from vllm_recipes.cli import mcp_cmds  # noqa: F401  (registers `mcp`)
from vllm_recipes.httplimits import HEADER_TIMEOUT_S, server_settings

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture()
def mcp_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-m", "vllm_recipes", "mcp", "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "mcp --http did not start"
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_half_sent_request_head_is_closed_after_the_header_timeout(
        mcp_port: int, half_head_closed: Callable[[int, bytes, float], tuple[bool, float]]) -> None:
    closed, took = half_head_closed(mcp_port, b"POST /mcp HTTP/1.1", HEADER_TIMEOUT_S + 10)
    assert closed, f"the connection was still open after {took:.1f} s"
    assert HEADER_TIMEOUT_S - 1 < took < HEADER_TIMEOUT_S + 5


def test_mcp_http_runs_with_the_settings_of_serve(run_cli: Callable[..., Result],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw))
    res = run_cli("mcp", "--http", "8765")
    assert res.exit_code == 0, res.output
    for key, value in server_settings().items():
        if key == "http":  # (a new partial each time: compare what it carries)
            limits = seen[key].keywords["limits"]
            assert (seen[key].func, limits.header_timeout, limits.max_waiting) == (value.func, HEADER_TIMEOUT_S, None)
        else:
            assert seen[key] == value, key
    assert seen["proxy_headers"] is False and (seen["host"], seen["port"]) == ("127.0.0.1", 8765)


def test_mcp_http_logs_a_line_not_a_traceback_per_failed_accept(run_cli: Callable[..., Result],
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Out of descriptors, asyncio logged a traceback per failed ``accept()``; like serve, one line now."""
    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    assert run_cli("mcp", "--http", "8765").exit_code == 0
    [app] = apps

    async def start_fail_accepts_stop() -> None:  # (what uvicorn does around the app, and an EMFILE storm)
        inbox: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        inbox.put_nowait({"type": "lifespan.startup"})
        task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                                       inbox.get, outbox.put))
        assert (await outbox.get())["type"] == "lifespan.startup.complete"
        loop = asyncio.get_running_loop()
        for _ in range(5):
            loop.call_exception_handler({"message": "socket.accept() out of system resource",
                                         "exception": OSError(errno.EMFILE, "Too many open files")})
        inbox.put_nowait({"type": "lifespan.shutdown"})
        assert (await outbox.get())["type"] == "lifespan.shutdown.complete"
        await task

    with caplog.at_level(logging.ERROR):
        asyncio.run(start_fail_accepts_stop())
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage().startswith("cannot accept connections: Too many open files (1 failed accepts)")
    assert record.exc_info is None
