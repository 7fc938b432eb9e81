"""Pages over the ASGI test client: routing, redirects, 404s, browse, search, sitemap."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient


@pytest.mark.parametrize("path", ["/", "/browse", "/deepseek-ai", "/deepseek-ai/DeepSeek-V4.1-Flash",
                                  "/deepseek-ai/DeepSeek-V4-Flash", "/deepseek-ai/DeepSeek-V4.1-Flash/builder",
                                  "/sitemap.xml", "/robots.txt", "/api/openapi.json", "/api/search.json",
                                  "/static/site.css", "/static/app.js"])
def test_pages_ok(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 200, r.text[:300]
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["referrer-policy"]


def test_home_lists_latest_and_providers(client: TestClient) -> None:
    body = client.get("/").text
    latest = body.split('id="latest-h"', 1)[1].split('id="prov-h"', 1)[0]
    # at most one card per provider: both seed recipes are DeepSeek's, the newest wins
    assert latest.count('class="card"') == 1
    assert "DeepSeek-V4.1-Flash" in latest
    assert 'href="/deepseek-ai"' in body and "2 recipes" in body


def test_provider_case_insensitive_redirect(client: TestClient) -> None:
    r = client.get("/DEEPSEEK-AI?x=1", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"] == "/deepseek-ai?x=1"
    body = client.get("/deepseek-ai").text
    assert "<h2 class=\"sec-title\">Text</h2>" in body  # grouped by first task (both: text)
    assert body.count('class="card"') == 2


def test_recipe_case_insensitive_redirect_keeps_query(client: TestClient) -> None:
    r = client.get("/DeepSeek-AI/deepseek-v4.1-flash?hardware=h100&strategy=pd_cluster", follow_redirects=False)
    assert r.status_code == 301
    assert r.headers["location"] == "/deepseek-ai/DeepSeek-V4.1-Flash?hardware=h100&strategy=pd_cluster"


def test_variant_model_id_redirects_to_parent(client: TestClient) -> None:
    r = client.get("/nvidia/DeepSeek-V4-Flash-NVFP4?hardware=b200", follow_redirects=False)
    assert r.status_code == 301
    assert r.headers["location"] == "/deepseek-ai/DeepSeek-V4-Flash?variant=nvfp4&hardware=b200"
    # the default variant's own model id: no variant parameter
    r = client.get("/deepseek-ai/DeepSeek-V4-Flash-0731", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"] == "/deepseek-ai/DeepSeek-V4-Flash"


def test_not_found_pages(client: TestClient) -> None:
    r = client.get("/someorg/SomeModel")
    assert r.status_code == 404
    assert "No recipe for someorg/SomeModel yet" in r.text and 'href="/browse"' in r.text
    r = client.get("/a/b/c/d")
    assert r.status_code == 404 and "Not found" in r.text and "No recipe" not in r.text
    r = client.get("/nobody")
    assert r.status_code == 404 and "No recipe" not in r.text
    assert client.get("/deepseek-ai/DeepSeek-V4.1-Flash/nope").status_code == 404


def test_trailing_slash_redirects(client: TestClient) -> None:
    r = client.get("/deepseek-ai/DeepSeek-V4.1-Flash/?nodes=2", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"] == "/deepseek-ai/DeepSeek-V4.1-Flash?nodes=2"


def test_recipe_header(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/" + web.V41).text
    assert "<h1>DeepSeek-V4.1-Flash</h1>" in body
    assert "1,048,576 context" in body
    assert "552B / 8-16B active" in body
    assert "vLLM 0.31.0+" in body
    assert "https://huggingface.co/deepseek-ai/DeepSeek-V4.1-Flash" in body
    assert "Updated <time" in body and "2026-10-13" in body
    assert 'href="/deepseek-ai/DeepSeek-V4-Flash"' in body  # related recipe that exists
    assert "deepseek-ai/DeepSeek-V3.2-Exp" not in body or '<span class="muted">deepseek-ai/DeepSeek-V4-Pro' in body


def test_guide_rendering(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/" + web.V41).text
    guide = body.split('<section class="guide"', 1)[1]
    assert '<h2 id="overview">' in guide
    assert 'header-anchor' not in guide  # app.js adds the "#" links (the ids are the anchors)
    assert "<table>" in guide
    assert 'class="language-bash"' in guide and '<span class="' in guide  # pygments classes
    assert 'style="' not in guide


def test_hardware_row_order_and_pills(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/" + web.V41).text
    rows = body.split('id="row-hardware"', 1)[1].split('id="row-variant"', 1)[0]
    keys = re.findall(r'data-key="hardware:([^"]+)"', rows)
    assert keys[:6] == ["h100", "h200", "b200", "gb200", "b300", "gb300"]
    assert keys.index("dgx_station_gb300") < keys.index("mi300x")
    assert "rtx_pro_6000" not in keys  # restricted and not declared by the recipe
    assert "192G/GPU" in rows and "80G/GPU" in rows
    assert rows.index("NVIDIA") < rows.index("AMD")
    assert "TP=2 uses 2 of the node&#39;s 4 GPUs." in body


def test_unsupported_hardware_is_struck_through_with_reason(xss_client: TestClient) -> None:
    body = xss_client.get("/evil/XSS-7B").text
    m = re.search(r'<span class="pill is-disabled" title="([^"]+)" aria-disabled="true" data-key="hardware:b200">',
                  body)
    assert m and "unsupported" in m.group(1)
    assert 'data-key="hardware:h200" aria-current="true"' in body


def test_disabled_pills_have_reasons(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get(f"/{web.V41}?strategy=pd_cluster").text
    for m in re.finditer(r'<span class="pill is-disabled[^"]*" title="([^"]*)"', body):
        assert m.group(1).strip(), m.group(0)
    assert "Unavailable:" in body  # LMCache etc. under PD


def test_features_toggle_and_conflicts(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/" + web.V41).text
    link = re.search(r'href="([^"]+)" data-nav data-key="features:text_only"', body)
    assert link
    target = html.unescape(link.group(1))
    assert "encoder_parallel" not in target.split("features=", 1)[1]
    page = client.get(target).text
    assert "--language-model-only" in page and "--mm-encoder-tp-mode" not in web.page_text(page)


def test_invalid_params_dropped_with_notice(client: TestClient, web: SimpleNamespace) -> None:
    r = client.get(f"/{web.V41}?hardware=nope&nodes=99&strategy=zzz&fmode=a:b&kv_offload=x&install=rpm&bogus=1")
    assert r.status_code == 200
    assert "Some URL parameters were not used" in r.text
    default = client.get("/" + web.V41).text
    assert web.page_text(r.text) == web.page_text(default)
    assert 'data-url="/deepseek-ai/DeepSeek-V4.1-Flash"' in r.text
    # an unknown feature is dropped from the explicit list (which stays explicit)
    r = client.get(f"/{web.V41}?features=bogus,reasoning")
    assert "Unknown feature" in r.text and 'data-url="/deepseek-ai/DeepSeek-V4.1-Flash?features=reasoning"' in r.text


def test_builder_fragment(client: TestClient, web: SimpleNamespace) -> None:
    r = client.get(f"/{web.V41}/builder?hardware=h100")
    assert r.status_code == 200
    assert r.text.startswith('<div id="builder"')
    assert r.headers["x-canonical-url"] == f"/{web.V41}?hardware=h100"
    assert "<html" not in r.text
    r = client.get("/DEEPSEEK-AI/deepseek-v4.1-flash/builder?hardware=h100", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"].endswith("/builder?hardware=h100")


def test_browse_filters_counts_and_sort(client: TestClient) -> None:
    body = client.get("/browse").text
    assert body.count("<tr><td><a href=") == 2
    body = client.get("/browse?task=multimodal").text
    assert "Browse recipes" in body
    r = client.get("/browse?q=v4.1").text
    assert r.count("<tr><td><a href=") == 1  # '.' is ignored: v4.1 matches V4.1 only
    r = client.get("/browse?q=deepseek+flash&sort=name").text
    rows = re.findall(r"<tr><td><a href=\"([^\"]+)\"", r)
    assert rows == ["/deepseek-ai/DeepSeek-V4-Flash", "/deepseek-ai/DeepSeek-V4.1-Flash"]
    r = client.get("/browse?hw=h100&precision=nvfp4").text
    assert "recipe" in r
    # a chip whose count would be 0 with the other rows applied is disabled
    r = client.get("/browse?q=v4.1").text
    assert 'class="pill is-disabled"' in r
    # unknown values do not crash and show up as active chips with count 0
    assert client.get("/browse?task=nope&sort=weird&size=zzz").status_code == 200


def test_browse_size_buckets(client: TestClient) -> None:
    body = client.get("/browse?size=200b-1t").text
    assert body.count("<tr><td><a href=") == 2  # 552B and the V4 size are both in 200B-1T
    assert client.get("/browse?size=lt10b").text.count("<tr><td><a href=") == 0


def test_search_index_and_no_js_fallback(client: TestClient) -> None:
    idx = client.get("/api/search.json").json()
    assert {p["org"] for p in idx["providers"]} == {"deepseek-ai"}
    assert all(set(r) >= {"title", "url", "n"} for r in idx["recipes"])
    assert 'action="/browse"' in client.get("/").text
    r = client.get("/api/search.json", headers={"If-None-Match": client.get("/api/search.json").headers["etag"]})
    assert r.status_code == 304


def test_sitemap_and_robots(client: TestClient) -> None:
    r = client.get("/sitemap.xml")
    assert r.headers["content-type"].startswith("application/xml")
    root = ET.fromstring(r.content)
    locs = [e.text for e in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    assert locs[0] == "http://testserver/"
    assert "http://testserver/deepseek-ai" in locs
    assert "http://testserver/deepseek-ai/DeepSeek-V4.1-Flash" in locs
    lastmods = [e.text for e in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}lastmod")]
    assert "2026-10-13" in lastmods
    robots = client.get("/robots.txt").text
    assert "Sitemap: http://testserver/sitemap.xml" in robots


def test_head_and_methods(client: TestClient, web: SimpleNamespace) -> None:
    assert client.head("/" + web.V41).status_code == 200
    assert client.head("/models.json").status_code == 200
    assert client.post("/" + web.V41).status_code == 405
    assert client.delete("/models.json").status_code == 405
