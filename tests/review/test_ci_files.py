"""The shipped pre-commit hook and the README's GitHub Actions workflow run real commands."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import Result

from vllm_recipes.catalog import BUNDLED_DIR

ROOT = Path(__file__).resolve().parents[2]


def test_pre_commit_hook(run_cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "vllm-recipes-validate" and hook["language"] == "python" and not hook["pass_filenames"]
    files = re.compile(hook["files"])
    for path in ("models/org/X.yaml", "models/org/sub/X.yml", "strategies/pd_cluster.yaml", "taxonomy.yaml"):
        assert files.search(path), path
    for path in ("README.md", "models/org/X.zh.md", "docs/taxonomy.yaml"):
        assert not files.search(path), path
    shutil.copytree(BUNDLED_DIR, tmp_path / "r")
    _commit(tmp_path / "r")
    monkeypatch.chdir(tmp_path / "r")
    prog, *args = shlex.split(hook["entry"])
    assert prog == "vllm-recipes"
    res = run_cli(*args)
    assert res.exit_code == 0 and "0 errors" in res.output
    (tmp_path / "r" / "models" / "org").mkdir()
    (tmp_path / "r" / "models" / "org" / "Bad.yaml").write_text("meta: [oops\n")
    res = run_cli(*args)
    assert res.exit_code == 1 and "models/org/Bad.yaml:" in res.output
    assert all("models/org/Bad.yaml:" in line for line in res.output.splitlines()[:-1])  # only what is new


def _commit(repo: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def _workflow() -> dict:
    readme = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if b.startswith("name: recipes"))
    return yaml.safe_load(block)


def test_readme_workflow_commands_run(run_cli: Callable[..., Result], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    wf = _workflow()
    steps = wf["jobs"]["review"]["steps"]
    runs = [s["run"] for s in steps if "run" in s and s["run"].startswith("vllm-recipes")]
    assert len(runs) == 2
    repo = tmp_path / "repo"
    shutil.copytree(BUNDLED_DIR, repo)
    _commit(repo)
    rel = "models/deepseek-ai/DeepSeek-V4-Flash.yaml"
    text = (repo / rel).read_text()
    (repo / rel).write_text(text.replace("default_strategy: single_node_tep", "default_strategy: single_node_tp"))
    monkeypatch.chdir(repo)
    prog, *validate = shlex.split(runs[0].replace("${{ github.event.pull_request.base.sha }}", "HEAD"))
    assert prog == "vllm-recipes"
    assert "--format" in validate and validate[validate.index("--format") + 1] == "github"
    assert validate[validate.index("--new-since") + 1] == "git:HEAD"
    res = run_cli(*validate)
    assert res.exit_code == 0 and "new since git:HEAD" in res.output
    prog, *diff = shlex.split(runs[1].split(">")[0].replace("${{ github.event.pull_request.base.sha }}", "HEAD"))
    assert prog == "vllm-recipes"
    res = run_cli(*diff)
    assert res.exit_code == 0 and res.output.startswith("### Recipe impact: `git:HEAD` -> `.`")
    assert "recommended strategy" in res.output
