"""``export -o DIR``: each file reaches its path already with its final mode (0755 scripts, 0644 the rest),
never mkstemp's 0600 for a moment (or for good, if setting the mode afterwards failed)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"


@pytest.mark.parametrize(("args", "name", "mode"), [
    ([V41, "--hardware", "h200", "--strategy", "multi_node_dep", "--nodes", "2", "--to", "slurm"],
     "deepseek-v4-1-flash.sbatch", 0o755),
    ([V41, "--to", "compose"], "compose.yaml", 0o644),
])
def test_each_file_has_its_mode_when_renamed_into_place(run_cli: Callable[..., Result], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, args: list[str],
                                                        name: str, mode: int) -> None:
    renamed: dict[str, int] = {}
    replace = os.replace

    def recording_replace(src: Any, dst: Any, **kw: Any) -> None:
        if Path(dst).parent == tmp_path:  # (not the parse cache's private files)
            renamed[Path(dst).name] = stat.S_IMODE(os.stat(src).st_mode)
        replace(src, dst, **kw)

    monkeypatch.setattr(os, "replace", recording_replace)
    res = run_cli("export", *args, "-o", str(tmp_path))
    assert res.exit_code == 0, res.output
    assert renamed == {name: mode}
    assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode
