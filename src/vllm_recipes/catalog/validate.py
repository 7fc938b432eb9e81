"""Recipe and catalog validation: every problem becomes a :class:`Finding`, never a traceback.

The engine keeps reading the raw frozen data; these checks only report (docs/decisions-catalog.md).
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel, Discriminator, Tag, ValidationError

from vllm_recipes.jsvalues import as_list, as_map, is_number
from vllm_recipes.jsvalues import js_str as _js_str

from . import models as m
from .diagnostics import Checker, Finding, finding_at, finding_from_load_error, sort_findings
from .featuremodes import feature_mode_issues
from .identifiers import data_file_identifier_findings, hf_id_findings, recipe_identifier_findings
from .loader import MAX_POOL_NODES, POOL_MODES, Catalog, document_kind, hf_id_for, recipe_from_document
from .suggest import likely_meant
from .yamlsource import KeyPath, YamlDocument, YamlLoadError, format_key_path, load_yaml_file

#: Keys whose list value is a vLLM argument list (checked for JSON and whitespace).
ARG_LIST_KEYS = frozenset({"base_args", "extra_args", "vllm_args", "args"})
#: Tokens one argument list may hold (public recipes hold at most a few dozen): a longer list is an
#: error, so a hostile recipe cannot make every selection resolve, dedupe and lint a huge list.
MAX_ARG_TOKENS = 1000
DEPLOY_TYPES = ("single_node", "multi_node", "pd_cluster", "kv_store_lb")
DEFAULT_FRONTENDS = ("python", "rust")


@dataclass(frozen=True)
class _Vocabulary:
    """Ids a recipe may refer to, gathered once per catalog."""

    hw_ids: tuple[str, ...]
    #: keys a hardware-keyed map may use: exact id, generation, brand, ``default``
    keyed: tuple[str, ...]
    archs: frozenset[str]
    strategies: tuple[str, ...]
    kv_stores: tuple[str, ...]
    kv_options: tuple[str, ...]
    kv_groups: tuple[str, ...]
    frontends: tuple[str, ...]
    tasks: tuple[str, ...]

    @property
    def selectors(self) -> tuple[str, ...]:
        return (*self.hw_ids, *(f"arch:{a}" for a in sorted(self.archs)))


def _vocabulary(catalog: Catalog) -> _Vocabulary:
    profiles = [p for p in catalog.hardware_profiles.values() if isinstance(p, dict)]
    gens: set[str] = set()
    for prof in profiles:
        for key in ("generation", "gpu_generation"):
            g = prof.get(key)
            items = g if isinstance(g, list | tuple) else (g,)
            gens.update(item for item in items if isinstance(item, str) and item)
    brands = {p["brand"].lower() for p in profiles if isinstance(p.get("brand"), str)}
    hw_ids = tuple(catalog.hardware_profiles)
    return _Vocabulary(
        hw_ids=hw_ids,
        keyed=(*hw_ids, *sorted((gens | brands | {"default", "nvidia"}) - set(hw_ids))),
        archs=frozenset(p["arch"] for p in profiles if isinstance(p.get("arch"), str)),
        strategies=tuple(catalog.serving_strategies),
        kv_stores=tuple(catalog.kv_stores),
        kv_options=tuple(catalog.kv_offload_options),
        kv_groups=tuple(as_map(catalog.taxonomy.get("kv_offload_groups"))),
        frontends=tuple(catalog.frontends) or DEFAULT_FRONTENDS,
        tasks=tuple(as_map(catalog.taxonomy.get("tasks"))),
    )


#: "Did you mean" suggestions per document: difflib costs ~1 ms each, and a hostile file
#: with 40,000 unknown keys must not take a minute to validate (the findings stay).
SUGGESTION_BUDGET = 200
_suggestions_left: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("suggestions", default=None)


def _did_you_mean(name: Any, candidates: Iterable[str]) -> str:
    if not isinstance(name, str) or len(name) > 64:
        return ""
    left = _suggestions_left.get()
    if left is not None:
        if left[0] <= 0:
            return ""
        left[0] -= 1
    got = " or ".join(f"'{g}'" for g in likely_meant(name, candidates))
    return f" (did you mean {got}?)" if got else ""


# --- Type errors from the typed models

_TAGS = frozenset({"null", "bool", "int", "float", "str", "map", "list", "brand", "cuda", "badmap", "other"})

_EXPECTED = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "float_type": "expected a number",
    "bool_type": "expected true or false",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "tuple_type": "expected a list",
    "list_type": "expected a list",
}


_BARE = {"null": "null", "map": "a mapping", "list": "a list"}


def _describe(value: Any) -> str:
    """``a string ("8")``-style description of a YAML value for messages."""
    shape = m.shape_of(value)
    if shape in _BARE:
        return _BARE[shape]
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else _js_str(value)
    if len(text) > 40:
        text = text[:37] + "..."
    article = {"bool": "a boolean", "int": "an integer", "float": "a number", "str": "a string"}
    return f"{article.get(shape, type(value).__name__)} ({text})"


def _loc_to_path(loc: tuple[Any, ...], data: Any) -> KeyPath:
    """Map a pydantic error location onto the data's key path (dropping union tags)."""
    path: list[Any] = []
    node = data
    present = True
    for seg in loc:
        if present and ((isinstance(node, dict) and seg in node) or (
                isinstance(node, list | tuple) and isinstance(seg, int) and 0 <= seg < len(node))):
            path.append(seg)
            node = node[seg]
            continue
        if isinstance(seg, str) and seg in _TAGS:
            continue
        path.append(seg)
        present = False
    return tuple(path)


def _type_findings(doc: YamlDocument, model: type[BaseModel], data: Any) -> list[Finding]:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    else:
        return []
    out: list[Finding] = []
    for err in errors:
        path = _loc_to_path(err["loc"], data)
        etype, value, msg = err["type"], err["input"], err["msg"]
        expected = msg if etype == "wrong_type" else _EXPECTED.get(etype)
        if model is m.RecipeModel and m.is_display_only(path):
            # (compatibility policy: the engine never reads it, so it never costs the recipe its place)
            out.append(finding_at(doc, path, "warning", f"{expected or msg}, got {_describe(value)}; only the "
                                                        "page shows this key, the recipe is still published",
                                  "display-type"))
            continue
        if etype == "missing":
            name = _js_str(path[-1]) if path else "?"
            out.append(finding_at(doc, path, "error", f"required key '{name}' is missing", "missing-key"))
            continue
        if expected:
            msg = f"{expected}, got {_describe(value)}"
        if etype == "string_type" and isinstance(value, bool):
            msg += " (YAML reads unquoted yes/no/on/off/true/false as booleans: quote the word)"
        out.append(finding_at(doc, path, "error", msg, "type"))
    return out


# --- Unknown keys, walking the model annotations alongside the data

@cache
def _hints(model: type[BaseModel]) -> dict[str, Any]:
    return typing.get_type_hints(model, include_extras=True)


def _unknown_keys(doc: YamlDocument, tp: Any, data: Any, path: KeyPath, out: list[Finding]) -> None:
    """Warnings for the keys of ``data`` that type ``tp`` does not declare (appended to ``out``)."""
    if data is None:
        return
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        disc = next((x.discriminator for x in args[1:] if isinstance(x, Discriminator)), None)
        if not callable(disc):
            _unknown_keys(doc, args[0], data, path, out)
            return
        tag = disc(data)  # a discriminated union: the member its tag picks (none: nothing)
        for member in typing.get_args(args[0]):
            if any(isinstance(x, Tag) and x.tag == tag for x in typing.get_args(member)):
                _unknown_keys(doc, member, data, path, out)
                return
    elif origin is Union or origin is types.UnionType:  # ``X | None``: every other union is discriminated
        _unknown_keys(doc, next(a for a in args if a is not type(None)), data, path, out)
    elif isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(data, dict):
        hints, fields = _hints(tp), tp.model_fields
        open_keys = getattr(tp, "open_keys", False)  # (a model whose extra keys are data, e.g. a name -> value map)
        for key, value in data.items():
            if key in fields:
                _unknown_keys(doc, hints[key], value, (*path, key), out)
            elif not open_keys:
                out.append(finding_at(doc, (*path, key), "warning",
                                      f"unknown key '{_js_str(key)}'{_did_you_mean(key, fields)}", "unknown-key"))
    elif origin is dict and isinstance(data, dict):
        for key, value in data.items():
            _unknown_keys(doc, args[1], value, (*path, key), out)
    elif origin is tuple and isinstance(data, list | tuple):
        for i, value in enumerate(data):
            _unknown_keys(doc, args[0], value, (*path, i), out)


# --- Arguments

_CONTAINERS = (dict, list, tuple)


def _arg_findings(doc: YamlDocument) -> list[Finding]:
    """JSON-looking tokens that do not parse (error); other tokens with whitespace (warning).

    Argument lists sit at any depth; the walk keeps ``(parent link, key)`` links and spells a key path only
    for a reported token (spelling every key path made this walk most of a cold ``serve``).
    """
    out: list[Finding] = []
    stack: list[tuple[Any, Any]] = [(doc.data, None)]
    while stack:
        node, link = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(value, _CONTAINERS):
                    continue  # (scalars hold no argument list)
                if key in ARG_LIST_KEYS and not isinstance(value, dict):
                    if len(value) > MAX_ARG_TOKENS:
                        out.append(finding_at(doc, (*_spelled(link), key), "error",
                                              f"argument list has {len(value):,} tokens; at most "
                                              f"{MAX_ARG_TOKENS:,} are allowed", "too-many-args"))
                        continue
                    for i, token in enumerate(value):
                        if isinstance(token, str) and (token[:1] in ("{", "[") or _WHITESPACE.search(token)):
                            out.extend(_check_token(doc, (*_spelled(link), key, i), token))
                else:
                    stack.append((value, (link, key)))
        elif isinstance(node, list | tuple):
            stack.extend((v, (link, i)) for i, v in enumerate(node) if isinstance(v, _CONTAINERS))
    return out


def _spelled(link: Any) -> KeyPath:
    """The key path of an ``(parent link, key)`` chain (``None``: the document's root)."""
    keys: list[Any] = []
    while link is not None:
        link, key = link
        keys.append(key)
    return tuple(reversed(keys))


_WHITESPACE = re.compile(r"\s")  # (``\s`` of a str pattern is exactly ``str.isspace``)


def _check_token(doc: YamlDocument, path: KeyPath, token: str) -> list[Finding]:
    """A token that looks like JSON (checked that it parses), else one with whitespace."""
    if token[:1] not in ("{", "["):
        return [finding_at(doc, path, "warning",
                           f"argument {json.dumps(token, ensure_ascii=False)} contains whitespace; it is passed "
                           "as a single shell word (split flag and value into separate list items)",
                           "arg-whitespace")]
    try:
        json.loads(token)
    except (ValueError, RecursionError) as exc:
        detail = f"{exc.msg} (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else str(exc)
        return [finding_at(doc, path, "error", f"argument looks like JSON but does not parse: {detail}", "bad-json")]
    return []


def _duplicate_key_findings(doc: YamlDocument) -> list[Finding]:
    return [Finding("error", pos.file, pos.line, pos.col, format_key_path(path),
                    f"duplicate key '{_js_str(path[-1])}': the later value silently replaces the "
                    "earlier one (js-yaml rejects the file)", "duplicate-key") for path, pos in doc.duplicate_keys]


# --- Recipe reference checks

@dataclass
class _RecipeChecker:
    """Reference checks of one recipe against the catalog vocabulary."""

    doc: YamlDocument
    v: _Vocabulary
    out: list[Finding] = dataclasses.field(default_factory=list)

    def err(self, path: KeyPath, msg: str, code: str) -> None:
        self.out.append(finding_at(self.doc, path, "error", msg, code))

    def warn(self, path: KeyPath, msg: str, code: str) -> None:
        self.out.append(finding_at(self.doc, path, "warning", msg, code))

    def strategy(self, path: KeyPath, name: Any) -> None:
        if not self.v.strategies or not isinstance(name, str) or name in self.v.strategies:
            return
        self.err(path, f"'{name}' is a KV-store deployment, not a serving strategy" if name in self.v.kv_stores
                 else f"unknown strategy '{name}'{_did_you_mean(name, self.v.strategies)}", "unknown-strategy")

    def feature(self, path: KeyPath, name: Any, features: Mapping[str, Any]) -> None:
        if isinstance(name, str) and name not in features:
            self.err(path, f"unknown feature '{name}'{_did_you_mean(name, features)}",
                     "unknown-feature")

    def hw_exact(self, path: KeyPath, hw: Any) -> None:
        if self.v.hw_ids and isinstance(hw, str) and hw not in self.v.hw_ids:
            self.warn(path, f"unknown hardware id '{hw}'{_did_you_mean(hw, self.v.hw_ids)}", "unknown-hardware")

    def hw_selector(self, path: KeyPath, sel: Any) -> None:
        if not self.v.hw_ids or not isinstance(sel, str):
            return
        if sel.startswith("arch:"):
            arch = sel[len("arch:"):]
            if arch not in self.v.archs:
                self.warn(path, f"no hardware profile has arch '{arch}'"
                                f"{_did_you_mean(sel, self.v.selectors)}", "unknown-hardware")
        elif sel not in self.v.hw_ids:
            self.warn(path, f"unknown hardware id '{sel}'{_did_you_mean(sel, self.v.selectors)}",
                      "unknown-hardware")

    def hw_keyed_map(self, path: KeyPath, value: Any) -> None:
        if not self.v.hw_ids or not isinstance(value, dict):
            return
        for key in value:
            if key not in self.v.keyed:
                self.warn((*path, key), f"unknown hardware key '{key}': not a profile id, generation or "
                                        f"brand{_did_you_mean(key, self.v.keyed)}", "unknown-hardware")

    def hw_exact_map(self, path: KeyPath, value: Any) -> None:
        for key in as_map(value):
            self.hw_exact((*path, key), key)

    def run(self) -> list[Finding]:
        d = as_map(self.doc.data)
        features = as_map(d.get("features"))
        variants = d.get("variants")
        if isinstance(variants, dict) and "default" not in variants:
            self.err(("variants", "default"), "required key 'default' is missing", "missing-key")
        self._meta(as_map(d.get("meta")))
        frontend = as_map(d.get("model")).get("default_frontend")
        if isinstance(frontend, str) and frontend not in self.v.frontends:
            self.err(("model", "default_frontend"),
                     f"unknown frontend '{frontend}' (known: {', '.join(self.v.frontends)})", "unknown-frontend")
        self._strategies(d)
        self._features(d, features)
        for vk, var in as_map(variants).items():
            v = as_map(var)
            for i, sel in enumerate(as_list(v.get("supported_hardware"))):
                self.hw_selector(("variants", vk, "supported_hardware", i), sel)
            self.hw_keyed_map(("variants", vk, "hardware_overrides"), v.get("hardware_overrides"))
            self.hw_keyed_map(("variants", vk, "tp"), v.get("tp"))
        self.hw_keyed_map(("hardware_overrides",), d.get("hardware_overrides"))
        self.hw_exact_map(("hardware_notes",), d.get("hardware_notes"))
        self._kv(d)
        return self.out

    def _meta(self, meta: Mapping[str, Any]) -> None:
        for i, task in enumerate(as_list(meta.get("tasks"))):
            if self.v.tasks and isinstance(task, str) and task not in self.v.tasks:
                self.warn(("meta", "tasks", i), f"unknown task '{task}'{_did_you_mean(task, self.v.tasks)} "
                                                f"(known: {', '.join(self.v.tasks)})", "unknown-task")
        self.hw_exact_map(("meta", "hardware"), meta.get("hardware"))
        self.hw_exact(("meta", "default_hardware"), meta.get("default_hardware"))

    def _strategies(self, d: Mapping[str, Any]) -> None:
        for i, s in enumerate(as_list(d.get("compatible_strategies"))):
            self.strategy(("compatible_strategies", i), s)
        self.strategy(("default_strategy",), d.get("default_strategy"))
        for s, block in as_map(d.get("strategy_hardware")).items():
            self.strategy(("strategy_hardware", s), s)
            self.hw_keyed_map(("strategy_hardware", s), block)
        for s, so in as_map(d.get("strategy_overrides")).items():
            self.strategy(("strategy_overrides", s), s)
            self._strategy_override(("strategy_overrides", s), as_map(so))
        self._min_gpus(d.get("strategy_min_gpus"))

    def _features(self, d: Mapping[str, Any], features: Mapping[str, Any]) -> None:
        for fk, feat in features.items():
            f = as_map(feat)
            fp: KeyPath = ("features", fk)
            for i, s in enumerate(as_list(f.get("strategies"))):
                self.strategy((*fp, "strategies", i), s)
            for i, other in enumerate(as_list(f.get("conflicts_with"))):
                self.feature((*fp, "conflicts_with", i), other, features)
            self.hw_keyed_map((*fp, "hardware_overrides"), f.get("hardware_overrides"))
            self.hw_keyed_map((*fp, "hardware"), f.get("hardware"))
            for mk, mode in as_map(f.get("modes")).items():
                md = as_map(mode)
                self.hw_keyed_map((*fp, "modes", mk, "hardware_overrides"), md.get("hardware_overrides"))
                self.hw_keyed_map((*fp, "modes", mk, "hardware"), md.get("hardware"))
        for i, fk in enumerate(as_list(d.get("opt_in_features"))):
            self.feature(("opt_in_features", i), fk, features)
        for hw, lst in as_map(d.get("hardware_opt_in_features")).items():
            self.hw_exact(("hardware_opt_in_features", hw), hw)
            for i, fk in enumerate(as_list(lst)):
                self.feature(("hardware_opt_in_features", hw, i), fk, features)

    def _kv(self, d: Mapping[str, Any]) -> None:
        """KV offload and Mooncake."""
        for opt, status in as_map(d.get("kv_offload_support")).items():
            path = ("kv_offload_support", opt)
            if self.v.kv_options and opt not in self.v.kv_options:
                hint = " (Mooncake deployments are gated by kv_cache_strategy_hardware)" \
                    if opt in self.v.kv_stores else _did_you_mean(opt, self.v.kv_options)
                self.err(path, f"unknown KV-offload option '{opt}'{hint}", "unknown-kv-offload")
            if isinstance(status, str) and status not in ("verified", "unsupported"):
                self.warn(path, f"'{status}' has no effect: use 'verified' or 'unsupported'", "kv-status")
        for kv, block in as_map(d.get("kv_cache_strategy_hardware")).items():
            path = ("kv_cache_strategy_hardware", kv)
            if self.v.kv_stores and isinstance(kv, str) and kv not in self.v.kv_stores:
                self.err(path, f"unknown KV-store deployment '{kv}'{_did_you_mean(kv, self.v.kv_stores)}",
                         "unknown-kv-store")
            self.hw_exact_map(path, block)

    def _strategy_override(self, path: KeyPath, so: Mapping[str, Any]) -> None:
        self.hw_keyed_map((*path, "hardware_overrides"), so.get("hardware_overrides"))
        self.hw_keyed_map((*path, "tp"), so.get("tp"))
        for i, mode in enumerate(as_list(so.get("pool_modes"))):
            if isinstance(mode, str) and mode not in POOL_MODES:
                self.err((*path, "pool_modes", i), f"unknown pool mode '{mode}' (one of tp, tep, dep)",
                         "unknown-pool-mode")
        for role in ("prefill", "decode"):
            rc = as_map(so.get(role))
            par = rc.get("parallelism")
            if isinstance(par, str) and par not in POOL_MODES:
                self.err((*path, role, "parallelism"), f"unknown parallelism '{par}' (one of tp, tep, dep)",
                         "unknown-pool-mode")
            self.hw_keyed_map((*path, role, "hardware_overrides"), rc.get("hardware_overrides"))
            nodes = rc.get("nodes")
            self.hw_keyed_map((*path, role, "nodes"), nodes)
            for npath, n in ([((*path, role, "nodes"), nodes)] if not isinstance(nodes, dict) else
                             [((*path, role, "nodes", k), v) for k, v in nodes.items()]):
                if is_number(n) and not n <= MAX_POOL_NODES:
                    # one command per node is rendered: 2**70 nodes would never finish
                    self.err(npath, f"{role} pool of {_js_str(n)} nodes is over the limit of {MAX_POOL_NODES}",
                             "too-many-nodes")

    def _min_gpus(self, cfg: Any) -> None:
        strategy_keys = {*self.v.strategies, *POOL_MODES}
        for key in as_map(cfg):
            if self.v.strategies and self.v.hw_ids and key not in strategy_keys and key not in self.v.hw_ids:
                self.warn(("strategy_min_gpus", key),
                          f"'{key}' is neither a strategy, a pool mode nor a hardware id"
                          f"{_did_you_mean(key, [*self.v.strategies, *self.v.hw_ids])}", "unknown-hardware")


# --- Data-file checks (taxonomy, strategies, kv stores)

def _data_file_checks(doc: YamlDocument, kind: str, vocab: _Vocabulary) -> list[Finding]:
    out: list[Finding] = []
    data = as_map(doc.data)
    if kind in ("strategy", "kv_store"):
        dt = data.get("deploy_type")
        if isinstance(dt, str) and dt not in DEPLOY_TYPES:
            out.append(finding_at(doc, ("deploy_type",), "warning",
                                  f"unknown deploy_type '{dt}' (rendered as a single node; known: "
                                  f"{', '.join(DEPLOY_TYPES)})", "deploy-type"))
        if kind == "kv_store" and dt is not None and dt != "kv_store_lb":
            out.append(finding_at(doc, ("deploy_type",), "warning",
                                  "a kv_store/ file should have deploy_type kv_store_lb", "deploy-type"))
    if kind == "taxonomy":
        for key, opt in as_map(data.get("kv_offload")).items():
            o = as_map(opt)
            for i, s in enumerate(as_list(o.get("strategies"))):
                if vocab.strategies and isinstance(s, str) and s not in vocab.strategies:
                    out.append(finding_at(doc, ("kv_offload", key, "strategies", i), "error",
                                          f"unknown strategy '{s}'{_did_you_mean(s, vocab.strategies)}",
                                          "unknown-strategy"))
            group = o.get("group")
            if isinstance(group, str) and group not in vocab.kv_groups:
                out.append(finding_at(doc, ("kv_offload", key, "group"), "warning",
                                      f"unknown kv_offload group '{group}'", "unknown-group"))
    return out


_KIND_MODELS: dict[str, type[BaseModel]] = {
    "recipe": m.RecipeModel,
    "taxonomy": m.TaxonomyModel,
    "strategy": m.StrategyModel,
    "kv_store": m.KvStoreModel,
    "platforms": m.PlatformsModel,
}


# --- Per-document entry points

def validate_document(doc: YamlDocument, kind: str, catalog: Catalog,
                      _vocab: _Vocabulary | None = None, *, errors_only: bool = False) -> list[Finding]:
    """All per-file checks for one parsed document of the given ``kind``.

    ``errors_only``: skip the checks that can only warn (unknown keys), for callers that
    keep only errors (the skip rule of ``build-api`` and ``serve``, on their start-up path).
    """
    vocab = _vocab or _vocabulary(catalog)
    token = _suggestions_left.set([SUGGESTION_BUDGET])
    try:
        return _validate_document(doc, kind, vocab, errors_only)
    except Exception as exc:  # pragma: no cover - defensive: the validator must never crash
        return [Finding("error", doc.file, 1, 1, "<root>",
                        f"internal validator error ({type(exc).__name__}: {exc}); please report", "internal")]
    finally:
        _suggestions_left.reset(token)


def _validate_document(doc: YamlDocument, kind: str, vocab: _Vocabulary, errors_only: bool = False) -> list[Finding]:
    out = _duplicate_key_findings(doc)
    if not isinstance(doc.data, dict):
        got = "an empty file" if doc.data is None else _describe(doc.data)
        out.append(finding_at(doc, (), "error", f"expected a mapping at the top level, got {got}", "type"))
        return out
    model = _KIND_MODELS.get(kind, m.RecipeModel)
    if kind == "recipe":
        fm = feature_mode_issues(doc.data)
        explained = {format_key_path(p) for p, _ in fm}  # (§10.2 says it with the builder's wording)
        for f in _type_findings(doc, model, doc.data):
            if f.code == "type" and f.key_path in explained:
                continue
            out.append(f)
        out.extend(finding_at(doc, p, "error", msg, "feature-mode") for p, msg in fm)
        out.extend(_RecipeChecker(doc, vocab).run())
        out.extend(recipe_identifier_findings(doc))
    else:
        out.extend(_type_findings(doc, model, doc.data))
        out.extend(_data_file_checks(doc, kind, vocab))
        out.extend(data_file_identifier_findings(doc, kind))
    if not errors_only:  # unknown keys are warnings only
        _unknown_keys(doc, model, doc.data, (), out)
    out.extend(_arg_findings(doc))
    return out


# --- Whole catalog (bundled files a user directory falls back to are validated with the bundled catalog)

def validated_files(catalog: Catalog) -> list[str]:
    """The files :func:`validate_catalog` looks at (for the summary line)."""
    names = [s.rel_path for s in catalog.sources if not s.rel_path.startswith("<bundled>/")]
    names += [r.rel_path for r in catalog.recipes]
    names += [e.position.file for e in (*catalog.load_errors, *catalog.refused)]
    return list(dict.fromkeys(names))


def validate_catalog(catalog: Catalog, files: Iterable[str] | None = None,
                     extra_checks: Sequence[Checker] | None = None,
                     external: frozenset[str] = frozenset()) -> list[Finding]:
    """Validate every file of ``catalog`` (or only ``files``, by catalog-relative path).

    ``extra_checks`` (catalog-wide checkers, e.g. the release lint) run after the built-in
    checks; their findings are filtered to ``files`` too. ``external``: a file added from outside.
    """
    wanted = None if files is None else set(files)

    def keep(name: str) -> bool:
        return wanted is None or name in wanted

    vocab = _vocabulary(catalog)
    unread = (*catalog.load_errors, *catalog.refused)
    out = [finding_from_load_error(e) for e in unread if keep(e.position.file)]
    for src in catalog.sources:
        if src.rel_path.startswith("<bundled>/") or not keep(src.rel_path):
            continue
        out.extend(validate_document(src.doc, document_kind(src.rel_path), catalog, vocab))
    seen_ids: dict[str, str] = {}
    for recipe in catalog.recipes:
        if recipe.rel_path not in external:
            key = recipe.hf_id.lower()
            if key in seen_ids and keep(recipe.rel_path):
                out.append(finding_at(recipe.doc, (), "warning",
                                      f"recipe id '{recipe.hf_id}' is also defined by {seen_ids[key]}; "
                                      "this file shadows it", "duplicate-id"))
            seen_ids.setdefault(key, recipe.rel_path)
        if keep(recipe.rel_path):
            out.extend(validate_document(recipe.doc, "recipe", catalog, vocab))
            out.extend(hf_id_findings(recipe.doc, recipe.hf_id))
    for check in extra_checks or ():
        try:
            found = list(check(catalog))
        except Exception as exc:
            name = getattr(check, "__name__", repr(check))
            out.append(Finding("error", str(catalog.root), 1, 1, "<root>",
                               f"checker {name} failed ({type(exc).__name__}: {exc})", "internal"))
            continue
        out.extend(f for f in found if isinstance(f, Finding) and keep(f.file))
    return sort_findings(out)


# --- Files given on the command line

def _hf_id_from_path(path: Path) -> str:
    """hf_id from ``.../models/<org>/<repo>.yaml``; else ``<parent>/<stem>``."""
    _, models, rel = path.resolve().as_posix().rpartition("/models/")
    if models and (hf_id := hf_id_for(rel)):
        return hf_id
    return f"{path.resolve().parent.name or 'local'}/{path.stem}"


def catalog_with_file(catalog: Catalog, path: Path, display: str | None = None) -> tuple[Catalog, str, str]:
    """``catalog`` plus the file at ``path``: ``(catalog, file key, kind)``. A file inside the catalog's root is
    already part of it; any other recipe file is added to a copy, so catalog-wide checks see it too."""
    try:
        rel = path.resolve().relative_to(catalog.root.resolve()).as_posix()
    except (ValueError, OSError):
        rel = None
    if rel is not None and rel in validated_files(catalog):
        return catalog, rel, document_kind(rel)
    name = display or str(path)
    kind = document_kind(path.as_posix())
    if kind != "recipe":
        return catalog, name, kind
    try:
        recipe = recipe_from_document(load_yaml_file(path, name), name, _hf_id_from_path(path))
    except YamlLoadError as exc:
        return dataclasses.replace(catalog, load_errors=(*catalog.load_errors, exc)), name, kind
    return dataclasses.replace(catalog, recipes=(*catalog.recipes, recipe)), name, kind


def validate_file(path: Path, catalog: Catalog, display: str | None = None,
                  extra_checks: Sequence[Checker] | None = None) -> list[Finding]:
    """Validate one file (inside the catalog's root or anywhere else) against ``catalog``."""
    cat, key, kind = catalog_with_file(catalog, path, display)
    if cat is catalog and key not in validated_files(catalog):
        # a data file outside the catalog: per-file checks only
        try:
            doc = load_yaml_file(path, key)
        except YamlLoadError as exc:
            return [finding_from_load_error(exc)]
        return sort_findings(validate_document(doc, kind, catalog))
    external = frozenset() if cat is catalog else frozenset({key})
    return validate_catalog(cat, [key], extra_checks, external)

