"""What one selection renders to, reduced to the facts a reviewer compares.

Flags and env vars are the final (deduplicated) tokens of every process of the resolved plan, each with the
:class:`Source` that put it there (turned into ``file:line`` only for what changed); the image comes from
the docker metadata; every other field of the plan (deploy shape, router, Mooncake configuration,
companions, model ids) is kept as a canonical fingerprint so that no rendered difference goes unreported.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import orjson

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.render.docker import docker_meta
from vllm_recipes.render.explain import flag_pairs, plan_processes
from vllm_recipes.render.rendering import meta_for
from vllm_recipes.render.shell import final_tokens
from vllm_recipes.select.defaults import variant_or_default
from vllm_recipes.select.omni import OmniSelection
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.omni import resolve_omni
from vllm_recipes.synth.plan import Arg, EnvValue, Invocation, Source
from vllm_recipes.synth.resolve import resolve

#: ``(source, key path)`` of a value: where to point a reviewer
Origin = tuple[Source, tuple[str | int, ...]]


@dataclass(frozen=True)
class Snapshot:
    """One selection's rendered facts. ``error`` is set when synthesis failed."""

    #: ``(process, flag, occurrence)`` -> value (``None`` for a bare flag)
    flags: dict[tuple[str, str, int], str | None] = field(default_factory=dict)
    #: ``(process, VAR)`` -> value
    env: dict[tuple[str, str], str | None] = field(default_factory=dict)
    image: str | None = None
    #: every other plan field (dotted path) -> canonical JSON
    other: dict[str, bytes] = field(default_factory=dict)
    #: where each flag / env entry came from
    origins: dict[tuple[str, ...] | tuple[str, str, int], Origin] = field(default_factory=dict, compare=False)
    error: str | None = None


def _json_default(value: Any) -> Any:
    if isinstance(value, frozenset | set):
        return sorted(value, key=repr)
    return repr(value)


def _fingerprint(value: Any, path: str, out: dict[str, bytes]) -> None:
    """Plan fields other than argument tokens and env (those are compared with provenance)."""
    if isinstance(value, Invocation):
        out[f"{path}.model"] = f"{value.binary} {value.model_id}".encode()
        if value.drop_flags:
            out[f"{path}.drop_flags"] = " ".join(value.drop_flags).encode()
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _fingerprint(getattr(value, f.name), f"{path}.{f.name}" if path else f.name, out)
    elif isinstance(value, tuple) and value and all(isinstance(v, Invocation) for v in value):
        for i, v in enumerate(value):
            _fingerprint(v, f"{path}[{i}]", out)
    elif isinstance(value, tuple) and value and all(isinstance(v, EnvValue | Arg) for v in value):
        return
    else:
        out[path] = orjson.dumps(value, default=_json_default, option=orjson.OPT_SORT_KEYS)


def snapshot(catalog: Catalog, recipe: Recipe, sel: Selection | OmniSelection) -> Snapshot:
    """Resolve and reduce one selection; a synthesis failure becomes ``error`` (never raised)."""
    try:
        if isinstance(sel, OmniSelection):
            return _omni_snapshot(catalog, recipe, sel)
        ctx, plan = resolve(catalog, recipe, sel)
        image = meta_for(ctx).image
    except Exception as exc:  # a broken recipe is a finding of the review, not a crash
        return Snapshot(error=f"{type(exc).__name__}: {exc}")
    other: dict[str, bytes] = {"deploy_type": plan.deploy_type.encode(), "node_count": str(sel.node_count).encode(),
                               "frontend": str(ctx.frontend).encode()}
    return _reduce(plan_processes(plan), plan, image, other)


def _omni_snapshot(catalog: Catalog, recipe: Recipe, osel: OmniSelection) -> Snapshot:
    plan = resolve_omni(catalog, recipe, osel.variant_key, osel.task, osel.hw_id)
    variant = variant_or_default(recipe.data, osel.variant_key)
    image = docker_meta(recipe.data, variant, catalog.hardware_profiles.get(osel.hw_id) or {}, osel.hw_id).image
    # the task is an input (its flags are compared as tokens); what it renders is in serve/env/notes
    return _reduce([("vLLM", plan.serve, plan.env)], dataclasses.replace(plan, task=None), image,
                   {"deploy_type": plan.deploy_type.encode()})


def _reduce(processes: Any, plan: Any, image: str | None, other: dict[str, bytes]) -> Snapshot:
    flags: dict[tuple[str, str, int], str | None] = {}
    env: dict[tuple[str, str], str | None] = {}
    origins: dict[Any, Origin] = {}
    for process, inv, env_values in processes:
        seen: dict[str, int] = {}
        for tok, value in flag_pairs(final_tokens(inv)[0]):
            n = seen[tok.value] = seen.get(tok.value, -1) + 1
            key = (process, tok.value, n)
            flags[key] = value.value if value is not None else None
            # a value's own line is the one to edit; bare flags point at themselves
            origins[key] = (value.source, value.key_path) if value is not None else (tok.source, tok.key_path)
        for e in env_values:
            env[(process, e.key)] = None if e.value is None else str(e.value)
            origins[(process, e.key)] = (e.source, e.source.key_path)
    _fingerprint(plan, "", other)
    return Snapshot(flags, env, image, other, origins)
