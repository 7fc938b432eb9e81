"""Hostile recipe directories: nothing is written outside OUT, bad input is skipped with its error,
a damaged cache is discarded, links out of the directory are refused, failed writes leave the old API."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from api_helpers import recipe, write_dir
from click.testing import CliRunner

from vllm_recipes.api import writer
from vllm_recipes.api.build import build_api
from vllm_recipes.api.writer import UnsafePathError, build_lock, list_tree, publish, unsafe_paths, write_tree
from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.validate import validate_catalog
from vllm_recipes.cli import api_cmds, inspect_cmds  # noqa: F401  (registers the commands)
from vllm_recipes.cli.main import cli

#: Every traversal form we know of, as an id taken from a recipe.
TRAVERSALS = [
    "../../../../../../tmp/x/pwned", "../pwned", "..", ".", "/abs/pwned", "a/../../b", "x\\..\\..\\y",
    "%2e%2e/%2e%2e/pwned", "..%2f..%2fpwned", "a\x00b", "C:\\pwned", "~/pwned", "a//b", ".hidden/x",
    "org/../../x", "org/name/../../..", "org/.", "org/..", " org/x", "org/x ", "org/\u202ex", "org/" + "n" * 97,
]


def build_full(root: Path, out: Path, *, jobs: int | None = None) -> Any:
    return publish(root, out, llms=False, jobs=jobs)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p: (root / p).read_bytes() for p in list_tree(root)}


def _outside(work: Path, out: Path) -> set[str]:
    """Files under ``work`` that are neither inputs nor the API or its lock."""
    found = set()
    for d, _, files in os.walk(work):
        for f in files:
            p = Path(d, f)
            if p.is_relative_to(out) or p.is_relative_to(work / "recipes") or p == out.parent / f".{out.name}.lock":
                continue
            found.add(str(p.relative_to(work)))
    return found


def _catalog(work: Path, **recipes: dict[str, Any]) -> Path:
    return write_dir(work / "recipes", {f"{k.replace('__', '/')}.yaml": v for k, v in recipes.items()})


@pytest.mark.parametrize("mid", TRAVERSALS)
def test_traversal_model_id_is_an_error_and_writes_nothing_outside(tmp_path: Path, mid: str) -> None:
    work = tmp_path / "w"
    bad = recipe("acme/Bad", variants={"default": {"precision": "bf16", "vram_minimum_gb": 40},
                                       "evil": {"precision": "bf16", "vram_minimum_gb": 40, "model_id": mid}})
    root = _catalog(work, acme__Bad=bad, acme__Good=recipe("acme/Good"))
    errors = [f for f in validate_catalog(load_catalog(root)) if f.is_error]
    if "/" in mid:  # a model_id without "/" is never promoted (json-api §5.5): it is no path
        assert [(f.file, f.key_path, f.code) for f in errors] == [
            ("models/acme/Bad.yaml", "variants.evil.model_id", "bad-id")]
        assert errors[0].line > 1
    out = work / "pub" / "api"
    res = CliRunner().invoke(cli, ["build-api", str(out), "--recipes-dir", str(root), "-j", "1"])
    assert res.exit_code == 0, res.output
    assert _outside(work, out) == set()
    if errors:
        assert "skipping models/acme/Bad.yaml" in res.stderr and "variants.evil.model_id" in res.stderr
        assert res.stdout.startswith("✓ JSON API: 1 models")
        assert not any(p.startswith("acme/Bad") for p in list_tree(out))
    assert (out / "acme/Good.json").is_file()


@pytest.mark.parametrize("name", ["../../../escaped", "..", "a/b", "x\\y", "Ω", ""])
def test_traversal_strategy_and_hardware_ids(tmp_path: Path, name: str) -> None:
    work = tmp_path / "w"
    root = _catalog(work, acme__Good=recipe("acme/Good"))
    (root / "strategies").mkdir()
    (root / "strategies" / "evil.yaml").write_text(yaml.safe_dump({"name": name, "deploy_type": "single_node"}))
    tax = yaml.safe_load((root / "taxonomy.yaml").read_text())
    tax["hardware_profiles"][name or "."] = dict(tax["hardware_profiles"]["h200"])
    (root / "taxonomy.yaml").write_text(yaml.safe_dump(tax, sort_keys=False))
    findings = [f for f in validate_catalog(load_catalog(root)) if f.code == "bad-id"]
    assert {f.file for f in findings} == {"strategies/evil.yaml", "taxonomy.yaml"}
    out = work / "pub" / "api"
    res = CliRunner().invoke(cli, ["build-api", str(out), "--recipes-dir", str(root), "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "skipping strategies/evil.yaml" in res.stderr and "skipping taxonomy.yaml" in res.stderr
    assert _outside(work, out) == set()
    assert all(".." not in p.split("/") for p in list_tree(out))


def test_recipe_path_id_must_be_safe(tmp_path: Path) -> None:
    work = tmp_path / "w"
    root = _catalog(work, acme__Good=recipe("acme/Good"))
    odd = root / "models" / ".hidden" / "x y.yaml"
    odd.parent.mkdir()
    odd.write_text(yaml.safe_dump(recipe("acme/Odd")))
    errs = [f for f in validate_catalog(load_catalog(root)) if f.is_error]
    assert [(f.file, f.code) for f in errs] == [("models/.hidden/x y.yaml", "bad-id")]  # before ..yaml exists
    assert "the recipe's path gives model id '.hidden/x y'" in errs[0].message
    dots = root / "models" / "acme" / "..yaml"  # gives the id "acme/.": skipped
    dots.write_text(yaml.safe_dump(recipe("acme/Dots")))
    out = work / "api"
    build_full(root, out)
    assert not (out / ".hidden").exists() and (out / "acme/Good.json").exists()


@pytest.mark.parametrize("path", ["../x.json", "a/../../x.json", "/etc/x.json", "a//b.json", "./a.json", "a\\..\\b",
                                  "a\x00b.json", "", "x/" + "n" * 256 + ".json"])
def test_writer_refuses_any_path_leaving_out(tmp_path: Path, path: str) -> None:
    out = tmp_path / "api"
    write_tree({"models.json": b"[]", "a.json": b"old"}, out)
    before = _snapshot(out)
    assert unsafe_paths([path]) == [path]
    with pytest.raises(UnsafePathError, match="nothing was written"):
        write_tree({"models.json": b"[1]", path: b"evil"}, out)
    assert _snapshot(out) == before
    assert sorted(os.listdir(tmp_path)) == ["api"]  # no temporary sibling left


# --- symbolic links -----------------------------------------------------------------------------

def test_links_out_of_the_recipes_dir_are_refused(tmp_path: Path) -> None:
    work = tmp_path / "w"
    root = _catalog(work, acme__Good=recipe("acme/Good"))
    secret = tmp_path / "secret.yaml"
    secret.write_text("aws_secret_access_key: hunter2\nmeta: {}\n")
    os.symlink(secret, root / "models" / "acme" / "Leak.yaml")
    inside = root / "models" / "acme" / "Alias.yaml"
    os.symlink(root / "models" / "acme" / "Good.yaml", inside)  # stays inside: read as before
    catalog = load_catalog(root)
    assert [r.hf_id for r in catalog.recipes] == ["acme/Alias", "acme/Good"]
    findings = validate_catalog(catalog)
    text = "\n".join(f.format() for f in findings)
    assert "aws_secret_access_key" not in text and "hunter2" not in text
    assert [f.file for f in findings if f.is_error] == ["models/acme/Leak.yaml"]
    assert "--follow-symlinks" in text
    res = CliRunner().invoke(cli, ["validate", "--recipes-dir", str(root)])
    assert res.exit_code == 1 and "aws_secret_access_key" not in res.output and "refused" in res.output
    out = work / "api"
    res = CliRunner().invoke(cli, ["build-api", str(out), "--recipes-dir", str(root), "-j", "1"])
    assert res.exit_code == 0 and "skipping models/acme/Leak.yaml" in res.stderr
    assert not (out / "acme/Leak.json").exists()
    res = CliRunner().invoke(cli, ["validate", "--recipes-dir", str(root), "--follow-symlinks"],
                             env={"VLLM_RECIPES_FOLLOW_SYMLINKS": ""})
    assert "refused" not in res.output and "aws_secret_access_key" in res.output  # opted in: read (and judged)
    os.environ.pop("VLLM_RECIPES_FOLLOW_SYMLINKS", None)


def test_linked_static_file_is_refused(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "w", acme__Good=recipe("acme/Good"))
    (root / "strategies").mkdir()
    other = tmp_path / "s.yaml"
    other.write_text("name: single_node_tp\ndeploy_type: single_node\n")
    os.symlink(other, root / "strategies" / "single_node_tp.yaml")
    errs = [f for f in validate_catalog(load_catalog(root)) if f.is_error]
    assert [f.file for f in errs] == ["strategies/single_node_tp.yaml"] and "refused" in errs[0].message


# --- failed destinations and concurrent builds -------------------------------------------------------

@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_full_or_read_only_destination_fails_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     code: int) -> None:
    root = _catalog(tmp_path, acme__Good=recipe("acme/Good"))
    out = tmp_path / "api"
    build_full(root, out)
    before = _snapshot(out)
    (root / "models/acme/Good.yaml").write_text(yaml.safe_dump(recipe("acme/Good", guide="New.")))
    real_open = os.open

    def failing_open(path: Any, flags: int, *a: Any, **kw: Any) -> int:
        if flags & os.O_CREAT and ("/.api.build-" in os.fspath(path) or kw.get("dir_fd") is not None):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(writer.os, "open", failing_open)
    res = CliRunner().invoke(cli, ["build-api", str(out), "--recipes-dir", str(root), "-j", "1"])
    assert res.exit_code == 1, res.output
    assert os.strerror(code) in res.stderr and "previous API is unchanged" in res.stderr
    assert "Traceback" not in res.output
    assert _snapshot(out) == before
    assert [n for n in os.listdir(tmp_path) if n.startswith(".api.build-")] == []


def test_second_build_waits_for_the_first(tmp_path: Path) -> None:
    root = _catalog(tmp_path, acme__Good=recipe("acme/Good"))
    out = tmp_path / "api"
    done: list[str] = []
    with build_lock(out):
        t = threading.Thread(target=lambda: done.append(build_full(root, out, jobs=1).summary))
        t.start()
        time.sleep(0.5)
        assert not out.exists()  # blocked on the lock, wrote nothing
    t.join(60)
    assert len(done) == 1
    assert build_api(load_catalog(root)).files == _snapshot(out)


def test_sigkill_leaves_the_old_or_the_new_tree(tmp_path: Path) -> None:
    """Kill a CLI build at random moments (issue 28 item 8): OUT is always the whole old or new tree,
    llms.txt and llms-full.txt included. A bounded version of tools/fault_harness.py."""
    import random
    import signal
    import subprocess
    import sys

    a = _catalog(tmp_path / "a", acme__Good=recipe("acme/Good"), acme__Other=recipe("acme/Other"))
    b = _catalog(tmp_path / "b", acme__Good=recipe("acme/Good", guide="New."), acme__Third=recipe("acme/Third"))
    publish(a, tmp_path / "old")
    publish(b, tmp_path / "new")
    old, new = _snapshot(tmp_path / "old"), _snapshot(tmp_path / "new")
    assert old != new and {"llms.txt", "llms-full.txt"} <= set(old) & set(new)
    out = tmp_path / "api"
    cli_args = [sys.executable, "-m", "vllm_recipes", "build-api", str(out), "-j", "1", "--recipes-dir"]
    t = time.perf_counter()
    subprocess.run([*cli_args, str(b)], check=True, capture_output=True)
    duration = time.perf_counter() - t
    rng = random.Random(28)
    for trial in range(6):
        subprocess.run([*cli_args, str(a)], check=True, capture_output=True)
        proc = subprocess.Popen([*cli_args, str(b)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # the last third of a build is writing and swapping: aim half of the kills there
        time.sleep(rng.uniform(0.2, duration) if trial % 2 else rng.uniform(duration * 0.66, duration * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _snapshot(out) in (old, new)
        subprocess.run([*cli_args, str(b)], check=True, capture_output=True)
        assert _snapshot(out) == new


@pytest.mark.parametrize(("keys", "skipped"), [
    ({"compatible_strategies": [1, 2.5, True, {"a": 1}, ["x"], "single_node_tp"]}, True),
    ({"hardware_overrides": {1: {"extra_args": ["--x"]}, "h200": {}}}, True),
    ({"strategy_overrides": ["not", "a", "mapping"]}, True),
    ({"strategy_overrides": {"single_node_tp": "text"}}, True),
    ({"zz_extra": {1: "a", 2.5: "b", None: "c"}}, True),  # non-string keys: not data, a load error (skipped)
    ({"variants": {"default": {"precision": "bf16", "vram_minimum_gb": 2 ** 70}}}, False),
    ({"variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40, "description": 2 ** 70}}}, False),  # display-only
])
def test_crash_classes_are_skipped_or_built(tmp_path: Path, keys: dict[str, Any], skipped: bool) -> None:
    """The mutation classes that used to crash build-api: skipped with their error, or built cleanly."""
    root = _catalog(tmp_path, acme__Odd=recipe("acme/Odd", **keys), acme__Good=recipe("acme/Good"))
    out = tmp_path / "api"
    res = CliRunner().invoke(cli, ["build-api", str(out), "--recipes-dir", str(root), "-j", "1"])
    assert res.exit_code == 0 and res.exception is None, res.output
    assert ("skipping models/acme/Odd.yaml" in res.stderr) is skipped
    assert (out / "acme/Odd.json").exists() is not skipped and (out / "acme/Good.json").exists()


@pytest.mark.parametrize("nodes", [2 ** 70, 10 ** 9, 1e308, {"h200": 10 ** 9}])
def test_huge_pd_pools_are_an_error_not_a_hang(tmp_path: Path, nodes: Any) -> None:
    so = {"pd_cluster": {"prefill": {"nodes": nodes}}}
    root = _catalog(tmp_path, acme__Big=recipe("acme/Big", compatible_strategies=["single_node_tp", "pd_cluster"],
                                                 strategy_overrides=so))
    errs = [f for f in validate_catalog(load_catalog(root)) if f.is_error]
    assert [f.code for f in errs] == ["too-many-nodes"] and "over the limit of 1024" in errs[0].message
    api = build_api(load_catalog(root), jobs=1)
    assert "acme/Big.json" not in api.files
