"""``finalize`` as positions, memoized by token values: what the tally and the release lint read of a dedupe.

Dedupe, the pre-filter and dropped flags look at token *values* only
(synthesis.md §7), so which positions of a process's raw token list survive,
and which kept flag shadows each dropped token, are the same for every process
with the same values and drop list. ``validate`` meets the same value lists in
thousands of processes whose sources differ (another hardware override,
another feature), so the positions are computed once per value list and each
process maps them back onto its own tokens and their provenance.

:func:`final_positions` is a value-only twin of ``render.shell.final_tokens``
(as ``render_values`` is of ``render_invocation``); a hypothesis test holds
them equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from vllm_recipes.catalog.memo import remember
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
    live = [i for i, v in enumerate(values) if v != ""]
    is_flag = [values[i].startswith("-") for i in live]
    n = len(live)
    #: units as (position, value position or -1, flag or None for a positional), left to right
    units: list[tuple[int, int, str | None]] = []
    j = 0
    while j < n:
        if is_flag[j]:
            if j + 1 < n and not is_flag[j + 1]:
                units.append((live[j], live[j + 1], values[live[j]]))
                j += 2
                continue
            units.append((live[j], -1, values[live[j]]))
        else:
            units.append((live[j], -1, None))
        j += 1
    seen: set[str] = set()
    kept_units: list[tuple[int, int, str | None]] = []
    shadow: dict[str, list[tuple[int, int, str | None]]] = {}
    for u in reversed(units):
        flag = u[2]
        if flag is None or flag not in seen:
            kept_units.append(u)
            if flag is not None:
                seen.add(flag)
        else:
            shadow.setdefault(flag, []).append(u)
    kept: list[int] = []
    for i, vi, _flag in reversed(kept_units):
        kept.append(i)
        if vi >= 0:
            kept.append(vi)
    if drop_flags:
        kept = _after_drop(kept, values, drop_flags)
    winner = {values[i]: i for i in kept if values[i].startswith("-")}
    shadowed = tuple((p, winner.get(flag, -1)) for flag, us in shadow.items() for i, vi, _f in reversed(us)
                     for p in ((i, vi) if vi >= 0 else (i,)))
    return FinalizedIndices(tuple(kept), shadowed, tuple(values[i] for i in kept))


def _after_drop(kept: list[int], values: Sequence[str], flags: Sequence[str]) -> list[int]:
    """Remove each dropped flag and its value (the next kept token when it is not a flag)."""
    out: list[int] = []
    j, n = 0, len(kept)
    while j < n:
        if values[kept[j]] in flags:
            j += 2 if j + 1 < n and not values[kept[j + 1]].startswith("-") else 1
            continue
        out.append(kept[j])
        j += 1
    return out
