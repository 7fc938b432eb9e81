"""No network: ``fit`` and ``perf`` without ``--offline`` answer "unknown" at once, with the reason.

huggingface_hub retries a failed connection for ~30 s; the fit first opens one TCP connection with a
short timeout (``sources.HUB_CONNECT_TIMEOUT``) and remembers a failure for the rest of the process.
The Hub here is a local port nothing listens on (no network in tests).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_recipes.cli import fit_cmds, perf_cmds  # noqa: F401  (register the commands)
from vllm_recipes.cli.main import cli
from vllm_recipes.fit import sources

from .hub_server import Hub, serve
from .test_fit_sources import CONFIG, REPO, env, recipes  # noqa: F401  (the recipe fixture)


@pytest.fixture()
def closed_port() -> Iterator[tuple[socket.socket, str]]:
    """A local port that is bound (nobody else takes it) but not listening: connections are refused."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{s.getsockname()[1]}"
    try:
        yield s, url
    finally:
        s.close()
        sources.UNREACHABLE.pop(url, None)


def run(recipes_dir: str, environ: dict[str, str], command: str = "fit") -> tuple[int, dict]:
    res = CliRunner().invoke(cli, [command, REPO, "--recipes-dir", recipes_dir, "--hardware", "h100", "--json"],
                             env=environ)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, json.loads(res.stdout)


def test_an_unreachable_hub_gives_unknown_with_the_reason(recipes: str, tmp_path: Path,  # noqa: F811
                                                          closed_port: tuple[socket.socket, str]) -> None:
    _, url = closed_port
    code, obj = run(recipes, env(tmp_path, url))
    assert (code, obj["verdict"], obj["missing"]) == (3, "unknown", ["architecture"])
    why = [n for n in obj["notes"] if "cannot reach the Hub at 127.0.0.1" in n]
    assert len(why) == 1 and "refused" in why[0].lower(), obj["notes"]  # said once, with the cause


def test_perf_says_unknown_too(recipes: str, tmp_path: Path,  # noqa: F811
                               closed_port: tuple[socket.socket, str]) -> None:
    _, url = closed_port
    res = CliRunner().invoke(cli, ["perf", REPO, "--recipes-dir", recipes, "--hardware", "h100",
                                   "--isl", "1024", "--osl", "128", "--concurrency", "1"],
                             env=env(tmp_path, url))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "cannot reach the Hub at 127.0.0.1" in res.output


def test_a_failed_connection_is_remembered_for_the_process(recipes: str, tmp_path: Path,  # noqa: F811
                                                           closed_port: tuple[socket.socket, str]) -> None:
    """Once the Hub could not be reached, the process does not try again, even when it comes back."""
    sock, url = closed_port
    run(recipes, env(tmp_path, url))
    port = sock.getsockname()[1]
    sock.close()
    hub = Hub()
    hub.add(REPO, "config.json", CONFIG)
    with serve(hub, port) as again:
        assert again == url
        code, obj = run(recipes, env(tmp_path, url))
    assert (code, obj["verdict"]) == (3, "unknown") and hub.requests == []
    sources.UNREACHABLE.pop(url)
    with serve(hub, port):  # a new process (the memory cleared) reaches it
        code, obj = run(recipes, env(tmp_path, url))
    assert obj["architecture"]["source"] == f"Hugging Face Hub ({REPO})" and hub.requests


def test_behind_a_proxy_the_proxy_is_what_is_tried(recipes: str, tmp_path: Path,  # noqa: F811
                                                   closed_port: tuple[socket.socket, str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """With HTTPS_PROXY set the Hub is reached through the proxy: a dead proxy is the reason given."""
    _, proxy = closed_port
    for var in ("HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(var, proxy)
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    environ = env(tmp_path, "https://hub.invalid")
    try:
        code, obj = run(recipes, environ)
    finally:
        sources.UNREACHABLE.pop("https://hub.invalid", None)
    assert (code, obj["verdict"]) == (3, "unknown")
    port = proxy.rsplit(":", 1)[1]
    assert any(f"cannot reach the Hub at hub.invalid (proxy 127.0.0.1:{port}" in n for n in obj["notes"]), obj["notes"]
