"""A selection's serve processes from an earlier selection's plan, without a second resolve.

``validate`` meets every (variant, hardware, strategy, node count) once with
the default features, then with other feature sets and mode picks, then once
per KV option offered there; together most of the offered selections. They
differ from the default-features selection only in the last argument layers,
which the engine's layer order makes exact (``ARG_ORDER`` ends with
``features``, ``kv-option``, ``mooncake``; Mooncake contributes nothing without a
store):

- **a KV option that is not a Mooncake store**: its ``args`` follow every serve
  process's tokens (the other layers read neither ``kv_offload`` nor the option:
  the context fields that do, ``kv_store``/``kv_composing``, are the base's when
  the option is not a store); its ``env`` merges into each process's env: an
  option without env leaves the env as it was, one with env gets the engine's own
  merge (``build_env``) for a single-node or multi-node plan (PD pools merge per
  role: resolved instead);
- **another feature set or mode pick** (no KV choice): the features layer's
  tokens, the last ones of every process, are replaced (features contribute no
  env; checked: the base processes must end with the base's feature tokens);

Anything else answers ``None`` and the caller resolves the selection.
``tests/lint/test_derived_processes.py`` holds every derived process list equal
to the resolved one over the benchmark catalog.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx, build_context
from vllm_recipes.synth.layers import ARG_ORDER, Call, layer_features, layer_kv_option
from vllm_recipes.synth.plan import Arg, EnvValue, Invocation, MultiNodePlan, Plan, SinglePlan
from vllm_recipes.synth.resolve import build_env

#: the derivations hold while the features, the KV option and Mooncake are the last argument layers
LAST_LAYERS = ARG_ORDER[-3:] == ("features", "kv-option", "mooncake")

Process = tuple[str, Invocation, tuple[EnvValue, ...]]


class Derived(NamedTuple):
    """A selection's processes, and how they differ from the base plan's."""

    ctx: Ctx
    processes: list[Process]
    #: the last tokens of every base process, replaced by ``suffix`` (empty: appended)
    replaced: tuple[Arg, ...]
    #: the tokens that end every process instead
    suffix: tuple[Arg, ...]
    #: the env of every process, or ``None``: each process keeps its base process's env (the very tuple)
    env: tuple[EnvValue, ...] | None


def kv_option_processes(catalog: Catalog, recipe: Recipe, sel: Selection, base_plan: Plan,
                        options: dict[Any, tuple[Any, tuple[Arg, ...], bool]] | None = None
                        ) -> Derived | None:
    """The context and serve processes of ``sel`` (a KV-option selection) from ``base_plan``, the plan of
    the same selection without ``kv_offload``; ``None`` when that is not provably what resolving would give.

    ``options`` memoizes each option's tokens (shared token objects across a recipe's selections).
    """
    if not sel.kv_offload:
        return None
    ctx = _derivable_context(catalog, recipe, sel)
    if ctx is None:
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
    out = _with_tail(base_plan, (), tokens, env)
    return None if out is None else Derived(ctx, out, (), tokens, env)


def feature_set_processes(catalog: Catalog, recipe: Recipe, sel: Selection, base_sel: Selection, base_plan: Plan,
                          base_features: tuple[Arg, ...] | None = None) -> Derived | None:
    """The context and serve processes of ``sel`` from ``base_plan``, the plan of ``base_sel``: the same
    selection but for its features and mode picks (and neither with a KV choice); ``None`` when the base
    processes do not end with the base's feature tokens.

    ``base_features``: the base selection's feature tokens, when already known.
    """
    if sel.kv_offload or base_sel.kv_offload:
        return None
    ctx = _derivable_context(catalog, recipe, sel)
    if ctx is None:
        return None
    new = _feature_tokens(ctx)
    old = base_features if base_features is not None else base_feature_tokens(catalog, recipe, base_sel)
    out = _with_tail(base_plan, old, new, None)
    return None if out is None else Derived(ctx, out, old, new, None)


def base_feature_tokens(catalog: Catalog, recipe: Recipe, base_sel: Selection) -> tuple[Arg, ...]:
    """The features layer's tokens of ``base_sel`` (what :func:`feature_set_processes` replaces)."""
    return _feature_tokens(build_context(catalog, recipe.data, recipe.rel_path, base_sel))


def _feature_tokens(ctx: Ctx) -> tuple[Arg, ...]:
    return tuple(layer_features(ctx, Call()).args)  # the layer reads neither the role nor the node


def _derivable_context(catalog: Catalog, recipe: Recipe, sel: Selection) -> Ctx | None:
    """The context of ``sel``, or ``None`` when its plan cannot be derived (the layer order changed, or a
    Mooncake store or composing KV option reaches into other layers)."""
    if not LAST_LAYERS:
        return None
    ctx = build_context(catalog, recipe.data, recipe.rel_path, sel)
    return None if ctx.kv_store is not None or ctx.kv_composing else ctx


def _with_tail(base_plan: Plan, old: tuple[Arg, ...], new: tuple[Arg, ...], env: tuple[EnvValue, ...] | None
               ) -> list[Process] | None:
    """Every serve process of ``base_plan`` with its last tokens ``old`` replaced by ``new``, and ``env``
    instead of its own unless ``None``; ``None`` when a process does not end with ``old``."""
    n = len(old)
    out = []
    for title, inv, base_env in plan_processes(base_plan, env_on_workers=True):
        args = inv.args
        cut = len(args) - n
        if cut < 0 or args[cut:] != old:
            return None
        if old or new:
            inv = Invocation(inv.model_id, args[:cut] + new, inv.binary, inv.drop_flags)
        out.append((title, inv, base_env if env is None else env))
    return out
