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

from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx, build_context, with_selection
from vllm_recipes.synth.layers import ARG_ORDER, Call, layer_kv_option
from vllm_recipes.synth.plan import Arg, EnvValue, Invocation, MultiNodePlan, Plan, SinglePlan
from vllm_recipes.synth.resolve import build_env, feature_tokens

#: the derivations hold while the features, the KV option and Mooncake are the last argument layers
LAST_LAYERS = ARG_ORDER[-3:] == ("features", "kv-option", "mooncake")

Process = tuple[str, Invocation, tuple[EnvValue, ...]]


class Derived:
    """A selection's processes, and how they differ from the base plan's.

    The process list itself is made only when asked for (``validate`` mostly counts a derived selection by
    its new tokens alone and never needs it).
    """

    __slots__ = ("_processes", "base_plan", "ctx", "env", "replaced", "suffix")

    def __init__(self, ctx: Ctx, base_plan: Plan, replaced: tuple[Arg, ...], suffix: tuple[Arg, ...],
                 env: tuple[EnvValue, ...] | None) -> None:
        self.ctx = ctx
        #: the plan the selection's processes are derived from
        self.base_plan = base_plan
        #: the last tokens of every base process, replaced by ``suffix`` (empty: appended)
        self.replaced = replaced
        #: the tokens that end every process instead
        self.suffix = suffix
        #: the env of every process, or ``None``: each process keeps its base process's env (the very tuple)
        self.env = env
        self._processes: list[Process] | None = None

    @property
    def processes(self) -> list[Process]:
        """The selection's serve processes (workers with the head's env), as ``plan_processes`` lists them."""
        if self._processes is None:
            self._processes = _with_tail(self.base_plan, self.replaced, self.suffix, self.env)
        return self._processes


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
    return Derived(ctx, base_plan, (), tokens, env)  # (appending: every process ends with no token)


def feature_set_processes(catalog: Catalog, recipe: Recipe, sel: Selection, base_sel: Selection, base_plan: Plan,
                          base_features: tuple[Arg, ...] | None = None, base_ctx: Ctx | None = None,
                          base_processes: list[Process] | None = None) -> Derived | None:
    """The context and serve processes of ``sel`` from ``base_plan``, the plan of ``base_sel``: the same
    selection but for its features and mode picks (and neither with a KV choice); ``None`` when the base
    processes do not end with the base's feature tokens.

    ``base_features``: the base selection's feature tokens, when already known; ``base_ctx``: a context of
    ``base_sel`` (the selection's own is that one with the selection swapped); ``base_processes``:
    ``plan_processes(base_plan, env_on_workers=True)``, when already listed.
    """
    if sel.kv_offload or base_sel.kv_offload:
        return None
    ctx = with_selection(base_ctx, sel) if base_ctx is not None and LAST_LAYERS else None
    if ctx is None:
        ctx = _derivable_context(catalog, recipe, sel)
    elif ctx.kv_store is not None or ctx.kv_composing:
        return None
    if ctx is None:
        return None
    new = feature_tokens(ctx)
    old = base_features if base_features is not None else base_feature_tokens(catalog, recipe, base_sel, base_ctx)
    if old and not _ends_with(base_processes if base_processes is not None else
                              plan_processes(base_plan, env_on_workers=True), old):
        return None
    return Derived(ctx, base_plan, old, new, None)


def base_feature_tokens(catalog: Catalog, recipe: Recipe, base_sel: Selection, base_ctx: Ctx | None = None
                        ) -> tuple[Arg, ...]:
    """The features layer's tokens of ``base_sel`` (what :func:`feature_set_processes` replaces); ``base_ctx``:
    its context, when already built."""
    if base_ctx is None or base_ctx.sel != base_sel:
        base_ctx = build_context(catalog, recipe.data, recipe.rel_path, base_sel)
    return feature_tokens(base_ctx)


def _ends_with(processes: list[Process], old: tuple[Arg, ...]) -> bool:
    """Whether every process's tokens end with ``old``."""
    n = len(old)
    return all(len(inv.args) >= n and inv.args[len(inv.args) - n:] == old for _title, inv, _env in processes)


def _derivable_context(catalog: Catalog, recipe: Recipe, sel: Selection) -> Ctx | None:
    """The context of ``sel``, or ``None`` when its plan cannot be derived (the layer order changed, or a
    Mooncake store or composing KV option reaches into other layers)."""
    if not LAST_LAYERS:
        return None
    ctx = build_context(catalog, recipe.data, recipe.rel_path, sel)
    return None if ctx.kv_store is not None or ctx.kv_composing else ctx


def _with_tail(base_plan: Plan, old: tuple[Arg, ...], new: tuple[Arg, ...], env: tuple[EnvValue, ...] | None
               ) -> list[Process]:
    """Every serve process of ``base_plan`` with its last tokens ``old`` (checked: they end every process)
    replaced by ``new``, and ``env`` instead of its own unless ``None``."""
    n = len(old)
    out = []
    for title, inv, base_env in plan_processes(base_plan, env_on_workers=True):
        args = inv.args
        cut = len(args) - n
        if old or new:
            inv = Invocation(inv.model_id, args[:cut] + new, inv.binary, inv.drop_flags)
        out.append((title, inv, base_env if env is None else env))
    return out
