"""Security: CSP and friends, no inline code, inert recipe HTML, size limits, path traversal."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient

from vllm_recipes.web.markdown import render_markdown


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_bodies: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.script_bodies.append(data)


def assert_inert(page: str) -> None:
    p = TagCollector()
    p.feed(page)
    assert not p.script_bodies, p.script_bodies
    for tag, attrs in p.tags:
        if tag == "script":
            assert re.fullmatch(r"/static/app\.[0-9a-f]{12}\.js", attrs.get("src") or ""), attrs  # fingerprinted
        assert tag not in ("iframe", "object", "embed", "svg", "form") or (tag == "form" and \
            attrs.get("action") == "/browse"), (tag, attrs)
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name, value)
            assert name != "style", (tag, attrs)
            if name in ("href", "src", "action") and value:
                assert not re.match(r"\s*(javascript|vbscript|data):", value, re.I) or \
                    (tag == "link" and value == "data:,"), (tag, name, value)


PAGES = ["/", "/browse", "/deepseek-ai", "/deepseek-ai/DeepSeek-V4.1-Flash", "/deepseek-ai/DeepSeek-V4-Flash",
         "/deepseek-ai/DeepSeek-V4.1-Flash?strategy=pd_cluster", "/deepseek-ai/DeepSeek-V4.1-Flash?lang=zh",
         "/nobody/nothing", "/browse?q=%3Cscript%3E"]


@pytest.mark.parametrize("path", PAGES)
def test_security_headers_and_no_inline_code(client: TestClient, path: str) -> None:
    r = client.get(path)
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "style-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    assert_inert(r.text)


def test_headers_on_json_errors_and_static(client: TestClient) -> None:
    for path in ("/models.json", "/api/resolve", "/static/app.js", "/missing.json", "/x/y/z"):
        r = client.get(path)
        assert "content-security-policy" in r.headers, path
        assert r.headers["x-content-type-options"] == "nosniff"


def test_recipe_html_is_inert(xss_client: TestClient) -> None:
    for path in ("/evil/XSS-7B", "/", "/evil", "/browse", "/evil/XSS-7B?hardware=h100&features=tool_calling"):
        r = xss_client.get(path)
        assert r.status_code == 200, path
        assert_inert(r.text)
        assert "<script>window" not in r.text
    page = xss_client.get("/evil/XSS-7B").text
    assert "&lt;script&gt;" in page  # titles and descriptions are shown as text, not executed
    assert 'href="javascript' not in page.lower()
    search = xss_client.get("/api/search.json").text
    assert "<script>" in search  # JSON carries the raw text; the script inserts it with textContent only


def test_markdown_sanitizer_units() -> None:
    out = render_markdown('<script>alert(1)</script>\n\n[a](javascript:alert(1))\n\n<a href="vbscript:x">b</a>\n\n'
                          '<img src=x onerror=alert(1)>\n\n<p style="color:red" onclick="x()">p</p>\n\n'
                          '<a href="/deepseek-ai">ok</a> <a href="https://example.com">ext</a>')
    assert "<script" not in out and "alert(1)</script>" not in out
    assert "javascript:" not in out.replace("[a](javascript:alert(1))", "")
    assert "vbscript" not in out and "onerror" not in out and "onclick" not in out and "style=" not in out
    assert 'href="/deepseek-ai"' in out and 'href="https://example.com"' in out


@pytest.mark.parametrize("query,status", [("hardware=" + "x" * 600, 400), ("a=" + "&a=".join(["y" * 400] * 12), 414),
                                          ("k" * 100 + "=1", 400)])
def test_query_limits(client: TestClient, web: SimpleNamespace, query: str, status: int) -> None:
    for path in (f"/{web.V41}", "/api/resolve"):
        r = client.get(f"{path}?{query}")
        assert r.status_code == status, (path, r.status_code)
        assert "too long" in r.text
        if path.startswith("/api/"):
            assert r.json()["error"]
        assert "content-security-policy" in r.headers


def test_long_path_is_414(client: TestClient) -> None:
    assert client.get("/" + "a" * 2000).status_code == 414


@pytest.mark.parametrize("path", ["/static/../app.py", "/static/..%2fapp.py", "/static/%2e%2e/%2e%2e/catalog/loader.py",
                                  "/..%2f..%2fetc%2fpasswd", "/%2e%2e/%2e%2e/etc/passwd.json",
                                  "/static//etc/passwd", "/deepseek-ai/..%2f..%2fpyproject.toml",
                                  "/static/templates/base.html", "/templates/base.html", "/.git/config",
                                  "/data/taxonomy.yaml", "/deepseek-ai/DeepSeek-V4.1-Flash.yaml"])
def test_path_traversal_impossible(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code in (400, 404), (path, r.status_code)
    assert "[tool." not in r.text and "def load_catalog" not in r.text and "root:" not in r.text
    assert "hardware_profiles" not in r.text


def test_nul_and_odd_bytes(client: TestClient, web: SimpleNamespace) -> None:
    for path in (f"/{web.V41}?hardware=%00", f"/{web.V41}?hardware=%ff%fe", "/%00", "/%ff/%fe",
                 f"/{web.V41}?features=%E2%80%AE", "/api/resolve?model=%00"):
        assert client.get(path).status_code < 500, path
