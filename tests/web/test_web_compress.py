"""Compression (Starlette's gzip middleware) and fingerprinted, long-cached static assets: the headers a
client sees."""

from __future__ import annotations

import gzip
import hashlib
import re
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient

TEXT_PATHS = ["/deepseek-ai/DeepSeek-V4.1-Flash", "/deepseek-ai/DeepSeek-V4.1-Flash/builder?hardware=h100",
              "/models.json", "/api/resolve?model=deepseek-ai/DeepSeek-V4.1-Flash", "/browse", "/",
              "/api/search.json"]


def raw_get(client: TestClient, path: str, encoding: str) -> tuple[dict[str, str], bytes]:
    """Headers and the bytes on the wire (not decoded by the client)."""
    with client.stream("GET", path, headers={"Accept-Encoding": encoding}) as r:
        assert r.status_code == 200, path
        return dict(r.headers), b"".join(r.iter_raw())


@pytest.mark.parametrize("path", TEXT_PATHS)
def test_text_responses_are_compressed_per_accept_encoding(client: TestClient, path: str) -> None:
    h_plain, plain = raw_get(client, path, "identity")
    assert "content-encoding" not in h_plain
    h_gz, gz = raw_get(client, path, "gzip, deflate, br")
    assert h_gz["content-encoding"] == "gzip" and "Accept-Encoding" in h_gz["vary"]
    assert gzip.decompress(gz) == plain and int(h_gz["content-length"]) == len(gz)
    assert len(gz) < len(plain) / 2, (path, len(plain), len(gz))


def test_recipe_page_compression_ratio(client: TestClient, web: SimpleNamespace) -> None:
    _h, plain = raw_get(client, "/" + web.V41, "identity")
    _h, gz = raw_get(client, "/" + web.V41, "gzip")
    assert len(gz) * 10 < len(plain) * 3, (len(plain), len(gz))  # under 30%


def test_small_and_head_stay_plain(client: TestClient) -> None:
    h, body = raw_get(client, "/robots.txt", "gzip")  # a few dozen bytes: not worth compressing
    assert "content-encoding" not in h and body.startswith(b"User-agent")
    r = client.head("/models.json", headers={"Accept-Encoding": "gzip"})
    assert r.content == b""


def test_etag_revalidation_through_compression(client: TestClient) -> None:
    r = client.get("/taxonomy.json", headers={"Accept-Encoding": "gzip"})
    tag = r.headers["etag"]
    again = client.get("/taxonomy.json", headers={"Accept-Encoding": "gzip", "If-None-Match": tag})
    assert again.status_code == 304 and again.headers["etag"] == tag and again.content == b""
    plain = client.get("/taxonomy.json", headers={"Accept-Encoding": "identity", "If-None-Match": tag})
    assert plain.status_code == 304  # the identity and gzip bodies are the same resource


def test_pages_link_fingerprinted_immutable_assets(client: TestClient, web: SimpleNamespace) -> None:
    page = client.get("/" + web.V41).text
    assets = re.findall(r'(?:href|src)="(/static/[^"]+)"', page)
    assert len(assets) == 2
    for url in assets:
        assert re.fullmatch(r"/static/(site|app)\.[0-9a-f]{12}\.(css|js)", url), url
        h, body = raw_get(client, url, "gzip")
        assert h["cache-control"] == "public, max-age=31536000, immutable"
        assert h["content-encoding"] == "gzip"
        plain = client.get(url, headers={"Accept-Encoding": "identity"})
        assert gzip.decompress(body) == plain.content and "content-encoding" not in plain.headers
        digest = url.rsplit(".", 2)[1]
        assert hashlib.sha256(plain.content).hexdigest()[:12] == digest  # the name is the content
        # the plain name still works (old links), revalidated instead of cached for a year
        old = client.get(url.replace("." + digest, ""))
        assert old.status_code == 200 and old.content == plain.content
        assert "immutable" not in old.headers["cache-control"]
        assert client.get(url, headers={"If-None-Match": old.headers["etag"]}).status_code == 304
