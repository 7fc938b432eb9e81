"""One function over many items on two cores: a forked child works from the front, this process from the back.

Used where a first start pays for work the caches then remember (parsing a
catalog's YAML, validating its recipes): done once, on a fresh directory,
while the second core of the machine idles. The child appends each result,
pickled in a length-prefixed frame, to an unlinked spool file; this process
first runs ``meanwhile`` (work of its own that needs no result, and that it
would otherwise do later: it only runs when there is a child), then takes
items from the back, picking up the child's frames as they come, until the
two meet. The child is killed once the two have met (it is only redoing what
is done).

Forks only from a process with a single thread (forking a threaded process
can deadlock the child) and where ``fork`` exists; a child that fails or
sends something unreadable only leaves its items to the caller.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import struct
import tempfile
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: an item neither process finished (the caller does it itself)
MISSING: Any = object()
_FRAME = struct.Struct("<Q")


def can_fork() -> bool:
    """Whether forking is possible and safe here (no other thread could hold a lock the child needs)."""
    return hasattr(os, "fork") and threading.active_count() == 1


#: children started by :func:`in_background` not yet waited for
_background: list[int] = []


def in_background(fn: Callable[[], object]) -> bool:
    """Run ``fn`` in a forked child and return at once; ``False`` (nothing run) when it cannot fork.

    For writes nobody waits for (a cache pack after a first load): the data is
    the child's copy, so this process goes on while the child pickles and
    writes. Children are reaped as later ones start and waited for when this
    process exits, so a command's caches are complete once it has returned.
    """
    _reap(os.WNOHANG)
    if not can_fork():
        return False
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:
        try:
            fn()
        finally:
            os._exit(0)
    if not _background:
        atexit.register(wait_background)
    _background.append(pid)
    return True


def wait_background() -> None:
    """Wait until every :func:`in_background` child has finished (what it wrote is then in place)."""
    _reap(0)


def _reap(options: int) -> None:
    """Reap the :func:`in_background` children (``os.WNOHANG``: only those already finished)."""
    for pid in list(_background):
        try:
            done, _status = os.waitpid(pid, options)
        except ChildProcessError:  # not ours (a forked process inherits the list) or already reaped
            done = pid
        if done == pid:
            _background.remove(pid)


def _child(fn: Callable[[T], Any], items: Sequence[T], out_fd: int) -> None:
    for item in items:
        try:
            result = fn(item)
            frame = pickle.dumps((True, result), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # this item is left to the parent, which reports what goes wrong
            frame = pickle.dumps((False, None))
        os.write(out_fd, _FRAME.pack(len(frame)) + frame)


class _Frames:
    """The child's frames, read as they are appended (``pread``: the file offset is the child's)."""

    def __init__(self, fd: int, loads: Callable[[bytes], Any]) -> None:
        self.fd, self.offset, self.loads = fd, 0, loads

    def take(self) -> list[Any]:
        got = []
        end = os.fstat(self.fd).st_size
        while end - self.offset >= _FRAME.size:
            (n,) = _FRAME.unpack(os.pread(self.fd, _FRAME.size, self.offset))
            if end - self.offset - _FRAME.size < n:
                break  # the child is still writing this one
            blob = os.pread(self.fd, n, self.offset + _FRAME.size)
            self.offset += _FRAME.size + n
            got.append(self.loads(blob))
        return got


def _end(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _meet(fn: Callable[[T], Any], items: Sequence[T], frames: _Frames, pid: int, out: list[Any],
          then: Callable[[int, Any], object] | None) -> None:
    reaped = False
    lo, hi = 0, len(items)  # the child has done items[:lo] (in order), this process items[hi:]
    try:
        while lo < hi:
            for ok, result in frames.take():
                if ok:
                    out[lo] = result
                    if then is not None:
                        then(lo, result)
                lo += 1
            if lo >= hi:
                break
            if not reaped and os.waitpid(pid, os.WNOHANG)[0] == pid:
                reaped = True  # it ended (early or not): its last frames are taken on the next turn
                continue
            hi -= 1
            out[hi] = fn(items[hi])
            if then is not None:
                then(hi, out[hi])
    finally:
        if not reaped:
            _end(pid)


def forked_map(fn: Callable[[T], Any], items: Sequence[T], *, meanwhile: Callable[[], object] | None = None,
               loads: Callable[[bytes], Any] = pickle.loads,
               then: Callable[[int, Any], object] | None = None) -> list[Any] | None:
    """``[fn(item) ...]`` computed by two processes (:data:`MISSING` where neither finished one).

    ``None`` when no child could be forked (the caller does the work). ``meanwhile``
    runs once in this process while the child works, and not at all without a child. ``loads`` reads a frame
    (e.g. a restricted unpickler). ``then(index, result)`` runs in this process for each result as soon as
    it is here (work that needs a result: it overlaps with the child's work on the later ones). An
    exception of ``fn`` or ``then`` in this process propagates.
    """
    if not can_fork():
        return None
    out: list[Any] = [MISSING] * len(items)
    with tempfile.TemporaryFile() as spool:
        try:
            pid = os.fork()
        except OSError:
            pid = -1
        if pid == 0:  # the child: work, spool, leave without running the parent's exit handlers
            try:
                _child(fn, items, spool.fileno())
            finally:
                os._exit(0)
        if pid < 0:
            return None
        try:
            if meanwhile is not None:
                meanwhile()
        except BaseException:
            _end(pid)
            raise
        frames = _Frames(spool.fileno(), loads)
        # an unreadable frame ends the meeting: what is still MISSING is the caller's
        with contextlib.suppress(pickle.UnpicklingError, EOFError, ValueError, struct.error):
            _meet(fn, items, frames, pid, out, then)
    return out
