"""``parallel.in_background``: a call in a fresh process, its answer (or its failure) in a Future."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from vllm_recipes.parallel import in_background


def test_the_answer_comes_back_and_what_the_work_prints_does_not_corrupt_it() -> None:
    assert in_background(sorted, [3, 1, 2]).result(timeout=60) == [1, 2, 3]
    assert in_background(print, "noise on stdout").result(timeout=60) is None  # (printed to stderr instead)


def test_an_error_in_the_work_is_raised_by_the_future() -> None:
    with pytest.raises(RuntimeError, match="ValueError: invalid literal"):
        in_background(int, "not a number").result(timeout=60)


def test_a_process_killed_before_answering_fails_the_future() -> None:
    future = in_background(time.sleep, 60)
    pid = _child_pid()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ChildProcessError, match=r"sleep process ended early \(exit code -9\)"):
        future.result(timeout=60)


def _child_pid() -> int:
    """The one ``python -m vllm_recipes.parallel`` child of this process (Linux /proc)."""
    for _ in range(500):
        for proc in Path("/proc").iterdir():
            try:
                stat = (proc / "stat").read_text()
                cmdline = (proc / "cmdline").read_bytes()
            except (OSError, ValueError):
                continue
            if int(stat.rpartition(")")[2].split()[1]) == os.getpid() and b"vllm_recipes.parallel" in cmdline:
                return int(proc.name)
        time.sleep(0.01)
    raise AssertionError("no background process found")
