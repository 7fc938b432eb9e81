"""Writing the API: atomic swaps, stale files, ``--check`` and the CLI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from api_helpers import build, recipe, write_dir
from click.testing import CliRunner

from vllm_recipes.api import writer
from vllm_recipes.api.writer import diff_tree, list_tree, publish
from vllm_recipes.cli import api_cmds  # noqa: F401  (registers build-api)
from vllm_recipes.cli.main import cli


def _catalog(root: Path) -> Path:
    fp8 = {"precision": "fp8", "vram_minimum_gb": 20, "model_id": "acme/Base-FP8"}
    return write_dir(root, {
        "acme/Base.yaml": recipe("acme/Base", variants={
            "default": {"precision": "bf16", "vram_minimum_gb": 40}, "fp8": fp8}),
        "acme/Other.yaml": recipe("acme/Other"),
        "zed/Omni.yaml": recipe("zed/Omni", meta={"title": "Omni", "tasks": ["omni"]}),
    })


def _leftovers(parent: Path) -> list[str]:
    return [n for n in os.listdir(parent) if n.startswith((".api.build-", ".api.old-"))]


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p: (out / p).read_bytes() for p in list_tree(out)}


def _assert_same_as_full(root: Path, out: Path) -> None:
    api, _ = build(root)
    assert not diff_tree(api.files, out), diff_tree(api.files, out).lines()


def build_full(root: Path, out: Path, warn: Any = None, *, jobs: int | None = None) -> Any:
    """``build-api`` without the llms files (what these tests compare with the in-memory build)."""
    return publish(root, out, warn, llms=False, jobs=jobs)


def _edit(path: Path, fn: Any) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    fn(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


# --- full builds ---------------------------------------------------------------------------------

@pytest.mark.parametrize("jobs", [1, 2])
def test_full_build_on_disk_equals_the_in_memory_build(tmp_path: Path, jobs: int) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "pub" / "api"
    lines: list[str] = []
    res = build_full(root, out, lines.append, jobs=jobs)
    api, warnings = build(root)
    assert res.summary == api.summary and lines == warnings
    assert _snapshot(out) == api.files
    assert os.listdir(out.parent) == ["api", ".api.lock"] or sorted(os.listdir(out.parent)) == [".api.lock", "api"]


def test_recipes_sharing_a_promoted_model_id_on_disk(tmp_path: Path) -> None:
    # two recipes promote the same id (json-api §5.9, across files): the later one's tree wins
    a = recipe("acme/A", variants={"default": {"precision": "bf16", "vram_minimum_gb": 40},
                                   "x": {"precision": "bf16", "vram_minimum_gb": 40, "model_id": "zed/Shared"}})
    b = recipe("acme/B", variants={"default": {"precision": "bf16", "vram_minimum_gb": 40},
                                   "y": {"precision": "fp8", "vram_minimum_gb": 20, "model_id": "zed/Shared",
                                         "supported_hardware": ["h200"]}})
    root = write_dir(tmp_path / "cat", {"acme/A.yaml": a, "acme/B.yaml": b})
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}"
        build_full(root, out, jobs=jobs)
        _assert_same_as_full(root, out)
        assert not (out / "zed/Shared/hw/h100.json").exists()


def test_stale_files_never_survive_a_build(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_full(root, out)
    (out / "junk.json").write_text("{}")
    (out / "acme" / "Gone").mkdir()
    (root / "models/acme/Other.yaml").unlink()
    build_full(root, out)
    assert not (out / "junk.json").exists() and not (out / "acme/Other.json").exists()
    assert not (out / "acme/Other").exists() and not (out / "acme/Gone").exists()
    _assert_same_as_full(root, out)


def test_failed_write_leaves_the_previous_api_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_full(root, out)
    before = _snapshot(out)
    (root / "models/acme/Base.yaml").write_text(
        (root / "models/acme/Base.yaml").read_text().replace("Serve it.", "Serve it now."))
    real = writer._write_all
    calls = {"n": 0}

    def failing(fd: int, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 5:  # some files of the new tree are on disk
            raise OSError(28, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(writer, "_write_all", failing)
    with pytest.raises(OSError, match="No space left"):
        build_full(root, out, jobs=1)
    assert _snapshot(out) == before
    assert _leftovers(tmp_path) == []  # the half-written sibling is gone


def test_failed_swap_leaves_the_previous_api_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_full(root, out)
    before = _snapshot(out)

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("swap failed")

    monkeypatch.setattr(writer, "swap_into_place", boom)
    with pytest.raises(RuntimeError):
        writer.write_tree({"x.json": b"{}"}, out)
    assert _snapshot(out) == before
    assert _leftovers(tmp_path) == []


def test_feature_mode_error_skips_only_that_recipe(tmp_path: Path) -> None:
    """Issue #28: one recipe never stops the build (the strict reference abort is build_api's, not publish's)."""
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    _edit(root / "models/acme/Other.yaml", lambda d: d["features"].update(x={"modes": {}}))
    lines: list[str] = []
    build_full(root, out, lines.append)
    assert "  ✗ skipping models/acme/Other.yaml: 1 validation error" in lines
    assert (out / "acme/Base.json").is_file() and not (out / "acme/Other.json").exists()


def test_llms_files_are_part_of_the_swapped_tree(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    publish(root, out)
    assert (out / "llms.txt").read_text(encoding="utf-8").startswith("#")
    assert "acme/Base" in (out / "llms-full.txt").read_text(encoding="utf-8")


# --- CLI ----------------------------------------------------------------------------------------

def test_cli_build_check_and_one_byte_change(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    runner = CliRunner()
    r = runner.invoke(cli, ["build-api", str(out), "--recipes-dir", str(root)])
    assert r.exit_code == 0, r.output
    api, _ = build(root)
    assert r.stdout == api.summary + "\n"

    r = runner.invoke(cli, ["build-api", "--check", str(out), "--recipes-dir", str(root)])
    assert (r.exit_code, r.stdout) == (0, "")

    target = out / "acme/Base/hw/h100.json"
    data = bytearray(target.read_bytes())
    data[10] ^= 1
    target.write_bytes(bytes(data))
    (out / "models.json").unlink()
    (out / "extra.json").write_text("{}")
    r = runner.invoke(cli, ["build-api", "--check", str(out), "--recipes-dir", str(root)])
    assert r.exit_code == 1
    assert r.stdout.splitlines() == ["missing: models.json", "extra:   extra.json",
                                     "changed: acme/Base/hw/h100.json"]

    r = runner.invoke(cli, ["build-api", str(out), "--recipes-dir", str(root)])
    assert r.exit_code == 0
    assert runner.invoke(cli, ["build-api", "--check", str(out), "--recipes-dir", str(root)]).exit_code == 0


def test_cli_feature_mode_error(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    _edit(root / "models/acme/Other.yaml",
          lambda d: d["variants"]["default"].update(default_modes={"nope": "x"}))
    r = CliRunner().invoke(cli, ["build-api", str(tmp_path / "api"), "--recipes-dir", str(root)])
    assert r.exit_code == 0
    assert "  ✗ skipping models/acme/Other.yaml: 1 validation error\n" in r.stderr
    assert "variants.default.default_modes references unknown feature nope" in r.stderr
    assert (tmp_path / "api/acme/Base.json").is_file() and not (tmp_path / "api/acme/Other.json").exists()


def test_recipe_overwriting_a_static_file(tmp_path: Path) -> None:
    # an org named "strategies": its recipe file lands on strategies/single_node_tp.json, written
    # after the static files (json-api §4 then §5), so the recipe wins
    root = write_dir(tmp_path / "cat", {"strategies/single_node_tp.yaml": recipe("strategies/single_node_tp"),
                                        "acme/T.yaml": recipe("acme/T")})
    api, _ = build(root)
    assert api.files["strategies/single_node_tp.json"].startswith(b'{\n  "hf_id": "strategies/single_node_tp"')
    out = tmp_path / "api"
    build_full(root, out, jobs=2)
    assert _snapshot(out) == api.files


def test_refuses_to_replace_a_directory_that_is_not_an_api(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "thesis.tex").write_text("precious")
    with pytest.raises(FileExistsError, match="refusing to replace it"):
        build_full(root, docs)
    assert (docs / "thesis.tex").read_text() == "precious"
    r = CliRunner().invoke(cli, ["build-api", str(docs), "--recipes-dir", str(root)])
    assert r.exit_code == 1 and "refusing to replace it" in r.stderr


def test_symlinked_output_stays_a_symlink(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    real = tmp_path / "releases" / "api"
    real.parent.mkdir()
    link = tmp_path / "public"
    link.symlink_to(real)
    build_full(root, link)
    build_full(root, link)  # a swap of the real directory, the link is untouched
    assert link.is_symlink() and (link / "models.json").is_file()
    _assert_same_as_full(root, link)


def test_old_and_stale_trees_are_deleted(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_full(root, out)
    crashed = tmp_path / ".api.build-crashed"  # left behind by a killed build
    (crashed / "acme").mkdir(parents=True)
    (crashed / "acme" / "x.json").write_text("{}")
    build_full(root, out)
    _assert_same_as_full(root, out)
    assert _leftovers(tmp_path) == []


def test_disk_build_walk_order_matches_the_loader(tmp_path: Path) -> None:
    names = ["alpha/MiniMax-M2.yaml", "alpha/MiniMax-M2.1.yaml", "alpha/MiniMax-M2-Lite.yaml", "alpha/sub/Deep.yml",
             "Zeta/Model.yaml"]
    root = write_dir(tmp_path / "cat", {n: recipe(f"{n.split('/')[0]}/{Path(n).stem}") for n in names})
    out = tmp_path / "api"
    build_full(root, out, jobs=2)
    api, _ = build(root)
    assert _snapshot(out) == api.files
