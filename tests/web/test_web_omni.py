"""Omni recipes: install / hardware / task / variant rows, ``--omni`` commands equal to the CLI's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.web import create_app

RECIPE = {
    "meta": {"title": "Tiny omni", "provider": "Acme", "tasks": ["omni"], "date_added": "2026-05-01",
             "date_updated": "2026-05-02", "hardware": {"h200": "verified"}},
    "model": {"model_id": "acme/Omni", "base_args": ["--trust-remote-code"]},
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40},
                 "fp8": {"precision": "fp8", "vram_minimum_gb": 20, "model_id": "acme/Omni-FP8"}},
    "omni": {"port": 8091, "tasks": [{"id": "t2v", "label": "Text to video", "extra_args": ["--flow-shift", "5.0"]},
                                     {"id": "t2i", "label": "Text to image"}, {"id": "t2a", "key": "audio"}]},
    "guide": "## Omni\n\nText.",
}


@pytest.fixture(scope="module")
def omni_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("omni")
    p = root / "models" / "acme" / "Omni.yaml"
    p.parent.mkdir(parents=True)
    p.write_text(yaml.safe_dump(RECIPE, sort_keys=False))
    return root


@pytest.fixture(scope="module")
def omni_client(omni_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(load_catalog(omni_dir))) as c:
        yield c


@pytest.mark.parametrize("query", ["", "task=t2i", "task=audio", "install=docker", "variant=fp8&task=t2i",
                                   "hardware=mi355x&install=docker"])
def test_omni_page_matches_cli(omni_client: TestClient, omni_dir: Path, web: SimpleNamespace, query: str) -> None:
    r = omni_client.get("/acme/Omni" + ("?" + query if query else ""))
    assert r.status_code == 200
    assert "Some URL parameters were not used" not in r.text
    args = ["command", "acme/Omni", "--recipes-dir", str(omni_dir)]
    for k, v in (kv.split("=") for kv in query.split("&") if kv):
        args += [f"--{k}", v]
    assert web.run_cli(args) == web.page_text(r.text) + "\n"
    assert "--omni" in web.page_text(r.text)


def test_omni_rows_and_snippets(omni_client: TestClient) -> None:
    body = omni_client.get("/acme/Omni").text
    for row in ("install", "hardware", "task", "variant"):
        assert f'id="row-{row}"' in body
    assert "/v1/videos/sync" in body and "out.mp4" in body
    assert "http://localhost:8091" in re.sub(r"<[^>]+>", "", body)  # the port is a span the Env panel fills
    t2i = omni_client.get("/acme/Omni?task=t2i").text
    assert "/v1/images/generations" in t2i and "b64_json" in t2i
    audio = omni_client.get("/acme/Omni?task=audio").text
    assert "/v1/audio/generate" in audio and "out.wav" in audio
    links = re.findall(r'href="([^"]+)" data-nav data-key="task:t2i"', body)
    assert links == ["/acme/Omni?task=t2i"]


def test_omni_bad_params_and_api(omni_client: TestClient) -> None:
    r = omni_client.get("/acme/Omni?task=zzz&strategy=pd_cluster")
    assert r.status_code == 200 and "Some URL parameters were not used" in r.text
    api = omni_client.get("/api/resolve", params={"model": "acme/Omni", "task": "t2i"})
    assert api.status_code == 200
    assert api.json()["commands"][0]["text"].endswith("--omni")
    bad = omni_client.get("/api/resolve", params={"model": "acme/Omni", "strategy": "pd_cluster"})
    assert bad.status_code == 400 and bad.json()["param"] == "strategy"
    bad = omni_client.get("/api/resolve", params={"model": "acme/Omni", "task": "nope"})
    assert bad.status_code == 400 and bad.json()["param"] == "task"
