"""The parse cache: content-addressed, never stale, never trusted with code, always optional."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog, parsecache
from vllm_recipes.catalog.parsecache import ENV_CACHE_DIR, cache_dir
from vllm_recipes.catalog.usable import usable_catalog
from vllm_recipes.catalog.validate import validate_catalog
from vllm_recipes.catalog.yamlsource import parse_yaml

REL = "models/acme/Tiny.yaml"
TEXT = """\
meta:
  title: Tiny
model:
  model_id: acme/Tiny
variants:
  default:
    precision: bf16
    vram_minimum_gb: 10
    extra_args: [--max-model-len, "4096"]
compatible_strategies: [single_node_tp]
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(ENV_CACHE_DIR, str(folder))
    return folder


def _catalog(tmp_path: Path, text: str = TEXT) -> Path:
    root = tmp_path / "recipes"
    path = root / REL
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return root


def _pack(folder: Path) -> Path:
    """The pack of the recipes directory (the bundled base layer has its own)."""
    bundled = parsecache.pack_path(BUNDLED_DIR)
    (pack,) = (p for p in folder.glob("parsed-*.pickle") if bundled is None or p.name != bundled.name)
    return pack


def test_second_load_reads_the_pack_and_gives_equal_data(tmp_path: Path, cache: Path) -> None:
    root = _catalog(tmp_path)
    first = load_catalog(root)
    stamp = _pack(cache).stat().st_mtime_ns
    second = load_catalog(root)
    assert _pack(cache).stat().st_mtime_ns == stamp  # nothing new: not rewritten
    assert second.recipes[0].data == first.recipes[0].data
    assert second.recipes[0].data == parse_yaml(TEXT, REL).data


def test_positions_come_from_the_text_even_on_a_hit(tmp_path: Path, cache: Path) -> None:
    root = _catalog(tmp_path)
    load_catalog(root)
    doc = load_catalog(root).recipes[0].doc
    assert doc.position(("variants", "default", "extra_args", 1)).line == 9
    assert dict(doc.positions) == dict(parse_yaml(TEXT, REL).positions)


def test_an_edited_file_is_parsed_again(tmp_path: Path, cache: Path) -> None:
    root = _catalog(tmp_path)
    load_catalog(root)
    (root / REL).write_text(TEXT.replace("Tiny\n", "Tiny Two\n", 1), encoding="utf-8")
    assert load_catalog(root).recipes[0].title == "Tiny Two"


def test_the_pack_holds_only_what_the_last_load_read(tmp_path: Path, cache: Path) -> None:
    root = _catalog(tmp_path)
    load_catalog(root)
    (root / REL).write_text(TEXT.replace("4096", "8192"), encoding="utf-8")
    load_catalog(root)
    got = pickle.loads(_pack(cache).read_bytes())
    texts = [pickle.dumps(v) for v in got["payload"].values()]
    assert not any(b"4096" in t for t in texts) and any(b"8192" in t for t in texts)


class _Boom:
    def __reduce__(self) -> tuple:
        return (os.system, ("touch PWNED",))


def test_a_tampered_pack_runs_no_code_and_is_ignored(tmp_path: Path, cache: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path)
    load_catalog(root)
    pack = _pack(cache)
    salt = pickle.loads(pack.read_bytes())["salt"]
    pack.write_bytes(pickle.dumps({"salt": salt, "payload": {"x": _Boom()}}))
    monkeypatch.chdir(tmp_path)
    assert load_catalog(root).recipes[0].title == "Tiny"
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("garbage", [b"", b"not a pickle", b"\x80\x05K\x01.", pickle.dumps({"salt": b"old"})])
def test_a_damaged_or_foreign_pack_is_ignored_and_replaced(tmp_path: Path, cache: Path, garbage: bytes) -> None:
    root = _catalog(tmp_path)
    load_catalog(root)
    _pack(cache).write_bytes(garbage)
    assert load_catalog(root).recipes[0].title == "Tiny"
    assert pickle.loads(_pack(cache).read_bytes())["payload"]


def test_an_unwritable_cache_costs_only_the_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(ENV_CACHE_DIR, str(blocker / "sub"))  # a file where a directory must be
    root = _catalog(tmp_path)
    assert load_catalog(root).recipes[0].title == "Tiny"


@pytest.mark.parametrize("value", ["off", "", "0", "None"])
def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ENV_CACHE_DIR, value)
    assert cache_dir() is None
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    load_catalog(_catalog(tmp_path))
    assert not (tmp_path / "home").exists()


def test_default_location_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_CACHE_DIR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "vllm-recipes"


def test_findings_of_a_cached_file_keep_their_lines(tmp_path: Path, cache: Path) -> None:
    bad = TEXT.replace("precision: bf16", "precision: bf16\n    bogus_key: 1")
    root = _catalog(tmp_path, bad)
    cold = [(f.code, f.line, f.key_path) for f in validate_catalog(load_catalog(root))]
    warm = [(f.code, f.line, f.key_path) for f in validate_catalog(load_catalog(root))]
    assert cold == warm and any(line == 8 for _c, line, _k in cold)


def test_duplicate_keys_are_found_from_the_text(tmp_path: Path, cache: Path) -> None:
    root = _catalog(tmp_path, TEXT + "compatible_strategies: [single_node_tp]\n")
    load_catalog(root)
    doc = load_catalog(root).recipes[0].doc
    assert [(p, pos.line) for p, pos in doc.duplicate_keys] == [(("compatible_strategies",), 11)]


def test_a_recipe_with_errors_is_skipped_and_reported_on_every_start(tmp_path: Path, cache: Path) -> None:
    root = _catalog(tmp_path, TEXT + "compatible_strategies: [single_node_tp]\n")  # duplicate key: an error
    for _ in range(2):
        kept, findings = usable_catalog(load_catalog(root))
        assert not kept.recipes and [f.code for f in findings] == ["duplicate-key"]


def test_documents_are_immutable(tmp_path: Path, cache: Path) -> None:
    doc = load_catalog(_catalog(tmp_path)).recipes[0].doc
    with pytest.raises(AttributeError):
        doc.data = {}  # type: ignore[misc]


def test_a_cache_directory_others_can_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(ENV_CACHE_DIR, str(shared))
    root = _catalog(tmp_path)
    assert load_catalog(root).recipes[0].title == "Tiny"
    assert not list(shared.iterdir())  # nothing written where others could plant data


def test_a_pack_others_can_write_is_ignored(tmp_path: Path, cache: Path) -> None:
    root = _catalog(tmp_path)
    load_catalog(root)
    pack = _pack(cache)
    got = pickle.loads(pack.read_bytes())
    planted = {k: (v[0], v[1]) for k, v in got["payload"].items()}
    for k, (data, dups) in planted.items():
        planted[k] = (type(data)({**data, "meta": type(data)({"title": "Planted"})}), dups)
    blob = pickle.dumps({"salt": got["salt"], "payload": planted})
    pack.write_bytes(blob)
    pack.chmod(0o666)
    assert load_catalog(root).recipes[0].title == "Tiny"  # ignored (and replaced by a private pack)
    assert pack.stat().st_mode & 0o077 == 0
    pack.write_bytes(blob)  # the same bytes in a private pack are trusted: only the mode differed
    assert load_catalog(root).recipes[0].title == "Planted"


def test_cache_command_lists_and_clears_only_our_files(tmp_path: Path, cache: Path) -> None:
    from click.testing import CliRunner

    from vllm_recipes.cli.main import cli

    load_catalog(_catalog(tmp_path))
    (cache / "notes.txt").write_text("the user's own file")
    runner = CliRunner()
    shown = json.loads(runner.invoke(cli, ["cache", "--json"]).output)
    assert shown["enabled"] and shown["directory"] == str(cache) and shown["files"] == 2 and shown["bytes"] > 0
    cleared = runner.invoke(cli, ["cache", "--clear"])
    assert cleared.exit_code == 0 and "removed 2 file" in cleared.output
    assert [p.name for p in cache.iterdir()] == ["notes.txt"]
    assert load_catalog(_catalog(tmp_path)).recipes[0].title == "Tiny"  # and the next load refills it
