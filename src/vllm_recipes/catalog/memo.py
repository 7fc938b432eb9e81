"""The bounded memo every stage keeps on the immutable :class:`~vllm_recipes.catalog.Catalog`.

Resolving and rendering are pure functions of the catalog and a selection, so
their pieces are memoized on ``catalog.memo`` (compiled layer tuples, contexts,
env maps, rendered text). Some keys are user-driven (feature orders, advanced
options, PD pool requests from URLs), so the memo is bounded: when it is full it
is emptied and refills with what is in use. It lives with the catalog that owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

#: Entries before the memo is emptied (a 170-recipe build needs ~100k).
MEMO_LIMIT = 400_000

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def remember(memo: dict[Any, Any], key: Any, value: T, limit: int = MEMO_LIMIT) -> T:
    """Store ``value`` under ``key`` (emptying a memo of ``limit`` entries first) and return it."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value
    return value


#: Whole answers per selection (plans, rendering objects) are large and, in a build, never
#: asked for twice: they live in a small cache of their own (the website's working set).
SELECTION_LIMIT = 4096
#: the key of the per-selection cache inside the memo
SELECTIONS = "selection answers"


def selection_cache(memo: dict[Any, Any]) -> dict[Any, Any]:
    """The bounded per-selection cache inside ``memo`` (emptied when full, see :func:`remember_answer`)."""
    cache = memo.get(SELECTIONS)
    if cache is None:
        cache = remember(memo, SELECTIONS, {})
    return cache  # type: ignore[no-any-return]


def remember_answer(cache: dict[Any, Any], key: Any, value: T) -> T:
    """:func:`remember` in the per-selection cache (:data:`SELECTION_LIMIT`)."""
    return remember(cache, key, value, SELECTION_LIMIT)


class Table(dict[K, V], Generic[K, V]):
    """``key -> fn(key)``, filled on first sight: a whole list is then looked up by one C-level
    ``map(table.__getitem__, keys)`` instead of a Python loop calling ``fn`` (token classifications)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[K], V]) -> None:
        super().__init__()
        self.fn = fn

    def __missing__(self, key: K) -> V:
        value = self[key] = self.fn(key)
        return value
