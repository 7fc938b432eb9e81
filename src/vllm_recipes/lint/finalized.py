"""``finalize`` as positions, memoized by token values: what the tally and the release lint read of a dedupe.

Dedupe, the pre-filter and dropped flags look at token *values* only
(synthesis.md §7), so which positions of a process's raw token list survive,
and which kept flag shadows each dropped token, are the same for every process
with the same values and drop list. ``validate`` meets the same value lists in
thousands of processes whose sources differ (another hardware override,
another feature), so the positions are computed once per value list and each
process maps them back onto its own tokens and their provenance.

:func:`final_positions` packs ``render.shell.dedupe_positions`` (the value-only
twin of ``final_tokens`` the renderers use too); a hypothesis test holds them
equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from vllm_recipes.catalog.memo import remember
from vllm_recipes.render.shell import dedupe_positions
from vllm_recipes.synth.plan import Invocation

_value = itemgetter(0)  # Arg.value


class FinalizedIndices(NamedTuple):
    """Positions into ``Invocation.args``."""

    #: the tokens the renderers print, in order
    kept: tuple[int, ...]
    #: (a shadowed token, the kept flag token that won over it, or -1 when that flag was dropped)
    shadowed: tuple[tuple[int, int], ...]
    #: the values at ``kept`` (what the renderers print and the release lint reads)
    kept_values: tuple[str, ...] = ()


#: stands for every value token in a :func:`token_shape` (not empty, not a flag, never a dropped flag)
OPAQUE = "\x00"


def token_shape(values: Sequence[str], drop_flags: Sequence[str] = ()) -> tuple[str, ...]:
    """What dedupe and drops read of ``values``: flags (and dropped names) as they are, empty tokens as
    empty, any other value as :data:`OPAQUE`. :func:`final_positions` of the shape is that of the values."""
    if OPAQUE in drop_flags:
        return tuple(values)
    return tuple(v if v == "" or v.startswith("-") or v in drop_flags else OPAQUE for v in values)


def finalized_indices(memo: dict[Any, Any], inv: Invocation) -> FinalizedIndices:
    """The positions ``finalize`` keeps and shadows in ``inv`` (memoized in ``memo`` by values and drop list;
    on a miss, the positions are shared by every value list of the same :func:`token_shape`)."""
    values = tuple(map(_value, inv.args))
    key = ("finalized-indices", values, inv.drop_flags)
    hit = memo.get(key)
    if hit is None:
        shape_key = ("finalized-shape", token_shape(values, inv.drop_flags), inv.drop_flags)
        pos = memo.get(shape_key)
        if pos is None:
            pos = remember(memo, shape_key, final_positions(shape_key[1], inv.drop_flags))
        hit = remember(memo, key, FinalizedIndices(pos.kept, pos.shadowed, tuple(values[i] for i in pos.kept)))
    return hit  # type: ignore[no-any-return]


def final_positions(values: Sequence[str], drop_flags: Sequence[str] = ()) -> FinalizedIndices:
    """§7.1 pre-filter, §7.2 last-wins dedupe and the dropped flags, on positions of ``values``."""
    kept, shadowed = dedupe_positions(values, drop_flags)
    return FinalizedIndices(kept, shadowed, tuple(values[i] for i in kept))
