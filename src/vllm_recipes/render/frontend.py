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


def frontend_in_effect(ctx: Ctx, plan: Plan) -> FrontendInEffect:
    """The frontend the plan's processes run: when a final env holds a frontend key from another layer
    than the frontend's own, the frontend whose whole env it holds (else the one without env, Python)."""
    wanted = {str(n): {str(k): str(v) for k, v in as_map(get(f, "env")).items()}
              for n, f in ctx.catalog.frontends.items()}
    keys = {k for env in wanted.values() for k in env}
    for _title, _inv, env_values in plan_processes(plan):
        env = {e.key: e for e in env_values}
        pin = next((env[k] for k in sorted(keys) if k in env and env[k].source.layer != "frontend"), None)
        if pin is None:
            continue
        runs = next((n for n, w in wanted.items() if w and all(
            k in env and str(env[k].value) == v for k, v in w.items())), None)
        plain = next((n for n, w in wanted.items() if not w), ctx.frontend)
        return FrontendInEffect(runs or plain, pin, locate(ctx.catalog, pin.source))
    return FrontendInEffect(ctx.frontend)
