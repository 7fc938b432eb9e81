"""The agent tools, as plain functions over a catalog (no MCP types here).

Each tool answers from the same code path as the website: ``resolve_command``
and ``explain`` build the very query that ``/api/resolve`` reads and call its
payload function, so an agent, the page and the live API can never disagree.
The MCP server (:mod:`vllm_recipes.agents.server`) only wraps these functions
in protocol objects; tests call them directly too.

Input schemas are JSON Schema documents whose enums come from the catalog
(hardware ids, strategies, features, frontends), so a client can offer valid
choices before calling and a model sees them in the tool list.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_map
from vllm_recipes.render.export import TARGETS
from vllm_recipes.select.defaults import listed_hardware, variant_or_default
from vllm_recipes.select.gates import offered_strategies
from vllm_recipes.select.page import PageRequest, SelectionError, build_state
from vllm_recipes.synth.context import Ctx, recipe_frontend
from vllm_recipes.synth.resolve import resolve
from vllm_recipes.web.api import find_model, resolve_payload, selection_dict
from vllm_recipes.web.deploy import export_query
from vllm_recipes.web.site import SiteIndex, matches_query, norm
from vllm_recipes.web.urlstate import INT_PARAMS, PARAMS, canonical_params, encode


class ToolError(Exception):
    """A tool call that cannot be answered; carries the parameter and its valid choices."""

    def __init__(self, message: str, param: str | None = None, choices: list[str] | None = None) -> None:
        self.param = param
        self.choices = list(choices or [])
        text = message
        if self.choices and "Valid choices" not in message:
            text += f" Valid choices: {', '.join(self.choices)}."
        super().__init__(text)

    def to_dict(self) -> dict[str, Any]:
        return {"error": str(self), "param": self.param, "choices": self.choices}

    @classmethod
    def from_selection(cls, exc: SelectionError) -> ToolError:
        return cls(str(exc), exc.param, exc.choices)


#: Descriptions of the selection parameters (the names and meaning of /api/resolve's query).
SELECTION_DESCRIPTIONS: dict[str, str] = {
    "hardware": "Hardware profile id (default: the recipe's default hardware).",
    "variant": "Variant key, e.g. 'default' or a precision variant (default: default).",
    "strategy": "Serving strategy id (default: the recipe's recommendation).",
    "nodes": "Node count for multi-node strategies (1-16).",
    "features": "Every enabled feature; replaces the default set (omit for the defaults).",
    "fmode": "Feature modes, as an object {feature: mode}.",
    "advanced": "Advanced tuning option ids.",
    "kv_offload": "KV offload option or Mooncake deployment id ('off' for none).",
    "kv_instances": "Mooncake instance count (1-16).",
    "kv_instance": "Mooncake instance to render (0-based).",
    "prefill_nodes": "PD prefill pool nodes (0 together with decode_nodes=0: co-located on one node).",
    "decode_nodes": "PD decode pool nodes.",
    "prefill_mode": "PD prefill pool mode.",
    "decode_mode": "PD decode pool mode.",
    "prefill_rank": "PD prefill node to render (0-based).",
    "decode_rank": "PD decode node to render (0-based).",
    "frontend": "OpenAI-compatible frontend.",
    "install": "Install / run method.",
    "router": "PD router.",
    "task": "Omni task key (omni recipes only).",
}
LIST_PARAMS = frozenset({"features", "advanced"})
#: ``export_deployment`` options besides the selection and ``to`` (the CLI's ``export`` options)
EXPORT_ARGUMENTS: dict[str, str] = {
    "namespace": "Kubernetes namespace (default: default).",
    "name": "Object / job name, a DNS label (default: from the model id).",
    "pvc": "Kubernetes PersistentVolumeClaim for the Hugging Face cache (default: emptyDir).",
    "image": "Container image (default: the image the Docker command uses).",
}

#: fit's own arguments (the names /api/fit reads)
FIT_ARGS = ("context", "gpu", "gpu_memory", "gpus")
FIT_MAX_CONTEXT = 1 << 24
MAX_STRING = 512


def _str_schema(description: str, enum: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": MAX_STRING, "description": description}
    if enum:
        schema["enum"] = enum
    return schema


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

    # --- catalog-derived enums ------------------------------------------------------------------

    @cached_property
    def index(self) -> SiteIndex:
        return SiteIndex(self.catalog)

    @cached_property
    def hardware_ids(self) -> list[str]:
        return list(self.catalog.hardware_profiles)

    @cached_property
    def strategy_ids(self) -> list[str]:
        return list(self.catalog.serving_strategies)

    @cached_property
    def feature_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for recipe in self.catalog.recipes:
            for f in as_map(recipe.data.get("features")):
                if isinstance(f, str):
                    seen.setdefault(f)
        return list(seen)

    @cached_property
    def kv_ids(self) -> list[str]:
        ids = [k for k in as_map(self.catalog.kv_offload_options) if isinstance(k, str)]
        return ["off", *ids, *self.catalog.kv_stores]

    @cached_property
    def recipe_ids(self) -> list[str]:
        return [r.hf_id for r in self.catalog.recipes]

    def selection_schema(self) -> dict[str, Any]:
        """JSON Schema of a selection (the /api/resolve parameters), enums from the catalog."""
        enums: dict[str, list[str]] = {
            "hardware": self.hardware_ids, "strategy": self.strategy_ids, "kv_offload": self.kv_ids,
            "prefill_mode": ["tp", "tep", "dep"], "decode_mode": ["tp", "tep", "dep"],
            "frontend": sorted(k for k in self.catalog.frontends if isinstance(k, str)) or ["python", "rust"],
            "install": ["pip", "docker"], "router": ["vllm-router", "smg-grpc"],
        }
        props: dict[str, Any] = {
            "hf_id": _str_schema("The recipe's Hugging Face id (or a variant's model id).", self.recipe_ids),
        }
        for p in PARAMS:
            desc = SELECTION_DESCRIPTIONS.get(p, "")
            if p in INT_PARAMS:
                props[p] = {"type": "integer", "minimum": 0, "maximum": 16, "description": desc}
            elif p == "features":
                props[p] = {"type": "array", "items": _str_schema("Feature id.", self.feature_ids),
                            "maxItems": 64, "description": desc}
            elif p == "advanced":
                props[p] = {"type": "array", "items": _str_schema("Advanced option id."), "maxItems": 64,
                            "description": desc}
            elif p == "fmode":
                props[p] = {"type": "object", "additionalProperties": {"type": "string", "maxLength": MAX_STRING},
                            "description": desc}
            else:
                props[p] = _str_schema(desc, enums.get(p))
        return {"type": "object", "properties": props, "required": ["hf_id"], "additionalProperties": False}

    def tools(self) -> list[Tool]:
        return self._tools

    @cached_property
    def _tools(self) -> list[Tool]:
        sel = self.selection_schema()
        return [
            Tool("list_recipes",
                 "List the recipes in the catalog, best match first. Filter by free-text query (model, "
                 "provider, task, architecture, hardware words), by hardware profile id (recipes that run "
                 "on it) and by GPU count (recipes whose recommended selection on that hardware needs at "
                 "most that many GPUs).",
                 {"type": "object", "additionalProperties": False, "properties": {
                     "query": _str_schema("Words that must all occur in the recipe's card."),
                     "hardware": _str_schema("Only recipes offered on this hardware profile.", self.hardware_ids),
                     "fits_gpus": {"type": "integer", "minimum": 1, "maximum": 1024,
                                   "description": "Only recipes whose recommended selection needs at most "
                                                  "this many GPUs (on `hardware`, else the default hardware)."},
                 }},
                 self.list_recipes),
            Tool("show_recipe",
                 "Everything a builder offers for one recipe: variants with their hardware, strategies, "
                 "features, the default selection and where its JSON, page and guide are.",
                 {"type": "object", "additionalProperties": False, "required": ["hf_id"], "properties": {
                     "hf_id": sel["properties"]["hf_id"]}},
                 self.show_recipe),
            Tool("resolve_command",
                 "The exact deployment commands for one selection of a recipe (omitted choices take the "
                 "page's defaults): the command text, argv, env, docker form and every deployment block "
                 "(the same answer as the website and /api/resolve).",
                 sel, self.resolve_command),
            Tool("explain",
                 "Why every flag and env var of a selection is there: each final token with its layer, "
                 "recipe file:line and the values it shadowed.",
                 sel, self.explain),
            Tool("export_deployment",
                 "The selection's deployment for a scheduler, rendered from the same plan as the command: "
                 "Kubernetes manifests (LeaderWorkerSet for multi-node), a Docker Compose file (one machine), "
                 "a Slurm sbatch script or `vllm serve --config` files. Returns every file and the text "
                 "`vllm-recipes export -o -` prints; a selection the target cannot express is an error "
                 "with the reason.",
                 self.export_schema(sel), self.export_deployment),
            Tool("fit",
                 "Will it fit, and how much will it serve: weights per GPU, KV-cache budget, token capacity, "
                 "concurrency at a context length, the verdict and the levers that would change it, per "
                 "process of the selection's plan. Give hf_id (and a selection) to fit one recipe on its "
                 "hardware or on other GPUs (gpu, or gpu_memory + gpus); omit hf_id to list every recipe "
                 "variant that starts on the given GPUs, best first.",
                 self.fit_schema(), self.fit),
            Tool("estimate_performance",
                 "How fast will a selection serve (an ESTIMATE of a calibrated analytic model, with its "
                 "expected error): time to first token, time per output token, output tokens/s per GPU and "
                 "total, the running batch, what bounds each phase, and the `vllm bench serve` command that "
                 "measures the same point. Give hf_id, a selection, isl, osl and concurrency (or rate).",
                 self.perf_schema(), self.estimate_performance),
            Tool("recommend",
                 "Which of a recipe's offered configurations (hardware, variant, strategy, nodes) meet a TTFT "
                 "and TPOT target at isl/osl and concurrency (or rate), fewest GPUs first, each with its "
                 "estimate; when none does, the closest one and what limits it.",
                 self.recommend_schema(), self.recommend),
        ]

    def export_schema(self, sel: dict[str, Any]) -> dict[str, Any]:
        """The selection schema plus the export target and its options."""
        props = dict(sel["properties"])
        props["to"] = _str_schema("Deploy target.", list(TARGETS))
        for name, desc in EXPORT_ARGUMENTS.items():
            props[name] = _str_schema(desc)
        return {**sel, "properties": props, "required": ["hf_id", "to"]}

    def fit_schema(self) -> dict[str, Any]:
        """The selection schema with ``hf_id`` optional plus fit's own arguments."""
        schema = self.selection_schema()
        props = dict(schema["properties"])
        props.update({
            "context": {"type": "integer", "minimum": 1, "maximum": FIT_MAX_CONTEXT,
                        "description": "Context length for the concurrency figure (default: --max-model-len)."},
            "gpu": _str_schema("A GPU by name (a catalog profile or a common GPU, e.g. 'RTX 5090')."),
            "gpu_memory": {"type": "number", "exclusiveMinimum": 0, "maximum": 4096,
                           "description": "GB per GPU, for GPUs not in the catalog (a custom profile)."},
            "gpus": {"type": "integer", "minimum": 1, "maximum": 64, "description": "GPUs per node."},
        })
        return {"type": "object", "properties": props, "additionalProperties": False}

    def perf_schema(self) -> dict[str, Any]:
        """The selection schema plus the workload."""
        schema = self.selection_schema()
        return {**schema, "properties": {**schema["properties"], **_load_schema()}, "required": ["hf_id", "isl", "osl"]}

    def recommend_schema(self) -> dict[str, Any]:
        sel = self.selection_schema()
        return {"type": "object", "additionalProperties": False, "required": ["hf_id", "isl", "osl", "ttft_ms", "tpot_ms"],
                "properties": {
                    "hf_id": sel["properties"]["hf_id"], **_load_schema(),
                    "ttft_ms": {"type": "number", "exclusiveMinimum": 0, "description": "TTFT target (ms)."},
                    "tpot_ms": {"type": "number", "exclusiveMinimum": 0, "description": "TPOT target (ms)."},
                    "hardware": {"type": "array", "items": _str_schema("Hardware profile id.", self.hardware_ids),
                                 "description": "Only these hardware profiles."}}}

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run a tool by name; raises :class:`ToolError` for anything the caller must fix."""
        for tool in self.tools():
            if tool.name == name:
                return tool.call(arguments or {})
        raise ToolError(f"Unknown tool {name!r}.", "name", [t.name for t in self.tools()])

    # --- tools ----------------------------------------------------------------------------------

    def list_recipes(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("query", "hardware", "fits_gpus"))
        query = _opt_str(args, "query")
        hardware = _opt_str(args, "hardware")
        fits = args.get("fits_gpus")
        if fits is not None and (not isinstance(fits, int) or isinstance(fits, bool) or fits < 1):
            raise ToolError("fits_gpus must be a positive integer.", "fits_gpus")
        if hardware is not None and hardware not in self.catalog.hardware_profiles:
            raise ToolError(f"Unknown hardware {hardware!r}.", "hardware", self.hardware_ids)
        cards = self.index.cards
        if query:
            cards = [c for c in cards if matches_query(c.haystack, query)]
            words = [norm(w) for w in query.split() if w]
            cards = sorted(cards, key=lambda c: -sum(w in norm(c.hf_id) for w in words))
        out = []
        for card in cards:
            recipe = card.recipe
            entry: dict[str, Any] = {"hf_id": card.hf_id, "title": card.title, "provider": card.provider,
                                     "description": card.description, "tasks": card.tasks,
                                     "parameters": card.params, "date_updated": card.date_updated,
                                     "page": card.url, "json": card.url + ".json"}
            if hardware is not None or fits is not None:
                need = self._recommended_gpus(recipe, hardware)
                if need is None:
                    continue
                hw_used, gpus, strategy = need
                if fits is not None and gpus > fits:
                    continue
                entry.update({"hardware": hw_used, "strategy": strategy, "gpus": gpus})
            out.append(entry)
        return {"count": len(out), "recipes": out}

    def _recommended_gpus(self, recipe: Recipe, hardware: str | None) -> tuple[str, int, str] | None:
        """``(hardware, GPUs, strategy)`` of the page's default selection on ``hardware``, or ``None``
        when the recipe is not offered there or cannot be synthesized."""
        if recipe.is_omni:
            return None
        if hardware is not None:
            variant = variant_or_default(recipe.data, "default")
            if hardware not in listed_hardware(self.catalog.hardware_profiles, variant, recipe.data):
                return None
        try:
            st = build_state(self.catalog, recipe, PageRequest(hardware=hardware), strict=True)
            ctx, _plan = resolve(self.catalog, recipe, st.selection)
        except Exception:  # a recipe that cannot render its default is not offered
            return None
        return st.selection.hw_id, gpus_used(ctx), st.selection.strategy

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
                st = build_state(self.catalog, recipe, PageRequest(variant=vk), strict=True)
                query = encode(canonical_params(self.catalog, recipe, st))
                result["default_selection"] = selection_dict(self.catalog, recipe, st, query)
            except SelectionError as exc:
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
        _check_keys(args, ("hf_id", *PARAMS, "to", *EXPORT_ARGUMENTS))
        self._recipe(args)
        items = selection_query({k: v for k, v in args.items() if k not in ("to", *EXPORT_ARGUMENTS)})
        for key in ("to", *EXPORT_ARGUMENTS):
            value = _opt_str(args, key)
            if value is not None:
                items.append((key, value))
        reply, artifacts = export_query(self.catalog, items)
        if reply.status != 200:
            body = json.loads(reply.body)
            raise ToolError(body["error"], body["param"], body["choices"])
        return {"target": args["to"], "media_type": reply.media_type, "text": reply.body,
                "files": [{"path": a.path, "media_type": a.media_type, "content": a.content} for a in artifacts]}

    def fit(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", *PARAMS, *FIT_ARGS))
        items: list[tuple[str, str]] = []
        if args.get("hf_id") is not None:
            self._recipe(args)
            items = selection_query({k: v for k, v in args.items() if k not in FIT_ARGS})
        for key in FIT_ARGS:
            value = args.get(key)
            if value is None:
                continue
            if key == "gpu":
                items.append((key, _opt_str(args, key) or ""))
            elif isinstance(value, bool) or not isinstance(value, int | float) \
                    or (key != "gpu_memory" and not isinstance(value, int)):
                raise ToolError(f"{key} must be a {'number' if key == 'gpu_memory' else 'whole number'}.", key)
            else:
                items.append((key, str(value)))
        from vllm_recipes.web.fit import fit_payload

        try:
            return fit_payload(self.catalog, items)
        except SelectionError as exc:
            raise ToolError.from_selection(exc) from None

    def estimate_performance(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", *PARAMS, *PERF_ARGS))
        self._recipe(args)
        items = selection_query({k: v for k, v in args.items() if k not in PERF_ARGS})
        items += _load_items(args)
        from vllm_recipes.web.perf import perf_payload

        try:
            return perf_payload(self.catalog, [("model", str(args["hf_id"])), *items])
        except SelectionError as exc:
            raise ToolError.from_selection(exc) from None

    def recommend(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", "hardware", "ttft_ms", "tpot_ms", *PERF_ARGS))
        self._recipe(args)
        items = [("model", str(args["hf_id"])), *_load_items(args)]
        for key in ("ttft_ms", "tpot_ms"):
            v = args.get(key)
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ToolError(f"{key} must be a number of milliseconds.", key)
            items.append((key, str(v)))
        hw = args.get("hardware") or []
        if not isinstance(hw, list) or not all(isinstance(h, str) for h in hw):
            raise ToolError("hardware must be a list of hardware profile ids.", "hardware", self.hardware_ids)
        items += [("hardware", h) for h in hw]
        from vllm_recipes.web.perf import recommend_payload

        try:
            return recommend_payload(self.catalog, items)
        except SelectionError as exc:
            raise ToolError.from_selection(exc) from None

    # --- helpers --------------------------------------------------------------------------------

    def _recipe(self, args: Mapping[str, Any]) -> tuple[Recipe, str | None]:
        hf_id = _opt_str(args, "hf_id")
        try:
            return find_model(self.catalog, hf_id)
        except SelectionError as exc:
            raise ToolError(str(exc).replace("Parameter 'model'", "Argument 'hf_id'"), "hf_id",
                            exc.choices) from None

    def _payload(self, args: Mapping[str, Any]) -> dict[str, Any]:
        _check_keys(args, ("hf_id", *PARAMS))
        self._recipe(args)  # a clear hf_id error before anything else
        try:
            return resolve_payload(self.catalog, selection_query(args))
        except SelectionError as exc:
            raise ToolError.from_selection(exc) from None


def gpus_used(ctx: Ctx) -> int:
    """GPUs the selection occupies: every GPU of every node for multi-node and PD pools, the
    resolved parallel size on one node."""
    per_node = ctx.gpu_count if isinstance(ctx.gpu_count, int) else 1
    if ctx.is_multi:
        return per_node * max(1, ctx.node_count)
    if ctx.is_pd:
        pools = ctx.sel.pd_nodes if isinstance(ctx.sel.pd_nodes, Mapping) else {}
        nodes = 0
        for role in ("prefill", "decode"):
            pool = pools.get(role)
            n = pool.get("nodes") if isinstance(pool, Mapping) else pool
            nodes += n if isinstance(n, int) else 0
        return per_node * max(1, nodes)
    size = ctx.single_node_tp
    return int(size) if isinstance(size, int | float) and size == size else per_node


PERF_ARGS = ("isl", "osl", "concurrency", "rate")


def _load_schema() -> dict[str, Any]:
    return {"isl": {"type": "integer", "minimum": 1, "maximum": 1 << 20, "description": "Input (prompt) tokens."},
            "osl": {"type": "integer", "minimum": 1, "maximum": 1 << 17, "description": "Output tokens."},
            "concurrency": {"type": "integer", "minimum": 1, "maximum": 4096,
                            "description": "Concurrent users, closed loop (default 1)."},
            "rate": {"type": "number", "exclusiveMinimum": 0, "description": "Poisson arrivals, requests/s."}}


def _load_items(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for key in PERF_ARGS:
        v = args.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or (key != "rate" and not isinstance(v, int)):
            raise ToolError(f"{key} must be a {'number' if key == 'rate' else 'whole number'}.", key)
        out.append((key, str(v)))
    return out


def recipe_json_uri(hf_id: str) -> str:
    return f"recipe://{hf_id}.json"


def recipe_guide_uri(hf_id: str) -> str:
    return f"recipe://{hf_id}/guide.md"


def selection_query(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Tool arguments -> the ``/api/resolve`` query items (``hf_id`` becomes ``model``)."""
    items: list[tuple[str, str]] = [("model", str(args.get("hf_id") or ""))]
    for p in PARAMS:
        if p not in args or args[p] is None:
            continue
        value = args[p]
        if p in LIST_PARAMS:
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ToolError(f"{p} must be a list of strings.", p)
            items.append((p, ",".join(value)))
        elif p == "fmode":
            if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                         for k, v in value.items()):
                raise ToolError("fmode must be an object mapping feature ids to mode ids.", p)
            items.append((p, ",".join(f"{f}:{m}" for f, m in value.items())))
        elif p in INT_PARAMS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ToolError(f"{p} must be an integer.", p)
            items.append((p, str(value)))
        else:
            if not isinstance(value, str):
                raise ToolError(f"{p} must be a string.", p)
            items.append((p, value))
    return items


def _check_keys(args: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = [k for k in args if k not in allowed]
    if unknown:
        raise ToolError(f"Unknown argument {unknown[0]!r}.", unknown[0], list(allowed))


def _opt_str(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_STRING:
        raise ToolError(f"{key} must be a string of at most {MAX_STRING} characters.", key)
    return value.strip() or None
