"""The live JSON API: the static build served from memory, plus ``/api/resolve``.

The static files are the exact bytes ``build_api`` produces (what
``vllm-recipes build-api`` writes), built once and kept in memory. Each file's
ETag is a hash of its bytes, so a client revalidates with ``If-None-Match``
and gets a 304 until the catalog changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from concurrent.futures import Future
from typing import Any

from vllm_recipes.catalog import Catalog
from vllm_recipes.parallel import in_background
from vllm_recipes.render.export import TARGETS
from vllm_recipes.service import answers
from vllm_recipes.service.answers import EXPORT_ARGUMENTS
from vllm_recipes.service.fit import parse_ctx
from vllm_recipes.service.params import openapi_parameters
from vllm_recipes.service.url import query_from_items

from .fit import openapi_paths as fit_openapi_paths
from .perf import openapi_paths as perf_openapi_paths

CACHE_CONTROL = "public, max-age=300"
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
        if self._files is None:
            with self._lock:
                if self._files is None:
                    self._files = self._take_or_build()
        return self._files

    def _take_or_build(self) -> dict[str, bytes]:
        if self._elsewhere is not None:
            with contextlib.suppress(ChildProcessError, RuntimeError):  # (logged by _arrived)
                files, self.error = self._elsewhere.result()
                return files
        files, self.error = build_files(self.catalog, self.jobs)
        return files

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


def openapi_spec() -> dict[str, Any]:
    """OpenAPI 3.1 description of the live API (hand-written: it is small and stable)."""
    error = {"$ref": "#/components/schemas/Error"}
    json_file = {"description": "The static JSON file (same bytes as `vllm-recipes build-api`).",
                 "headers": {"ETag": {"schema": {"type": "string"}}},
                 "content": {"application/json": {"schema": {}}}}
    static = {"get": {"summary": "Static JSON API file", "responses": {
        "200": json_file, "304": {"description": "Not modified (If-None-Match matched the ETag)."},
        "404": {"description": "No such file.", "content": {"application/json": {"schema": error}}}}}}
    params = [{"name": "model", "in": "query", "required": True, "schema": {"type": "string", "maxLength": 512},
               "description": "Recipe Hugging Face id (or a variant's model id), e.g. deepseek-ai/DeepSeek-V4.1-Flash."},
              *openapi_parameters()]
    paths: dict[str, Any] = {
        "/api/resolve": {"get": {
            "summary": "Commands for one builder selection",
            "description": "Takes the same query parameters as the recipe page (docs/reference/ui.md, "
                           "'URL state'). Unusable values are refused (400) with the valid choices, instead "
                           "of being dropped as the page does.",
            "parameters": params,
            "responses": {
                "200": {"description": "The selection's rendering, explanation and copyable commands.",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Resolve"}}}},
                "400": {"description": "A parameter cannot be honoured.",
                        "content": {"application/json": {"schema": error}}},
                "414": {"description": "Query string too long.",
                        "content": {"application/json": {"schema": error}}}}}},
    }
    paths["/api/export"] = {"get": {
        "summary": "Deploy artifacts for one builder selection",
        "description": "The selection's deployment for a scheduler, the same bytes as `vllm-recipes export "
                       "--to TARGET -o -`: Kubernetes manifests (LeaderWorkerSet for multi-node), a Compose "
                       "file, an sbatch script or `vllm serve --config` files.",
        "parameters": [*params,
                       {"name": "to", "in": "query", "required": True,
                        "schema": {"enum": list(TARGETS)}, "description": "Target."},
                       *({"name": n, "in": "query", "required": False, "schema": {"type": "string"},
                          "description": d} for n, d in (
                           *EXPORT_ARGUMENTS.items(),
                           ("download", "Any value: answer with Content-Disposition: attachment.")))],
        "responses": {
            "200": {"description": "The artifact text.", "content": {
                "text/yaml": {"schema": {"type": "string"}}, "text/x-shellscript": {"schema": {"type": "string"}},
                "text/plain": {"schema": {"type": "string"}}}},
            "400": {"description": "A parameter cannot be honoured.",
                    "content": {"application/json": {"schema": error}}},
            "422": {"description": "The target cannot express this selection (the reason is in `error`).",
                    "content": {"application/json": {"schema": error}}}}}}
    paths.update(fit_openapi_paths(params))
    paths.update(perf_openapi_paths(params))
    for p in ("/models.json", "/taxonomy.json", "/platforms.json", "/strategies.json", "/strategies/{name}.json",
              "/kv_store.json", "/kv_store/{name}.json", "/{org}/{repo}.json", "/{org}/{repo}/hw/{hardware}.json",
              "/{org}/{repo}/strategies/{strategy}.json", "/{org}/{repo}/hw/{hardware}/strategies/{strategy}.json"):
        entry: dict[str, Any] = {k: dict(v) for k, v in static.items()}
        names = [seg[1:-1] for seg in p.replace(".json", "").split("/") if seg.startswith("{")]
        if names:
            entry["get"] = {**entry["get"], "parameters": [
                {"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names]}
        paths[p] = entry
    return {
        "openapi": "3.1.0",
        "info": {"title": "vLLM Recipes API", "version": "1",
                 "description": "Static recipe JSON and live command resolution. Paths, shapes and "
                                "parameters: docs/reference/json-api.md in the vllm-recipes repository."},
        "paths": paths,
        "components": {"schemas": {
            "Error": {"type": "object", "required": ["error", "param", "choices"], "properties": {
                "error": {"type": "string"}, "param": {"type": ["string", "null"]},
                "choices": {"type": "array", "items": {"type": "string"}}}},
            "Resolve": {"type": "object", "required": ["rendering", "explain", "selection", "commands"],
                        "properties": {
                            "rendering": {"type": "object",
                                          "description": "The rendering object of docs/reference/json-api.md §8."},
                            "explain": {"type": "array", "items": {"type": "object"}},
                            "selection": {"type": "object"},
                            "commands": {"type": "array", "items": {"type": "object", "properties": {
                                "key": {"type": "string"}, "title": {"type": "string"},
                                "kind": {"type": "string"}, "description": {"type": "string"},
                                "text": {"type": "string"}}}},
                            "fit": {"type": ["object", "null"], "description": "Addition: memory/KV-cache "
                                    "summary on the selection's hardware (null without architecture facts)."}}},
        }},
    }

