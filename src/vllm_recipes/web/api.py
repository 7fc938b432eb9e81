"""The live JSON API: the static build served from memory, plus ``/api/resolve``.

The static files are the exact bytes ``build_api`` produces (what
``vllm-recipes build-api`` writes), built once and kept in memory. Each file's
ETag is a hash of its bytes, so a client revalidates with ``If-None-Match``
and gets a 304 until the catalog changes.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.lint.vllm_plan import with_vllm_lint
from vllm_recipes.render.deployment import deployment_blocks
from vllm_recipes.render.explain import explain_json, sections_json
from vllm_recipes.render.omni import explain_omni, omni_rendering_object, render_omni
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.page import PageState, SelectionError, build_state
from vllm_recipes.synth.context import recipe_frontend
from vllm_recipes.synth.resolve import resolve

from .fit import openapi_paths as fit_openapi_paths
from .fit import resolve_fit_summary
from .perf import openapi_paths as perf_openapi_paths
from .urlstate import PARAMS, canonical_params, encode, parse_params

CACHE_CONTROL = "public, max-age=300"


class StaticApi:
    """The static JSON API in memory (built lazily, once, thread-safe)."""

    def __init__(self, catalog: Catalog, jobs: int | None = 1) -> None:
        self.catalog = catalog
        self.jobs = jobs
        self._files: dict[str, bytes] | None = None
        self._etags: dict[str, str] = {}
        self._lock = threading.Lock()
        self.error: str | None = None

    @property
    def ready(self) -> bool:
        return self._files is not None

    def build(self) -> dict[str, bytes]:
        if self._files is not None:
            return self._files
        with self._lock:
            if self._files is None:
                self._files = self._build()
        return self._files

    def _build(self) -> dict[str, bytes]:
        try:
            from vllm_recipes.api.build import build_api
        except ImportError as exc:  # the builder is not installed in this tree
            self.error = f"JSON API builder unavailable: {exc}"
            return {}
        try:
            extra = _translation_keys(self.catalog)
            built = build_api(self.catalog, lambda _line: None, jobs=self.jobs, strict=False,
                              extra_recipe_keys=extra)
        except Exception as exc:  # a broken catalog must not take the website down
            self.error = f"JSON API build failed: {exc}"
            return {}
        return dict(built.files)

    def get(self, path: str) -> tuple[bytes, str] | None:
        """``(bytes, etag)`` for an API path like ``models.json`` (no leading slash)."""
        data = self.build().get(path)
        if data is None:
            return None
        tag = self._etags.get(path)
        if tag is None:
            tag = self._etags[path] = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
        return data, tag


def _translation_keys(catalog: Catalog) -> Any:
    """The extra recipe keys ``build-api`` adds (translations): the very same hook, for identical bytes."""
    from vllm_recipes.api.translations import translations_hook

    return translations_hook(catalog)


def etag_matches(header: str | None, tag: str) -> bool:
    """RFC 9110 weak comparison against an ``If-None-Match`` header."""
    if not header:
        return False
    if header.strip() == "*":
        return True
    bare = tag.removeprefix("W/")
    return any(part.strip().removeprefix("W/") == bare for part in header.split(","))


# --- /api/resolve ------------------------------------------------------------------------------


def find_model(catalog: Catalog, model: str | None) -> tuple[Recipe, str | None]:
    """A recipe by hf_id, or the parent of a variant model id (with that variant's key)."""
    if not model:
        raise SelectionError("model", "Parameter 'model' is required (a recipe's Hugging Face id).")
    found = catalog.find(model)
    if found is not None:
        return found
    broken = catalog.load_error_for(model)
    if broken is not None:
        raise SelectionError("model", f"Recipe {model!r} failed to load: {broken}")
    raise SelectionError("model", f"Unknown model {model!r}.", catalog.close_matches(model))


def selection_dict(catalog: Catalog, recipe: Recipe, st: PageState, query: str) -> dict[str, Any]:
    sel = st.selection
    return {
        "model": recipe.hf_id,
        "hardware": sel.hw_id,
        "variant": sel.variant_key,
        "strategy": sel.strategy,
        "recommended_strategy": st.recommended_strategy,
        "nodes": sel.node_count,
        "features": list(sel.features),
        "fmode": dict(sel.feature_modes),
        "advanced": [a for a, _ in sel.advanced],
        "kv_offload": sel.kv_offload,
        "kv_instances": sel.kv_instances,
        "pd_nodes": sel.pd_nodes,
        "frontend": sel.frontend or recipe_frontend(recipe.data),
        "install": st.install,
        "router": sel.pd_router,
        "query": query,
        "url": "/" + recipe.hf_id + ("?" + query if query else ""),
    }


def resolve_payload(catalog: Catalog, items: list[tuple[str, str]]) -> dict[str, Any]:
    """Everything ``/api/resolve`` returns; raises :class:`SelectionError` on bad input."""
    model = None
    rest = []
    for k, v in items:
        if k == "model":
            model = v.strip()
        else:
            rest.append((k, v))
    recipe, vk = find_model(catalog, model)
    if vk is not None and not any(k == "variant" for k, _ in rest):
        rest.append(("variant", vk))
    if recipe.is_omni:
        return omni_payload(catalog, recipe, rest)
    req = parse_params(rest, strict=True, allowed_extra=frozenset({"lang", "ctx"})).request
    st = build_state(catalog, recipe, req, strict=True)
    ctx, plan = resolve(catalog, recipe, st.selection)
    query = encode(canonical_params(catalog, recipe, st))
    blocks = deployment_blocks(ctx, plan, st.install)
    return {
        "rendering": with_vllm_lint(rendering_object(ctx, plan), ctx, plan),
        "explain": explain_json(catalog, plan),
        "selection": selection_dict(catalog, recipe, st, query),
        "commands": [{"key": b.key, "title": b.title, "kind": b.kind, "description": b.description,
                      "text": b.text} for b in blocks],
        "fit": resolve_fit_summary(catalog, recipe, ctx, plan, dict(rest).get("ctx")),
    }


def omni_payload(catalog: Catalog, recipe: Recipe, items: list[tuple[str, str]]) -> dict[str, Any]:
    from vllm_recipes.select.omni import select_omni
    from vllm_recipes.synth.omni import resolve_omni

    allowed = {"hardware", "variant", "task", "install", "lang"}
    vals: dict[str, str] = {}
    for k, v in items:
        if k not in allowed:
            raise SelectionError(k, f"{recipe.hf_id} is an omni recipe; parameter {k!r} does not apply.",
                                 sorted(allowed - {"lang"}))
        vals[k] = v.strip()
    osel = select_omni(catalog, recipe, vals.get("hardware") or None, vals.get("variant") or None,
                       vals.get("task") or None, vals.get("install") or None)
    plan = resolve_omni(catalog, recipe, osel.variant_key, osel.task, osel.hw_id)
    rendered = render_omni(catalog, recipe, osel, plan)
    shown = rendered.shown
    return {
        "rendering": omni_rendering_object(osel, plan, rendered),
        "explain": sections_json(explain_omni(catalog, plan)),
        "selection": {"model": recipe.hf_id, "hardware": osel.hw_id, "variant": osel.variant_key,
                      "task": osel.task.key if osel.task else None, "install": osel.install},
        "commands": [{"key": "serve", "title": "vLLM", "kind": "serve", "description": "", "text": shown}],
    }


def openapi_spec() -> dict[str, Any]:
    """OpenAPI 3.1 description of the live API (hand-written: it is small and stable)."""
    error = {"$ref": "#/components/schemas/Error"}
    json_file = {"description": "The static JSON file (same bytes as `vllm-recipes build-api`).",
                 "headers": {"ETag": {"schema": {"type": "string"}}},
                 "content": {"application/json": {"schema": {}}}}
    static = {"get": {"summary": "Static JSON API file", "responses": {
        "200": json_file, "304": {"description": "Not modified (If-None-Match matched the ETag)."},
        "404": {"description": "No such file.", "content": {"application/json": {"schema": error}}}}}}
    descriptions = {
        "hardware": "Hardware profile id (default: the recipe's default hardware).",
        "variant": "Variant key (default: `default`).",
        "strategy": "Serving strategy id (default: the recommendation).",
        "nodes": "Node count (1-16) for multi-node strategies.",
        "features": "Comma list of every enabled feature (replaces the default set).",
        "fmode": "Feature modes as `feature:mode,...`.",
        "advanced": "Comma list of advanced option ids.",
        "kv_offload": "KV offload option or Mooncake deployment id (`off` for none).",
        "kv_instances": "Mooncake instance count (1-16).",
        "kv_instance": "Mooncake instance to render (0-based).",
        "prefill_nodes": "PD prefill pool nodes (1-16; 0 with decode_nodes=0: co-located).",
        "decode_nodes": "PD decode pool nodes.",
        "prefill_mode": "PD prefill pool mode (tp, tep, dep).",
        "decode_mode": "PD decode pool mode (tp, tep, dep).",
        "prefill_rank": "PD prefill node to render (0-based).",
        "decode_rank": "PD decode node to render (0-based).",
        "frontend": "OpenAI-compatible frontend (python, rust).",
        "install": "pip or docker.",
        "router": "PD router (vllm-router, smg-grpc).",
        "task": "Omni task key (omni recipes only).",
    }
    params = [{"name": "model", "in": "query", "required": True, "schema": {"type": "string", "maxLength": 512},
               "description": "Recipe Hugging Face id (or a variant's model id), e.g. deepseek-ai/DeepSeek-V4.1-Flash."}]
    for p in PARAMS:
        schema: dict[str, Any] = {"type": "integer", "minimum": 0} if p.endswith(("nodes", "rank", "instances",
                                                                                   "instance")) \
            else {"type": "string", "maxLength": 512}
        params.append({"name": p, "in": "query", "required": False, "schema": schema,
                       "description": descriptions.get(p, "")})
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
                        "schema": {"enum": ["k8s", "compose", "slurm", "vllm-config"]}, "description": "Target."},
                       *({"name": n, "in": "query", "required": False, "schema": {"type": "string"},
                          "description": d} for n, d in (
                           ("namespace", "Kubernetes namespace (default: default)."),
                           ("name", "Object / job name (default: from the model id)."),
                           ("pvc", "PersistentVolumeClaim for the Hugging Face cache."),
                           ("image", "Container image (default: the Docker tab's image)."),
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
        entry = {k: dict(v) for k, v in static.items()}
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


def error_body(exc: SelectionError) -> dict[str, Any]:
    d = exc.to_dict()
    return {"error": d["error"], "param": d["param"], "choices": d["choices"]}
