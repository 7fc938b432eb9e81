"""Links the public recipe site writes open the same selection here (issue 14 D1/D2)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from types import SimpleNamespace

from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.web import create_app


def _canonical(body: str) -> str:
    m = re.search(r'<div id="builder" class="builder" data-url="([^"]+)"', body)
    assert m
    return html.unescape(m.group(1))


def test_public_advanced_ids_open_the_same_command(client: TestClient, web: SimpleNamespace) -> None:
    ours = client.get(f"/{web.V41}?advanced=max_seqs_256,gpu_mem_095")
    public = client.get(f"/{web.V41}?advanced=max_num_seqs_256,gpu_memory_utilization_0.95")
    assert public.status_code == ours.status_code == 200
    assert "Some URL parameters were not used" not in public.text
    assert web.page_text(public.text) == web.page_text(ours.text)
    assert "--max-num-seqs 256" in web.page_text(public.text)
    assert _canonical(public.text) == _canonical(ours.text)
    assert "advanced=max_seqs_256,gpu_mem_095" in _canonical(public.text)


def test_ids_in_another_letter_case_open_the_same_page(client: TestClient, web: SimpleNamespace) -> None:
    upper = client.get(f"/{web.V41}?hardware=H200&strategy=PD_CLUSTER")
    lower = client.get(f"/{web.V41}?hardware=h200&strategy=pd_cluster")
    assert "Some URL parameters were not used" not in upper.text
    assert web.page_text(upper.text) == web.page_text(lower.text)


def test_inert_parameters_stay_lenient(client: TestClient, web: SimpleNamespace) -> None:
    """A pool option without pd_cluster cannot apply: the page drops it, keeps the command."""
    r = client.get(f"/{web.V41}?decode_mode=tp&advanced=nope")
    assert r.status_code == 200
    assert web.page_text(r.text) == web.page_text(client.get(f"/{web.V41}").text)


def _active(page: str, key: str) -> bool:
    return re.search(rf'class="pill is-active" href="[^"]*" data-nav data-key="{re.escape(key)}"', page) is not None


def test_the_mode_pill_and_the_public_url_give_the_modes_pool_size(dep_pool_catalog_dir: Path,
                                                                   web: SimpleNamespace) -> None:
    """D2: a 2-node DEP decode pool becomes 1 node of TP 8, by pill or by URL."""
    with TestClient(create_app(load_catalog(dep_pool_catalog_dir))) as client:
        start = client.get("/acme/Big?hardware=h200&strategy=pd_cluster").text
        assert _active(start, "pd-decode:decode-n2") and _active(start, "pd-decode-mode:decode-dep")
        pill = re.search(r'href="([^"]+)" data-nav data-key="pd-decode-mode:decode-tp"', start)
        assert pill
        by_pill = client.get(html.unescape(pill.group(1))).text
        by_url = client.get("/acme/Big?strategy=pd_cluster&decode_mode=tp").text
    for page in (by_pill, by_url):
        assert _active(page, "pd-decode:decode-n1") and _active(page, "pd-decode-mode:decode-tp")
    assert web.page_text(by_pill) == web.page_text(by_url)
    assert "--tensor-parallel-size 8" in web.page_text(by_url).split("# Decode", 1)[1]
