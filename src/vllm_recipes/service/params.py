"""The selection parameters for the typed front ends, from the one table (:mod:`vllm_recipes.select.params`):
OpenAPI query parameters, the MCP tools' JSON Schema, and typed arguments -> :class:`PageRequest`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_recipes.catalog import Catalog
from vllm_recipes.select.params import MAX_VALUE, URL_PARAMS, Param
from vllm_recipes.select.request import PageRequest

from .query import QueryError

MAX_ITEMS = 64
#: how a URL spells a list parameter, said after its help
URL_FORMS = {"list": " Comma-separated.", "pairs": " Comma-separated `feature:mode` pairs."}


def string_schema(description: str = "", enum: Sequence[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": MAX_VALUE}
    if description:
        schema["description"] = description
    if enum:
        schema["enum"] = list(enum)
    return schema


def _integer(p: Param) -> dict[str, Any]:
    bounds = {"minimum": p.lo, "maximum": p.hi}
    return {"type": "integer", **{k: v for k, v in bounds.items() if v is not None}}


def openapi_parameters() -> list[dict[str, Any]]:
    """``/api/resolve``'s query parameters (OpenAPI 3.1): URL strings, so lists are comma lists."""
    out = []
    for p in URL_PARAMS:
        schema = _integer(p) if p.kind == "int" else string_schema(enum=p.fixed if p.kind == "str" else None)
        out.append({"name": p.name, "in": "query", "required": False, "schema": schema,
                    "description": p.help + URL_FORMS.get(p.kind, "")})
    return out


def selection_properties(catalog: Catalog) -> dict[str, Any]:
    """JSON Schema properties of a selection (MCP tools), enums from ``catalog``."""
    props: dict[str, Any] = {}
    for p in URL_PARAMS:
        enum = p.choices_in(catalog)
        if p.kind == "int":
            props[p.name] = {**_integer(p), "description": p.help}
        elif p.kind == "list":
            props[p.name] = {"type": "array", "items": string_schema(f"{p.name} id.", enum),
                             "maxItems": MAX_ITEMS, "description": p.help}
        elif p.kind == "pairs":
            props[p.name] = {"type": "object", "additionalProperties": {"type": "string", "maxLength": MAX_VALUE},
                             "description": "Feature modes, as an object {feature: mode}."}
        else:
            props[p.name] = string_schema(p.help, enum)
    return props


def request_from_args(args: Mapping[str, Any]) -> PageRequest:
    """Typed arguments (``{"nodes": 2, "features": [...], "fmode": {...}}``) -> a request. A value of the
    wrong JSON type is a :class:`QueryError`; ranges and ids are the selection code's to check."""
    kw = {p.field: _typed(p, args[p.name]) for p in URL_PARAMS if args.get(p.name) is not None}
    if kw.get("kv_offload") == "off":
        kw.pop("kv_offload")
    return PageRequest(**kw)


def _typed(p: Param, value: Any) -> Any:
    """``value`` as the parameter's type, or a :class:`QueryError` naming the parameter."""
    if p.kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise QueryError(p.name, f"{p.name} must be an integer.")
        return value
    if p.kind == "list":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or len(value) > MAX_ITEMS \
                or not all(isinstance(v, str) and len(v) <= MAX_VALUE for v in value):
            raise QueryError(p.name, f"{p.name} must be a list of strings.")
        return tuple(v.strip() for v in value if v.strip())
    if p.kind == "pairs":
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in value.items()):
            raise QueryError(p.name, f"{p.name} must be an object mapping feature ids to mode ids.")
        return tuple(value.items())
    return string_arg(p.name, value)


def string_arg(name: str, value: Any) -> str | None:
    """A string argument stripped (``None`` when blank), or a :class:`QueryError` naming it."""
    if not isinstance(value, str) or len(value) > MAX_VALUE:
        raise QueryError(name, f"{name} must be a string of at most {MAX_VALUE} characters.")
    return value.strip() or None
