"""Findings of the batched fuzz (issue #28, round 2) in the JSON API build: one recipe never stops it.

A recipe whose feature modes are inconsistent (json-api.md §10.2) aborted ``build-api`` for the whole
catalog (exit 1, nothing published) and left ``serve --watch`` without an API. It is now skipped with
the §10.2 messages, like any recipe that fails validation; ``build_api(strict=True)`` (the reference's
conformance mode) still raises.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from api_helpers import recipe, write_dir
from click.testing import CliRunner

from vllm_recipes.api.build import FeatureModeError, build_api
from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import api_cmds  # noqa: F401  (registers build-api)
from vllm_recipes.cli.main import cli

BAD_MODES = {"spec": {"description": "Speculative decoding", "default_mode": "nope",
                      "modes": {"mtp": {"args": "--x"}}}}


def _catalog(tmp_path: Path) -> Path:
    return write_dir(tmp_path / "cat", {"acme/Bad.yaml": recipe("acme/Bad", features=BAD_MODES),
                                        "acme/Good.yaml": recipe("acme/Good"),
                                        "zed/After.yaml": recipe("zed/After")})


def test_build_api_skips_a_recipe_with_inconsistent_feature_modes(tmp_path: Path) -> None:
    root = _catalog(tmp_path)
    out = tmp_path / "api"
    r = CliRunner().invoke(cli, ["build-api", str(out), "--recipes-dir", str(root), "-j", "1"])
    assert r.exit_code == 0, r.output
    assert (out / "acme/Good.json").is_file() and (out / "zed/After.json").is_file()
    assert not (out / "acme/Bad.json").exists()
    assert (out / "llms.txt").is_file() and "acme/Bad" not in (out / "llms-full.txt").read_text()
    assert "✗ skipping models/acme/Bad.yaml" in r.stderr
    assert "default_mode references unknown mode nope" in r.stderr
    assert "modes.mtp.args must be an array" in r.stderr
    assert "Traceback" not in r.output


def test_check_agrees_with_the_published_tree(tmp_path: Path) -> None:
    root = _catalog(tmp_path)
    out = tmp_path / "api"
    assert CliRunner().invoke(cli, ["build-api", str(out), "--recipes-dir", str(root), "-j", "1"]).exit_code == 0
    r = CliRunner().invoke(cli, ["build-api", "--check", str(out), "--recipes-dir", str(root), "-j", "1"])
    assert r.exit_code == 0, r.output


def test_the_live_api_builds_with_such_a_recipe(tmp_path: Path) -> None:
    """What ``serve --watch`` and the MCP server build (every recipe, ``strict=False``)."""
    built = build_api(load_catalog(_catalog(tmp_path)), jobs=1, strict=False)
    assert "acme/Good.json" in built.files and "acme/Bad.json" not in built.files


def test_strict_build_keeps_the_reference_abort(tmp_path: Path) -> None:
    with pytest.raises(FeatureModeError):
        build_api(load_catalog(_catalog(tmp_path)), jobs=1)
