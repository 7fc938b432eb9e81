"""Project hygiene: lint clean, README quick start and CI in sync."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:sh|bash)?\n(.+?)\n```", section, flags=re.S)


def test_readme_has_exactly_two_quick_start_commands() -> None:
    cmds = _quick_start_commands()
    assert len(cmds) == 2, cmds
    assert all("\n" not in c for c in cmds)
    assert "serve" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _quick_start_commands()[1] in ci.splitlines()


def test_ruff_clean() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is part of the test extras"
    res = subprocess.run([ruff, "check", "--quiet", str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "benchmarks")],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
