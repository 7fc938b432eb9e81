"""Issue 28 item 6: a recipe with a huge argument list is a clear file:line error, not minutes of work.

Real recipes hold at most a few dozen tokens per list (21 in the public catalog);
a 40,000-token list made ``validate`` and ``build-api`` crawl, as every offered
selection re-resolved, deduplicated and linted all of it. Lists above
``MAX_ARG_TOKENS`` are refused with the list's position, so the recipe is
skipped before any selection is resolved. Asserted on counts, not on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vllm_recipes.api.build import build_api
from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.validate import MAX_ARG_TOKENS, validate_catalog
from vllm_recipes.render import shell
from vllm_recipes.synth.plan import Arg, Source


def _write(root: Path, tokens: list[str]) -> Path:
    (root / "models" / "acme").mkdir(parents=True)
    recipe = {"meta": {"title": "Huge", "provider": "acme", "date_added": "2026-01-01", "tasks": ["text"]},
              "model": {"model_id": "acme/Huge", "min_vllm_version": "0.10.0", "base_args": tokens},
              "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40}},
              "compatible_strategies": ["single_node_tp"]}
    (root / "models" / "acme" / "Huge.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))
    return root


def test_a_40000_token_list_is_an_error_at_its_line_and_nothing_is_resolved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _write(tmp_path / "r", ["--max-model-len", "1000"] * 20_000)
    calls = {"n": 0}
    real = shell.dedupe_positions

    def counted(*args: object) -> object:
        calls["n"] += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(shell, "dedupe_positions", counted)
    catalog = load_catalog(root)
    found = [f for f in validate_catalog(catalog) if f.code == "too-many-args"]
    assert len(found) == 1
    f = found[0]
    assert (f.severity, f.file, f.key_path) == ("error", "models/acme/Huge.yaml", "model.base_args")
    assert f.line > 1 and "40,000" in f.message and f"{MAX_ARG_TOKENS:,}" in f.message
    api = build_api(catalog, jobs=1)
    assert "acme/Huge.json" not in api.files and any("too-many-args" in w or "40,000" in w for w in api.warnings)
    assert calls["n"] == 0  # the recipe was skipped before any command was rendered


def test_a_list_at_the_limit_is_fine_and_dedupe_is_linear() -> None:
    src = Source("test")
    n = 50_000
    tokens = tuple(Arg(v, src, i) for i, v in enumerate(["--a", "1"] * (n // 2)))
    kept, shadowed = shell.dedupe(tokens)
    assert [a.value for a in kept] == ["--a", "1"] and len(shadowed["--a"]) == n // 2 - 1
