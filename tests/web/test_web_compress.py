"""Compression (brotli, gzip) and fingerprinted, long-cached static assets: the headers a client sees."""

from __future__ import annotations

import gzip
import hashlib
import re
import threading
from types import SimpleNamespace

import brotli
import pytest
from starlette.testclient import TestClient

from vllm_recipes.web.compress import negotiate

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
    assert "content-encoding" not in h_plain and "Accept-Encoding" in h_plain["vary"]
    h_br, br = raw_get(client, path, "gzip, deflate, br")
    assert h_br["content-encoding"] == "br" and "Accept-Encoding" in h_br["vary"]
    assert brotli.decompress(br) == plain and int(h_br["content-length"]) == len(br)
    h_gz, gz = raw_get(client, path, "gzip")
    assert h_gz["content-encoding"] == "gzip" and gzip.decompress(gz) == plain
    assert len(br) < len(plain) / 2 and len(gz) < len(plain) / 2, (path, len(plain), len(gz), len(br))


def test_recipe_page_compression_ratio(client: TestClient, web: SimpleNamespace) -> None:
    _h, plain = raw_get(client, "/" + web.V41, "identity")
    _h, br = raw_get(client, "/" + web.V41, "br")
    assert len(br) * 10 < len(plain) * 3, (len(plain), len(br))  # under 30% (about 60 KB -> 16 KB)


def test_small_and_head_and_refused_encodings_stay_plain(client: TestClient) -> None:
    h, body = raw_get(client, "/robots.txt", "br")  # a few dozen bytes: not worth compressing
    assert "content-encoding" not in h and body.startswith(b"User-agent")
    h, _ = raw_get(client, "/models.json", "br;q=0, gzip;q=0")
    assert "content-encoding" not in h
    r = client.head("/models.json", headers={"Accept-Encoding": "br"})
    assert "content-encoding" not in r.headers and r.content == b""


def test_negotiate() -> None:
    assert negotiate(None) is None and negotiate("") is None and negotiate("identity") is None
    assert negotiate("gzip, deflate, br") == "br"
    assert negotiate("gzip, br;q=0.5") == "gzip"
    assert negotiate("br;q=0, gzip") == "gzip"
    assert negotiate("*") == "br"
    assert negotiate("*;q=0") is None
    assert negotiate("GZIP") == "gzip"
    assert negotiate("br;q=bogus, gzip") == "gzip"


def test_streams_pass_through_unbuffered() -> None:
    """An event stream is forwarded chunk by chunk, never held for compression."""
    import asyncio

    from vllm_recipes.web.compress import CompressionMiddleware

    sent: list[dict[str, object]] = []

    async def app(scope: object, receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b"data: 1\n\n" * 100, "more_body": True})  # type: ignore[operator]
        assert len(sent) == 2  # the first chunk already went out
        await send({"type": "http.response.body", "body": b"", "more_body": False})  # type: ignore[operator]

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "headers": [(b"accept-encoding", b"br")]}
    # in a thread of its own: the session may already run an event loop in this one (Playwright)
    runner = threading.Thread(target=lambda: asyncio.run(CompressionMiddleware(app)(scope, None, send)))  # type: ignore[arg-type]
    runner.start()
    runner.join(10)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body", "http.response.body"]
    assert not any(k == b"content-encoding" for k, _ in sent[0]["headers"])  # type: ignore[union-attr]


def test_etag_revalidation_through_compression(client: TestClient) -> None:
    r = client.get("/taxonomy.json", headers={"Accept-Encoding": "br"})
    tag = r.headers["etag"]
    again = client.get("/taxonomy.json", headers={"Accept-Encoding": "br", "If-None-Match": tag})
    assert again.status_code == 304 and again.headers["etag"] == tag and again.content == b""
    plain = client.get("/taxonomy.json", headers={"Accept-Encoding": "identity", "If-None-Match": tag})
    assert plain.status_code == 304  # weak comparison: the identity and br bodies are the same resource


def test_pages_link_fingerprinted_immutable_assets(client: TestClient, web: SimpleNamespace) -> None:
    page = client.get("/" + web.V41).text
    assets = re.findall(r'(?:href|src)="(/static/[^"]+)"', page)
    assert len(assets) == 2
    for url in assets:
        assert re.fullmatch(r"/static/(site|app)\.[0-9a-f]{12}\.(css|js)", url), url
        h, body = raw_get(client, url, "br")
        assert h["cache-control"] == "public, max-age=31536000, immutable"
        assert h["content-encoding"] == "br" and h["vary"] == "Accept-Encoding"
        plain = client.get(url, headers={"Accept-Encoding": "identity"})
        assert brotli.decompress(body) == plain.content and "content-encoding" not in plain.headers
        digest = url.rsplit(".", 2)[1]
        assert hashlib.sha256(plain.content).hexdigest()[:12] == digest  # the name is the content
        # the plain name still works (old links), revalidated instead of cached for a year
        old = client.get(url.replace("." + digest, ""))
        assert old.status_code == 200 and old.content == plain.content
        assert "immutable" not in old.headers["cache-control"]
        assert client.get(url, headers={"If-None-Match": old.headers["etag"]}).status_code == 304
    assert client.get("/static/app.000000000000.js").status_code == 404
    assert client.get("/static/nothing.css").status_code == 404
