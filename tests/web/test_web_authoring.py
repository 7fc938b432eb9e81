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


def test_links_on_every_recipe_page_only_when_configured() -> None:
    catalog = load_catalog()
    plain = TestClient(create_app(catalog))
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
        command = CliRunner().invoke(cli, ["command", recipe.hf_id, "--hardware", "mi355x"]).output.strip()
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


# --- a real server watching a real directory -----------------------------------------------------

@pytest.fixture
def watched(tmp_path: Path, web: SimpleNamespace) -> Iterator[tuple[Any, Path, LiveCatalog]]:
    root = tmp_path / "recipes"
    shutil.copytree(BUNDLED_DIR, root)
    app = create_app(load_catalog(root))
    live = LiveCatalog(app, root, SourceLinks.parse(REPO))
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
    path = root / V4_FILE
    original = path.read_text()

    def page() -> httpx.Response:
        return httpx.get(server.url + V4_PAGE, timeout=10)

    first = page()
    assert first.status_code == 200 and "Validation:" in first.text and "Edit this recipe" in first.text
    # 1. an edit shows up without a restart
    path.write_text(original.replace('title: "DeepSeek-V4-Flash"', 'title: "DeepSeek-V4-Flash Edited"', 1))
    edited = wait_for(page, lambda r: "DeepSeek-V4-Flash Edited" in r.text, statuses)
    assert "<h1>DeepSeek-V4-Flash Edited</h1>" in edited.text
    # 2. a warning appears in the findings panel with file:line:col
    lines = original.replace('title: "DeepSeek-V4-Flash"', 'title: "DeepSeek-V4-Flash Edited"\n  surprise_key: 1', 1)
    path.write_text(lines)
    line = lines.split("surprise_key")[0].count("\n") + 1
    warned = wait_for(page, lambda r: "surprise_key" in r.text, statuses)
    assert f"{V4_FILE}:{line}:3</code>: warning: meta.surprise_key" in html.unescape(warned.text)
    # 3. a broken file keeps the last good page and says why
    path.write_text("meta: [unclosed\n")
    broken = wait_for(page, lambda r: "last good version" in r.text, statuses)
    assert broken.status_code == 200
    assert "<h1>DeepSeek-V4-Flash Edited</h1>" in broken.text and "YAML syntax error" in broken.text
    for extra in ("/", "/browse", V4_PAGE + "/builder?hardware=mi355x", V4_PAGE + ".json", "/models.json",
                  "/api/resolve?model=deepseek-ai/DeepSeek-V4-Flash"):
        statuses.append(httpx.get(server.url + extra, timeout=20).status_code)
    # 4. an error finding (unknown strategy) is refused the same way
    path.write_text(original.replace("default_strategy: single_node_tep", "default_strategy: no_such_strategy", 1))
    refused = wait_for(page, lambda r: "no_such_strategy" in r.text, statuses)
    assert "last good version" in refused.text and "<h1>DeepSeek-V4-Flash Edited</h1>" in refused.text
    # 5. fixing it serves the new version again
    path.write_text(original)
    fixed = wait_for(page, lambda r: "<h1>DeepSeek-V4-Flash</h1>" in r.text, statuses)
    assert "last good version" not in fixed.text
    assert all(s < 500 for s in statuses), statuses
