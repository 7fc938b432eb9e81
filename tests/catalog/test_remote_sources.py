"""Remote recipe sources: local git repositories (git+file://) and a local HTTP server with a .tar.gz, then offline."""

from __future__ import annotations

import functools
import http.server
import io
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from validate_helpers import GOOD

from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.parsecache import ENV_CACHE_DIR
from vllm_recipes.catalog.remote import SourceError, local_copy, parse_source
from vllm_recipes.cli.main import cli

OTHER = GOOD.replace("org/Test", "org/Other").replace("Test Model", "Other Model")


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(ENV_CACHE_DIR, str(folder))
    return folder


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _repo(root: Path) -> Path:
    (root / "models" / "org").mkdir(parents=True)
    (root / "models" / "org" / "Test.yaml").write_text(GOOD, encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "one recipe")
    return root


def _ids(*argv: str) -> list[str]:
    got = CliRunner().invoke(cli, ["list", "--json", *argv])
    assert got.exit_code == 0, got.output
    import json

    return [row["hf_id"] for row in json.loads(got.stdout)]


def test_a_git_repository_lists_its_recipes_and_again_offline(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    spec = f"git+file://{repo}"
    assert _ids("--recipes-dir", spec) == ["org/Test"]
    first = _git(repo, "rev-parse", "HEAD")
    cat = load_catalog(spec)
    assert cat.layers[-1] == f"{spec}@{first[:12]}" and cat.recipes[0].source == cat.layers[-1]
    gone = repo.rename(tmp_path / "moved")  # the network is gone
    assert _ids("--recipes-dir", spec) == ["org/Test"]  # read from the cache
    pulled = CliRunner().invoke(cli, ["catalog", "pull", spec])
    assert pulled.exit_code == 0 and "using the cached copy" in pulled.stderr and spec in pulled.stderr
    gone.rename(repo)


def test_a_ref_and_pull_follow_new_commits(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    _git(repo, "tag", "v1")
    (repo / "models" / "org" / "Other.yaml").write_text(OTHER, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    spec = f"git+file://{repo}"
    assert _ids("--recipes-dir", f"{spec}@v1") == ["org/Test"]
    assert _ids("--recipes-dir", f"{spec}@main") == ["org/Other", "org/Test"]
    (repo / "models" / "org" / "Other.yaml").unlink()
    _git(repo, "commit", "-qam", "three")
    assert _ids("--recipes-dir", f"{spec}@main") == ["org/Other", "org/Test"]  # the cached commit, until a pull
    assert CliRunner().invoke(cli, ["catalog", "pull", f"{spec}@main"]).exit_code == 0
    assert _ids("--recipes-dir", f"{spec}@main") == ["org/Test"]
    listed = CliRunner().invoke(cli, ["catalog", "list"])
    assert listed.exit_code == 0 and "v1" in listed.output and "main" in listed.output


def test_an_unreachable_source_without_a_cache_is_one_line_exit_2(tmp_path: Path) -> None:
    spec = f"git+file://{tmp_path / 'nowhere'}"
    got = CliRunner().invoke(cli, ["list", "--recipes-dir", spec])
    assert got.exit_code == 2
    assert got.stderr.count("\n") == 1 and spec in got.stderr and "no cached copy" in got.stderr


def _tarball(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tf.addfile(info)
    return buf.getvalue()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str, http.server.ThreadingHTTPServer]]:
    """A local HTTP server over ``www/`` (the test writes archives there)."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{server.server_address[1]}", server
    server.shutdown()
    server.server_close()


def test_a_tar_gz_over_http_lists_its_recipes_and_again_offline(served) -> None:  # type: ignore[no-untyped-def]
    www, base, server = served
    (www / "recipes-main.tar.gz").write_bytes(_tarball({
        "recipes-main/models/org/Test.yaml": GOOD.encode(),
        "recipes-main/models/org/Other.yaml": OTHER.encode(),
        "recipes-main/taxonomy.yaml": b"hardware_profiles:\n  h200:\n    display_name: Public H200\n",
    }, links={"recipes-main/models/org/Link.yaml": "/etc/passwd"}))
    spec = f"{base}/recipes-main.tar.gz"
    assert _ids("--recipes-dir", spec) == ["org/Other", "org/Test"]  # one top-level folder; the link left out
    cat = load_catalog(spec)
    assert cat.hardware_profiles["h200"]["display_name"] == "Public H200"
    assert cat.hardware_profiles["h200"]["device_resource"] == "nvidia.com/gpu"
    server.shutdown()
    assert _ids("--recipes-dir", spec) == ["org/Other", "org/Test"]  # offline: the cache


@pytest.mark.parametrize(("name", "words"), [("../evil.yaml", "outside"), ("/abs/evil.yaml", "outside")])
def test_an_archive_entry_that_escapes_is_refused(served, name: str, words: str) -> None:  # type: ignore[no-untyped-def]
    www, base, _server = served
    (www / "bad.tar.gz").write_bytes(_tarball({name: b"x: 1\n", "models/org/Test.yaml": GOOD.encode()}))
    with pytest.raises(SourceError) as got:
        local_copy(f"{base}/bad.tar.gz")
    assert words in str(got.value) and "bad.tar.gz" in str(got.value)


def test_a_missing_archive_is_one_line_naming_it(served) -> None:  # type: ignore[no-untyped-def]
    _www, base, _server = served
    got = CliRunner().invoke(cli, ["list", "--recipes-dir", f"{base}/none.tar.gz"])
    assert got.exit_code == 2 and "none.tar.gz: HTTP 404" in got.stderr and "no cached copy" in got.stderr


def test_a_private_source_over_a_fetched_one(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    mine = tmp_path / "mine"
    shutil.copytree(repo / "models", mine / "models")
    (mine / "models" / "org" / "Test.yaml").write_text(GOOD.replace("Test Model", "Ours"), encoding="utf-8")
    (mine / "models" / "acme").mkdir()
    (mine / "models" / "acme" / "New.yaml").write_text(GOOD.replace("org/Test", "acme/New"), encoding="utf-8")
    cat = load_catalog([f"git+file://{repo}", str(mine)])
    test = cat.recipe("org/Test")
    assert test is not None and test.title == "Ours" and cat.recipe("acme/New") is not None


def test_source_specs() -> None:
    gh = parse_source("github:vllm-project/recipes@v2")
    assert (gh.kind, gh.url, gh.ref, gh.name) == ("git", "https://github.com/vllm-project/recipes.git", "v2",
                                                  "github:vllm-project/recipes")
    ssh = parse_source("git+ssh://git@example.com/org/repo.git@main")
    assert (ssh.url, ssh.ref) == ("ssh://git@example.com/org/repo.git", "main")
    assert parse_source("https://example.com/a/b.tar.gz").kind == "archive"
    with pytest.raises(SourceError):
        parse_source("github:not a repo")


def test_a_ref_may_contain_slashes() -> None:
    """Branch names like ``release/v2`` are common; the ref is everything after the ``@`` that follows the host."""
    git = parse_source("git+https://example.com/org/repo.git@release/v2")
    assert (git.url, git.ref) == ("https://example.com/org/repo.git", "release/v2")
    ssh = parse_source("git+ssh://git@example.com/org/repo.git@feature/x/y")
    assert (ssh.url, ssh.ref) == ("ssh://git@example.com/org/repo.git", "feature/x/y")
    local = parse_source("git+file:///srv/repos/recipes@users/me/try")
    assert (local.url, local.ref) == ("file:///srv/repos/recipes", "users/me/try")
    assert parse_source("github:org/repo@release/v2").ref == "release/v2"
    assert parse_source("git+https://example.com/org/repo.git").ref is None


def test_a_branch_with_a_slash_is_fetched(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    _git(repo, "checkout", "-q", "-b", "release/v2")
    (repo / "models" / "org" / "Other.yaml").write_text(OTHER, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    _git(repo, "checkout", "-q", "main")
    assert _ids("--recipes-dir", f"git+file://{repo}@release/v2") == ["org/Other", "org/Test"]
    assert _ids("--recipes-dir", f"git+file://{repo}@main") == ["org/Test"]


def test_cache_clear_removes_fetched_sources_too(tmp_path: Path, cache: Path) -> None:
    repo = _repo(tmp_path / "repo")
    assert _ids("--recipes-dir", f"git+file://{repo}") == ["org/Test"]
    assert any((cache / "sources").iterdir())
    got = CliRunner().invoke(cli, ["cache", "--clear", "--json"])
    assert got.exit_code == 0, got.output
    import json

    assert json.loads(got.stdout)["removed_sources"] == 1
    assert not (cache / "sources").exists() or not any((cache / "sources").iterdir())
    listed = CliRunner().invoke(cli, ["catalog", "list", "--json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []
