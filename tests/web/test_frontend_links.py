"""Issue #27.9 on the page, without a resolve per link.

A pill link carries the user's frontend choice as it is; the page it leads to resolves
its own command once and, when the recipe's env there runs another frontend, drops the
choice with its notice and disables that pill. Shape: no default frontend (Python), the
B200 block exporting ``VLLM_USE_RUST_FRONTEND=0``; Rust chosen on H200 (agrees), then B200.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.web import create_app

PINNED = {
    "meta": {"title": "Pinned", "provider": "Acme", "tasks": ["text"],
             "hardware": {"h200": "verified", "b200": "supported"}},
    "model": {"model_id": "acme/Pinned"},
    "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 300}},
    "compatible_strategies": ["single_node_tp"],
    "hardware_overrides": {"blackwell": {"extra_env": {"VLLM_USE_RUST_FRONTEND": "0"}}},
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    root: Path = tmp_path_factory.mktemp("frontend-links")
    path = root / "models" / "acme" / "Pinned.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(PINNED, sort_keys=False), encoding="utf-8")
    return TestClient(create_app(load_catalog(str(root))))


def _frontend_pills(page: str) -> dict[str, str]:
    row = re.search(r'data-row="frontend">(.*?)</div>', page, re.S)
    assert row is not None
    tags = re.findall(r'<(?:a|span) class="pill[^>]*data-key="frontend:[a-z]+"[^>]*>', row.group(1))
    return {re.search(r'data-key="frontend:([a-z]+)"', t).group(1): t for t in tags}  # type: ignore[union-attr]


def test_the_link_carries_the_choice_and_the_page_it_leads_to_drops_it(client: TestClient) -> None:
    page = client.get("/acme/Pinned?hardware=h200&frontend=rust").text
    assert "does not apply" not in page
    assert "is-active" in _frontend_pills(page)["rust"]
    links = [html.unescape(h) for h in re.findall(r'<a class="pill[^"]*" href="([^"]+)" data-nav', page)]
    b200 = next(h for h in links if "hardware=b200" in h)
    assert "frontend=rust" in b200  # as the user chose it: the link does not resolve B200's command

    landed = client.get(b200).text
    assert "frontend rust does not apply to acme/Pinned on b200" in landed  # the notice
    pills = _frontend_pills(landed)
    assert "is-disabled" in pills["rust"] and "href" not in pills["rust"]
    assert "VLLM_USE_RUST_FRONTEND=0, so the command runs the Python frontend" in pills["rust"]
    assert "is-active" in pills["python"]
    builder = re.search(r'<div id="builder"[^>]*data-url="([^"]+)"', landed)
    assert builder is not None and "frontend" not in html.unescape(builder.group(1))  # the canonical URL
    assert "VLLM_USE_RUST_FRONTEND=0" in landed  # the command shown runs what the header says


def test_the_api_refuses_what_the_page_drops(client: TestClient) -> None:
    bad = client.get("/api/resolve?model=acme/Pinned&hardware=b200&frontend=rust")
    assert bad.status_code == 400
    assert bad.json()["param"] == "frontend" and bad.json()["choices"] == ["python"]
