"""A KV-option selection's serve processes from its base selection's plan, without a second resolve.

``validate`` meets every (variant, hardware, strategy, node count) once with
the default features and then once per KV option offered there (about half of
all offered selections). A KV option that is not a Mooncake store changes the
plan in one way only, which the engine's layer order makes exact:

- its ``args`` are the last argument layer but Mooncake's (``ARG_ORDER`` ends
  with ``kv-option``, ``mooncake``), and Mooncake contributes nothing without a
  store, so every serve process's raw tokens are the base process's tokens
  followed by the option's (the other layers read neither ``kv_offload`` nor the
  option: the context fields that do, ``kv_store``/``kv_composing``, are those of
  the base selection when the option is not a store);
- its ``env`` merges into each process's env; an option without env leaves the
  env as it was, and one with env gets the engine's own merge (``build_env``)
  for a single-node or multi-node plan (PD pools merge per role: resolved).

Anything else (a store, an unexpected layer order, a PD plan with option env)
answers ``None`` and the caller resolves the selection.
``tests/lint/test_kv_processes.py`` holds every derived process list equal to
the resolved one over the benchmark catalog.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx, build_context
from vllm_recipes.synth.layers import ARG_ORDER, Call, layer_kv_option
from vllm_recipes.synth.plan import Arg, EnvValue, Invocation, MultiNodePlan, Plan, SinglePlan
from vllm_recipes.synth.resolve import build_env

#: the derivation holds while the KV option is the last argument layer before Mooncake's
KV_OPTION_LAST = ARG_ORDER[-2:] == ("kv-option", "mooncake")

Process = tuple[str, Invocation, tuple[EnvValue, ...]]


class KvDerived(NamedTuple):
    """A KV-option selection's processes, and how they differ from the base plan's."""

    ctx: Ctx
    processes: list[Process]
    #: the option's tokens, appended to every process (empty: the option adds none here)
    suffix: tuple[Arg, ...]
    #: each process keeps the base process's env (the very tuple): the option has no env
    same_env: bool


def kv_option_processes(catalog: Catalog, recipe: Recipe, sel: Selection, base_plan: Plan,
                        options: dict[Any, tuple[Any, tuple[Arg, ...], bool]] | None = None
                        ) -> KvDerived | None:
    """The context and serve processes of ``sel`` (a KV-option selection) from ``base_plan``, the plan of
    the same selection without ``kv_offload``; ``None`` when that is not provably what resolving would give.

    ``options`` memoizes each option's tokens (shared token objects across a recipe's selections).
    """
    if not KV_OPTION_LAST or not sel.kv_offload:
        return None
    ctx = build_context(catalog, recipe.data, recipe.rel_path, sel)
    if ctx.kv_store is not None or ctx.kv_composing:
        return None
    opt = ctx.kv_opt
    key = (sel.kv_offload, id(opt))
    known = options.get(key) if options is not None else None
    if known is None or known[0] is not opt:
        part = layer_kv_option(ctx, Call())  # the layer reads neither the role nor the node
        known = (opt, tuple(part.args), bool(part.env))
        if options is not None:
            options[key] = known
    _opt, tokens, has_env = known
    env: tuple[EnvValue, ...] | None = None
    if has_env:
        if not isinstance(base_plan, SinglePlan | MultiNodePlan):
            return None
        env = build_env(ctx, None)
    out = [(title, Invocation(inv.model_id, inv.args + tokens, inv.binary, inv.drop_flags) if tokens else inv,
            base_env if env is None else env)
           for title, inv, base_env in plan_processes(base_plan, env_on_workers=True)]
    return KvDerived(ctx, out, tokens, env is None)
