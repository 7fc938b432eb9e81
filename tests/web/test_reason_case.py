"""A reason shown as a sentence keeps its capitals: only its first letter is raised ("NVIDIA", not "nvidia")."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
import yaml
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.web import create_app

BASE = {"meta": {"title": "Tiny", "provider": "Acme", "date_added": "2026-05-01", "date_updated": "2026-05-02"},
        "variants": {"default": {"precision": "nvfp4", "vram_minimum_gb": 20}}}
OMNI = {**BASE, "meta": {**BASE["meta"], "tasks": ["omni"]}, "model": {"model_id": "acme/Omni"},
        "omni": {"tasks": [{"id": "t2i", "label": "Text to image"}]}}
TEXT = {**BASE, "meta": {**BASE["meta"], "tasks": ["text"]}, "model": {"model_id": "acme/Text"}}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("case")
    for name, recipe in (("Omni", OMNI), ("Text", TEXT)):
        p = root / "models" / "acme" / f"{name}.yaml"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(yaml.safe_dump(recipe, sort_keys=False))
    with TestClient(create_app(load_catalog(root))) as c:
        yield c


def _hardware_titles(body: str) -> set[str]:
    return {html.unescape(t) for t in re.findall(r'title="([^"]*)" aria-disabled="true" data-key="hardware:', body)}


@pytest.mark.parametrize("model", ["acme/Omni", "acme/Text"])
def test_disabled_hardware_pill_keeps_the_vendor_name(client: TestClient, model: str) -> None:
    r = client.get(f"/{model}", params={"hardware": "b200"})
    assert r.status_code == 200
    assert _hardware_titles(r.text) == {"Nvfp4 precision needs NVIDIA Blackwell hardware."}


def test_omni_and_text_pages_give_one_reason(client: TestClient) -> None:
    omni, text = (client.get(f"/acme/{m}", params={"hardware": "b200"}).text for m in ("Omni", "Text"))
    assert _hardware_titles(omni) == _hardware_titles(text)
