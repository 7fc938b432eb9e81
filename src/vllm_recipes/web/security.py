"""Security headers and request-size limits, as one pure ASGI middleware (no per-request task or
buffering, unlike ``BaseHTTPMiddleware``); oversized requests are refused before any routing."""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from jinja2 import Environment, FileSystemLoader, Template
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vllm_recipes.service.url import MAX_QUERY, MAX_VALUE

#: Only our own scripts and styles; no inline code, no framing, no plugins.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; "
       "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"strict-origin-when-cross-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
MAX_PATH = 1024


_URL_CHARS = re.compile(r"[!-~]+")  # printable ASCII, no space: browsers drop tabs/newlines and read \\ as /


def safe_link(href: object) -> bool:
    """Whether a recipe-given link is ``http(s)://host...``, a site path or an in-page anchor. Browsers
    read ``/\\x``, ``//x`` and ``/<tab>/x`` as other sites: hence one leading ``/`` and no backslash,
    whitespace or control character (issue #28 item 10)."""
    if not isinstance(href, str) or not _URL_CHARS.fullmatch(href) or "\\" in href:
        return False
    if href.startswith("#"):
        return True
    if href.startswith("/"):
        return not href.startswith("//")
    scheme, sep, rest = href.partition("://")
    return bool(sep) and scheme.lower() in ("http", "https") and rest[:1] not in ("", "/")


def answers_json(path: str) -> bool:
    """The rule for which answers are JSON (errors included): the API's paths and every ``.json`` path."""
    return path.startswith("/api/") or path.endswith(".json")


def error_fields(message: str, param: str | None = None, choices: Sequence[str] = ()) -> dict[str, Any]:
    """Every JSON error's body (the OpenAPI ``Error`` schema)."""
    return {"error": message, "param": param, "choices": list(choices)}


@functools.cache
def _error_template() -> Template:
    # autoescape on, always: what an error page shows comes from the request (issue #21)
    env = Environment(loader=FileSystemLoader(str(Path(__file__).parent / "templates")), autoescape=True)
    return env.get_template("error.html")


def error_html(status: int, message: str) -> str:
    """The page of every error response that is not a recipe or not-found page: ``message`` escaped."""
    return _error_template().render(status=status, message=message)


class SecurityMiddleware:
    """Adds :data:`HEADERS` (and ``Server-Timing``) to every response; refuses over-long requests."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path: str = scope.get("path", "")
        qs: bytes = scope.get("query_string", b"")
        problem: tuple[int, str, str | None] | None = None
        if len(path) > MAX_PATH or len(qs) > MAX_QUERY:
            what, limit = ("path", MAX_PATH) if len(path) > MAX_PATH else ("query string", MAX_QUERY)
            problem = (414, f"The {what} is too long (limit {limit:,} characters).", None)
        elif "\x00" in path:  # no file or recipe name holds NUL; file APIs raise on it
            problem = (400, "The path contains a NUL byte.", None)
        elif qs:
            for key, value in parse_qsl(qs.decode("latin-1"), keep_blank_values=True):
                if len(value) > MAX_VALUE or len(key) > 64:
                    problem = (400, f"Parameter {key[:64]!r} is too long (limit {MAX_VALUE} characters).",
                               key[:64])
                    break

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers.extend(h for h in HEADERS if h[0] not in present)
                # time spent in the app before the first byte (benchmarks read it)
                dur = (time.perf_counter() - started) * 1000
                headers.append((b"server-timing", f"app;dur={dur:.2f}".encode()))
                message["headers"] = headers
            await send(message)

        if problem is not None:
            status, text, param = problem
            if answers_json(path):
                body, ctype = json.dumps(error_fields(text, param)), "application/json"
            else:
                body, ctype = error_html(status, text), "text/html; charset=utf-8"
            await Response(body, status, {"content-type": ctype})(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)
