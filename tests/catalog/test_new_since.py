"""``validate --new-since BASE`` / ``--fail-on``, and commands pointed where there are no recipes (exit 2)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from validate_helpers import GOOD

from vllm_recipes.catalog.diagnostics import Finding, findings_not_in
from vllm_recipes.cli.main import cli

OTHER = GOOD.replace("org/Test", "org/Other").replace("Test Model", "Other Model")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@e"}


def _repo(root: Path) -> Path:
    for rel, text in {"models/org/Test.yaml": GOOD + "zz_unknown: 1\n", "models/org/Other.yaml": OTHER}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=ENV)
    return root


def _validate(root: Path, *extra: str) -> tuple[int, str]:
    got = CliRunner().invoke(cli, ["validate", "--recipes-dir", str(root), *extra])
    return got.exit_code, got.stdout


def test_new_since_reports_only_what_a_change_introduced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _repo(tmp_path / "repo")
    monkeypatch.chdir(root)
    code, out = _validate(root)
    assert code == 0 and "zz_unknown" in out  # an old warning
    code, out = _validate(root, "--new-since", "git:HEAD")
    assert code == 0 and out.splitlines() == ["0 errors, 0 warnings in 2 files new since git:HEAD"]
    rel = root / "models/org/Other.yaml"
    rel.write_text(OTHER.replace('    - "--trust-remote-code"\n', '    - "--trust-remote-code"\n    - "--no-such-flag"\n'),
                   encoding="utf-8")
    code, out = _validate(root, "--new-since", "git:HEAD")
    lines = out.splitlines()
    assert code == 1 and lines[-1].startswith("1 error, 0 warnings") and len(lines) == 2
    assert lines[0].startswith("models/org/Other.yaml:") and "--no-such-flag" in lines[0]
    assert _validate(root, "--new-since", "git:HEAD", "--fail-on", "never")[0] == 0
    # a directory as BASE, as in diff
    code, _ = _validate(root, "--new-since", str(tmp_path / "repo"))
    assert code == 0


def test_fail_on_warning_and_never(tmp_path: Path) -> None:
    root = _repo(tmp_path / "repo")
    assert _validate(root)[0] == 0
    assert _validate(root, "--fail-on", "warning")[0] == 1  # the unknown key is a warning
    assert _validate(root, "--fail-on", "never")[0] == 0


def test_findings_not_in_ignores_lines_and_the_example_of_a_shared_file_finding() -> None:
    old = [Finding("error", "models/a.yaml", 3, 1, "x", "bad (e.g. --hardware h200)", "c"),
           Finding("warning", "taxonomy.yaml", 9, 1, "k", "seen by recipe A (e.g. a/A)", "lint")]
    new = [Finding("error", "models/a.yaml", 5, 1, "x", "bad (e.g. --hardware b200)", "c"),
           Finding("warning", "taxonomy.yaml", 9, 1, "k", "seen by recipe B (e.g. b/B)", "lint"),
           Finding("error", "models/b.yaml", 5, 1, "x", "bad (e.g. --hardware b200)", "c")]
    assert findings_not_in(old, new) == new[2:]


@pytest.mark.parametrize("argv", [["list"], ["validate"], ["show", "org/Test"]])
def test_no_recipes_found_says_where_it_looked(tmp_path: Path, argv: list[str]) -> None:
    root = _repo(tmp_path / "repo")
    got = CliRunner().invoke(cli, [*argv, "--recipes-dir", str(root / "models")])
    assert got.exit_code == 2
    assert f"no recipes found: no models/<org>/<repo>.yaml under {root / 'models' / 'models'}" in got.stderr
    assert f"did you mean --recipes-dir {root}?" in got.stderr


def test_diff_where_there_are_no_recipes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "README.md").write_text("not recipes\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"], ["commit", "-q", "--allow-empty", "-m", "two"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, env=ENV)
    monkeypatch.chdir(tmp_path)
    got = CliRunner().invoke(cli, ["diff", "git:HEAD~1"])
    assert got.exit_code == 2 and "no recipes found" in got.stderr
