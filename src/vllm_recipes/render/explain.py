"""Explain a plan: every final flag and env var -> layer -> ``file:line`` -> what it shadowed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_recipes.catalog import Catalog, format_key_path
from vllm_recipes.jsvalues import js_str
from vllm_recipes.synth.plan import (
    Arg,
    EnvValue,
    Invocation,
    KvStorePlan,
    MultiNodePlan,
    PdPlan,
    Plan,
    SinglePlan,
    Source,
)

from . import shell
from .shell import final_tokens


def locate(catalog: Catalog, src: Source, key_path: tuple[str | int, ...] | None = None) -> str:
    """``file:line`` of a source (computed values have no file; in a merged shared file, the file of the
    layer that wrote the value)."""
    if not src.file:
        return ""
    if (doc := catalog.source_for(src.file)) is None:
        return src.file
    pos = doc.position(src.key_path if key_path is None else key_path)
    return f"{pos.file}:{pos.line}"


def source_dict(catalog: Catalog, src: Source, key_path: tuple[str | int, ...] | None = None) -> dict[str, Any]:
    kp = src.key_path if key_path is None else key_path
    return {"layer": src.layer, "location": locate(catalog, src, kp) or None,
            "key_path": format_key_path(kp) if src.file else None, "note": src.note or None}


@dataclass(frozen=True)
class ExplainRow:
    kind: str  # "arg" or "env"
    name: str
    value: str | None
    source: dict[str, Any]
    shadowed: list[dict[str, Any]]


def flag_pairs(tokens: list[Arg] | tuple[Arg, ...]) -> list[tuple[Arg, Arg | None]]:
    """Final tokens as ``(flag or positional, its value or None)`` (§7.3)."""
    return shell.flag_pairs(tokens, lambda a: a.value.startswith("-"))


def explain_invocation(catalog: Catalog, inv: Invocation) -> list[ExplainRow]:
    tokens, shadowed = final_tokens(inv)
    return [ExplainRow("arg", t.value, value.value if value else None,
                       source_dict(catalog, t.source, t.key_path),
                       [{"value": u.value.value if u.value else None,
                         **source_dict(catalog, u.flag.source, u.flag.key_path)}
                        for u in shadowed.get(t.value, ())])
            for t, value in flag_pairs(tokens)]


def explain_env(catalog: Catalog, env: tuple[EnvValue, ...]) -> list[ExplainRow]:
    return [ExplainRow("env", e.key, js_str(e.value), source_dict(catalog, e.source),
                       [{"value": js_str(v), **source_dict(catalog, s)} for v, s in e.shadowed]) for e in env]


def plan_processes(plan: Plan, *, env_on_workers: bool = False) -> list[tuple[str, Invocation, tuple[EnvValue, ...]]]:
    """``(process title, invocation, its env)`` for every serve process of the plan. Workers run with the
    head's env: ``explain`` shows it once, the release lint checks every process (``env_on_workers``)."""
    out: list[tuple[str, Invocation, tuple[EnvValue, ...]]] = []
    if isinstance(plan, SinglePlan):
        out.append(("vLLM", plan.serve, plan.env))
    elif isinstance(plan, MultiNodePlan):
        worker_env = plan.env if env_on_workers else ()
        out.append(("Head", plan.head, plan.env))
        out.extend((f"Node {i}", w, worker_env) for i, w in enumerate(plan.workers, start=1))
    elif isinstance(plan, PdPlan):
        out.extend((rp.role.capitalize(), rp.serve, rp.env) for rp in (plan.prefill, plan.decode))
    elif isinstance(plan, KvStorePlan):
        worker_env = plan.env if env_on_workers else ()
        out.append(("vLLM instance", plan.vllm, plan.env))
        out.extend((f"vLLM instance node {i}", w, worker_env) for i, w in enumerate(plan.workers, start=1))
    return out


def explain_plan(catalog: Catalog, plan: Plan) -> list[tuple[str, list[ExplainRow]]]:
    """Sections ``(process title, rows)`` covering every serve process of the plan."""
    return [(title, explain_invocation(catalog, inv) + explain_env(catalog, env))
            for title, inv, env in plan_processes(plan)]


def sections_json(sections: list[tuple[str, list[ExplainRow]]]) -> list[dict[str, Any]]:
    return [{"process": title, "entries": [
        {"kind": r.kind, "name": r.name, "value": r.value, **r.source, "shadowed": r.shadowed} for r in rows
    ]} for title, rows in sections]


def explain_json(catalog: Catalog, plan: Plan) -> list[dict[str, Any]]:
    return sections_json(explain_plan(catalog, plan))
