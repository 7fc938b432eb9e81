"""The command text on a page is byte-identical to what the CLI prints for that URL.

The pages are found the way a user finds them: by following the builder's own
links (every pill is a real link), breadth-first from each recipe's default page.
"""

from __future__ import annotations

import html
import json
import re
from collections import deque
from types import SimpleNamespace
from urllib.parse import parse_qsl, urlsplit

import pytest
from starlette.testclient import TestClient

from vllm_recipes.catalog import Catalog


def crawl(client: TestClient, start: str, web: SimpleNamespace, limit: int) -> list[tuple[str, str]]:
    seen = {start}
    queue = deque([start])
    out = []
    while queue and len(out) < limit:
        url = queue.popleft()
        r = client.get(url)
        assert r.status_code == 200, (url, r.status_code)
        out.append((url, r.text))
        for link in web.nav_links(r.text):
            if link not in seen:
                seen.add(link)
                queue.append(link)
    return out


@pytest.mark.parametrize("hf_id,limit", [("deepseek-ai/DeepSeek-V4.1-Flash", 70), ("deepseek-ai/DeepSeek-V4-Flash", 40)])
def test_page_commands_match_cli_for_every_reachable_selection(client: TestClient, catalog: Catalog,
                                                               web: SimpleNamespace, hf_id: str, limit: int) -> None:
    pages = crawl(client, "/" + hf_id, web, limit)
    assert len(pages) == limit
    kinds = set()
    for url, body in pages:
        shown = web.page_text(body)
        assert shown, url
        printed = web.run_cli(web.cli_args(catalog, url))
        assert printed == shown + "\n", url
        q = dict(parse_qsl(urlsplit(url).query))
        kinds.add(q.get("strategy", "") + q.get("kv_offload", "") + q.get("nodes", ""))
    assert len(kinds) > 8  # the crawl covered single, multi-node, PD and KV shapes


def test_links_are_canonical_and_round_trip(client: TestClient, web: SimpleNamespace) -> None:
    """Following a pill lands on a page whose canonical URL is that very link."""
    r = client.get("/" + web.V41)
    for link in web.nav_links(r.text)[:40]:
        page = client.get(link)
        assert page.status_code == 200
        m = re.search(r'<div id="builder" class="builder" data-url="([^"]+)"', page.text)
        assert m and html.unescape(m.group(1)) == link


def test_default_page_lands_on_gb200_tp2_rust(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/" + web.V41).text
    text = web.page_text(body)
    assert "--tensor-parallel-size 2" in text
    assert "VLLM_USE_RUST_FRONTEND=1" in text
    assert 'data-key="hardware:gb200" aria-current="true"' in body
    assert "Verified on GB200 NVL4" in body


def test_resolve_commands_equal_page_blocks(client: TestClient, web: SimpleNamespace) -> None:
    for query in ("", "hardware=mi355x&strategy=pd_cluster", "nodes=2", "kv_offload=kv_store_centralized_mooncake",
                  "hardware=h100&frontend=python&features=tool_calling"):
        page = client.get(f"/{web.V41}?{query}").text
        api = client.get(f"/api/resolve?model={web.V41}&{query}").json()
        assert [c["text"] for c in api["commands"]] == [p[2] for p in web.panels(page)]
        assert [c["title"] for c in api["commands"]] == [p[0] for p in web.panels(page)]


def test_pd_rank_and_mooncake_instance_pickers(client: TestClient, web: SimpleNamespace, catalog: Catalog) -> None:
    url = f"/{web.V41}?strategy=pd_cluster&prefill_nodes=2&prefill_rank=1"
    body = client.get(url).text
    assert "prefill_rank=1" in body and "Prefill node 1 of 2" in body
    assert web.run_cli(web.cli_args(catalog, url)) == web.page_text(body) + "\n"
    url = f"/{web.V41}?kv_offload=kv_store_centralized_mooncake&kv_instances=3&kv_instance=2"
    body = client.get(url).text
    assert "Instance 3" in body
    assert web.run_cli(web.cli_args(catalog, url)) == web.page_text(body) + "\n"


def test_install_block_and_snippets(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/" + web.V41).text
    assert "docker pull vllm/vllm-openai:nightly" in body
    assert "vLLM 0.31.0+" in body and ">nightly<" in body
    # the snippets' host and port are spans the Env panel fills in: compare the text a reader sees
    assert "curl http://localhost:8000/v1/chat/completions" in re.sub(r"<[^>]+>", "", body)
    assert "vllm bench serve" in body and "from openai import OpenAI" in body
    pd = client.get(f"/{web.V41}?strategy=pd_cluster").text
    assert "curl http://localhost:30000/v1/chat/completions" in re.sub(r"<[^>]+>", "", pd)
    assert 'data-env="ROUTER_HOST"' in pd and 'data-env="PREFILL_NODE_1"' in pd
    mc = client.get(f"/{web.V41}?kv_offload=kv_store_centralized_mooncake").text
    assert "curl http://localhost:30080/v1/chat/completions" in re.sub(r"<[^>]+>", "", mc)
    assert "mooncake-transfer-engine" in mc
    multi = client.get(f"/{web.V41}?nodes=2").text
    assert 'data-env="HEAD_IP"' in multi


def test_explain_lists_layers_and_locations(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/" + web.V41).text
    explain = body.split('<details class="explain">', 1)[1]
    assert "--tensor-parallel-size" in explain
    assert "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml:" in explain
    api = client.get(f"/api/resolve?model={web.V41}").json()
    assert api["explain"][0]["entries"]
    assert json.dumps(api["explain"])  # serializable


def test_variant_pill_switches_hardware_when_needed(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get(f"/{web.V4}?hardware=mi355x").text
    links = {m.group(2): html.unescape(m.group(1)) for m in
             re.finditer(r'href="([^"]+)" data-nav data-key="variant:([^"]+)"', body)}
    nvfp4 = links.get("nvfp4")
    assert nvfp4 is not None and "hardware=mi355x" not in nvfp4
    page = client.get(nvfp4)
    assert page.status_code == 200 and "Some URL parameters were not used" not in page.text
