"""Background warm-up: fill the page caches and build the static JSON API *after* the server listens.

The server answers from the first moment (every page renders on demand into a
bounded cache); warming only makes the first visit of each default page and
the static JSON files instant. The work runs in a forked, ``nice``-d child
process, not a thread: a thread would share the GIL with live requests and
slow them down, while a low-priority process leaves the CPU to them. The child
sends results back in small batches; a parent thread installs them into the
caches (a dictionary insert each), so warming never blocks the event loop.

Until the static API has arrived, a request for one of its files waits for it
(or builds it in-process when the child failed), so answers never differ from
a fully warm server's.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from .app import Web

log = logging.getLogger("vllm_recipes.web")

#: recipes rendered per message from the child (small: the parent installs results as they come)
BATCH = 8
#: the child's scheduling niceness (higher = yields the CPU to the serving process)
NICENESS = 10


def warm_items(web: Web, start: int, stop: int) -> list[tuple[str, Any, Any]]:
    """Render recipes ``[start, stop)``'s default pages; ``(cache name, key, value)`` triples."""
    out: list[tuple[str, Any, Any]] = []
    for recipe in web.catalog.recipes[start:stop]:
        try:
            out.append(("guide_cache", (recipe.hf_id, None), web.guide(recipe, None)))
            if recipe.is_omni:
                web.omni_builder(recipe, [], {})
                key: Any = ("omni", recipe.hf_id, (), ())
                out.append(("builder_cache", key, web.builder_cache.get(key)))
            else:
                web.builder(recipe, [], {})
                skey = (recipe.hf_id, (), ())
                state = web.state_cache.get(skey)
                out.append(("state_cache", skey, state))
                bkey = (recipe.hf_id, state[2], ())
                out.append(("builder_cache", bkey, web.builder_cache.get(bkey)))
        except Exception:  # a broken recipe shows its error on its page, not in the warm-up
            log.exception("warming %s failed", recipe.hf_id)
    return [item for item in out if item[2] is not None]


def build_static_api(web: Web) -> dict[str, bytes]:
    """The whole static JSON API (``build-api``'s bytes) and the translations it includes."""
    web.translations()
    return web.api.build()


def _child(web: Web, conn: Connection, parent_end: Connection | None = None) -> None:
    """The warm-up process: the whole static API, then pages in batches, each sent as it is done.

    Forked from the server, it inherits two things it must not keep: the
    server's signal handlers (uvicorn's SIGTERM handler only asks a server loop
    to stop, and there is none here, so ``terminate()`` did nothing) and the
    server's end of the pipe (held open here, a send never failed once the
    server was gone, and the child blocked for ever on a full pipe).
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if parent_end is not None:
        parent_end.close()
    with contextlib.suppress(OSError):  # not permitted: still correct, just less polite
        os.nice(NICENESS)
    web.api.warming = False  # this process is the one that builds it
    web.api.jobs = 1  # a daemon process may not fork workers; one low-priority core is the point anyway
    try:
        # the API first: a cold page renders on demand in a fraction of a second, while a static JSON
        # file cannot be had before the whole build (requests for one wait for it)
        files = build_static_api(web)
        conn.send(("api", web.api.error, files))
        n = len(web.catalog.recipes)
        for start in range(0, n, BATCH):
            conn.send(("pages", min(start + BATCH, n), warm_items(web, start, start + BATCH)))
        conn.send(("done", None, None))
    except (BrokenPipeError, EOFError):  # the server went away: nothing to warm any more
        pass
    finally:
        conn.close()


class Warmer:
    """Runs :func:`_child` and installs what it sends into ``web``'s caches."""

    def __init__(self, web: Web) -> None:
        self.web = web
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.pages_done = 0
        self.failed: str | None = None
        self.done = threading.Event()
        self._proc: Any = None
        # the reader thread (at end of file) and stop() both wait for the child: one at a time, else the
        # one whose waitpid finds the child already reaped sees no exit code and takes it for alive
        self._reaping = threading.Lock()
        self._thread: threading.Thread | None = None

    def status(self) -> dict[str, Any]:
        """Progress for ``/api/health``."""
        took = None
        if self.started_at is not None and self.finished_at is not None:
            took = round(self.finished_at - self.started_at, 3)
        return {"warm": self.done.is_set(), "pages": self.pages_done, "recipes": len(self.web.catalog.recipes),
                "api": self.web.api.ready, "warm_seconds": took, "warm_error": self.failed}

    def start(self) -> None:
        """Fork the warm-up process now (call before request threads exist) and read it in a thread."""
        if self._thread is not None:
            return
        self.started_at = time.monotonic()
        conn = None
        if "fork" in multiprocessing.get_all_start_methods():
            ctx = multiprocessing.get_context("fork")
            conn, child = ctx.Pipe(duplex=False)
            self._proc = ctx.Process(target=_child, args=(self.web, child, conn), name="vllm-recipes-warm",
                                     daemon=True)
            self._proc.start()
            child.close()
        self._thread = threading.Thread(target=self._run, args=(conn,), name="vllm-recipes-warm", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        proc = self._proc
        with self._reaping:
            if proc is not None and proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
                if proc.is_alive():  # (terminated before it reset the server's SIGTERM handler)
                    proc.kill()
                    proc.join(timeout=5)

    def _run(self, conn: Connection | None) -> None:
        try:
            for kind, arg, payload in self._messages(conn):
                if kind == "pages":
                    for cache, key, value in payload:
                        getattr(self.web, cache).put(key, value)
                    self.pages_done = arg
                elif kind == "api":
                    self.web.api.install(payload, arg)
        except Exception as exc:  # never fatal: pages still render on demand, the API builds in-process
            log.exception("warm-up failed")
            self.failed = f"{type(exc).__name__}: {exc}"
        finally:
            self.web.api.warmer_gone()
            self.finished_at = time.monotonic()
            self.done.set()

    def _messages(self, conn: Connection | None) -> Iterator[tuple[str, Any, Any]]:
        if conn is None:  # no fork (no cheap copy of the loaded catalog): warm in this thread
            self.web.api.warming = False
            build_static_api(self.web)
            n = len(self.web.catalog.recipes)
            for start in range(0, n, BATCH):
                yield "pages", min(start + BATCH, n), warm_items(self.web, start, start + BATCH)
            return
        try:
            while True:
                try:
                    msg = conn.recv()
                except EOFError:
                    with self._reaping:
                        self._proc.join(timeout=5)
                    raise RuntimeError(f"warm-up process ended early (exit code {self._proc.exitcode})") from None
                if msg[0] == "done":
                    return
                yield msg
        finally:
            conn.close()
            self._proc.join(timeout=5)
