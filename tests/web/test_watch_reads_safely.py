"""``serve --watch`` (and every load) reads the file it checked, not whatever the path names later.

Issue 28 item 7: the loader checked a recipe path for a link out of the recipes
directory, then read the path again later; a file swapped for such a link in
between was served. The check is now made on the opened file descriptor, so the
race is modelled here by swapping the file right after the directory walk.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from vllm_recipes.catalog import load_catalog, loader
from vllm_recipes.catalog.yamlsource import YamlLoadError, read_raw

SECRET = "aws_secret_access_key: hunter2\n"


def _recipe(model_id: str) -> str:
    return yaml.safe_dump({"meta": {"title": "T", "provider": "p", "date_added": "2026-01-01", "tasks": ["text"]},
                           "model": {"model_id": model_id, "min_vllm_version": "0.10.0"},
                           "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40}},
                           "compatible_strategies": ["single_node_tp"]})


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "recipes"
    (root / "models" / "acme").mkdir(parents=True)
    (root / "models" / "acme" / "Good.yaml").write_text(_recipe("acme/Good"))
    secret = tmp_path / "secret.yaml"
    secret.write_text(SECRET)
    return root, secret


def test_a_file_swapped_for_an_outside_link_after_the_walk_is_refused(
        tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, secret = tree
    target = root / "models" / "acme" / "Good.yaml"
    real_walk = loader.walk_models

    def walk_then_swap(*args: object, **kwargs: object) -> object:
        paths = list(real_walk(*args, **kwargs))  # type: ignore[arg-type]
        target.unlink()  # the race: after the check, before the read
        os.symlink(secret, target)
        return iter(paths)

    monkeypatch.setattr(loader, "walk_models", walk_then_swap)
    monkeypatch.setenv("VLLM_RECIPES_CACHE_DIR", "off")
    catalog = load_catalog(root)
    assert [r.hf_id for r in catalog.recipes] == []
    errors = [str(e) for e in (*catalog.load_errors, *catalog.refused)]
    assert any("outside the recipes directory" in e for e in errors), errors
    assert "hunter2" not in "\n".join(errors)


def test_read_raw_checks_the_opened_file(tree: tuple[Path, Path]) -> None:
    root, secret = tree
    inside = root / "models" / "acme" / "Alias.yaml"
    os.symlink(root / "models" / "acme" / "Good.yaml", inside)  # a link that stays inside: read
    assert read_raw(inside, "models/acme/Alias.yaml", root=root) == _recipe("acme/Good").encode()
    leak = root / "models" / "acme" / "Leak.yaml"
    os.symlink(secret, leak)
    with pytest.raises(YamlLoadError, match="outside the recipes directory"):
        read_raw(leak, "models/acme/Leak.yaml", root=root)
    fifo = root / "models" / "acme" / "Pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(YamlLoadError, match="not a regular file"):
        read_raw(fifo, "models/acme/Pipe.yaml", root=root)  # never blocks on a FIFO
