"""Start-up: the server answers while another process builds its static JSON API, and ``serve`` binds
before it announces.

Readiness is asserted by behaviour: the build process is stopped (SIGSTOP) until
the test lets it go on, so "answered while still cold" is a fact, not a race.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from vllm_recipes.catalog import Catalog
from vllm_recipes.web import create_app

V41 = "/deepseek-ai/DeepSeek-V4.1-Flash"


def _build_processes() -> list[int]:
    """Pids of the background processes this test process started (``parallel.in_background``; Linux /proc)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue  # (not a process, or gone meanwhile)
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == os.getpid() and b"vllm_recipes.parallel" in cmdline:
            found.append(int(proc.name))
    return found


@pytest.fixture()
def served(catalog: Catalog, web: Any) -> Iterator[tuple[Any, int]]:
    """A real server (lifespan on, as ``serve`` runs it) and the pid of its static-API build process,
    stopped (SIGSTOP) at once: "answered while the API is still being built" is then a fact, not a race."""
    import uvicorn

    app = create_app(catalog, warm_in_background=True)
    srv = web.LiveServer(app)
    srv.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=srv.port, log_level="warning",
                                               lifespan="on"))
    srv.thread = threading.Thread(target=srv.server.run, daemon=True)
    with srv:
        (pid,) = _build_processes()
        os.kill(pid, signal.SIGSTOP)
        try:
            yield srv, pid
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def test_answers_while_the_static_api_is_built_in_another_process(served: Any, client: Any) -> None:
    srv, pid = served
    with httpx.Client(base_url=srv.url, timeout=30) as c:
        health = c.get("/api/health").json()
        assert health["ok"] and not health["warm"] and not health["api"] and health["warm_error"] is None
        page = c.get(V41)
        assert page.status_code == 200
        assert page.text == client.get(V41).text  # on demand == what a warm server renders
        assert c.get(V41 + "/builder?hardware=h100").status_code == 200
        assert c.get("/api/resolve", params={"model": V41[1:]}).status_code == 200
        assert not c.get("/api/health").json()["api"]  # still stopped: all of the above came before the build

        # a static API file requested now waits for the one build
        got: dict[str, httpx.Response] = {}
        waiter = threading.Thread(target=lambda: got.setdefault("r", c.get("/models.json")))
        waiter.start()
        waiter.join(0.5)
        assert "r" not in got
        os.kill(pid, signal.SIGCONT)
        waiter.join(60)
        assert got["r"].status_code == 200
        assert got["r"].content == client.get("/models.json").content
        health = c.get("/api/health").json()
        assert health["warm"] and health["api"] and health["warm_error"] is None, health


def test_a_killed_build_process_is_reported_and_the_server_builds_the_api(served: Any, client: Any) -> None:
    srv, pid = served
    os.kill(pid, signal.SIGKILL)
    with httpx.Client(base_url=srv.url, timeout=60) as c:
        for _ in range(500):  # (the server notices when it reads the process's answer: at once)
            health = c.get("/api/health").json()
            if health["warm_error"]:
                break
            threading.Event().wait(0.02)
        assert not health["api"] and "ended early" in health["warm_error"] and "-9" in health["warm_error"]
        assert c.get(V41).status_code == 200
        r = c.get("/models.json")  # built in the server now, the same bytes
        assert r.status_code == 200 and r.content == client.get("/models.json").content
        health = c.get("/api/health").json()
        assert health["api"] and health["warm_error"] is None, health


def _serve(port: int, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("VLLM_RECIPES_DIR", None)
    return subprocess.Popen([sys.executable, "-c", "from vllm_recipes.cli.main import main; main()", "serve",
                             "--port", str(port), "--log-level", "warning", *extra],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)


def test_serve_announces_only_when_listening_and_refuses_a_busy_port(web: Any) -> None:
    port = web.LiveServer(None).port  # a free port (the helper picks one; nothing is started)
    proc = _serve(port)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert f"serving on http://127.0.0.1:{port}/" in line, line
        # announced => listening: the very first request is answered, no retry loop needed
        r = httpx.get(f"http://127.0.0.1:{port}{V41}", timeout=60)
        assert r.status_code == 200
        busy = _serve(port)
        _out, err = busy.communicate(timeout=60)
        assert busy.returncode == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "already in use" in lines[0] and "--port" in lines[0], err
        assert "Traceback" not in err
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_compiled_templates_are_kept_beside_the_parse_cache(catalog: Catalog, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from starlette.testclient import TestClient

    monkeypatch.setenv("VLLM_RECIPES_CACHE_DIR", str(tmp_path / "c"))
    with TestClient(create_app(catalog, warm_in_background=False)) as c:
        first = c.get(V41).text
    kept = sorted(p.name for p in (tmp_path / "c" / "templates").iterdir())
    assert kept  # the page's templates, compiled once
    with TestClient(create_app(catalog, warm_in_background=False)) as c:
        assert c.get(V41).text == first  # a new app renders the same page from the kept bytecode
    assert sorted(p.name for p in (tmp_path / "c" / "templates").iterdir()) == kept
    monkeypatch.setenv("VLLM_RECIPES_CACHE_DIR", "off")
    with TestClient(create_app(catalog, warm_in_background=False)) as c:
        assert c.get(V41).text == first

