"""A recipe page's URL is written by one function for the builder and the omni page: the parameter
table's order, then the page's own parameters sorted, the path quoted the same way."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.service.url import recipe_url
from vllm_recipes.web import create_app

OMNI = {
    "meta": {"title": "Tiny omni", "provider": "Acme", "tasks": ["omni"], "date_added": "2026-05-01",
             "date_updated": "2026-05-02", "hardware": {"h200": "verified"}},
    "model": {"model_id": "acme/Omni", "base_args": ["--trust-remote-code"]},
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40}},
    "omni": {"port": 8091, "tasks": [{"id": "t2v", "label": "Text to video"}, {"id": "t2i", "label": "Text to image"}]},
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("omni")
    p = root / "models" / "acme" / "Omni.yaml"
    p.parent.mkdir(parents=True)
    p.write_text(yaml.safe_dump(OMNI, sort_keys=False))
    with TestClient(create_app(load_catalog(Path(root)))) as c:
        yield c


def _data_url(html: str) -> str:
    m = re.search(r'id="builder" class="builder" data-url="([^"]*)"', html)
    assert m, html[:500]
    return m.group(1).replace("&amp;", "&")


def test_omni_url_is_written_like_the_builders(client: TestClient) -> None:
    """Whatever order the request gives, the canonical URL is the table's order, then the page's own sorted."""
    got = _data_url(client.get("/acme/Omni?lang=de&task=t2i&install=docker&isl=8192").text)
    assert got == recipe_url("acme/Omni", {"task": "t2i", "install": "docker", "lang": "de", "isl": "8192"})
    assert got == "/acme/Omni?install=docker&task=t2i&isl=8192&lang=de"


def test_recipe_url_quotes_the_path_and_keeps_commas() -> None:
    assert recipe_url("org/Model v2", {"features": "a,b", "fmode": "x:y"}) == \
        "/org/Model%20v2?features=a,b&fmode=x:y"
    assert recipe_url("org/m") == "/org/m"
