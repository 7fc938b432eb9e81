"""The agent tools, as plain functions over a catalog (no MCP types here): typed arguments become a
:class:`~vllm_recipes.service.Query` through the one parameter table. Input schemas carry enums from
the catalog, so a client can offer valid choices before calling."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.limits import MAX_GPU_MEMORY, MAX_GPUS
from vllm_recipes.jsvalues import as_map
from vllm_recipes.render.export import TARGETS, ExportOptions, stdout_text
from vllm_recipes.select.defaults import listed_hardware
from vllm_recipes.select.gates import offered_strategies
from vllm_recipes.select.params import URL_NAMES
from vllm_recipes.select.request import PageRequest
from vllm_recipes.service import Query, QueryError, answers, find_recipe
from vllm_recipes.service.answers import EXPORT_ARGUMENTS
from vllm_recipes.service.fit import MAX_CTX, fit_answer
from vllm_recipes.service.params import request_from_args, selection_properties, string_arg, string_schema
from vllm_recipes.service.perf import (
    WORKLOAD,
    as_float,
    load_schema,
    perf_answer,
    recommend_answer,
    sla,
    workload,
)
from vllm_recipes.service.search import Card, make_card, search
from vllm_recipes.synth.context import recipe_frontend


class ToolError(Exception):
    """A tool call that cannot be answered; carries the parameter and its valid choices."""

    def __init__(self, message: str, param: str | None = None, choices: list[str] | None = None) -> None:
        self.param, self.choices = param, list(choices or [])
        hint = f" Valid choices: {', '.join(self.choices)}." if self.choices and "Valid choices" not in message else ""
        super().__init__(message + hint)

    def to_dict(self) -> dict[str, Any]:
        return {"error": str(self), "param": self.param, "choices": self.choices}


#: Every tool, in the order the server lists them: name -> what it answers. ``mcp --help``, the
#: README and docs/agents.md name exactly these (tests/agents/test_tool_list.py).
TOOLS: dict[str, str] = {
    "list_recipes":
        "List the recipes in the catalog, best match first. Filter by free-text query (model, provider, task, "
        "architecture, hardware words), by hardware profile id (recipes that run on it) and by GPU count "
        "(recipes whose recommended selection on that hardware needs at most that many GPUs).",
    "show_recipe":
        "Everything a builder offers for one recipe: variants with their hardware, strategies, features, the "
        "default selection and where its JSON, page and guide are.",
    "resolve_command":
        "The exact deployment commands for one selection of a recipe (omitted choices take the page's "
        "defaults): the command text, argv, env, docker form and every deployment block (the same answer as "
        "the website and /api/resolve).",
    "explain":
        "Why every flag and env var of a selection is there: each final token with its layer, recipe "
        "file:line and the values it shadowed.",
    "export_deployment":
        "The selection's deployment for a scheduler, rendered from the same plan as the command: Kubernetes "
        "manifests (LeaderWorkerSet for multi-node), a Docker Compose file (one machine), a Slurm sbatch "
        "script or `vllm serve --config` files. Returns every file and the text `vllm-recipes export -o -` "
        "prints; a selection the target cannot express is an error with the reason.",
    "fit":
        "Will it fit, and how much will it serve: weights per GPU, KV-cache budget, token capacity, "
        "concurrency at a context length, the verdict and the levers that would change it, per process of "
        "the selection's plan. Give hf_id (and a selection) to fit one recipe on its hardware or on other "
        "GPUs (gpu, or gpu_memory + gpus); omit hf_id to list every recipe variant that starts on the given "
        "GPUs, best first.",
    "estimate_performance":
        "How fast will a selection serve (an ESTIMATE of a calibrated analytic model, with its expected error): "
        "time to first token, time per output token, output tokens/s per GPU and total, the running batch, what "
        "bounds each phase, and the `vllm bench serve` command that measures the same point. Give hf_id, a "
        "selection, isl, osl and concurrency (or rate).",
    "recommend":
        "Which of a recipe's offered configurations (hardware, variant, strategy, nodes) meet a TTFT and TPOT "
        "target at isl/osl and concurrency (or rate), fewest GPUs first, each with its estimate; when none does, "
        "the closest one and what limits it.",
}


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it is for, its input schema and the function answering it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    call: Callable[[Mapping[str, Any]], dict[str, Any]]


class AgentTools:
    """The tools over one catalog; schemas and indexes are computed once."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    @cached_property
    def cards(self) -> list[Card]:
        return [make_card(self.catalog, r) for r in self.catalog.recipes]

    @cached_property
    def hardware_ids(self) -> list[str]:
        return list(self.catalog.hardware_profiles)

    def selection_schema(self) -> dict[str, Any]:
        """JSON Schema of a selection (the /api/resolve parameters, from the parameter table)."""
        hf_id = string_schema("The recipe's Hugging Face id (or a variant's model id).",
                              [r.hf_id for r in self.catalog.recipes])
        return {"type": "object", "properties": {"hf_id": hf_id, **selection_properties(self.catalog)},
                "required": ["hf_id"], "additionalProperties": False}

    @cached_property
    def tools(self) -> list[Tool]:
        sel = self.selection_schema()
        hf_id = sel["properties"]["hf_id"]
        export = {"to": string_schema("Deploy target.", list(TARGETS)),
                  **{name: string_schema(desc) for name, desc in EXPORT_ARGUMENTS.items()}}
        fit = {
            "context": {"type": "integer", "minimum": 1, "maximum": MAX_CTX,
                        "description": "Context length for the concurrency figure (default: --max-model-len)."},
            "gpu": string_schema("A GPU by name (a catalog profile or a common GPU, e.g. 'RTX 5090')."),
            "gpu_memory": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_GPU_MEMORY,
                           "description": "GB per GPU, for GPUs not in the catalog (a custom profile)."},
            "gpus": {"type": "integer", "minimum": 1, "maximum": MAX_GPUS, "description": "GPUs per node."},
        }
        schemas: dict[str, dict[str, Any]] = {
            "list_recipes": {"type": "object", "additionalProperties": False, "properties": {
                "query": string_schema("Words that must all occur in the recipe's card."),
                "hardware": string_schema("Only recipes offered on this hardware profile.",
                                          self.hardware_ids),
                "fits_gpus": {"type": "integer", "minimum": 1, "maximum": 1024,
                              "description": "Only recipes whose recommended selection needs at most "
                                             "this many GPUs (on `hardware`, else the default hardware)."},
            }},
            "show_recipe": {"type": "object", "additionalProperties": False, "required": ["hf_id"],
                            "properties": {"hf_id": hf_id}},
            "resolve_command": sel,
            "explain": sel,
            "export_deployment": {**sel, "properties": {**sel["properties"], **export},
                                  "required": ["hf_id", "to"]},
            "fit": {"type": "object", "properties": {**sel["properties"], **fit},
                    "additionalProperties": False},
            "estimate_performance": {**sel, "properties": {**sel["properties"], **load_schema()},
                                     "required": ["hf_id", "isl", "osl"]},
            "recommend": {"type": "object", "additionalProperties": False,
                          "required": ["hf_id", "isl", "osl", "ttft_ms", "tpot_ms"], "properties": {
                "hf_id": hf_id, **load_schema(),
                "ttft_ms": {"type": "number", "exclusiveMinimum": 0, "description": "TTFT target (ms)."},
                "tpot_ms": {"type": "number", "exclusiveMinimum": 0, "description": "TPOT target (ms)."},
                "hardware": {"type": "array",
                             "items": string_schema("Hardware profile id.", self.hardware_ids),
                             "description": "Only these hardware profiles."}}},
        }
        return [Tool(name, description, schemas[name], getattr(self, name)) for name, description in TOOLS.items()]

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run a tool by name; raises :class:`ToolError` for anything the caller must fix."""
        for tool in self.tools:
            if tool.name == name:
                try:
                    return tool.call(arguments or {})
                except QueryError as exc:
                    raise ToolError(str(exc), exc.param, exc.choices) from None
        raise ToolError(f"Unknown tool {name!r}.", "name", [t.name for t in self.tools])

    def list_recipes(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("query", "hardware", "fits_gpus"))
        out = search(self.catalog, self.cards, _opt_str(args, "query"), _opt_str(args, "hardware"),
                     args.get("fits_gpus"))
        return {"count": len(out), "recipes": out}

    def show_recipe(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id",))
        recipe, vk = self._recipe(args)
        data = recipe.data
        profiles = self.catalog.hardware_profiles
        variants = {}
        for key, raw in recipe.variants.items():
            v = as_map(raw)
            variants[key] = {
                "model_id": v.get("model_id") if isinstance(v.get("model_id"), str) else recipe.hf_id,
                "precision": v.get("precision"), "vram_minimum_gb": v.get("vram_minimum_gb"),
                "hardware": listed_hardware(profiles, v, data),
            }
        features = {}
        for fid, raw in as_map(data.get("features")).items():
            f = as_map(raw)
            features[fid] = {"label": f.get("label") or fid, "description": f.get("description") or "",
                             "modes": list(as_map(f.get("modes")))}
        result: dict[str, Any] = {
            "hf_id": recipe.hf_id, "title": recipe.title, "provider": recipe.provider,
            "description": str(recipe.meta.get("description") or ""),
            "tasks": [t for t in recipe.meta.get("tasks") or () if isinstance(t, str)],
            "omni": recipe.is_omni, "variants": variants,
            "strategies": offered_strategies(data), "features": features,
            "frontend": recipe_frontend(data),
            "page": "/" + recipe.hf_id, "json": "/" + recipe.hf_id + ".json",
            "resources": {"json": recipe_json_uri(recipe.hf_id), "guide": recipe_guide_uri(recipe.hf_id)},
        }
        if not recipe.is_omni:
            try:
                st = answers.select(self.catalog, Query(recipe.hf_id, PageRequest(variant=vk))).state
                assert st is not None
                result["default_selection"] = answers.selection_dict(self.catalog, recipe, st)
            except QueryError as exc:
                result["default_selection"] = None
                result["default_selection_error"] = str(exc)
        return result

    def resolve_command(self, args: Mapping[str, Any]) -> dict[str, Any]:
        payload = self._payload(args)
        payload.pop("explain", None)
        return payload

    def explain(self, args: Mapping[str, Any]) -> dict[str, Any]:
        payload = self._payload(args)
        return {"selection": payload["selection"], "explain": payload["explain"]}

    def export_deployment(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", *URL_NAMES, "to", *EXPORT_ARGUMENTS))
        target = _opt_str(args, "to") or ""
        if target not in TARGETS:
            raise ToolError(f"to must be one of: {', '.join(TARGETS)}.", "to", list(TARGETS))
        given = {k: _opt_str(args, k) for k in EXPORT_ARGUMENTS}
        options = ExportOptions(**{k: v for k, v in given.items() if v is not None})
        done = answers.export(self.catalog, self._query(args), target, options)
        return {"target": target, "media_type": done.media_type, "text": stdout_text(done.artifacts),
                "files": [{"path": a.path, "media_type": a.media_type, "content": a.content} for a in done.artifacts]}

    def fit(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", *URL_NAMES, "context", "gpu", "gpu_memory", "gpus"))  # (the names /api/fit reads)
        for key, kind in (("context", int), ("gpu_memory", int | float), ("gpus", int)):
            if (value := args.get(key)) is not None and (isinstance(value, bool) or not isinstance(value, kind)):
                raise ToolError(f"{key} must be a {'number' if key == 'gpu_memory' else 'whole number'}.", key)
        context = args.get("context")
        if context is not None and not 0 < context <= MAX_CTX:
            raise ToolError(f"context must be between 1 and {MAX_CTX}.", "context")
        query = self._query(args) if args.get("hf_id") is not None else Query("", request_from_args(args))
        memory = args.get("gpu_memory")
        return fit_answer(self.catalog, query, gpu=_opt_str(args, "gpu"),
                          gpu_memory=None if memory is None else as_float(memory), gpus=args.get("gpus"),
                          context=context)

    def estimate_performance(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", *URL_NAMES, *WORKLOAD))
        return perf_answer(self.catalog, self._query(args), workload(args))

    def recommend(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", "hardware", "ttft_ms", "tpot_ms", *WORKLOAD))
        self._recipe(args)
        hw = args.get("hardware") or []
        if not isinstance(hw, list) or not all(isinstance(h, str) for h in hw):
            raise ToolError("hardware must be a list of hardware profile ids.", "hardware", self.hardware_ids)
        return recommend_answer(self.catalog, str(args["hf_id"]), sla(args), workload(args), tuple(hw))

    def _recipe(self, args: Mapping[str, Any]) -> tuple[Recipe, str | None]:
        try:
            return find_recipe(self.catalog, _opt_str(args, "hf_id"))
        except QueryError as exc:
            raise ToolError(str(exc), "hf_id", exc.choices) from None

    def _query(self, args: Mapping[str, Any]) -> Query:
        """The selection arguments as a query (a clear ``hf_id`` error before anything else)."""
        self._recipe(args)
        return Query(str(args["hf_id"]), request_from_args(args))

    def _payload(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", *URL_NAMES))
        return answers.resolve_payload(self.catalog, self._query(args))


def recipe_json_uri(hf_id: str) -> str:
    return f"recipe://{hf_id}.json"


def recipe_guide_uri(hf_id: str) -> str:
    return f"recipe://{hf_id}/guide.md"


def _check_keys(args: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = [k for k in args if k not in allowed]
    if unknown:
        raise ToolError(f"Unknown argument {unknown[0]!r}.", unknown[0], list(allowed))


def _opt_str(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    return None if value is None else string_arg(key, value)
