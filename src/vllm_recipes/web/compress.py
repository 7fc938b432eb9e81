"""Response compression (brotli, gzip) as one pure ASGI middleware, with a cache of compressed bodies.

Text responses (HTML, JSON, CSS, JS, XML, plain text) of at least
:data:`MIN_SIZE` bytes are compressed with the best encoding the client
accepts. Compressed bodies are cached by the response's ETag (or a digest of
its bytes), so the static JSON API, assets and cached pages are compressed
once. A response that already carries ``Content-Encoding`` (the pre-compressed
static assets) passes through untouched.

ETags: a compressed body is a different representation of the same resource,
so its ETag becomes weak (``W/"..."``), as nginx does. ``If-None-Match`` uses
weak comparison (RFC 9110), so revalidation keeps answering 304.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import brotli

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: below this, compression saves less than the header costs
MIN_SIZE = 512
COMPRESSIBLE = ("text/", "application/json", "application/javascript", "application/xml", "image/svg+xml")
#: brotli quality for live responses: near gzip -9 size at a fraction of quality 11's time
LIVE_QUALITY = 5
ENCODINGS = ("br", "gzip")


def negotiate(accept_encoding: str | None) -> str | None:
    """The encoding to use for an ``Accept-Encoding`` header: ``br``, ``gzip`` or ``None`` (identity)."""
    if not accept_encoding:
        return None
    q: dict[str, float] = {}
    for part in accept_encoding.split(","):
        name, _, params = part.strip().partition(";")
        weight = 1.0
        params = params.strip().replace(" ", "")
        if params.startswith("q="):
            try:
                weight = float(params[2:])
            except ValueError:
                weight = 0.0
        q[name.strip().lower()] = weight
    star = q.get("*", 0.0)
    best = None
    for enc in ENCODINGS:
        weight = q.get(enc, star)
        if weight > 0 and (best is None or weight > best[1]):
            best = (enc, weight)
    return best[0] if best else None


def compress(data: bytes, encoding: str, *, quality: int = LIVE_QUALITY) -> bytes:
    """``data`` encoded as ``br`` (brotli ``quality``) or ``gzip`` (deterministic: no timestamp)."""
    if encoding == "br":
        return bytes(brotli.compress(data, quality=quality))
    return gzip.compress(data, compresslevel=6 if quality < 11 else 9, mtime=0)


def weak(etag: bytes) -> bytes:
    return etag if etag.startswith(b"W/") else b"W/" + etag


class ByteLRU:
    """A thread-safe LRU of compressed bodies bounded by total bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self._d: OrderedDict[tuple[str, bytes], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, bytes]) -> bytes | None:
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def put(self, key: tuple[str, bytes], value: bytes) -> None:
        if len(value) > self.max_bytes // 4:
            return  # one huge body must not evict everything else
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self.used -= len(old)
            self._d[key] = value
            self.used += len(value)
            while self.used > self.max_bytes:
                _k, v = self._d.popitem(last=False)
                self.used -= len(v)


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def _compressible(content_type: bytes | None) -> bool:
    """Whole-body text types only: a stream (``text/event-stream``) must never be held back."""
    if content_type is None:
        return False
    ctype = content_type.decode("latin-1").lower()
    return ctype.startswith(COMPRESSIBLE) and not ctype.startswith("text/event-stream")


def _add_vary(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """One ``Vary`` header that includes ``Accept-Encoding``."""
    vary = _header(headers, b"vary")
    if vary is None:
        return [*headers, (b"vary", b"Accept-Encoding")]
    if b"accept-encoding" in vary.lower() or vary.strip() == b"*":
        return headers
    return [(k, v + b", Accept-Encoding" if k.lower() == b"vary" else v) for k, v in headers]


class CompressionMiddleware:
    """Compress eligible responses; see the module docstring."""

    def __init__(self, app: ASGIApp, *, cache_bytes: int = 64 * 1024 * 1024) -> None:
        self.app = app
        self.cache = ByteLRU(cache_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        accept = None
        for k, v in scope.get("headers", ()):
            if k == b"accept-encoding":
                accept = v.decode("latin-1")
                break
        encoding = negotiate(accept) if scope.get("method") != "HEAD" else None
        start: Message | None = None
        chunks: list[bytes] = []

        async def send_compressed(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                ctype = _header(headers, b"content-type")
                if _compressible(ctype) and _header(headers, b"content-encoding") is None:
                    message["headers"] = headers = _add_vary(headers)
                    if encoding is not None and message.get("status", 200) == 200:
                        start = message  # hold it until the whole body is known
                        return
                if encoding is not None and message.get("status") == 304:
                    message["headers"] = [(k, weak(v) if k.lower() == b"etag" else v) for k, v in headers]
                await send(message)
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._send_held(start, b"".join(chunks), encoding, send)

        await self.app(scope, receive, send_compressed)

    async def _send_held(self, start: Message, body: bytes, encoding: str | None, send: Send) -> None:
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        if encoding is None or len(body) < MIN_SIZE:
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        etag = _header(headers, b"etag")
        key = (encoding, etag if etag else hashlib.blake2b(body, digest_size=16).digest())
        packed = self.cache.get(key)
        if packed is None:
            packed = compress(body, encoding)
            self.cache.put(key, packed)
        headers = [(k, weak(v) if k.lower() == b"etag" else v) for k, v in headers]
        headers += [(b"content-encoding", encoding.encode()), (b"content-length", str(len(packed)).encode())]
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": packed})
