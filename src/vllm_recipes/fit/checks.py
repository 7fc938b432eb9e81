"""Architecture-aware checks of a plan's processes: TP vs attention heads, context vs the model's.
Apart from the memory report, so ``command`` and ``explain`` warn without importing it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .shape import plan_shapes

if TYPE_CHECKING:
    from vllm_recipes.catalog import Recipe
    from vllm_recipes.synth.plan import Plan

    from .architecture import Architecture
    from .shape import ProcessShape


def architecture_checks(arch: Architecture | None, shapes: list[ProcessShape],
                        model_context: int | None) -> tuple[str, ...]:
    """TP vs attention heads, --max-model-len vs the model's context: an error in ``fit``, a warning
    elsewhere. (PP need not divide the layers: vLLM's ``get_pp_indices`` splits them unevenly.)"""
    if arch is None:
        return ()
    out: list[str] = []
    limit = arch.max_position_embeddings or model_context
    heads, kv = arch.num_attention_heads, arch.num_kv_heads
    for s in dict.fromkeys(shapes):
        who = "" if s.role == "serve" else f"{s.role} pool: "
        if heads and heads % s.tp:
            out.append(f"{who}tensor-parallel size {s.tp} does not divide the model's {heads} attention heads")
        elif kv and arch.attention in ("gqa", "mqa") and kv % s.tp and s.tp % kv:
            out.append(f"{who}tensor-parallel size {s.tp} and the model's {kv} KV heads "
                       "do not divide one another")
        if limit and s.max_model_len and s.max_model_len > limit:
            out.append(f"{who}--max-model-len {s.max_model_len:,} is longer than the model's "
                       f"context of {limit:,} tokens")
    return tuple(dict.fromkeys(out))


def recipe_context_length(recipe: Recipe) -> int | None:
    """The recipe's ``model.context_length`` when it is an int (else ``None``)."""
    ctx = recipe.model.get("context_length")
    return ctx if isinstance(ctx, int) else None


def plan_checks(arch: Architecture, recipe: Recipe, plan: Plan) -> tuple[str, ...]:
    """The checks for a rendered plan with the recipe's own architecture (``command``, ``explain``)."""
    return architecture_checks(arch, plan_shapes(plan), recipe_context_length(recipe))
