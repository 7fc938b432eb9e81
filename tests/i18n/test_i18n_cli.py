"""``vllm-recipes i18n check`` / ``i18n sections``: output and exit codes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable

import pytest
from click.testing import Result
from i18n_support import HF_ID, SHIPPED_ZH

ZH = "models/deepseek-ai/DeepSeek-V4.1-Flash.zh.md"


@pytest.fixture(autouse=True)
def _no_recipes_dir_from_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_RECIPES_DIR", raising=False)


def test_check_bundled_is_clean_exit_0(run_cli: Callable[..., Result]):
    res = run_cli("i18n", "check")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == "1 translation(s) checked: 0 stale (0 finding(s)), 1 clean"


def test_check_seed_translation_is_stale_exit_1(run_cli: Callable[..., Result], catalog):
    res = run_cli("i18n", "check", "--recipes-dir", str(catalog.root))
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    assert (f"{ZH}: mi355x-tensor-parallel: removed-flag: --no-swa-bounded-replay (the recipe no longer "
            "emits this flag; the current guide mentions it only as no longer applying "
            "(mi355x-tensor-parallel))") in lines
    assert any(ln.startswith(f"{ZH}: prerequisites: removed-image: vllm/vllm-openai-rocm:nightly (") for ln in lines)
    assert lines[-1] == "1 translation(s) checked: 1 stale (18 finding(s)), 0 clean"


def test_check_json(run_cli: Callable[..., Result], catalog):
    res = run_cli("i18n", "check", "--json", "--recipes-dir", str(catalog.root))
    assert res.exit_code == 1
    report = json.loads(res.output)
    (t,) = report["translations"]
    assert (t["path"], t["recipe"], t["lang"], t["stale"]) == (ZH, HF_ID, "zh", True)
    assert (t["source_date_updated"], t["recipe_date_updated"]) == ("2026-09-20", "2026-10-13")
    assert {"section": "prerequisites", "kind": "removed", "token_kind": "image",
            "token": "vllm/vllm-openai-rocm:nightly"}.items() <= t["findings"][2].items()
    assert report["summary"] == {"checked": 1, "stale": 1, "clean": 0, "findings": 18}


def test_check_clean_exit_0(run_cli: Callable[..., Result], current_dir):
    res = run_cli("i18n", "check", "--recipes-dir", str(current_dir))
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        f"{ZH}: ok (translated from 2026-10-13, nothing drifted)",
        "1 translation(s) checked: 0 stale (0 finding(s)), 1 clean",
    ]
    assert json.loads(run_cli("i18n", "check", "--json", "--recipes-dir", str(current_dir)).output)[
            "summary"]["stale"] == 0


def test_check_env_var_dir_and_filters(run_cli: Callable[..., Result], current_dir, recipes_dir):
    shutil.copy(SHIPPED_ZH, recipes_dir / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.ja.md")
    res = run_cli("i18n", "check", env={"VLLM_RECIPES_DIR": str(current_dir)})
    assert res.exit_code == 1  # the ja copy is stale (and says lang: zh)
    assert run_cli("i18n", "check", "--lang", "zh", env={"VLLM_RECIPES_DIR": str(current_dir)}).exit_code == 0
    assert run_cli("i18n", "check", HF_ID.lower(), "--lang", "zh",
                   env={"VLLM_RECIPES_DIR": str(current_dir)}).exit_code == 0


def test_check_no_translations_exit_0(run_cli: Callable[..., Result], recipes_dir):
    res = run_cli("i18n", "check", "--recipes-dir", str(recipes_dir))
    assert res.exit_code == 0
    assert "no translations found" in res.output


def test_usage_errors_exit_2(run_cli: Callable[..., Result], tmp_path):
    assert run_cli("i18n", "check", "--recipes-dir", str(tmp_path / "missing")).exit_code == 2
    assert run_cli("i18n", "check", "nobody/Nothing").exit_code == 2
    assert run_cli("i18n", "check", "--bogus").exit_code == 2
    assert run_cli("i18n", "sections", "nobody/Nothing").exit_code == 2


def test_sections_prints_front_matter(run_cli: Callable[..., Result], recipe):
    res = run_cli("i18n", "sections", HF_ID)
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert lines[1:4] == ['source_date_updated: "2026-10-13"', "source_hashes:",
                          "  overview: sha256:8b4651f9583c9f36  # ## Overview"]
    assert any(ln.startswith("  meta.description: sha256:") for ln in lines)
    data = json.loads(run_cli("i18n", "sections", "--json", HF_ID).output)
    assert [s["slug"] for s in data["sections"]][:2] == ["overview", "context-length"]
