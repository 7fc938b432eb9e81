"""The one place that starts worker processes: :func:`parallel_map`.

``validate`` and ``build-api`` do independent work per recipe; on a catalog of
a few dozen recipes that is seconds of CPU, which two cores halve. Workers are
forked so that they inherit what the caller has loaded (the catalog) instead of
receiving it pickled; forking is only safe while the caller runs no other
threads, so a threaded caller (the web server) gets the serial loop.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: the function and items of the running map (inherited by the forked workers)
_task: tuple[Callable[[Any], Any], Sequence[Any]] | None = None


def _run(index: int) -> Any:
    assert _task is not None
    fn, items = _task
    return fn(items[index])


def cpu_count() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def parallel_map(fn: Callable[[T], R], items: Sequence[T], *, jobs: int | None = None, min_items: int = 8) -> list[R]:
    """``[fn(x) for x in items]``, in order, spread over ``jobs`` worker processes (default: every core).

    Serial when there are fewer than ``min_items`` items, one job, or other threads in this process.
    ``fn`` must be a module-level function and its results picklable.
    """
    global _task
    n = len(items)
    jobs = min(cpu_count() if jobs is None else jobs, n)
    if jobs <= 1 or n < min_items or threading.active_count() > 1 or _task is not None:
        return [fn(x) for x in items]
    _task = (fn, items)
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            # small chunks keep every worker busy to the end (recipes differ a lot in size)
            return list(pool.map(_run, range(n), chunksize=max(1, min(4, n // (jobs * 8)))))
    finally:
        _task = None
