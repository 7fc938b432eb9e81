"""What one slow or hostile client may hold of an HTTP server we start (``serve`` and ``mcp --http``; issue
#28 item 5): uvicorn does not bound clients that never finish a request head (1,100 of them used up the file
descriptors, and asyncio logged a traceback per failed ``accept()``); the protocol, config and loop exception
handler below do."""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import resource
import time
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("vllm_recipes.web")

#: seconds a client has to send a whole request head (after connecting, or after its last response)
HEADER_TIMEOUT_S = 10.0
#: seconds an idle keep-alive connection stays open (uvicorn's default)
KEEP_ALIVE_S = 5
#: the largest request head h11 buffers (our URLs are at most a few KiB; security.py refuses longer)
MAX_HEAD_BYTES = 64 * 1024
#: descriptors kept free for files, the event loop and the API build when connections are capped
RESERVED_FDS = 64
ACCEPT_LOG_EVERY_S = 10.0


@dataclass(eq=False)
class HeadLimits:
    """One server's request-head timeout and bound, shared by its connections (it pickles: a ``--workers``
    or ``--reload`` process gets its own copy)."""

    header_timeout: float = HEADER_TIMEOUT_S
    #: how many may wait (``None``: :func:`connection_cap` less :data:`RESERVED_FDS`, for the requests)
    max_waiting: int | None = None
    #: connections waiting for a request head, oldest first (a dict as an ordered set)
    waiting: dict[HeaderTimeoutProtocol, None] = field(default_factory=dict)


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol plus a request-head timeout (slow clients cannot hold a connection), and a
    bound on connections waiting for a head: past it the oldest such connection is closed when one arrives,
    so slow clients never use up the descriptors and a new client is accepted at once."""

    _head_timer: asyncio.TimerHandle | None = None

    def __init__(self, *args: Any, limits: HeadLimits, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.limits = limits

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_timed_out)
        waiting = self.limits.waiting
        waiting[self] = None
        bound = self.limits.max_waiting
        if bound is None:
            bound = max(16, connection_cap() - RESERVED_FDS)
        while len(waiting) > bound:
            oldest = next(iter(waiting))
            oldest._disarm()
            oldest.transport.close()

    def _disarm(self) -> None:
        self.limits.waiting.pop(self, None)
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the head arrived: the request runs without a clock
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def connection_cap() -> int:
    """Connections served at once: the soft file-descriptor limit minus :data:`RESERVED_FDS` (at least 32)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 65536
    return max(32, min(soft, 65536) - RESERVED_FDS)


def server_settings(*, header_timeout: float = HEADER_TIMEOUT_S, max_waiting: int | None = None) -> dict[str, Any]:
    """Every limit of this module as keywords of ``uvicorn.Config`` and ``uvicorn.run``, the one copy for
    ``serve`` (in one process or, pickled, in ``--reload`` and ``--workers`` processes) and ``mcp --http``.
    Forwarded headers are not trusted: the server is reached directly."""
    return {
        "http": functools.partial(HeaderTimeoutProtocol, limits=HeadLimits(header_timeout, max_waiting)),
        "timeout_keep_alive": KEEP_ALIVE_S,
        "limit_concurrency": connection_cap(),
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        "proxy_headers": False,
    }


def server_config(app: Any, *, header_timeout: float = HEADER_TIMEOUT_S, max_waiting: int | None = None,
                  **kw: Any) -> Any:
    """A ``uvicorn.Config`` for ``app`` with every limit of this module (:func:`server_settings`)."""
    import uvicorn

    return uvicorn.Config(app, **server_settings(header_timeout=header_timeout, max_waiting=max_waiting), **kw)


_ACCEPT_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Replace the loop's traceback per failed ``accept()`` by one line every :data:`ACCEPT_LOG_EVERY_S`."""
    state = {"last": 0.0, "count": 0}
    previous = loop.get_exception_handler()

    def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _ACCEPT_ERRNOS:
            state["count"] += 1
            now = time.monotonic()
            if now - state["last"] >= ACCEPT_LOG_EVERY_S:
                log.error("cannot accept connections: %s (%d failed accepts); too many open connections or files",
                          exc.strerror or exc, state["count"])
                state["last"], state["count"] = now, 0
            return
        if isinstance(exc, ValueError | OSError) and "_start_serving" in repr(context.get("handle")):
            return  # asyncio's accept retry after EMFILE fired once the server had closed its socket (shutdown)
        if previous is not None:
            previous(lp, context)
        else:
            lp.default_exception_handler(context)

    loop.set_exception_handler(handler)


def quieting_accept_errors(app: Any) -> Any:
    """ASGI ``app`` that installs :func:`quiet_accept_errors` on the server's loop when the server starts (its
    lifespan), for an app whose lifespan is not ours (``mcp --http``; the website's lifespan installs it)."""

    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            quiet_accept_errors(asyncio.get_running_loop())
        await app(scope, receive, send)

    return asgi
