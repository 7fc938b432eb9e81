"""One real uvicorn server on 127.0.0.1 and a random port: every page and API path over HTTP."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

PATHS = [
    ("/", 200, "text/html"), ("/browse", 200, "text/html"), ("/browse?task=text&sort=name", 200, "text/html"),
    ("/deepseek-ai", 200, "text/html"), ("/deepseek-ai/DeepSeek-V4.1-Flash", 200, "text/html"),
    ("/deepseek-ai/DeepSeek-V4-Flash?hardware=mi355x", 200, "text/html"),
    ("/deepseek-ai/DeepSeek-V4.1-Flash/builder?strategy=pd_cluster", 200, "text/html"),
    ("/deepseek-ai/DeepSeek-V4.1-Flash?lang=zh", 200, "text/html"),
    ("/sitemap.xml", 200, "application/xml"), ("/robots.txt", 200, "text/plain"),
    ("/models.json", 200, "application/json"), ("/taxonomy.json", 200, "application/json"),
    ("/strategies.json", 200, "application/json"), ("/kv_store.json", 200, "application/json"),
    ("/strategies/pd_cluster.json", 200, "application/json"),
    ("/kv_store/kv_store_centralized_mooncake.json", 200, "application/json"),
    ("/deepseek-ai/DeepSeek-V4.1-Flash.json", 200, "application/json"),
    ("/deepseek-ai/DeepSeek-V4.1-Flash/hw/b200.json", 200, "application/json"),
    ("/api/resolve?model=deepseek-ai/DeepSeek-V4.1-Flash&hardware=h100", 200, "application/json"),
    ("/api/resolve?model=deepseek-ai/DeepSeek-V4.1-Flash&hardware=zz", 400, "application/json"),
    ("/api/openapi.json", 200, "application/json"), ("/api/search.json", 200, "application/json"),
    ("/static/site.css", 200, "text/css"), ("/static/app.js", 200, "text/javascript"),
    ("/nobody/nothing", 404, "text/html"), ("/a/b/c", 404, "text/html"), ("/nope.json", 404, "application/json"),
]


@pytest.mark.parametrize("path,status,ctype", PATHS)
def test_live_paths(live: Any, path: str, status: int, ctype: str) -> None:
    r = httpx.get(live.url + path, timeout=10)
    assert r.status_code == status, (path, r.text[:300])
    assert r.headers["content-type"].startswith(ctype), r.headers["content-type"]
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"]


def test_live_redirects(live: Any) -> None:
    r = httpx.get(live.url + "/DEEPSEEK-AI/deepseek-v4.1-flash?nodes=2", timeout=10)
    assert r.status_code == 301
    assert r.headers["location"] == "/deepseek-ai/DeepSeek-V4.1-Flash?nodes=2"


def test_live_etag_304(live: Any) -> None:
    with httpx.Client(base_url=live.url, timeout=10) as c:
        first = c.get("/deepseek-ai/DeepSeek-V4.1-Flash.json")
        tag = first.headers["etag"]
        again = c.get("/deepseek-ai/DeepSeek-V4.1-Flash.json", headers={"If-None-Match": tag})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["etag"] == tag


def test_live_page_command_equals_cli(live: Any, catalog: Any, web: SimpleNamespace) -> None:
    for url in ("/deepseek-ai/DeepSeek-V4.1-Flash", "/deepseek-ai/DeepSeek-V4.1-Flash?hardware=mi355x&strategy=pd_cluster",
                "/deepseek-ai/DeepSeek-V4-Flash?nodes=2&install=pip&frontend=python"):
        body = httpx.get(live.url + url, timeout=10).text
        assert web.run_cli(web.cli_args(catalog, url)) == web.page_text(body) + "\n", url


def test_live_limits(live: Any) -> None:
    r = httpx.get(live.url + "/deepseek-ai/DeepSeek-V4.1-Flash?hardware=" + "x" * 700, timeout=10)
    assert r.status_code == 400
    r = httpx.get(live.url + "/api/resolve?" + "&".join(f"p{i}=" + "v" * 300 for i in range(20)), timeout=10)
    assert r.status_code == 414 and r.json()["error"]


def test_live_head(live: Any) -> None:
    r = httpx.head(live.url + "/models.json", timeout=10)
    assert r.status_code == 200 and r.content == b""
    body = httpx.get(live.url + "/deepseek-ai/DeepSeek-V4.1-Flash", timeout=10).text
    assert html.unescape(re.search(r"<title>(.*?)</title>", body).group(1)).startswith("DeepSeek-V4.1-Flash")
