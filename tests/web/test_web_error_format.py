"""One rule for which answers are JSON, errors included: the API's paths and every ``.json`` path.

A client of a JSON path reads the error as JSON whatever went wrong (a 405 used to be an HTML page on
``/models.json`` and ``/{org}/{repo}/page.json``); a page path keeps the HTML error page.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"


@pytest.mark.parametrize("path", ["/models.json", f"/{V41}/page.json", "/api/resolve", "/index.json"])
def test_json_paths_answer_errors_in_json(client: TestClient, path: str) -> None:
    r = client.post(path)
    assert r.status_code == 405
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["error"] and body["param"] is None and body["choices"] == []


@pytest.mark.parametrize("path", ["/browse", f"/{V41}", "/"])
def test_page_paths_answer_errors_as_pages(client: TestClient, path: str) -> None:
    r = client.post(path)
    assert r.status_code == 405
    assert r.headers["content-type"].startswith("text/html")
    assert "<html" in r.text.lower()
