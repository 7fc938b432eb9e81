"""Recipe authors: edit/report links, ``serve --watch`` reloads, last good versions, the findings panel."""

from __future__ import annotations

import html
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.cli.main import cli
from vllm_recipes.web import create_app
from vllm_recipes.web.authoring import AuthoringState, SourceLinks, merge_last_good
from vllm_recipes.web.live import LiveCatalog, catalog_findings, render_default_page

V4_FILE = "models/deepseek-ai/DeepSeek-V4-Flash.yaml"
V4_PAGE = "/deepseek-ai/DeepSeek-V4-Flash"
REPO = "https://github.com/acme/recipes"


@pytest.mark.parametrize("url,edit,issue", [
    (REPO, f"{REPO}/edit/main/{V4_FILE}", f"{REPO}/issues/new"),
    (f"{REPO}/tree/dev/recipes", f"{REPO}/edit/dev/recipes/{V4_FILE}", f"{REPO}/issues/new"),
    (f"{REPO}/blob/v1/", f"{REPO}/edit/v1/{V4_FILE}", f"{REPO}/issues/new"),
    ("https://gitlab.com/g/sub/r/-/tree/main/x", f"https://gitlab.com/g/sub/r/-/edit/main/x/{V4_FILE}",
     "https://gitlab.com/g/sub/r/-/issues/new"),
])
def test_source_links(url: str, edit: str, issue: str) -> None:
    links = SourceLinks.parse(url)
    assert links.edit_url(V4_FILE) == edit
    assert links.issue_params()[0] == issue


@pytest.mark.parametrize("url", ["ftp://x/y/z", "https://github.com/acme", "not a url", f"{REPO}/tree/",
                                 f"{REPO}?x=1"])
def test_bad_source_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="--source-url"):
        SourceLinks.parse(url)


def test_links_on_every_recipe_page_only_when_configured(catalog: Any, client: TestClient) -> None:
    plain = client
    linked = TestClient(create_app(catalog, authoring=AuthoringState(SourceLinks.parse(f"{REPO}/tree/main"))))
    for recipe in catalog.recipes:
        assert "Edit this recipe" not in plain.get("/" + recipe.hf_id).text
        page = linked.get("/" + recipe.hf_id + "?hardware=mi355x")
        assert page.status_code == 200
        text = html.unescape(page.text)
        assert f'href="{REPO}/edit/main/{recipe.rel_path}"' in text
        issue = next(a for a in text.split('<a class="report-issue" href="')[1:2])
        query = parse_qs(urlsplit(issue.split('"')[0]).query)
        assert query["title"] == [f"{recipe.hf_id}: "]
        body = query["body"][0]
        assert f"Selection: http://testserver/{recipe.hf_id}?hardware=mi355x" in body
        command = CliRunner().invoke(cli, ["command", recipe.hf_id, "--hardware", "mi355x", "--quiet"]).output.strip()
        assert f"```sh\n{command}\n```" in body


def test_serve_watch_needs_a_recipes_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_RECIPES_DIR", raising=False)
    res = CliRunner().invoke(cli, ["serve", "--watch"])
    assert res.exit_code == 2 and "--recipes-dir" in res.output
    bad = CliRunner().invoke(cli, ["serve", "--source-url", "ftp://nope"])
    assert bad.exit_code == 2 and "--source-url" in bad.output


def test_last_good_version_is_kept_for_a_broken_file(tmp_path: Path) -> None:
    shutil.copytree(BUNDLED_DIR, tmp_path / "r")
    good = load_catalog(tmp_path / "r")
    (tmp_path / "r" / V4_FILE).write_text("meta: [unclosed\n")
    fresh = load_catalog(tmp_path / "r")
    merged, stale = merge_last_good(good, fresh, catalog_findings(fresh), render_default_page)
    assert [r.rel_path for r in merged.recipes] == [r.rel_path for r in good.recipes]
    assert merged.recipe("deepseek-ai/DeepSeek-V4-Flash") is good.recipe("deepseek-ai/DeepSeek-V4-Flash")
    assert stale["deepseek-ai/DeepSeek-V4-Flash"].errors[0].code == "yaml"
    # without a previous version there is nothing to keep
    _cat, none_kept = merge_last_good(None, fresh, catalog_findings(fresh), render_default_page)
    assert none_kept == {}


DEAD = """\
meta:
  title: Dead Value
  provider: Org
  hardware:
    h200: verified
    mi300x: unsupported
model:
  model_id: org/Dead
variants:
  default:
    precision: bf16
    vram_minimum_gb: 100
hardware_overrides:
  mi300x:
    extra_args: ["--max-num-seqs", "4"]
compatible_strategies: [single_node_tp]
"""


def test_dead_value_lint_joins_the_panel_after_the_reload(tmp_path: Path) -> None:
    (tmp_path / "models" / "org").mkdir(parents=True)
    (tmp_path / "models" / "org" / "Dead.yaml").write_text(DEAD)
    app = create_app(load_catalog(tmp_path))
    live = LiveCatalog(app, tmp_path)
    live.reload()
    assert app.state.authoring.findings == {}
    live.lint_now()
    [dead] = app.state.authoring.findings["models/org/Dead.yaml"]
    assert dead.code == "dead-value" and (dead.line, dead.col) == (15, 18)
    assert app.state.authoring.generation == 1
    page = TestClient(app).get("/org/Dead")
    assert "models/org/Dead.yaml:15:18</code>: warning: hardware_overrides.mi300x.extra_args[0]" in html.unescape(
        page.text)


# --- a real server watching a real directory -----------------------------------------------------

TINY = """\
meta:
  title: Tiny Model
  provider: Org
  hardware:
    h200: verified
model:
  model_id: org/Tiny
features:
  reasoning:
    args: ["--reasoning-parser", "x"]
variants:
  default:
    precision: bf16
    vram_minimum_gb: 100
compatible_strategies: [single_node_tp, single_node_dep]
default_strategy: single_node_tp
"""
TINY_FILE = "models/org/Tiny.yaml"
TINY_PAGE = "/org/Tiny"


@pytest.fixture
def watched(tmp_path: Path, web: SimpleNamespace) -> Iterator[tuple[Any, Path, LiveCatalog]]:
    """A small recipe directory (shared files fall back to the bundled ones) under a watching server."""
    root = tmp_path / "recipes"
    (root / "models" / "org").mkdir(parents=True)
    (root / TINY_FILE).write_text(TINY)
    app = create_app(load_catalog(root))
    live = LiveCatalog(app, root, SourceLinks.parse(REPO), lint=False)  # the slow lint is tested on its own
    live.reload()
    live.start()
    time.sleep(0.5)  # let the watcher register before the first edit
    try:
        with web.LiveServer(app) as server:
            yield server, root, live
    finally:
        live.stop()


def wait_for(fetch: Callable[[], httpx.Response], ok: Callable[[httpx.Response], bool], seen: list[int],
             timeout: float = 20) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        r = fetch()
        seen.append(r.status_code)
        if ok(r) or time.monotonic() > deadline:
            return r
        time.sleep(0.1)


def test_watch_edit_break_and_fix(watched: tuple[Any, Path, LiveCatalog]) -> None:
    server, root, _live = watched
    statuses: list[int] = []
    path = root / TINY_FILE

    def page() -> httpx.Response:
        return httpx.get(server.url + TINY_PAGE, timeout=10)

    first = page()
    assert first.status_code == 200 and "Validation: no findings" in first.text and "Edit this recipe" in first.text
    # 1. an edit shows up without a restart
    edited_text = TINY.replace('args: ["--reasoning-parser", "x"]', 'args: ["--reasoning-parser", "y"]')
    path.write_text(edited_text.replace("title: Tiny Model", "title: Tiny Edited"))
    edited = wait_for(page, lambda r: "Tiny Edited" in r.text, statuses)
    assert "<h1>Tiny Edited</h1>" in edited.text and "--reasoning-parser y" in edited.text
    # 2. a warning appears in the findings panel with file:line:col
    warned_text = edited_text.replace("title: Tiny Model", "title: Tiny Edited\n  surprise_key: 1")
    path.write_text(warned_text)
    line = warned_text.split("surprise_key")[0].count("\n") + 1
    warned = wait_for(page, lambda r: "surprise_key" in r.text, statuses)
    assert f"{TINY_FILE}:{line}:3</code>: warning: meta.surprise_key" in html.unescape(warned.text)
    assert "last good version" not in warned.text  # warnings do not hold a recipe back
    # 3. a broken file keeps the last good page and says why
    path.write_text("meta: [unclosed\n")
    broken = wait_for(page, lambda r: "last good version" in r.text, statuses)
    assert broken.status_code == 200
    assert "<h1>Tiny Edited</h1>" in broken.text and "YAML syntax error" in broken.text
    for extra in ("/", "/browse", TINY_PAGE + "/builder?strategy=single_node_dep", TINY_PAGE + ".json",
                  "/models.json", "/api/resolve?model=org/Tiny"):
        statuses.append(httpx.get(server.url + extra, timeout=20).status_code)
    # 4. an error finding (unknown strategy) is refused the same way
    path.write_text(TINY.replace("default_strategy: single_node_tp", "default_strategy: no_such_strategy"))
    refused = wait_for(page, lambda r: "no_such_strategy" in r.text, statuses)
    assert "last good version" in refused.text and "<h1>Tiny Edited</h1>" in refused.text
    # 5. fixing it serves the new version again
    path.write_text(TINY)
    fixed = wait_for(page, lambda r: "<h1>Tiny Model</h1>" in r.text, statuses)
    assert "last good version" not in fixed.text and "--reasoning-parser x" in fixed.text
    assert all(s < 500 for s in statuses), statuses


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="/usr/bin/chromium is not installed")
def test_report_link_follows_the_builder_in_a_browser(browser: Any, catalog: Any, web: SimpleNamespace) -> None:
    app = create_app(catalog, authoring=AuthoringState(SourceLinks.parse(REPO)))
    with web.LiveServer(app) as server:
        ctx = browser.new_context(base_url=server.url)
        pg = ctx.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto("/deepseek-ai/DeepSeek-V4.1-Flash")
        pg.click('a[data-key="hardware:h100"]')
        pg.wait_for_function("() => document.getElementById('builder').getAttribute('data-url').includes('h100')")
        # keep the browser here: our capture-phase handler still rewrites the href first
        pg.evaluate("document.addEventListener('click', e => { if (e.target.closest('a[data-report-issue]')) "
                    "e.preventDefault(); })")
        pg.click("a.report-issue")
        href = pg.get_attribute("a.report-issue", "href")
        shown = pg.locator("#builder .panel code.cmd-text").first.inner_text()
        ctx.close()
    query = parse_qs(urlsplit(href).query)
    assert href.startswith(f"{REPO}/issues/new?") and query["title"] == ["deepseek-ai/DeepSeek-V4.1-Flash: "]
    body = query["body"][0]
    assert f"Selection: {server.url}/deepseek-ai/DeepSeek-V4.1-Flash?hardware=h100" in body
    assert "--tensor-parallel-size 8" in shown and shown in body
    assert not errors, errors
