"""Every response escapes what it echoes (issue #21 item 4): markup in every query key, query value and
path segment, to every route, over real HTTP (one uvicorn server).

An HTML response may show the request's text, but never as markup: the tag must come back escaped.
Other responses (JSON, plain text, XML) are not HTML, and say so with their type and ``nosniff``.
"""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import quote

import pytest

from vllm_recipes.web.urlstate import MAX_VALUE

MARKUP = ['<meta http-equiv=refresh content="0;url=//example.org">', '"><svg onload=alert(1)>', "<x-inj>"]
TAGS = ("<meta http-equiv=refresh", "<svg onload", "<x-inj")
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
ROUTES = ["/", "/browse", "/browse.json", "/index.json", "/llms.txt", "/llms-full.txt", "/sitemap.xml",
          "/robots.txt", "/api/resolve", "/api/health", "/api/export", "/api/fit", "/api/openapi.json",
          "/api/search.json", "/static/site.css", "/deepseek-ai", "/deepseek-ai.json", f"/{V41}",
          f"/{V41}/builder", f"/{V41}/page.json", "/no/such/page"]


def _get(live: Any, target: str) -> tuple[int, str, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=60)
    try:
        conn.request("GET", target)
        res = conn.getresponse()
        body = res.read().decode("utf-8", "replace")
        return res.status, res.getheader("content-type") or "", res.getheader("x-content-type-options") or "", body
    finally:
        conn.close()


def _targets(route: str) -> list[str]:
    """The route with markup as a query key, a query value (also over the length limits) and each segment."""
    out = []
    for m in MARKUP:
        q = quote(m, safe="")
        out += [f"{route}?{q}=x", f"{route}?hardware={q}", f"{route}?model={q}&to={q}&{q}={q}",
                f"{route}?{q}{'k' * 70}=x", f"{route}?hardware={q}{'v' * (MAX_VALUE + 1)}"]
        segs = route.strip("/").split("/") if route != "/" else [""]
        for i in range(len(segs)):
            out.append("/" + "/".join([*segs[:i], q, *segs[i + 1:]]))
    return out


@pytest.mark.parametrize("route", ROUTES)
def test_markup_is_never_echoed_as_markup(live: Any, route: str) -> None:
    for target in _targets(route):
        status, ctype, nosniff, body = _get(live, target)
        assert status < 500, (target, status, body[:300])
        if "html" in ctype:
            low = body.lower()
            assert not any(t in low for t in TAGS), (target, status, body[:500])
        else:
            assert nosniff == "nosniff" and ctype, (target, ctype)


def test_middleware_400_page_escapes_the_key(live: Any) -> None:
    """The example of issue #21: the over-long parameter's name came back as a live tag."""
    key = quote(MARKUP[0] + "k" * 70, safe="")
    status, ctype, _n, body = _get(live, f"/?{key}=x")
    assert status == 400 and "html" in ctype
    assert "&lt;meta http-equiv=refresh" in body and "<meta http-equiv=refresh" not in body
