"""The one place that starts worker processes: :func:`parallel_map` and :func:`in_background`.

``validate`` and ``build-api`` do independent work per recipe; on a catalog of
a few dozen recipes that is seconds of CPU, which two cores halve. Workers are
forked so that they inherit what the caller has loaded (the catalog) instead of
receiving it pickled; forking is only safe while the caller runs no other
threads, so a threaded caller (the web server) gets the serial loop, and starts
long work with :func:`in_background` instead: one fresh Python process, which
cannot hold the server's GIL while pages wait.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
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


def parallel_map(fn: Callable[[T], R], items: Sequence[T], *, jobs: int | None = None, min_items: int = 8,
                 size: Callable[[T], float] | None = None) -> list[R]:
    """``[fn(x) for x in items]``, in order, spread over ``jobs`` worker processes (default: every core).

    Serial when there are fewer than ``min_items`` items, one job, or other threads in this process.
    ``fn`` must be a module-level function and its results picklable. ``size`` (an estimate of an item's
    work): the largest are started first, so that no long item is left to run alone at the end.
    """
    global _task
    n = len(items)
    jobs = min(cpu_count() if jobs is None else jobs, n)
    if jobs <= 1 or n < min_items or threading.active_count() > 1 or _task is not None:
        return [fn(x) for x in items]
    from concurrent.futures import ProcessPoolExecutor  # (not imported by serve, which never forks)

    _task = (fn, items)
    try:
        # what a worker inherits is never garbage: frozen first, its collections skip it (and leave its pages shared)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"),
                                 initializer=gc.freeze) as pool:
            if size is None:  # (small chunks keep every worker busy to the end)
                return list(pool.map(_run, range(n), chunksize=max(1, min(4, n // (jobs * 8)))))
            order = sorted(range(n), key=lambda i: -size(items[i]))
            done = dict(zip(order, pool.map(_run, order), strict=True))
            return [done[i] for i in range(n)]
    finally:
        _task = None


def in_background(fn: Callable[..., R], *args: Any) -> Future[R]:
    """``fn(*args)`` in a fresh, low-priority Python process; its result arrives in the Future.

    A new interpreter (``python -m vllm_recipes.parallel``), not a fork: a threaded caller may use it, and
    nothing of the caller's ``__main__`` runs again. ``fn`` must be a module-level function, its arguments
    and result picklable. The process ends when the caller does, however it ends (its stdin is the
    lifeline). The Future fails with :class:`ChildProcessError` when the process dies before answering.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # (what the caller imports)
    proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env)
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None
    future: Future[R] = Future()

    def talk() -> None:
        try:
            with stdin, stdout:
                stdin.write(pickle.dumps((fn, args)))
                stdin.flush()
                ok, value = pickle.loads(stdout.read())
        except Exception:  # (a broken pipe, an empty or cut answer: the process died)
            proc.wait()
            future.set_exception(ChildProcessError(f"the {fn.__name__} process ended early "
                                                   f"(exit code {proc.returncode})"))
            return
        proc.wait()
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    threading.Thread(target=talk, name=f"in_background({fn.__name__})", daemon=True).start()
    return future


def _background() -> None:
    """The process of :func:`in_background`: the call on stdin, ``(ok, result or error)`` on stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the terminal's whole group: the caller decides
    os.nice(10)  # the caller's own work (serving pages) comes first
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the work prints goes to stderr, not into the answer
    try:
        fn, args = pickle.load(sys.stdin.buffer)
    except (EOFError, pickle.UnpicklingError):
        return  # the caller is gone already
    threading.Thread(target=_end_with_caller, daemon=True).start()
    try:
        result: tuple[bool, Any] = (True, fn(*args))
    except Exception as exc:  # (as a plain error: the exception itself may not pickle)
        result = (False, RuntimeError(f"{type(exc).__name__}: {exc}"))
    with answer:
        pickle.dump(result, answer)


def _end_with_caller() -> None:
    """The caller holds our stdin open until it has the answer: end of file means it is gone (even killed)."""
    while os.read(0, 1024):  # (not sys.stdin: its lock would be held at the interpreter's exit)
        pass
    os._exit(1)


if __name__ == "__main__":
    _background()
