"""Every HTML page has a JSON twin with the same data; /llms.txt and /llms-full.txt are served."""

from __future__ import annotations

import html
import json
from types import SimpleNamespace

import pytest
from starlette.testclient import TestClient

from vllm_recipes.web.twins import wants_json

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
V4 = "deepseek-ai/DeepSeek-V4-Flash"
ACCEPT_JSON = {"Accept": "application/json"}

#: (HTML page, its .json twin path)
PAGES = [
    ("/", "/index.json"),
    ("/browse", "/browse.json"),
    ("/browse?q=v4.1", "/browse.json?q=v4.1"),
    ("/browse?task=multimodal&sort=name", "/browse.json?task=multimodal&sort=name"),
    ("/deepseek-ai", "/deepseek-ai.json"),
    (f"/{V41}", f"/{V41}/page.json"),
    (f"/{V41}?hardware=h200&strategy=multi_node_dep&nodes=2", f"/{V41}/page.json?hardware=h200&strategy=multi_node_dep&nodes=2"),
    (f"/{V41}?hardware=mi355x&strategy=pd_cluster", f"/{V41}/page.json?hardware=mi355x&strategy=pd_cluster"),
    (f"/{V4}?hardware=h200&kv_offload=kv_store_centralized_mooncake", f"/{V4}/page.json?hardware=h200&kv_offload=kv_store_centralized_mooncake"),
]


@pytest.mark.parametrize(("page", "twin"), PAGES)
def test_every_page_has_a_json_twin(client: TestClient, page: str, twin: str) -> None:
    by_path = client.get(twin)
    by_accept = client.get(page, headers=ACCEPT_JSON)
    html_page = client.get(page)
    for r in (by_path, by_accept):
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/json")
        assert "Accept" in r.headers["vary"]
    assert by_path.json() == by_accept.json()
    assert html_page.headers["content-type"].startswith("text/html")
    assert "Accept" in html_page.headers["vary"]


def _text(page_html: str) -> str:
    return html.unescape(page_html)


def test_index_and_browse_twins_carry_what_the_pages_show(client: TestClient) -> None:
    home = client.get("/index.json").json()
    page = _text(client.get("/").text)
    assert home["recipes"] == 2
    for card in home["latest"]:
        assert card["title"] in page and f'href="{card["url"]}"' in client.get("/").text
    assert [p["org"] for p in home["providers"]] == ["deepseek-ai"]
    found = client.get("/browse.json?q=v4.1").json()
    assert [c["hf_id"] for c in found["recipes"]] == [V41] and found["count"] == 1
    task_row = next(f for f in found["filters"] if f["row"] == "task")
    browse_html = _text(client.get("/browse?q=v4.1").text)
    for chip in task_row["chips"]:
        assert chip["href"] in browse_html
    provider = client.get("/deepseek-ai.json").json()
    assert {c["hf_id"] for g in provider["groups"] for c in g["recipes"]} == {V4, V41}


def test_recipe_twin_is_the_page_selection(client: TestClient, web: SimpleNamespace) -> None:
    url = f"/{V41}?hardware=h200&strategy=multi_node_dep&nodes=2"
    data = client.get(url, headers=ACCEPT_JSON).json()
    page = client.get(url).text
    sel = data["selection"]
    assert (sel["hardware"], sel["strategy"], sel["nodes"]) == ("h200", "multi_node_dep", 2)
    assert f'data-url="{html.escape(data["url"])}"' in page  # the page's canonical URL (defaults omitted)
    assert data["url"] == f"/{V41}?hardware=h200&strategy=multi_node_dep"
    # the commands are the page's command panels, byte for byte
    shown = [text for _title, _desc, text in web.panels(page)]
    assert [c["text"] for c in data["commands"]] == shown
    # every builder row of the page is in the twin, with the active pill marked
    hw_row = next(r for r in data["builder"]["rows"] if r["key"] == "hardware")
    assert [p["key"] or p["label"] for p in hw_row["pills"] if p["active"]]
    flags = {e["name"] for sec in data["explain"] for e in sec["entries"]}
    assert "--data-parallel-size" in flags
    assert data["rendering"]["node_count"] == 2


def test_recipe_twin_is_lenient_like_the_page(client: TestClient) -> None:
    data = client.get(f"/{V41}/page.json?hardware=h200&strategy=warp_drive").json()
    assert data["selection"]["strategy"] != "warp_drive"
    assert data["notices"]  # the dropped parameter is reported, as on the page


def test_twin_not_found_and_redirects(client: TestClient) -> None:
    assert client.get("/nobody.json").status_code == 404
    assert client.get("/deepseek-ai/Nope/page.json").status_code == 404
    r = client.get("/DeepSeek-AI.json", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"] == "/deepseek-ai.json"
    # the static API file keeps its exact bytes
    assert client.get(f"/{V41}.json").json()["hf_id"] == V41


@pytest.mark.parametrize(("accept", "expected"), [
    ("application/json", True),
    ("application/json, text/html;q=0.9", True),
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", False),
    ("text/html, application/json", True),
    ("application/json;q=0.5, text/html", False),
    ("*/*", False),
    ("", False),
    ("application/json;q=bogus", False),
])
def test_content_negotiation(accept: str, expected: bool) -> None:
    from starlette.requests import Request

    scope = {"type": "http", "headers": [(b"accept", accept.encode())] if accept else []}
    assert wants_json(Request(scope)) is expected


def test_llms_files_are_served(client: TestClient) -> None:
    short = client.get("/llms.txt")
    full = client.get("/llms-full.txt")
    for r in (short, full):
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert short.text.startswith("# vLLM Recipes\n\n> ")
    base = "http://testserver"
    assert f"[{V41}]({base}/{V41})" in short.text
    assert f"Selection: {base}/api/resolve?model={V41}&hardware=gb200" in full.text


def test_home_twin_json_is_utf8_and_indented(client: TestClient) -> None:
    raw = client.get("/index.json").content
    assert raw.startswith(b"{\n  ")
    json.loads(raw.decode("utf-8"))


def test_openapi_documents_the_twins_and_llms_files(client: TestClient) -> None:
    paths = client.get("/api/openapi.json").json()["paths"]
    concrete = {"/index.json": "/index.json", "/browse.json": "/browse.json", "/{org}.json": "/deepseek-ai.json",
                "/{org}/{repo}/page.json": f"/{V41}/page.json", "/llms.txt": "/llms.txt",
                "/llms-full.txt": "/llms-full.txt"}
    for documented, path in concrete.items():
        assert documented in paths
        assert client.get(path).status_code == 200
