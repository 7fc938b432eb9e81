"""The parse cache: content-addressed, never stale, never trusted with code, always optional."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import threading
import time
from pathlib import Path

import pytest

from vllm_recipes.catalog import forkmap, load_catalog, loader, parsecache, usable
from vllm_recipes.catalog.parsecache import ENV_CACHE_DIR, ParseCache, cache_dir
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


def _pack(folder: Path, kind: str = "parsed") -> Path:
    (pack,) = folder.glob(f"{kind}-*.pickle")
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
    cold = [(f.code, f.line, f.key_path) for f in validate_catalog(load_catalog(root), include_registered=False)]
    warm = [(f.code, f.line, f.key_path) for f in validate_catalog(load_catalog(root), include_registered=False)]
    assert cold == warm and any(line == 8 for _c, line, _k in cold)


def test_duplicate_keys_are_found_from_the_text(tmp_path: Path, cache: Path) -> None:
    root = _catalog(tmp_path, TEXT + "compatible_strategies: [single_node_tp]\n")
    load_catalog(root)
    doc = load_catalog(root).recipes[0].doc
    assert [(p, pos.line) for p, pos in doc.duplicate_keys] == [(("compatible_strategies",), 11)]


def test_parse_cache_without_a_root_never_touches_disk(tmp_path: Path, cache: Path) -> None:
    pc = ParseCache(None)
    assert pc.parse(TEXT.encode(), file=REL).data == parse_yaml(TEXT, REL).data
    pc.save()
    assert not cache.exists()


def _count_validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = usable.recipe_errors

    def counting(catalog, recipe, ignore=()):  # type: ignore[no-untyped-def]
        seen.append(recipe.rel_path)
        return real(catalog, recipe, ignore)

    monkeypatch.setattr(usable, "recipe_errors", counting)
    return seen


def test_a_clean_verdict_spares_the_next_start_its_validation(tmp_path: Path, cache: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path)
    seen = _count_validations(monkeypatch)
    assert len(usable_catalog(load_catalog(root))[0].recipes) == 1
    assert len(usable_catalog(load_catalog(root))[0].recipes) == 1
    assert seen == [REL]  # validated once; the second start trusted the remembered verdict


def test_a_changed_taxonomy_or_recipe_is_validated_again(tmp_path: Path, cache: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path)
    seen = _count_validations(monkeypatch)
    usable_catalog(load_catalog(root))
    (root / "taxonomy.yaml").write_text("hardware_profiles: {}\n", encoding="utf-8")
    usable_catalog(load_catalog(root))
    (root / REL).write_text(TEXT.replace("4096", "8192"), encoding="utf-8")
    usable_catalog(load_catalog(root))
    assert seen == [REL, REL, REL]


def test_a_recipe_with_errors_is_skipped_and_reported_on_every_start(tmp_path: Path, cache: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = _catalog(tmp_path, TEXT + "compatible_strategies: [single_node_tp]\n")  # duplicate key: an error
    seen = _count_validations(monkeypatch)
    for _ in range(2):
        kept, findings = usable_catalog(load_catalog(root))
        assert not kept.recipes and [f.code for f in findings] == ["duplicate-key"]
    assert seen == [REL, REL]


def test_documents_survive_pickling_with_lazy_positions(tmp_path: Path, cache: Path) -> None:
    doc = load_catalog(_catalog(tmp_path)).recipes[0].doc
    back = pickle.loads(pickle.dumps(doc))
    assert (back.file, back.data, back.digest) == (doc.file, doc.data, doc.digest)
    assert back.position(("variants", "default", "extra_args", 1)).line == 9
    with pytest.raises(AttributeError):
        back.data = {}  # type: ignore[misc]


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
    assert shown["enabled"] and shown["directory"] == str(cache) and shown["files"] == 1 and shown["bytes"] > 0
    cleared = runner.invoke(cli, ["cache", "--clear"])
    assert cleared.exit_code == 0 and "removed 1 file" in cleared.output
    assert [p.name for p in cache.iterdir()] == ["notes.txt"]
    assert load_catalog(_catalog(tmp_path)).recipes[0].title == "Tiny"  # and the next load refills it


def _big_catalog(tmp_path: Path, copies: int = 12) -> Path:
    """The bundled recipes copied under new names: over a megabyte of YAML, one broken file among them."""
    from vllm_recipes.catalog.loader import BUNDLED_DIR

    root = tmp_path / "big"
    shutil.copytree(BUNDLED_DIR, root, ignore=shutil.ignore_patterns("models"))
    sources = sorted((Path(BUNDLED_DIR) / "models").rglob("*.yaml"))
    for i in range(copies):
        for src in sources:
            dest = root / "models" / f"org{i:02d}" / src.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
    (root / "models" / "org00" / "Broken.yaml").write_text("a: [1,\n", encoding="utf-8")
    return root


def _single_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    # the suite may run a server thread elsewhere in this process; the child below only parses
    monkeypatch.setattr(forkmap, "can_fork", lambda: True)


def test_a_large_first_load_parses_in_two_processes_with_the_same_result(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_catalog(tmp_path)
    monkeypatch.setenv(ENV_CACHE_DIR, "off")
    serial = load_catalog(root)
    monkeypatch.setenv(ENV_CACHE_DIR, str(cache))
    _single_threaded(monkeypatch)
    calls: list[bool] = []
    real = parsecache.parse_in_parallel
    monkeypatch.setattr(loader, "parse_in_parallel", lambda c, p, m, t: calls.append(real(c, p, m, t)) or calls[-1])
    parallel = load_catalog(root, parallel=True)
    assert calls == [True]  # it did fork
    assert [r.data for r in parallel.recipes] == [r.data for r in serial.recipes]
    assert [str(e) for e in parallel.load_errors] == [str(e) for e in serial.load_errors]
    assert "Broken.yaml:2:1" in str(parallel.load_errors[0])  # the broken file is reported by the load
    # everything was remembered: a second parallel load forks nothing
    cache_now = parsecache.ParseCache(root)
    assert parsecache.parse_in_parallel(cache_now, [(p, p.name) for p in root.rglob("models/*/*.yaml")]) is False


def _model_paths(root: Path) -> list[tuple[Path, str]]:
    return [(p, f"models/{p.parent.name}/{p.name}") for p in sorted(root.rglob("models/*/*.yaml"))]


def test_the_child_takes_a_share_while_meanwhile_runs(tmp_path: Path, cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_catalog(tmp_path)
    _single_threaded(monkeypatch)
    parent, here = os.getpid(), []
    real = parsecache._entry

    def counted(raw: bytes, file: str, key: str) -> object:
        if os.getpid() == parent:
            here.append(file)
        return real(raw, file, key)

    monkeypatch.setattr(parsecache, "_entry", counted)
    ran: list[int] = []
    cache_obj = parsecache.ParseCache(root)
    paths = _model_paths(root)
    assert parsecache.parse_in_parallel(cache_obj, paths, lambda: ran.append(time.sleep(0.3) or 1)) is True
    assert ran == [1]
    assert len(here) < len(paths)  # the child's frames were taken: this process did not parse everything
    left = cache_obj.missing([(p.read_bytes(), d) for p, d in paths])
    assert [d for _raw, d, _key in left] == ["models/org00/Broken.yaml"]


def test_a_failing_child_leaves_its_share_to_this_process(tmp_path: Path, cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_catalog(tmp_path)
    _single_threaded(monkeypatch)
    monkeypatch.setattr(forkmap, "_child", lambda fn, items, fd: os._exit(3))
    cache_obj = parsecache.ParseCache(root)
    paths = _model_paths(root)
    assert parsecache.parse_in_parallel(cache_obj, paths) is True
    left = cache_obj.missing([(p.read_bytes(), d) for p, d in paths])
    assert [d for _raw, d, _key in left] == ["models/org00/Broken.yaml"]
    got = load_catalog(root, parallel=True)
    monkeypatch.setenv(ENV_CACHE_DIR, "off")
    assert [r.data for r in got.recipes] == [r.data for r in load_catalog(root).recipes]


def test_no_fork_from_a_threaded_process_or_for_little_yaml(tmp_path: Path, cache: Path) -> None:
    root = _big_catalog(tmp_path, copies=1)
    ran: list[int] = []
    paths = [(p, p.name) for p in root.rglob("models/*/*.yaml")]
    assert parsecache.parse_in_parallel(parsecache.ParseCache(root), paths, lambda: ran.append(1)) is False
    assert ran == []  # ~100 KB: no child, so nothing to do meanwhile (the caller does it when it needs it)
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        big = _big_catalog(tmp_path / "b")
        paths = [(p, p.name) for p in big.rglob("models/*/*.yaml")]
        assert parsecache.parse_in_parallel(parsecache.ParseCache(big), paths) is False
    finally:
        stop.set()
        worker.join()


def test_a_first_start_validates_on_two_cores_with_the_same_verdicts(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_catalog(tmp_path)
    bad = root / "models" / "org03" / "Bad.yaml"
    bad.write_text(TEXT.replace("[single_node_tp]", "[no_such_strategy]"), encoding="utf-8")
    _single_threaded(monkeypatch)
    forks: list[object] = []
    real = usable.forked_map
    monkeypatch.setattr(usable, "forked_map", lambda fn, items: forks.append(got := real(fn, items)) or got)
    fast, fast_findings = usable_catalog(load_catalog(root), parallel=True)
    assert forks and forks[0] is not None  # it did fork
    assert all(got is not forkmap.MISSING for got in forks[0])  # and every verdict came from the two processes
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path / "other-cache"))  # no verdicts remembered
    slow, slow_findings = usable_catalog(load_catalog(root))
    assert [f.format() for f in fast_findings] == [f.format() for f in slow_findings]
    assert any("Bad.yaml" in f.format() for f in fast_findings)
    assert [r.rel_path for r in fast.recipes] == [r.rel_path for r in slow.recipes]
    assert "models/org03/Bad.yaml" not in {r.rel_path for r in fast.recipes}


def test_in_background_returns_at_once_and_its_work_is_there_once_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _single_threaded(monkeypatch)
    go, out = tmp_path / "go", tmp_path / "out"

    def work() -> None:  # finishes only once the caller has gone on (or gives up after 20 s)
        for _ in range(2000):
            if go.exists():
                out.write_text(f"went {os.getpid()}")
                return
            time.sleep(0.01)
        out.write_text("the caller waited for me")

    assert forkmap.in_background(work) is True
    go.touch()
    forkmap.wait_background()
    text = out.read_text()
    assert text.startswith("went ") and int(text.split()[1]) != os.getpid()  # in a child, not waited for
    monkeypatch.setattr(forkmap, "can_fork", lambda: False)
    assert forkmap.in_background(lambda: out.write_text("ran")) is False  # nothing runs: the caller does it
    assert out.read_text() != "ran"


def test_a_parallel_load_writes_its_pack_behind_and_the_next_load_reads_it(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_catalog(tmp_path)
    _single_threaded(monkeypatch)
    writers = tmp_path / "writers"
    real = parsecache._write_pack

    def recorded(pack: Path, payload: object) -> None:
        with writers.open("a") as fh:
            fh.write(f"{pack.name.split('-')[0]} {os.getpid()}\n")
        real(pack, payload)

    monkeypatch.setattr(parsecache, "_write_pack", recorded)
    first = load_catalog(root, parallel=True)
    cache_now = parsecache.ParseCache(root)  # (waits for the pack being written)
    lines = writers.read_text().split()
    assert lines[0] == "parsed" and int(lines[1]) != os.getpid()  # written by a child
    assert cache_now.missing([(p.read_bytes(), d) for p, d in _model_paths(root)]) == [
        *cache_now.missing([(p.read_bytes(), d) for p, d in _model_paths(root) if "Broken" in d])]
    writers.unlink()
    (root / "models" / "org00" / "Extra.yaml").write_text(TEXT, encoding="utf-8")
    again = load_catalog(root)  # an ordinary load writes in this process
    assert writers.read_text().split() == ["parsed", str(os.getpid())]
    assert [r.data for r in again.recipes if r.rel_path != "models/org00/Extra.yaml"] == [
        r.data for r in first.recipes]


def test_a_first_start_validates_each_recipe_as_its_parse_arrives_with_the_same_verdicts(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from vllm_recipes.catalog.yamlsource import FrozenDict

    root = _big_catalog(tmp_path)
    (root / "models" / "org03" / "Bad.yaml").write_text(TEXT.replace("[single_node_tp]", "[no_such_strategy]"),
                                                        encoding="utf-8")
    _single_threaded(monkeypatch)
    early_load = load_catalog(root, parallel=True, prevalidate=True)
    kept = early_load.memo[usable.EarlyErrors.KEY]
    static, early = kept.static, kept.errors
    assert static.taxonomy is early_load.taxonomy
    assert {rel for rel, _digest in early} == {r.rel_path for r in early_load.recipes}  # every recipe, once
    later: list[str] = []
    real = usable.recipe_errors
    monkeypatch.setattr(usable, "recipe_errors", lambda c, r, *a: later.append(r.rel_path) or real(c, r, *a))
    fast, fast_findings = usable_catalog(early_load, parallel=True)
    assert later == []  # nothing left to validate
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path / "other-cache"))  # no verdicts remembered
    slow, slow_findings = usable_catalog(load_catalog(root))
    assert len(later) == len(slow.recipes) + 1  # (the usual way: each recipe validated once more)
    assert [f.format() for f in fast_findings] == [f.format() for f in slow_findings]
    assert any("Bad.yaml" in f.format() for f in fast_findings)
    assert [r.rel_path for r in fast.recipes] == [r.rel_path for r in slow.recipes]
    # a catalog made from it with other hardware profiles shares the memo, not the early verdicts
    other = dataclasses.replace(early_load, taxonomy=FrozenDict({**early_load.taxonomy, "hardware_profiles": {}}))
    assert other.memo is early_load.memo and usable.EarlyErrors.found_for(other, other.recipes) == {}
    assert usable.EarlyErrors.found_for(early_load, early_load.recipes) == {rel: e for (rel, _d), e in early.items()}


def test_a_parallel_first_load_reads_and_hashes_each_file_once(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_catalog(tmp_path)
    _single_threaded(monkeypatch)
    reads: list[str] = []
    hashed: list[bytes] = []
    real_read, real_digest = parsecache.read_raw, parsecache._digest
    monkeypatch.setattr(parsecache, "read_raw", lambda path, name: reads.append(name) or real_read(path, name))
    monkeypatch.setattr(parsecache, "_digest", lambda raw: hashed.append(raw) or real_digest(raw))
    got = load_catalog(root, parallel=True)
    models = [r for r in reads if r.startswith("models/")]
    assert sorted(models) == sorted(set(models)) and len(models) == len(_model_paths(root))
    assert len(hashed) == len(reads)  # each file read is hashed once
    monkeypatch.setenv(ENV_CACHE_DIR, "off")
    assert [r.data for r in got.recipes] == [r.data for r in load_catalog(root).recipes]


def test_an_early_validation_that_fails_leaves_the_recipe_to_usable_catalog(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _big_catalog(tmp_path)
    _single_threaded(monkeypatch)
    victim = _model_paths(root)[3][1]
    real = usable.recipe_errors

    def flaky(catalog: object, recipe: object, *rest: object) -> object:
        if not catalog.recipes and recipe.rel_path == victim:  # type: ignore[attr-defined]
            raise RuntimeError("boom")  # only while the load validates early
        return real(catalog, recipe, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(usable, "recipe_errors", flaky)
    got = load_catalog(root, parallel=True, prevalidate=True)
    early = got.memo[usable.EarlyErrors.KEY].errors
    assert victim not in {rel for rel, _digest in early} and len(early) == len(got.recipes) - 1
    fast, fast_findings = usable_catalog(got, parallel=True)
    monkeypatch.setenv(ENV_CACHE_DIR, str(tmp_path / "other-cache"))
    slow, slow_findings = usable_catalog(load_catalog(root))
    assert [r.rel_path for r in fast.recipes] == [r.rel_path for r in slow.recipes]
    assert [f.format() for f in fast_findings] == [f.format() for f in slow_findings]
