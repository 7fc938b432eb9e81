"""The OpenAI-compatible frontend a command really runs (issue #27.9): a recipe's own env can switch
another one on or off after the selected frontend's env (``VLLM_USE_RUST_FRONTEND=1`` in a hardware
block), so the CLI header, the JSON ``frontend`` key and the page's pills read it from the final env.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_recipes.jsvalues import as_map, get
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import EnvValue, Plan

from .explain import locate, plan_processes


@dataclass(frozen=True)
class FrontendInEffect:
    """``name`` runs; ``pinned_by`` is the recipe env entry that decided it against the selection
    (``None`` when the selection stands), ``where`` its ``file:line``."""

    name: str
    pinned_by: EnvValue | None = None
    where: str = ""

    @property
    def note(self) -> str:
        """``the recipe's env sets K=V`` (empty when the selection stands)."""
        e = self.pinned_by
        return "" if e is None else f"the recipe's env sets {e.key}={e.value}"


def _wanted(ctx: Ctx, name: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_map(get(ctx.catalog.frontends.get(name), "env")).items()}


def frontend_in_effect(ctx: Ctx, plan: Plan) -> FrontendInEffect:
    """The frontend the plan's processes run: when a final env holds a frontend key from another layer
    than the frontend's own, the frontend whose whole env it holds (else the one without env, Python)."""
    frontends = ctx.catalog.frontends
    keys = {k for name in frontends for k in _wanted(ctx, name)}
    for _title, _inv, env_values in plan_processes(plan):
        env = {e.key: e for e in env_values}
        pin = next((env[k] for k in sorted(keys) if k in env and env[k].source.layer != "frontend"), None)
        if pin is None:
            continue
        runs = next((str(n) for n in frontends if _wanted(ctx, n) and all(
            k in env and str(env[k].value) == v for k, v in _wanted(ctx, n).items())), None)
        plain = next((str(n) for n in frontends if not _wanted(ctx, n)), ctx.frontend)
        return FrontendInEffect(runs or plain, pin, locate(ctx.catalog, pin.source))
    return FrontendInEffect(ctx.frontend)
