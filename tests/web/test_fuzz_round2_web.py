"""Findings of the batched fuzz (issue #28, round 2) in the web app.

``serve --watch`` previews every recipe, valid or not. A recipe whose ``model.model_id`` is a list
(``[1.0e-07, null, true]``) made the rendering refuse the value (``UnsafeValue``, the values-are-data
guard): ``/api/export`` answered 500 (three times, then reset connections), and the page, its twin and
``/api/resolve`` each logged a full traceback. The same recipe with ``model: ../../../../pwned/x``
(a string) made the engine raise ``AttributeError`` in ``/api/export``: 500 again; ``meta.tasks: 1000000000``
made the recipe page's template fail (500); a variant given as a list made the fit summary of
``/api/resolve`` log a traceback; a number among ``compatible_strategies`` made the builder fragment 500. The engine is promised
only what validation passes: on a recipe failing it, a failure is the recipe's error, not the server's:
422 in the page's words, one log line (no traceback), and the sibling recipe's page is unaffected.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.web import create_app
from vllm_recipes.web.live import LiveCatalog

SEED = BUNDLED_DIR / "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"


@pytest.fixture()
def client(tmp_path: Path, recipe_writer: Callable[[Path, str, object], Path]) -> TestClient:
    data = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    data["model"]["model_id"] = [1.0e-07, None, True]
    recipe_writer(tmp_path, "acme/Bad", data)
    (tmp_path / "models/acme/Good.yaml").write_text(SEED.read_text(encoding="utf-8"), encoding="utf-8")
    data["model"] = "../../../../pwned/x"  # a string where the model mapping goes: the engine trips over it
    recipe_writer(tmp_path, "acme/Worse", data)
    tasks = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    tasks["meta"]["tasks"] = 1000000000  # a number where the page lists task badges
    recipe_writer(tmp_path, "acme/Tasks", tasks)
    listed = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    listed["variants"]["default"] = [listed["variants"]["default"]]  # a list where the variant mapping goes
    del listed["model"]["architecture_facts"]  # (so the fit looks for the variant's checkpoint)
    recipe_writer(tmp_path, "acme/Listed", listed)
    odd = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    odd["compatible_strategies"] = [2.5, ["single_node_tp"]]  # numbers and lists where strategy ids go
    recipe_writer(tmp_path, "acme/Odd", odd)
    # every recipe, as ``serve --watch`` serves them (not only the validate-clean ones)
    app = create_app(load_catalog(tmp_path), api_jobs=1)
    LiveCatalog(app, tmp_path, lint=False).reload()
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize("url", [
    "/api/export?model=acme/Bad&to=k8s", "/api/export?model=acme/Bad&to=slurm",
    "/api/export?model=acme/Bad&to=vllm-config", "/api/export?model=acme/Bad&to=compose",
    "/api/resolve?model=acme/Bad", "/acme/Bad", "/acme/Bad/builder", "/acme/Bad/page.json",
    *(f"/api/export?model=acme/Worse&to={t}" for t in ("k8s", "compose", "slurm", "vllm-config")),
    "/api/resolve?model=acme/Worse", "/acme/Worse", "/acme/Worse/page.json",
    "/acme/Tasks", "/acme/Tasks?strategy=pd_cluster", "/acme/Tasks/builder", "/acme/Tasks/page.json",
    "/api/resolve?model=acme/Listed", "/api/fit?model=acme/Listed", "/acme/Listed",
    "/acme/Odd/builder", "/acme/Odd/builder?strategy=single_node_tp", "/acme/Odd", "/acme/Odd/page.json",
])
def test_a_refused_value_is_the_recipes_error_not_a_crash(client: TestClient, url: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        r = client.get(url)
    assert r.status_code < 500, (url, r.status_code)
    if url.startswith("/api/") and r.status_code != 200:
        assert r.status_code == 422 and r.json()["error"]
    tracebacks = [rec.getMessage() for rec in caplog.records if rec.exc_info]
    assert tracebacks == [], tracebacks
    assert client.get("/acme/Good").status_code == 200


def test_a_page_twin_that_cannot_be_shown_answers_json(client: TestClient,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure outside the twin's own guard (none is known today) still answers in the twin's format."""
    from vllm_recipes.web import app as web_app

    def fail(*args: object) -> None:
        raise RuntimeError("forced")

    monkeypatch.setattr(web_app, "_lang", fail)
    r = client.get("/acme/Bad/page.json")
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/json")
    assert r.json()["error"].startswith("acme/Bad fails validation, so its page cannot be shown: ")
    assert client.get("/acme/Bad").headers["content-type"].startswith("text/html")
