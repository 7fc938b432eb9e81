"""``serve --watch`` never renders a recipe whose cost has no bound (issue #28.6, found again by the fuzz).

Validation bounds what the engine may be given (at most 1,000 argument tokens per list, 1,024 PD nodes),
so ``build-api`` and ``serve`` skip a 40,000-token recipe. ``serve --watch`` previews recipes with errors
too, and rendered that one: under load its page took over 30 s (answered 503). Now such a recipe is left
out of the preview unless a last good version exists: its page says why, the sibling's page is unaffected.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.web import create_app
from vllm_recipes.web.authoring import merge_last_good
from vllm_recipes.web.live import LiveCatalog, catalog_findings

SEED = BUNDLED_DIR / "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"


def _recipe(name: str, tokens: int) -> dict[str, Any]:
    data = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    data["model"]["model_id"] = f"acme/{name}"
    data["model"]["base_args"] = [t for i in range(tokens // 2) for t in (f"--fuzz-flag-{i % 997}", str(i))]
    return data


@pytest.fixture()
def root(tmp_path: Path, recipe_writer: Callable[[Path, str, object], Path]) -> Path:
    recipe_writer(tmp_path, "acme/Huge", _recipe("Huge", 40_000))
    recipe_writer(tmp_path, "acme/Good", _recipe("Good", 0))
    return tmp_path


def test_a_recipe_over_a_bound_is_left_out_of_the_preview(root: Path) -> None:
    fresh = load_catalog(root)
    merged, _stale = merge_last_good(None, fresh, catalog_findings(fresh))
    assert [r.hf_id for r in merged.recipes] == ["acme/Good"]
    assert merged.load_error_for("acme/Huge").code == "too-many-args"


def test_its_page_says_why_and_the_sibling_answers(root: Path) -> None:
    app = create_app(load_catalog(root), api_jobs=1)
    LiveCatalog(app, root, lint=False).reload()
    client = TestClient(app, raise_server_exceptions=False)
    r = client.get("/acme/Huge")
    assert r.status_code == 404 and "at most 1,000 are allowed" in r.text
    assert client.get("/api/resolve?model=acme/Huge").status_code in (400, 404)  # (an unknown model)
    assert client.get("/acme/Good").status_code == 200


def test_a_last_good_version_stays_up(root: Path, recipe_writer: Callable[[Path, str, object], Path]) -> None:
    first = load_catalog(root)
    before, _ = merge_last_good(None, first, catalog_findings(first))  # what the preview served
    # the author pastes a huge list into a recipe that worked
    recipe_writer(root, "acme/Good", _recipe("Good", 40_000))
    fresh = load_catalog(root)
    merged, stale = merge_last_good(before, fresh, catalog_findings(fresh))
    assert "acme/Good" in stale and [r.hf_id for r in merged.recipes] == ["acme/Good"]
    assert len(merged.recipe("acme/Good").model["base_args"]) == 0
