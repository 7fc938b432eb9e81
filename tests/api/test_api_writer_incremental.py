"""Writing the API: atomic swaps, stale files, incremental == full, ``--check`` and the CLI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from api_helpers import build, recipe, trimmed_taxonomy, write_dir
from click.testing import CliRunner

from vllm_recipes.api import disk as disk_mod
from vllm_recipes.api.build import FeatureModeError
from vllm_recipes.api.incremental import build_full, build_incremental, load_cache
from vllm_recipes.api.writer import cache_path, diff_tree, list_tree, write_api_atomic
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
    assert cache_path(out).is_file() and not (out / ".build-cache.json").exists()
    assert _leftovers(out.parent) == []  # no temp siblings left


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


def test_stale_files_never_survive_a_full_build(tmp_path: Path) -> None:
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


def test_failed_build_leaves_the_previous_api_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_full(root, out)
    before = _snapshot(out)
    (root / "models/acme/Base.yaml").write_text(
        (root / "models/acme/Base.yaml").read_text().replace("Serve it.", "Serve it now."))
    real = disk_mod._write_into
    calls = {"n": 0}

    def failing(dest: str, files: Any, made: set[str]) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # after the first recipe's files are on disk
            raise OSError(28, "No space left on device")
        real(dest, files, made)

    monkeypatch.setattr(disk_mod, "_write_into", failing)
    with pytest.raises(OSError, match="No space left"):
        build_full(root, out, jobs=1)
    assert _snapshot(out) == before
    assert _leftovers(tmp_path) == []  # the half-written sibling is gone


def test_in_memory_api_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path / "cat")
    api, _ = build(root)
    out = tmp_path / "api"
    write_api_atomic(api.files, out)
    assert _snapshot(out) == api.files
    before = _snapshot(out)
    from vllm_recipes.api import writer

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("swap failed")

    monkeypatch.setattr(writer, "swap_into_place", boom)
    with pytest.raises(RuntimeError):
        write_api_atomic({"x.json": b"{}"}, out)
    assert _snapshot(out) == before
    assert _leftovers(tmp_path) == []


def test_validation_error_keeps_the_previous_api(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_full(root, out)
    before = _snapshot(out)
    _edit(root / "models/acme/Other.yaml", lambda d: d["features"].update(x={"modes": {}}))
    with pytest.raises(FeatureModeError) as err:
        build_incremental(root, out)
    assert err.value.message == ("Invalid feature modes in models/acme/Other.yaml:\n"
                                 "  - features.x.modes must be a non-empty map")
    assert _snapshot(out) == before


# --- incremental ---------------------------------------------------------------------------------

def test_incremental_equals_full(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    assert build_incremental(root, out).mode == "full"  # no cache yet
    assert build_incremental(root, out).mode == "unchanged"
    _assert_same_as_full(root, out)

    # 1. one recipe's guide: only it is rendered, only its two json files change
    _edit(root / "models/acme/Base.yaml", lambda d: d.update(guide="New guide."))
    res = build_incremental(root, out)
    assert (res.mode, res.rendered, res.written) == ("incremental", ["models/acme/Base.yaml"], 2)
    _assert_same_as_full(root, out)

    # 2. a new recipe takes the promoted id: acme/Base must stop promoting it (ALL_IDS changed)
    lines: list[str] = []
    (root / "models/acme/Base-FP8.yaml").write_text(yaml.safe_dump(recipe("acme/Base-FP8")))
    res = build_incremental(root, out, lines.append)
    assert res.mode == "incremental"
    assert res.rendered == ["models/acme/Base-FP8.yaml", "models/acme/Base.yaml"]
    assert lines == ["  ⚠ skipping variant promotion: acme/Base-FP8 (variant of acme/Base) collides with "
                     "standalone recipe"]
    assert res.summary.splitlines()[0].endswith("(1 variant collision skipped)")
    _assert_same_as_full(root, out)

    # 3. and gives it back
    (root / "models/acme/Base-FP8.yaml").unlink()
    assert build_incremental(root, out).mode == "incremental"
    _assert_same_as_full(root, out)

    # 4. another recipe promotes the same id (shared base): both re-render, the later file wins
    other = recipe("acme/Other", variants={
        "default": {"precision": "bf16", "vram_minimum_gb": 40},
        "fp8": {"precision": "fp8", "vram_minimum_gb": 20, "model_id": "acme/Base-FP8",
                "supported_hardware": ["h100"]}})
    (root / "models/acme/Other.yaml").write_text(yaml.safe_dump(other))
    res = build_incremental(root, out)
    assert res.rendered == ["models/acme/Base.yaml", "models/acme/Other.yaml"]
    _assert_same_as_full(root, out)

    # 5. a recipe removed: its files go, empty directories are pruned
    (root / "models/acme/Other.yaml").unlink()
    res = build_incremental(root, out)
    assert res.deleted > 0 and not (out / "acme/Other").exists()
    _assert_same_as_full(root, out)

    # 6. catalog data changed: full rebuild
    tax = trimmed_taxonomy(("h100", "h200"))
    (root / "taxonomy.yaml").write_text(yaml.safe_dump(tax, sort_keys=False))
    res = build_incremental(root, out)
    assert (res.mode, res.reason) == ("full", "catalog data changed")
    _assert_same_as_full(root, out)
    cache = load_cache(out)
    assert cache is not None and cache["static_data"] is not None  # no YAML parsing for the static files


def test_translation_files_are_recipe_inputs(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_incremental(root, out)
    (root / "models/acme/Other.zh.md").write_text("# 译文\n")
    res = build_incremental(root, out)
    assert res.rendered == ["models/acme/Other.yaml"]


def test_changed_files_option(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_incremental(root, out)
    _edit(root / "models/acme/Base.yaml", lambda d: d.update(guide="Changed."))
    _edit(root / "models/acme/Other.yaml", lambda d: d.update(guide="Also changed."))
    # only the listed file is read; the other edit is trusted away (the caller said so)
    res = build_incremental(root, out, changed=[root / "models/acme/Base.yaml"])
    assert res.rendered == ["models/acme/Base.yaml"]
    res = build_incremental(root, out)
    assert res.rendered == ["models/acme/Other.yaml"]
    _assert_same_as_full(root, out)


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

    r = runner.invoke(cli, ["build-api", str(out), "--recipes-dir", str(root), "--full"])
    assert r.exit_code == 0
    assert runner.invoke(cli, ["build-api", "--check", str(out), "--recipes-dir", str(root)]).exit_code == 0


def test_cli_feature_mode_error(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat")
    _edit(root / "models/acme/Other.yaml",
          lambda d: d["variants"]["default"].update(default_modes={"nope": "x"}))
    r = CliRunner().invoke(cli, ["build-api", str(tmp_path / "api"), "--recipes-dir", str(root)])
    assert r.exit_code == 1
    assert r.stdout == ""
    assert r.stderr == ("Invalid feature modes in models/acme/Other.yaml:\n"
                        "  - variants.default.default_modes references unknown feature nope\n")
    assert not (tmp_path / "api").exists()


def test_recipe_overwriting_a_static_file(tmp_path: Path) -> None:
    # an org named "strategies": its recipe file lands on strategies/single_node_tp.json, written
    # after the static files (json-api §4 then §5), so the recipe wins; the disk build falls back
    # to the in-memory route for this and must still agree byte for byte
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
        build_incremental(root, docs)
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


def test_background_cleanup_of_old_and_stale_trees(tmp_path: Path) -> None:
    import time

    root = _catalog(tmp_path / "cat")
    out = tmp_path / "api"
    build_full(root, out)
    crashed = tmp_path / ".api.build-crashed"  # left behind by a killed build
    (crashed / "acme").mkdir(parents=True)
    (crashed / "acme" / "x.json").write_text("{}")
    build_full(root, out, background_cleanup=True)
    _assert_same_as_full(root, out)
    deadline = time.monotonic() + 10
    while _leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _leftovers(tmp_path) == []


def test_disk_build_walk_order_matches_the_loader(tmp_path: Path) -> None:
    names = ["alpha/MiniMax-M2.yaml", "alpha/MiniMax-M2.1.yaml", "alpha/MiniMax-M2-Lite.yaml", "alpha/sub/Deep.yml",
             "Zeta/Model.yaml"]
    root = write_dir(tmp_path / "cat", {n: recipe(f"{n.split('/')[0]}/{Path(n).stem}") for n in names})
    out = tmp_path / "api"
    build_full(root, out, jobs=2)
    api, _ = build(root)
    assert _snapshot(out) == api.files
