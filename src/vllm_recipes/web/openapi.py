"""The OpenAPI 3.1 description of the live server (``/api/openapi.json``): hand-written, as it is small and
stable; the selection and workload parameters come from the service layer that reads them."""

from __future__ import annotations

import copy
from typing import Any

from vllm_recipes.fit.limits import MAX_GPU_MEMORY, MAX_GPUS
from vllm_recipes.render.export import TARGETS
from vllm_recipes.service.answers import EXPORT_ARGUMENTS
from vllm_recipes.service.params import openapi_parameters
from vllm_recipes.service.perf import WORKLOAD, load_schema

JSON = "application/json"
ERROR = {"$ref": "#/components/schemas/Error"}
OBJECT = {"type": "object"}
STRING = {"type": "string"}
STATIC_FILES = ("/models.json", "/taxonomy.json", "/platforms.json", "/strategies.json", "/strategies/{name}.json",
                "/kv_store.json", "/kv_store/{name}.json", "/{org}/{repo}.json", "/{org}/{repo}/hw/{hardware}.json",
                "/{org}/{repo}/strategies/{strategy}.json", "/{org}/{repo}/hw/{hardware}/strategies/{strategy}.json")


def json_answer(description: str, schema: dict[str, Any] = ERROR) -> dict[str, Any]:
    """A response with a JSON body (an :data:`ERROR` by default)."""
    return {"description": description, "content": {JSON: {"schema": schema}}}


def query_param(name: str, schema: dict[str, Any], description: str,
                required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


def get_op(summary: str, responses: dict[str, Any], path_names: tuple[str, ...] = ()) -> dict[str, Any]:
    """A GET operation, with the path's ``{name}`` parameters."""
    op: dict[str, Any] = {"summary": summary, "responses": responses}
    if path_names:
        op["parameters"] = [{"name": n, "in": "path", "required": True, "schema": STRING} for n in path_names]
    return {"get": op}


def live_paths(model: dict[str, Any], selection: list[dict[str, Any]]) -> dict[str, Any]:
    """``/api/resolve``, ``/api/export``, ``/api/fit``, ``/api/perf`` and ``/api/recommend``: ``model`` is the
    (required) model parameter, ``selection`` the builder's selection parameters after it."""
    params = [model, *selection]
    refused = json_answer("A parameter cannot be honoured.")
    load = [query_param(k, {key: v for key, v in s.items() if key != "description"}, s["description"],
                        WORKLOAD[k].required)
            for k, s in load_schema().items()]
    estimate = {"200": json_answer("An estimate (see docs/decisions-perf-model.md).", OBJECT), "400": refused}
    return {
        "/api/resolve": {"get": {
            "summary": "Commands for one builder selection",
            "description": "Takes the same query parameters as the recipe page (docs/reference/ui.md, "
                           "'URL state'). Unusable values are refused (400) with the valid choices, instead "
                           "of being dropped as the page does.",
            "parameters": params,
            "responses": {
                "200": json_answer("The selection's rendering, explanation and copyable commands.",
                                   {"$ref": "#/components/schemas/Resolve"}),
                "400": refused, "414": json_answer("Query string too long.")}}},
        "/api/export": {"get": {
            "summary": "Deploy artifacts for one builder selection",
            "description": "The selection's deployment for a scheduler, the same bytes as `vllm-recipes export "
                           "--to TARGET -o -`: Kubernetes manifests (LeaderWorkerSet for multi-node), a Compose "
                           "file, an sbatch script or `vllm serve --config` files.",
            "parameters": [*params, query_param("to", {"enum": list(TARGETS)}, "Target.", True),
                           *(query_param(n, STRING, d) for n, d in (
                               *EXPORT_ARGUMENTS.items(),
                               ("download", "Any value: answer with Content-Disposition: attachment.")))],
            "responses": {
                "200": {"description": "The artifact text.", "content": {
                    "text/yaml": {"schema": STRING}, "text/x-shellscript": {"schema": STRING},
                    "text/plain": {"schema": STRING}}},
                "400": refused,
                "422": json_answer("The target cannot express this selection (the reason is in `error`).")}}},
        "/api/fit": {"get": {
            "summary": "Will it fit? Memory and KV-cache plan of a selection, or a reverse search",
            "description": "With `model`: the fit of the selection `/api/resolve` would render (weights per GPU, KV "
                           "budget, KV tokens, concurrency at `ctx`, verdict, levers) on its hardware or on "
                           "`gpu`/`gpu_memory`/`gpus`. Without `model`: every recipe variant that starts on the "
                           "given GPUs, best first.",
            "parameters": [
                {**model, "required": False}, *selection,
                query_param("ctx", {"type": "string", "maxLength": 16}, "Context length for the concurrency "
                            "figure (131072, 128k, 1m; default --max-model-len). Alias: context."),
                query_param("gpu", {"type": "string", "maxLength": 64}, "GPU name, e.g. RTX 5090 (a catalog "
                            "profile when one matches, else a custom profile)."),
                query_param("gpu_memory", {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_GPU_MEMORY},
                            "Memory per GPU in GB for a custom profile."),
                query_param("gpus", {"type": "integer", "minimum": 1, "maximum": MAX_GPUS},
                            "Number of GPUs (with gpu or gpu_memory).")],
            "responses": {"200": json_answer("A fit report (with model) or a search result (without).", OBJECT),
                          "400": refused}}},
        "/api/perf": {"get": {
            "summary": "How fast will it serve? Estimated TTFT, TPOT and throughput of a selection",
            "description": "The calibrated estimate for the selection `/api/resolve` would render, with its "
                           "expected error and the `vllm bench serve` command measuring the same point.",
            "parameters": params + load, "responses": estimate}},
        "/api/recommend": {"get": {
            "summary": "The recipe's configurations that meet a TTFT / TPOT target, fewest GPUs first",
            "parameters": [
                model, *load,
                query_param("ttft_ms", {"type": "number"}, "TTFT target in ms.", True),
                query_param("tpot_ms", {"type": "number"}, "TPOT target in ms.", True),
                query_param("hardware", STRING, "Only this hardware profile (repeatable).")],
            "responses": estimate}},
    }


def page_paths() -> dict[str, Any]:
    """The static JSON API's files, the pages' JSON twins, the llms files and ``/api/health``."""
    static = {"200": {"description": "The static JSON file (same bytes as `vllm-recipes build-api`).",
                      "headers": {"ETag": {"schema": STRING}}, "content": {JSON: {"schema": {}}}},
              "304": {"description": "Not modified (If-None-Match matched the ETag)."},
              "404": json_answer("No such file.")}
    twin = {"200": json_answer("The page's data as JSON.", OBJECT), "404": json_answer("No such page.")}
    text = {"200": {"description": "Markdown text (llms.txt convention), generated from the catalog.",
                    "content": {"text/plain": {"schema": STRING}}}}
    paths = {p: get_op("Static JSON API file", static,
                       tuple(seg[1:-1] for seg in p.replace(".json", "").split("/") if seg.startswith("{")))
             for p in STATIC_FILES}
    return paths | {
        "/index.json": get_op("Home page as JSON: latest recipes and providers.", twin),
        "/browse.json": get_op("Browse/search results as JSON (same query parameters as /browse: q, task, "
                               "arch, size, precision, hw, provider, sort).", twin),
        "/{org}.json": get_op("A provider page as JSON (when no static API file has that name).", twin,
                              ("org",)),
        "/{org}/{repo}/page.json": get_op("A recipe page's state at a URL selection (the page's query "
                                          "parameters, read leniently like the page): selection, builder "
                                          "rows, commands, rendering, explain. Also: Accept: "
                                          "application/json on the page URL.", twin, ("org", "repo")),
        "/llms.txt": get_op("The catalog for language models: how to get commands, one line per recipe.",
                            text),
        "/llms-full.txt": get_op("Every recipe's default command on each hardware it offers, each after the "
                                 "/api/resolve URL that reproduces it.", text),
        "/api/health": get_op("Liveness and whether the static JSON API is built",
                              {"200": json_answer("`ok`, `warm`, `recipes`, `api`, `warm_error`.", OBJECT)}),
    }


def openapi_spec() -> dict[str, Any]:
    """The whole document, a deep copy: the helpers share schema dicts (:data:`STRING` and the like), so
    a caller editing one spec must not change the next."""
    model = query_param("model", {"type": "string", "maxLength": 512}, "Recipe Hugging Face id (or a "
                        "variant's model id), e.g. deepseek-ai/DeepSeek-V4.1-Flash.", True)
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "vLLM Recipes API", "version": "1",
                 "description": "Static recipe JSON and live command resolution. Paths, shapes and "
                                "parameters: docs/reference/json-api.md in the vllm-recipes repository."},
        "paths": live_paths(model, openapi_parameters()) | page_paths(),
        "components": {"schemas": {
            "Error": {"type": "object", "required": ["error", "param", "choices"], "properties": {
                "error": STRING, "param": {"type": ["string", "null"]},
                "choices": {"type": "array", "items": STRING}}},
            "Resolve": {"type": "object", "required": ["rendering", "explain", "selection", "commands"],
                        "properties": {
                            "rendering": {"type": "object",
                                          "description": "The rendering object of docs/reference/json-api.md §8."},
                            "explain": {"type": "array", "items": {"type": "object"}},
                            "selection": {"type": "object"},
                            "commands": {"type": "array", "items": {"type": "object", "properties": {
                                "key": STRING, "title": STRING, "kind": STRING, "description": STRING,
                                "text": STRING}}},
                            "fit": {"type": ["object", "null"], "description": "Addition: memory/KV-cache "
                                    "summary on the selection's hardware (null without architecture facts)."}}},
        }},
    }
    return copy.deepcopy(spec)
