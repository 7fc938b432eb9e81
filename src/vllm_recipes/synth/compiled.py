"""What one (recipe, variant, strategy, frontend, KV choice) compiles to, shared by its selections.

Every selection of a recipe with the same variant, strategy, frontend and KV
choice reads the same recipe, strategy and taxonomy data; only its hardware,
node and instance counts, features, modes, advanced options and PD pool
requests differ. A :class:`Compiled` is made once per such *shape* (it lives in
the catalog's bounded memo, with the context fields that read no hardware) and
keeps a small memo of its own whose keys need to name only what varies inside
the shape: a hardware profile's context fields, the static argument tuples per
(role, hardware class), the parallelism tokens per node layout, the features
per feature set, the merged env per (hardware class, role, PD request).

Because the memo lives on an object the catalog memo holds, a catalog that
remembers nothing (``tests/api/test_memo_equivalence.py``) gets a new, empty
one for every resolve: the equivalence test covers these caches too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from vllm_recipes.catalog.memo import remember

#: entries of one shape's memo before it is emptied (keys include user-driven feature
#: orders, mode picks and PD pool requests, so it is bounded like the catalog memo)
COMPILED_LIMIT = 4096

T = TypeVar("T")


class Compiled:
    """The per-shape facts a resolve needs besides the context, and the shape's own memo."""

    __slots__ = ("kv_opt_candidate", "memo", "raw_deploy_type")

    def __init__(self, kv_opt_candidate: Mapping[str, Any] | None, raw_deploy_type: Any) -> None:
        #: the shape's memo (see the module docstring for its keys)
        self.memo: dict[Any, Any] = {}
        #: the KV offload option when the strategy and recipe allow it (the brand check is the hardware's)
        self.kv_opt_candidate = kv_opt_candidate
        #: the strategy's ``deploy_type`` as written (``None`` when absent)
        self.raw_deploy_type = raw_deploy_type

    def keep(self, key: Any, value: T) -> T:
        """Store ``value`` in the shape's memo (emptied first when full) and return it."""
        return remember(self.memo, key, value, COMPILED_LIMIT)

    def recall(self, key: Any, make: Callable[..., T], *args: Any) -> T:
        """The shape's memo entry under ``key``, made by ``make(*args)`` (and kept) when missing."""
        hit = self.memo.get(key)
        if hit is None:
            hit = self.keep(key, make(*args))
        return hit  # type: ignore[no-any-return]
