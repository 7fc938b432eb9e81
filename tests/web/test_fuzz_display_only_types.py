"""Keys only the page shows, with the wrong type: a warning, and every view still works (issue #28, round 2).

``validate`` calls a wrong type under a display-only key (``catalog.models.DISPLAY_ONLY``: titles,
descriptions, related recipes, dates, ...) a warning - "only the page shows this key, the recipe is still
published". The batched fuzz found the page answering 500 for ``meta.related_recipes: 10**40`` on such a
validate-clean recipe. Here every display-only key of one recipe at once holds a number, a list, a
mapping or a boolean: the recipe validates without errors, is published with llms.txt, and its page,
builder, twins and live API answer 200.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.catalog.models import DISPLAY_ONLY
from vllm_recipes.web import create_app

SEED = BUNDLED_DIR / "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"
WRONG: dict[str, Any] = {"Number": 10 ** 40, "List": ["a", {"b": 1}], "Mapping": {"k": [1, 2]}, "Bool": True,
                         "Tiny": 1e-07}


def _set_every_display_key(data: dict[str, Any], value: Any) -> None:
    data["features"]["tool_calling"]["modes"] = None  # (not modal: the mode keys go on a modal feature)
    del data["features"]["tool_calling"]["modes"]
    data["features"]["fuzz_modal"] = {"description": "d", "default_mode": "a",
                                      "modes": {"a": {"args": ["--enable-prefix-caching"]}}}
    for pattern in DISPLAY_ONLY:
        targets = [data]
        for part in pattern[:-1]:
            nxt = []
            for t in targets:
                child = t.get(part) if part != "*" else None
                if part == "*":
                    nxt += [v for v in t.values() if isinstance(v, dict)]
                elif isinstance(child, dict):
                    nxt.append(child)
            targets = nxt
        for t in targets:
            t[pattern[-1]] = value


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory,
         recipe_writer: Callable[[Path, str, object], Path]) -> Path:
    root = tmp_path_factory.mktemp("display-only")
    for name, value in WRONG.items():
        data = yaml.safe_load(SEED.read_text(encoding="utf-8"))
        data["model"]["model_id"] = f"acme/{name}"
        _set_every_display_key(data, value)
        recipe_writer(root, f"acme/{name}", data)
    return root


def test_they_validate_with_warnings_only(run_cli: Callable[..., Result], root: Path) -> None:
    r = run_cli("validate", "--recipes-dir", str(root))
    assert r.exit_code == 0, r.output[-3000:]
    assert "only the page shows this key" in r.output


def test_they_are_published(run_cli: Callable[..., Result], root: Path, tmp_path: Path) -> None:
    r = run_cli("build-api", str(tmp_path / "api"), "--recipes-dir", str(root), "-j", "1")
    assert r.exit_code == 0, r.output[-3000:]
    for name in WRONG:
        assert (tmp_path / f"api/acme/{name}.json").is_file()
        assert f"acme/{name}" in (tmp_path / "api/llms-full.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(WRONG))
def test_every_view_answers(root: Path, name: str) -> None:
    client = TestClient(create_app(load_catalog(root)), raise_server_exceptions=False)
    for url in (f"/acme/{name}", f"/acme/{name}/builder", f"/acme/{name}/page.json", f"/acme/{name}.json",
                f"/api/resolve?model=acme/{name}", f"/api/export?model=acme/{name}&to=k8s", "/acme", "/",
                "/browse", "/llms-full.txt", "/api/search.json"):
        r = client.get(url)
        assert r.status_code == 200, (url, r.status_code, r.text[:300])
