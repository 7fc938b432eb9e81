"""Translated recipe pages: ?lang=, Accept-Language, stale notices linking to the original section."""

from __future__ import annotations

import html
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "src" / "vllm_recipes" / "data"
SEED_ZH = ROOT / "tests" / "i18n" / "fixtures" / "zh_seed_translation.md"

pytest.importorskip("vllm_recipes.i18n")


def test_shipped_zh_translation_is_current(client: TestClient, web: SimpleNamespace) -> None:
    r = client.get(f"/{web.V41}?lang=zh")
    assert r.status_code == 200 and '<html lang="zh"' in r.text
    assert "i18n-notice--stale" not in r.text


def test_zh_page_renders_with_stale_notices(stale_zh_client: TestClient, web: SimpleNamespace) -> None:
    client = stale_zh_client
    r = client.get(f"/{web.V41}?lang=zh")
    assert r.status_code == 200
    assert '<html lang="zh"' in r.text
    assert "i18n-page" in r.text  # the page-level notice: translated from an older revision
    notices = re.findall(r'<div class="i18n-notice i18n-notice--(stale|untranslated)"[^>]*>(.*?)</div>', r.text, re.S)
    assert any(kind == "stale" for kind, _ in notices)
    english = client.get(f"/{web.V41}?lang=en").text
    for _kind, body in notices:
        link = re.search(r'href="([^"]+)"', body)
        assert link
        url = html.unescape(link.group(1))
        assert url.startswith(f"/{web.V41}?lang=en#")
        assert f'id="{url.split("#", 1)[1]}"' in english  # the anchor exists on the original page


def test_commands_are_the_same_in_every_language(client: TestClient, web: SimpleNamespace) -> None:
    for q in ("", "&hardware=h100", "&strategy=pd_cluster"):
        en = client.get(f"/{web.V41}?lang=en{q}").text
        zh = client.get(f"/{web.V41}?lang=zh{q}").text
        assert web.page_text(en) == web.page_text(zh)


def test_builder_links_keep_the_language(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get(f"/{web.V41}?lang=zh").text
    links = web.nav_links(body)
    assert links and all("lang=zh" in link for link in links)


def test_accept_language_and_vary(client: TestClient, web: SimpleNamespace) -> None:
    r = client.get("/" + web.V41, headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"})
    assert '<html lang="zh"' in r.text
    assert "Accept-Language" in r.headers["vary"]
    r = client.get("/" + web.V41, headers={"Accept-Language": "en-US,en;q=0.9"})
    assert '<html lang="en"' in r.text
    r = client.get(f"/{web.V41}?lang=en", headers={"Accept-Language": "zh"})
    assert '<html lang="en"' in r.text  # ?lang= wins over the header
    r = client.get(f"/{web.V41}?lang=fr")
    assert r.status_code == 200 and '<html lang="en"' in r.text
    r = client.get(f"/{web.V41}?lang=%3Cscript%3E", headers={"Accept-Language": "x" * 5000})
    assert r.status_code == 200


def test_language_switch_links(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/" + web.V41).text
    assert f'href="/{web.V41}?lang=zh"' in body
    assert 'hreflang="zh"' in body
