"""The live JSON API: the static files (the very bytes ``vllm-recipes build-api`` writes, built once and
kept in memory; each one's ETag is a hash of its bytes, so a revalidation gets a 304 until the catalog
changes), plus ``/api/resolve``."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from concurrent.futures import Future
from typing import Any

from vllm_recipes.catalog import Catalog
from vllm_recipes.parallel import in_background
from vllm_recipes.service import answers
from vllm_recipes.service.fit import parse_ctx
from vllm_recipes.service.url import query_from_items

log = logging.getLogger("vllm_recipes.web")


class StaticApi:
    """The static JSON API in memory, built once (thread-safe): here when first asked for, or by a
    background process (:meth:`build_in_background`, ``serve``) while the server answers pages."""

    def __init__(self, catalog: Catalog, jobs: int | None = 1) -> None:
        self.catalog = catalog
        self.jobs = jobs
        self._files: dict[str, bytes] | None = None
        self._etags: dict[str, str] = {}
        self._lock = threading.Lock()
        self._elsewhere: Future[tuple[dict[str, bytes], str | None]] | None = None
        self.error: str | None = None

    @property
    def ready(self) -> bool:
        return self._files is not None

    def build_in_background(self) -> None:
        """Build in a worker process: the build is seconds of CPU that would hold this server's GIL.
        A request for a file meanwhile waits for it (and builds it here if that process dies)."""
        self._elsewhere = in_background(build_files, self.catalog)
        self._elsewhere.add_done_callback(self._arrived)

    def _arrived(self, future: Future[tuple[dict[str, bytes], str | None]]) -> None:
        if future.exception() is None:
            self.build()  # (installs the answer: /api/health tells at once)
        elif not self.ready:
            self.error = f"{future.exception()}; the next request for an API file builds it in the server"
            log.warning("static JSON API build: %s", self.error)

    def build(self) -> dict[str, bytes]:
        """The files: the background build's, else (none, or that process died) built here."""
        if self._files is None:
            with self._lock:
                if self._files is None:
                    got = None
                    if self._elsewhere is not None:
                        with contextlib.suppress(ChildProcessError, RuntimeError):  # (logged by _arrived)
                            got = self._elsewhere.result()
                    files, self.error = got or build_files(self.catalog, self.jobs)
                    self._files = files
        return self._files

    def get(self, path: str) -> tuple[bytes, str] | None:
        """``(bytes, etag)`` for an API path like ``models.json`` (no leading slash)."""
        data = self.build().get(path)
        if data is None:
            return None
        if path not in self._etags:
            self._etags[path] = etag_of(data)
        return data, self._etags[path]


def etag_of(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


def build_files(catalog: Catalog, jobs: int | None = 1) -> tuple[dict[str, bytes], str | None]:
    """``(files, None)``: every file ``build-api`` writes, its very bytes (translations included, through the
    same hook); ``({}, why)`` when the build fails: a broken catalog must not take the website down."""
    from vllm_recipes.api.translations import api_files

    try:
        return api_files(catalog, jobs), None
    except Exception as exc:
        return {}, f"JSON API build failed: {exc}"


def etag_matches(header: str | None, tag: str) -> bool:
    """RFC 9110 weak comparison against an ``If-None-Match`` header."""
    if not header:
        return False
    if header.strip() == "*":
        return True
    bare = tag.removeprefix("W/")
    return any(part.strip().removeprefix("W/") == bare for part in header.split(","))


# --- /api/resolve ------------------------------------------------------------------------------


def resolve_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/resolve`` returns for a URL query; raises :class:`QueryError` on bad input."""
    query, extra = query_from_items(items)
    return answers.resolve_payload(catalog, query, parse_ctx(extra.get("ctx")))
