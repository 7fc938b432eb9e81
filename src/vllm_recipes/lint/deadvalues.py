"""Dead-value lint: recipe values that never reach any rendering.

Every offered selection of a recipe is resolved (:mod:`vllm_recipes.select.offered`). A recipe argument
or env entry that survives dedupe in none of them is dead: either always shadowed by a later layer (we name
the layer that wins) or never applicable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe, format_key_path
from vllm_recipes.catalog.diagnostics import Finding
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.render.shell import final_tokens
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Invocation, KeyPath, Plan
from vllm_recipes.synth.resolved import resolved_selections

ARG_KEYS = ("base_args", "extra_args", "vllm_args", "args")
ENV_KEYS = ("base_env", "extra_env", "env")


@dataclass
class Tally:
    """What the offered selections of one recipe rendered: key paths emitted, and shadowed ones with their winners."""

    emitted: set[KeyPath] = field(default_factory=set)
    #: key path of a shadowed token -> layers that won over it
    shadowed_by: dict[KeyPath, set[str]] = field(default_factory=dict)


#: called with each resolved offered selection (lets another per-selection analysis share the resolve); a
#: selection whose hardware reads like an earlier one's is not resolved (it adds nothing)
PlanHook = Callable[[Selection, Ctx, Plan], None]


def tally_invocation(t: Tally, rf: str, inv: Invocation) -> None:
    """Count one process's argument tokens from ``rf``: kept ones as emitted, shadowed ones with their winner."""
    kept, shadowed = final_tokens(inv)
    t.emitted.update(a.key_path for a in kept if a.source.file == rf)
    if not shadowed:
        return
    winner = {a.value: a.source.layer for a in kept if a.value.startswith("-")}
    for flag, units in shadowed.items():
        for u in units:
            for tok in (u.flag, u.value):
                if tok is not None and tok.source.file == rf:
                    t.shadowed_by.setdefault(tok.key_path, set()).add(winner.get(flag, "?"))


def tally_env(t: Tally, rf: str, env: Any) -> None:
    """Count one process env's entries from ``rf`` (final values emitted, replaced ones shadowed)."""
    for ev in env:
        if ev.source.file == rf:
            t.emitted.add(ev.source.key_path)
        for _v, src in ev.shadowed:
            if src.file == rf:
                t.shadowed_by.setdefault(src.key_path, set()).add(ev.source.layer)


def tally(catalog: Catalog, recipe: Recipe, on_plan: PlanHook | None = None) -> Tally:
    """Resolve the offered selections of ``recipe`` (each calling ``on_plan``) and count what they render."""
    t = Tally()
    rf = recipe.rel_path
    #: processes and envs already counted: many selections render the very same process (a set adds nothing twice)
    counted: set[Invocation | tuple[Any, ...]] = set()
    for sel, ctx, plan in resolved_selections(catalog, recipe):
        if on_plan is not None:
            on_plan(sel, ctx, plan)
        for _title, inv, env in plan_processes(plan):
            if inv not in counted:
                counted.add(inv)
                tally_invocation(t, rf, inv)
            if env and env not in counted:
                counted.add(env)
                tally_env(t, rf, env)
    return t


def _values(data: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, str]]:
    """Each argument token (a flag shown with its value) and env entry of the recipe, but under ``omni``."""
    if not isinstance(data, dict):
        return
    for k, v in data.items():
        p = (*path, k)
        if k in ARG_KEYS and isinstance(v, tuple | list):
            i = 0
            while i < len(v):
                tok = v[i]
                has_val = (isinstance(tok, str) and tok.startswith("-") and i + 1 < len(v)
                           and isinstance(v[i + 1], str) and not v[i + 1].startswith("-"))
                if isinstance(tok, str) and tok != "":
                    yield (*p, i), f"`{tok}{' ' + v[i + 1] if has_val else ''}`"
                i += 2 if has_val else 1
        elif k in ENV_KEYS and isinstance(v, dict):
            yield from (((*p, name), f"`{name}={value}`") for name, value in v.items())
        elif p != ("omni",):
            yield from _values(v, p)


def dead_value_findings(catalog: Catalog, recipe: Recipe, on_plan: PlanHook | None = None) -> list[Finding]:
    """A warning at each argument or env entry of ``recipe`` that no offered selection renders."""
    if recipe.is_omni:
        return []
    t = tally(catalog, recipe, on_plan)
    out: list[Finding] = []
    for path, shown in _values(recipe.data):
        if path in t.emitted:
            continue
        layers = t.shadowed_by.get(path)
        why = f"always shadowed by layer {', '.join(sorted(layers))}" if layers else \
            "never applicable to any offered selection"
        pos = recipe.doc.position(path)
        out.append(Finding("warning", recipe.rel_path, pos.line, pos.col, format_key_path(path),
                           f"{shown} never reaches a rendering: {why}", "dead-value"))
    return out


def dead_value_checker(catalog: Catalog) -> list[Finding]:
    """Catalog-wide checker (``serve``'s reload panel): dead values without the release lint."""
    return [f for recipe in catalog.recipes for f in dead_value_findings(catalog, recipe)]
