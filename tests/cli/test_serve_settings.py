"""``serve`` runs uvicorn with the same settings in one process and with ``--workers``/``--reload``
(``httplimits.server_settings``, one copy). Before, the worker processes kept the default request-head
timeout whatever ``--header-timeout`` said, and trusted forwarded headers the one-process server refuses."""

from __future__ import annotations

import gc
import os
import pickle
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import Result

from vllm_recipes.httplimits import server_settings

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _same(settings: dict[str, Any], got: Callable[[str], Any], header_timeout: float) -> None:
    for key, value in settings.items():
        if key == "http":  # (a new partial each time: compare what it carries)
            limits = got(key).keywords["limits"]
            assert (got(key).func, limits.header_timeout, limits.max_waiting) == (value.func, header_timeout, None)
        else:
            assert got(key) == value, key


def test_the_settings_reach_worker_processes_whole() -> None:
    """A ``--workers`` process gets the settings pickled (uvicorn spawns it)."""
    settings = pickle.loads(pickle.dumps(server_settings(header_timeout=3.0)))
    _same(server_settings(), settings.__getitem__, 3.0)


@pytest.mark.parametrize("mode", [["--workers", "2"], ["--reload"], []])
def test_every_way_of_serving_has_the_same_settings(run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch,
                                                   mode: list[str]) -> None:
    seen: dict[str, Any] = {}

    class Server:  # the one-process path: uvicorn.Server(config).run(sockets=...)
        def __init__(self, config: uvicorn.Config) -> None:
            seen.update(vars(config))

        def run(self, sockets: list[Any]) -> None:
            sockets[0].close()

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw))
    monkeypatch.setattr(uvicorn, "Server", Server)
    monkeypatch.setattr("vllm_recipes.web.create_app", lambda *a, **kw: object())
    monkeypatch.setattr(gc, "freeze", lambda: None)
    res = run_cli("serve", "--port", "0", "--header-timeout", "3", "--log-level", "warning", *mode)
    assert res.exit_code == 0, res.output
    _same(server_settings(), seen.__getitem__, 3.0)
    assert seen["log_level"] == "warning"


def test_the_header_timeout_option_defaults_to_the_servers_timeout() -> None:
    """``--header-timeout``'s default is written out (importing ``httplimits`` would import uvicorn's protocol
    for ``--help``, ~130 ms): it must stay the server's."""
    from vllm_recipes.cli.web_cmds import serve_cmd
    from vllm_recipes.httplimits import HEADER_TIMEOUT_S

    (option,) = [p for p in serve_cmd.params if p.name == "header_timeout"]
    assert option.default == HEADER_TIMEOUT_S


def test_worker_processes_close_a_half_sent_head_after_the_header_timeout(
        tmp_path: Path, half_head_closed: Callable[[int, bytes, float], tuple[bool, float]]) -> None:
    """A real ``serve --workers 2 --header-timeout 1``: before, its workers waited the default 10 s."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {**os.environ, "PYTHONPATH": SRC, "VLLM_RECIPES_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "vllm_recipes", "serve", "--port", str(port), "--workers", "2",
                             "--header-timeout", "1", "--log-level", "warning"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:  # (a worker answers: it accepts connections from now on)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=5) as resp:
                    assert resp.status == 200
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
                time.sleep(0.2)
        closed, took = half_head_closed(port, b"GET / HTTP/1.1", 20)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert closed, f"the connection was still open after {took:.1f} s"
    assert 0.5 < took < 5, took
