"""Fixtures for the website tests: one app per catalog, a real uvicorn server, helpers.

Helpers are exposed as the ``web`` fixture (a namespace) because test modules
here are not a package and cannot import each other.
"""

from __future__ import annotations

import html
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.service.url import lenient_state
from vllm_recipes.web import create_app

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
V4 = "deepseek-ai/DeepSeek-V4-Flash"

_PANEL = re.compile(r'<div class="panel(?: single)?" data-title="([^"]*)" data-desc="([^"]*)">(.*?)'
                    r'<code class="cmd-text" data-subst>(.*?)</code>', re.S)

XSS_RECIPE = """\
meta:
  title: "Evil <script>window.__xss=1</script> Model"
  provider: "Evil <b>Corp</b>"
  description: "Desc <script>window.__xss=2</script> [click](javascript:window.__xss=3) <img src=x onerror=window.__xss=4>"
  performance_headline: "<script>window.__xss=5</script>fast"
  date_added: 2026-01-01
  date_updated: 2026-01-02
  tasks: [text]
  related_recipes: ["javascript:alert(1)"]
  hardware:
    h200: verified
    b200: unsupported
model:
  model_id: evil/XSS-7B
  min_vllm_version: "0.10.0"
  architecture: dense
  parameter_count: "7B"
features:
  tool_calling:
    description: "<script>window.__xss=6</script>"
    args: ["--enable-auto-tool-choice"]
variants:
  default:
    precision: bf16
    vram_minimum_gb: 20
    description: "<script>window.__xss=7</script>"
compatible_strategies: [single_node_tp]
hardware_notes:
  h200:
    title: "<script>window.__xss=8</script>"
    body: "note <img src=x onerror=window.__xss=9>"
    link: "javascript:window.__xss=10"
guide: |
  ## Hello <script>window.__xss=11</script>

  <script>window.__xss=12</script>
  [x](javascript:window.__xss=13) and [y](JaVaScRiPt:window.__xss=14)
  <a href="javascript:window.__xss=15" onclick="window.__xss=16">link</a>
  <img src="x" onerror="window.__xss=17">
  <iframe src="https://example.com/"></iframe>
  <div style="background:url(javascript:alert(1))" onmouseover="window.__xss=18">styled</div>
  <svg onload="window.__xss=19"></svg>

  | a | b |
  |--:|---|
  | <b onclick="window.__xss=20">1</b> | 2 |
"""


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def panels(page_html: str) -> list[tuple[str, str, str]]:
    """``(title, description, command text)`` of every deployment block on a page."""
    return [(html.unescape(t), html.unescape(d), html.unescape(code)) for t, d, _mid, code in _PANEL.findall(page_html)]


def page_text(page_html: str) -> str:
    """The page's blocks joined exactly like ``render.deployment.deployment_text``."""
    ps = panels(page_html)
    if len(ps) == 1:
        return ps[0][2]
    out = []
    for title, desc, text in ps:
        head = f"# {title}"
        if desc:
            head += "\n# " + desc.replace("\n", "\n# ")
        out.append(f"{head}\n{text}")
    return "\n\n".join(out)


def cli_args(catalog: Catalog, url: str) -> list[str]:
    """The ``vllm-recipes command`` arguments selecting what the page URL selects."""
    parts = urlsplit(url)
    hf_id = parts.path.strip("/")
    items = parse_qsl(parts.query, keep_blank_values=True)
    recipe = catalog.recipe(hf_id)
    assert recipe is not None
    st, notices = lenient_state(catalog, recipe, items)
    assert not notices, notices
    args = ["command", hf_id]
    q = dict(items)
    for key, opt in (("hardware", "--hardware"), ("variant", "--variant"), ("strategy", "--strategy"),
                     ("nodes", "--nodes"), ("kv_offload", "--kv-offload"), ("kv_instances", "--kv-instances"),
                     ("kv_instance", "--kv-instance"), ("prefill_nodes", "--prefill-nodes"),
                     ("decode_nodes", "--decode-nodes"), ("prefill_mode", "--prefill-mode"),
                     ("decode_mode", "--decode-mode"), ("prefill_rank", "--prefill-rank"),
                     ("decode_rank", "--decode-rank"), ("frontend", "--frontend"), ("install", "--install"),
                     ("router", "--router")):
        if key in q:
            args += [opt, q[key]]
    if "features" in q:
        wanted = [f for f in q["features"].split(",") if f]
        defaults = list(st.default_features)
        removed = [f for f in defaults if f not in wanted]
        added = [f for f in wanted if f not in defaults]
        assert [f for f in defaults if f in wanted] + added == wanted, "feature order the CLI cannot express"
        for f in removed:
            args += ["--no-feature", f]
        for f in added:
            args += ["--feature", f]
    for pair in filter(None, q.get("fmode", "").split(",")):
        args += ["--mode", pair.replace(":", "=", 1)]
    for a in filter(None, q.get("advanced", "").split(",")):
        args += ["--advanced", a]
    return args


def run_cli(args: list[str]) -> str:
    from vllm_recipes.cli import engine_cmds  # noqa: F401  (registers commands)
    from vllm_recipes.cli.main import cli

    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, (args, res.output)
    return res.stdout  # the command; the resolved-selection line and release-lint notes go to stderr


def nav_links(page_html: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'<a class="pill[^"]*" href="([^"]+)" data-nav', page_html)]


@pytest.fixture(scope="session")
def app(catalog: Catalog) -> Any:
    return create_app(catalog)


@pytest.fixture(scope="session")
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="session")
def xss_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("xss-catalog")
    d = root / "models" / "evil"
    d.mkdir(parents=True)
    (d / "XSS-7B.yaml").write_text(XSS_RECIPE, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def xss_client(xss_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(load_catalog(xss_dir))) as c:
        yield c


class LiveServer:
    """uvicorn in a background thread on 127.0.0.1 and a random port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def live(app: Any) -> Iterator[LiveServer]:
    with LiveServer(app) as server:
        yield server


@pytest.fixture(scope="session")
def live_xss(xss_dir: Path) -> Iterator[LiveServer]:
    with LiveServer(create_app(load_catalog(xss_dir))) as server:
        yield server


def timed_get(port: int, path: str = "/robots.txt", timeout: float = 30) -> tuple[int, float]:
    """GET over a real connection: the status and the seconds it took."""
    import http.client
    import time

    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        res = conn.getresponse()
        res.read()
        return res.status, time.monotonic() - started
    finally:
        conn.close()


@pytest.fixture(scope="session")
def stale_zh_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled catalog with V4.1's zh translation as the seed shipped it (translated from an older
    revision): the shipped translation is up to date, so stale notices are exercised on this copy."""
    import shutil

    out = tmp_path_factory.mktemp("stale_zh") / "recipes"
    shutil.copytree(load_catalog().root, out)
    seed = Path(__file__).resolve().parents[1] / "i18n" / "fixtures" / "zh_seed_translation.md"
    shutil.copyfile(seed, out / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.zh.md")
    return out


@pytest.fixture(scope="session")
def stale_zh_client(stale_zh_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(load_catalog(stale_zh_dir))) as c:
        yield c


@pytest.fixture(scope="session")
def live_stale_zh(stale_zh_dir: Path) -> Iterator[LiveServer]:
    with LiveServer(create_app(load_catalog(stale_zh_dir))) as server:
        yield server


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright (never downloads a browser); one per session."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def web() -> SimpleNamespace:
    return SimpleNamespace(V41=V41, V4=V4, panels=panels, page_text=page_text, cli_args=cli_args, run_cli=run_cli,
                           nav_links=nav_links, LiveServer=LiveServer, timed_get=timed_get)
