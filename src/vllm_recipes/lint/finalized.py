"""``finalize`` as positions, memoized by token shape: what the tally and the release lint read of a dedupe.

Dedupe, the pre-filter and dropped flags look at token *values* only
(synthesis.md §7), and at a value token only as "a value": which positions of
a process's raw token list survive, and which kept flag shadows each dropped
token, are the same for every process with the same :func:`token_shape` and
drop list. ``validate`` meets the same shapes in thousands of processes whose
values and sources differ (another hardware override, another feature), so the
positions are computed once per shape and each process maps them back onto its
own values, tokens and their provenance.

:func:`final_positions` packs ``render.shell.dedupe_positions`` (the value-only
twin of ``final_tokens`` the renderers use too); a hypothesis test holds them
equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, NamedTuple, TypeVar

from vllm_recipes.catalog.memo import Table, remember
from vllm_recipes.render.shell import dedupe_positions
from vllm_recipes.synth.plan import Invocation

_value = itemgetter(0)  # Arg.value
T = TypeVar("T")


class FinalizedIndices(NamedTuple):
    """Positions into ``Invocation.args``."""

    #: the tokens the renderers print, in order
    kept: tuple[int, ...]
    #: (a shadowed token, the kept flag token that won over it, or -1 when that flag was dropped)
    shadowed: tuple[tuple[int, int], ...]
    #: the values at ``kept`` (what the renderers print and the release lint reads)
    kept_values: tuple[str, ...] = ()
    #: picks the items at ``kept`` out of a sequence as a tuple (the process's kept tokens out of its args)
    pick: Callable[[Sequence[Any]], tuple[Any, ...]] | None = None


#: stands for every value token in a :func:`token_shape` (not empty, not a flag, never a dropped flag)
OPAQUE = "\x00"


def token_shape(values: Sequence[str], drop_flags: Sequence[str] = ()) -> tuple[str, ...]:
    """What dedupe and drops read of ``values``: flags (and dropped names) as they are, empty tokens as
    empty, any other value as :data:`OPAQUE`. :func:`final_positions` of the shape is that of the values."""
    if OPAQUE in drop_flags:
        return tuple(values)
    return tuple(v if v in drop_flags else _shape_token(v) for v in values)


def _shape_token(v: str) -> str:
    """One value's :func:`token_shape` token when nothing is dropped."""
    return v if v == "" or v.startswith("-") else OPAQUE


#: the memo key of the value -> shape-token table (emptied with the memo when it is full)
_SHAPE_OF = ("finalized-shape-of",)


def picker(positions: tuple[int, ...]) -> Callable[[Sequence[T]], tuple[T, ...]]:
    """A function returning the items at ``positions`` of a sequence as a tuple (``itemgetter`` in C)."""
    if len(positions) >= 2:
        return itemgetter(*positions)
    if positions:
        i = positions[0]
        return lambda seq: (seq[i],)
    return lambda seq: ()


def finalized_indices(memo: dict[Any, Any], inv: Invocation) -> FinalizedIndices:
    """The positions ``finalize`` keeps and shadows in ``inv``, memoized in ``memo`` by the
    :func:`token_shape` of its values (shared by every value list of that shape), with its kept values."""
    values = tuple(map(_value, inv.args))
    drop = inv.drop_flags
    if drop:
        shape = token_shape(values, drop)
    else:
        shape_of = memo.get(_SHAPE_OF)
        if shape_of is None:
            shape_of = remember(memo, _SHAPE_OF, Table(_shape_token))
        shape = tuple(map(shape_of.__getitem__, values))
    key = ("finalized-shape", shape, drop)
    pos = memo.get(key)
    if pos is None:
        fp = final_positions(shape, drop)
        pos = remember(memo, key, (fp.kept, fp.shadowed, picker(fp.kept)))
    kept, shadowed, pick = pos
    return FinalizedIndices(kept, shadowed, pick(values), pick)


def final_positions(values: Sequence[str], drop_flags: Sequence[str] = ()) -> FinalizedIndices:
    """§7.1 pre-filter, §7.2 last-wins dedupe and the dropped flags, on positions of ``values``."""
    kept, shadowed = dedupe_positions(values, drop_flags)
    pick = picker(kept)
    return FinalizedIndices(kept, shadowed, pick(values), pick)
