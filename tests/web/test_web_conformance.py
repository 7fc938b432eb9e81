"""ui.md conformance checks that need more than the two seed recipes (docs/decisions-web.md,
"ui.md conformance"): a synthetic catalog with nine providers, a rich text recipe (dependencies,
hardware notes, unverified hardware, a variant model id) and an omni recipe with task axes.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.web import create_app

#: (org, provider name, repo, date_added, date_updated, tasks, parameter_count)
PROVIDERS = [
    ("acme", "Acme Widgets", "Widget-70B", "2026-03-01", "2026-03-02", ["multimodal", "text"], "70B"),
    ("Beta", "Beta Widgets", "Widget-Mini", "2026-02-01", "2026-02-02", ["text"], "3B"),
    ("charlie", "Charlie Widgets", "Widget-Pro", "2026-01-09", "2026-01-10", ["text"], "120B"),
    ("delta", "Delta Widgets", "Widget-Max", "2026-01-08", "2026-01-09", ["text"], "400B"),
    ("echo", "Echo Widgets", "Widget-Ultra", "2026-01-07", "2026-01-08", ["text"], "1.2T"),
    ("foxtrot", "Foxtrot Widgets", "Widget-Nano", "2026-01-06", "2026-01-07", ["text"], "1B"),
    ("golf", "Golf Widgets", "Widget-Air", "2026-01-05", "2026-01-06", ["embedding"], "0.5B"),
    ("hotel", "Hotel Widgets", "Widget-Lite", "2026-01-04", "2026-01-05", ["text"], "8B"),
    # no date_added: the home page falls back to date_updated (newest of all)
    ("india", "India Widgets", "Widget-Old", "", "2026-04-01", ["text"], "13B"),
]


def simple_recipe(title: str, provider: str, added: str, updated: str, tasks: list[str],
                  params: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"title": title, "provider": provider, "description": "A small test model.",
                            "date_updated": updated, "tasks": tasks, "hardware": {"h200": "verified"}}
    if added:
        meta["date_added"] = added
    return {"meta": meta, "model": {"model_id": f"test/{title}", "architecture": "dense", "parameter_count": params},
            "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 20}},
            "compatible_strategies": ["single_node_tp"]}


RICH: dict[str, Any] = {
    "meta": {"title": "Widget-70B", "provider": "Acme Widgets", "description": "The rich one.",
             "date_added": "2026-03-01", "date_updated": "2026-03-02", "tasks": ["multimodal", "text"],
             "hardware": {"h200": "verified"}},
    "model": {"model_id": "acme/Widget-70B", "min_vllm_version": "0.11.0", "architecture": "dense",
              "parameter_count": "70B", "supports_dcp": True},
    "dependencies": [
        "uv pip install widget-tokenizer",
        {"label": "CUDA kernels", "command": "uv pip install widget-kernels-cu13", "brand": "cuda"},
        {"label": "ROCm kernels", "command": "uv pip install widget-kernels-rocm", "brands": ["rocm"]},
        {"label": "Docker helper", "command": "docker pull acme/widget-helper", "install": "docker"},
        {"label": "Benchmarks", "command": "uv pip install widget-bench", "optional": True},
    ],
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 140},
                 "fp8": {"precision": "fp8", "vram_minimum_gb": 70, "model_id": "acme/Widget-70B-FP8",
                         "min_vllm_version": "0.12.0"}},
    "compatible_strategies": ["single_node_tp", "single_node_tep", "multi_node_tp", "pd_cluster"],
    "hardware_notes": {"h100": "Use the 80 GB SXM parts.",
                       "h200": {"title": "Heads up", "body": "See the guide.",
                                "link": {"label": "Deployment notes", "href": "#deployment-notes"}},
                       "b200": {"title": "Bad link", "body": "x", "link": "javascript:alert(1)"}},
    "guide": "## Deployment notes\n\nText.\n",
}

OMNI: dict[str, Any] = {
    "meta": {"title": "Widget-Omni", "provider": "Acme Widgets", "tasks": ["omni"], "date_added": "2026-02-15",
             "date_updated": "2026-02-16", "hardware": {"h200": "verified"}},
    "model": {"model_id": "acme/Widget-Omni", "install": {"pip": False}},
    "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40},
                 "fp8": {"precision": "fp8", "vram_minimum_gb": 20, "model_id": "acme/Widget-Omni-FP8"}},
    "omni": {"task_axes": [{"key": "input", "label": "Input"},
                           {"key": "output", "label": "Output", "values": {"image": "Picture", "video": "Clip"}}],
             "variant_hint": "FP8 halves the memory.",
             "tasks": [{"id": "t2i", "label": "Text to image", "axes": {"input": "text", "output": "image"}},
                       {"id": "i2i", "label": "Image edit", "axes": {"input": "image", "output": "image"}},
                       {"id": "t2v", "label": "Text to video", "axes": {"input": "text", "output": "video"}},
                       {"id": "i2v", "label": "Image to video", "axes": {"input": "image", "output": "video"}}]},
}


@pytest.fixture(scope="module")
def ui_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ui-catalog")

    def put(hf_id: str, data: dict[str, Any]) -> None:
        p = root / "models" / f"{hf_id}.yaml"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")

    for org, name, repo, added, updated, tasks, params in PROVIDERS[1:]:
        put(f"{org}/{repo}", simple_recipe(repo, name, added, updated, tasks, params))
    put("acme/Widget-70B", RICH)
    put("acme/Widget-Omni", OMNI)
    put("acme/Widget-Embed", simple_recipe("Widget-Embed", "Acme Widgets", "2026-01-02", "2026-01-03", ["embedding"], "1B"))
    put("acme/Widget-Speech", simple_recipe("Widget-Speech", "Acme Widgets", "2026-01-01", "2026-01-02", ["audio"], "2B"))
    put("acme/Widget-7B", simple_recipe("Widget-7B", "Acme Widgets", "2026-02-20", "2026-02-21", ["text"], "7B"))
    return root


@pytest.fixture(scope="module")
def ui(ui_dir: Path) -> Iterator[TestClient]:
    with TestClient(create_app(load_catalog(ui_dir))) as c:
        yield c


def summary(body: str) -> str:
    m = re.search(r'<div class="cmd-head">\s*(.*?)</div>', body, re.S)
    assert m
    return html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()


def pill(body: str, key: str) -> str:
    """The opening tag of the pill with ``data-key`` (``<a ...>`` or ``<span ...>``)."""
    m = re.search(r'<(?:a|span) class="pill[^"]*"[^>]*data-key="' + re.escape(key) + r'"[^>]*>', body)
    assert m, key
    return html.unescape(m.group(0))


def href(body: str, key: str) -> str:
    m = re.search(r'href="([^"]+)"', pill(body, key))
    assert m, key
    return m.group(1)


# --- pages ---------------------------------------------------------------------------------


def test_home_latest_eight_one_per_provider_and_case_insensitive_grid(ui: TestClient) -> None:
    body = ui.get("/").text
    latest = body.split('id="latest-h"', 1)[1].split('id="prov-h"', 1)[0]
    titles = re.findall(r'<h3><a href="/([^"]+)"', latest)
    # india has no date_added: its date_updated (newest) counts; acme once (newest of its recipes);
    # nine providers, eight cards: the oldest (hotel) is left out
    assert titles == ["india/Widget-Old", "acme/Widget-70B", "Beta/Widget-Mini", "charlie/Widget-Pro",
                      "delta/Widget-Max", "echo/Widget-Ultra", "foxtrot/Widget-Nano", "golf/Widget-Air"]
    grid = re.findall(r'<li><a href="/([^"]+)"><span class="pn">[^<]*</span><span class="pc">([^<]*)</span>', body)
    assert [g[0] for g in grid] == ["acme", "Beta", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
    assert grid[0][1] == "5 recipes" and grid[1][1] == "1 recipe"


def test_provider_page_groups_by_first_task_in_ui_order(ui: TestClient) -> None:
    body = ui.get("/acme").text
    groups = re.findall(r'<h2 class="sec-title">([^<]+)</h2>', body)
    assert groups == ["Multimodal", "Text", "Omni", "Embedding", "Audio"]
    sections = body.split('<h2 class="sec-title">')[1:]
    cards = [re.findall(r'<h3><a href="/acme/([^"]+)"', sec) for sec in sections]
    assert cards == [["Widget-70B"], ["Widget-7B"], ["Widget-Omni"], ["Widget-Embed"], ["Widget-Speech"]]


def test_sitemap_lastmod_is_the_latest_update(ui: TestClient) -> None:
    xml = ui.get("/sitemap.xml").text
    assert "<loc>http://testserver/</loc><lastmod>2026-04-01</lastmod>" in xml
    assert "<loc>http://testserver/acme</loc><lastmod>2026-03-02</lastmod>" in xml


# --- browse --------------------------------------------------------------------------------


def chips(body: str, row: str) -> dict[str, tuple[int, bool, bool]]:
    """``label -> (count, active, disabled)`` of one browse filter row."""
    seg = body.split(f'aria-label="{row}"', 1)[1].split("</div>", 1)[0]
    out = {}
    for m in re.finditer(r'<(a|span) class="pill([^"]*)"[^>]*>([^<]+) <span class="ps">(\d+)</span>', seg):
        out[html.unescape(m.group(3))] = (int(m.group(4)), "is-active" in m.group(2), "is-disabled" in m.group(2))
    return out


def test_browse_counts_apply_the_other_rows(ui: TestClient) -> None:
    body = ui.get("/browse?provider=acme").text
    tasks = chips(body, "Task")
    # task counts are computed with the provider row applied (acme only), not the task row itself
    assert tasks["Text"][0] == 2 and tasks["Omni"][0] == 1 and tasks["Embedding"][0] == 1
    providers = chips(body, "Provider")
    assert providers["Acme Widgets"] == (5, True, False)
    assert providers["Beta Widgets"] == (1, False, False)  # the provider row does not filter itself
    body = ui.get("/browse?provider=acme&task=omni").text
    providers = chips(body, "Provider")
    assert providers["Beta Widgets"] == (0, False, True)  # zero with the task row applied: disabled
    assert body.count("<tr><td><a href=") == 1
    # OR within a row, AND across rows
    body = ui.get("/browse?task=omni,embedding&provider=acme,golf").text
    assert body.count("<tr><td><a href=") == 3
    sizes = chips(ui.get("/browse").text, "Size")
    # buckets are half-open: 70B is in 70-200B
    assert sizes == {"<10B": (7, False, False), "10-70B": (1, False, False), "70-200B": (2, False, False),
                     "200B-1T": (1, False, False), "≥1T": (1, False, False)}


def test_browse_sorts_and_url(ui: TestClient) -> None:
    def order(q: str) -> list[str]:
        return re.findall(r'<tr><td><a href="/([^"]+)"', ui.get("/browse" + q).text)

    assert order("")[:2] == ["india/Widget-Old", "acme/Widget-70B"]  # released, newest first
    assert order("?sort=size")[:2] == ["echo/Widget-Ultra", "delta/Widget-Max"]
    assert order("?sort=name")[:3] == ["acme/Widget-70B", "acme/Widget-7B", "golf/Widget-Air"]
    assert order("?sort=updated")[0] == "india/Widget-Old"
    body = ui.get("/browse?q=widget&task=text&sort=name").text
    assert 'href="/browse?q=widget&amp;task=text,multimodal&amp;sort=name"' in body  # all state in the URL


# --- recipe page: builder rows and command area ---------------------------------------------------


def test_card_summary_format(ui: TestClient) -> None:
    base = "/acme/Widget-70B"
    assert summary(ui.get(base).text) == "Verified on H200"
    assert summary(ui.get(base + "?hardware=h100").text) == "H100 · TP=8 · BF16"
    assert summary(ui.get(base + "?kv_offload=simple").text) == "H200 · TP=1 · BF16 · Simple"
    assert summary(ui.get(base + "?hardware=h100&strategy=single_node_tep").text) == \
        "H100 · Tensor + Expert Parallel · BF16"
    assert summary(ui.get(base + "?hardware=h100&nodes=2").text) == "2 x H100 · Multi-Node Tensor Parallel · BF16"
    assert summary(ui.get(base + "?hardware=h100&strategy=pd_cluster").text) == "H100 · PD cluster · BF16"
    assert summary(ui.get(base + "?hardware=h100&variant=fp8").text) == "H100 · TP=1 · FP8"
    # a Mooncake instance spanning two nodes keeps the node prefix
    mc = ui.get(base + "?hardware=h100&nodes=2&kv_offload=kv_store_centralized_mooncake").text
    assert summary(mc).startswith("2 x H100 · Multi-Node Tensor Parallel · BF16 · ")


def test_hardware_notes_string_object_and_unsafe_links(ui: TestClient) -> None:
    h100 = ui.get("/acme/Widget-70B?hardware=h100").text
    assert '<aside class="hw-note" role="note">Use the 80 GB SXM parts.</aside>' in h100
    h200 = ui.get("/acme/Widget-70B").text
    note = re.search(r'<aside class="hw-note".*?</aside>', h200, re.S)
    assert note and "<strong>Heads up</strong>" in note.group(0)
    assert 'href="#deployment-notes"' in note.group(0) and "Deployment notes</a>" in note.group(0)
    assert 'id="deployment-notes"' in h200  # the anchor it points at exists in the guide
    # shown above the commands
    assert h200.index('class="hw-note"') < h200.index('class="panel single"')
    b200 = ui.get("/acme/Widget-70B?hardware=b200").text
    assert "Bad link" in b200 and "javascript:" not in b200


def test_install_block_dependencies_by_platform_and_tab(ui: TestClient) -> None:
    def install(q: str) -> str:
        body = ui.get("/acme/Widget-70B" + q).text
        return html.unescape(body.split('<div class="install">', 1)[1].split('<div class="cmd-head">', 1)[0])

    pip = install("")
    assert "uv pip install -U vllm --torch-backend auto" in pip
    assert "widget-tokenizer" in pip and "widget-kernels-cu13" in pip and "widget-kernels-rocm" not in pip
    assert "acme/widget-helper" not in pip  # docker-only step
    assert '<div class="extra optional">' in pip and "widget-bench" in pip
    copy_all = re.search(r'data-copy-text="([^"]*)"', pip)
    assert copy_all and "widget-tokenizer" in copy_all.group(1) and "widget-bench" not in copy_all.group(1)
    assert "vLLM 0.11.0+" in pip
    assert "vLLM 0.12.0+" in install("?variant=fp8")  # max of model and variant minimum
    docker = install("?install=docker")
    assert "docker pull vllm/vllm-openai:latest" in docker and "acme/widget-helper" in docker
    assert 'data-image="vllm/vllm-openai:latest" data-image-alt="vllm/vllm-openai:latest-cu129"' in docker
    amd = install("?hardware=mi355x&install=docker")
    assert "widget-kernels-rocm" in amd and "widget-kernels-cu13" not in amd
    assert "vllm/vllm-openai-rocm:latest" in amd and "CUDA 12.9" not in amd  # CUDA choice on NVIDIA only
    assert "lmcache" in install("?kv_offload=lmcache")  # the KV option's install line
    mc = install("?hardware=h100&kv_offload=kv_store_centralized_mooncake")
    assert "mooncake-transfer-engine" in mc and re.search(r"vLLM 0\.(1[3-9]|[2-9]\d)\.\d+\+", mc)


def test_snippets_use_the_variant_model_id_and_exact_templates(ui: TestClient) -> None:
    from vllm_recipes.web.builder import BENCH_TEMPLATE, CURL_TEMPLATE

    body = html.unescape(re.sub(r"<[^>]+>", "", ui.get("/acme/Widget-70B?hardware=h100&variant=fp8").text))
    curl = CURL_TEMPLATE.replace("{host}", "localhost").replace("{port}", "8000").replace(
        "{model}", "acme/Widget-70B-FP8")
    assert curl in body
    assert BENCH_TEMPLATE.replace("{host}", "localhost").replace("{port}", "8000").replace(
        "{model}", "acme/Widget-70B-FP8") in body
    assert 'base_url="http://localhost:8000/v1"' in body and 'model="acme/Widget-70B-FP8"' in body


def test_nodes_row_shows_gpu_totals(ui: TestClient) -> None:
    body = ui.get("/acme/Widget-70B?hardware=h100").text
    assert "Multi-node (2)" in pill(body, "nodes:multi") or "Multi-node (2)" in body
    multi = body.split('data-key="nodes:multi"', 1)[1].split("</a>", 1)[0]
    assert "Multi-node (2)" in multi and "16 GPUs" in multi
    single = body.split('data-key="nodes:single"', 1)[1].split("</a>", 1)[0]
    assert "8 GPUs" in single
    three = ui.get("/acme/Widget-70B?hardware=h100&nodes=3").text
    assert "Multi-node (3)" in three and "24 GPUs in total" in three
    assert "is-active" in pill(three, "node-count:n-3")


def test_pills_that_would_be_refused_are_disabled(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get(f"/{web.V41}?hardware=dgx_station_gb300").text
    tag = pill(body, "strategy:pd_cluster")
    assert tag.startswith("<span") and "cannot scale out" in tag
    tag = pill(body, "nodes:multi")
    assert tag.startswith("<span") and "cannot scale beyond one node" in tag
    # Ascend 910C offers no supported multi-node strategy for V4: Multi-node is disabled instead of
    # silently landing on PD
    body = client.get(f"/{web.V4}?hardware=ascend_910c&variant=fp8").text
    tag = pill(body, "nodes:multi")
    assert tag.startswith("<span") and "No multi-node strategy" in tag
    # every enabled pill of a few pages lands on a page where that pill is active
    for url in (f"/{web.V41}", f"/{web.V41}?hardware=dgx_station_gb300", f"/{web.V4}?hardware=ascend_910c",
                f"/{web.V41}?nodes=2"):
        page = client.get(url).text
        for m in re.finditer(r'<a class="pill(?! is-active)[^"]*" href="([^"]+)" data-nav data-key="((?:strategy|nodes|'
                             r'node-count|hardware|variant):[^"]+)"', page):
            target = client.get(html.unescape(m.group(1))).text
            assert "is-active" in pill(target, m.group(2)), (url, m.group(2))


def test_advanced_row_gating(ui: TestClient, client: TestClient, web: SimpleNamespace) -> None:
    def options(c: TestClient, url: str) -> list[str]:
        body = c.get(url).text
        return re.findall(r'data-key="advanced:([^"]+)"', body)

    base = ["max_batched_8k", "max_seqs_256", "gpu_mem_095", "max_model_len_auto"]
    assert options(ui, "/acme/Widget-70B") == [*base, "dcp_8"]  # model.supports_dcp
    assert options(ui, "/acme/Widget-70B?hardware=h100&strategy=single_node_tep") == [*base, "dcp_8",
                                                                                       "ep_weight_filter"]
    assert options(client, f"/{web.V41}") == base
    assert options(client, f"/{web.V4}") == [*base, "no_flashinfer_autotune", "ep_weight_filter"]  # TEP default
    body = ui.get("/acme/Widget-70B?advanced=dcp_8").text
    assert "--decode-context-parallel-size 8" in web.page_text(body)


def test_env_panel_lists_braced_names_too() -> None:
    from vllm_recipes.web.builder import env_names

    assert env_names(["a $FOO_1 b ${BAR} $FOO_1x", "export X=$HEAD_IP"], ["HEAD_IP", "VLLM_PORT"]) == \
        ["HEAD_IP", "VLLM_PORT", "FOO_1", "BAR", "FOO_1x"]


@pytest.mark.parametrize("which", ["V41", "V4"])
def test_page_weight_budget(client: TestClient, web: SimpleNamespace, which: str) -> None:
    """The bundled recipe pages: HTML + CSS + JS under 100 KB uncompressed (the site's budget)."""
    page = client.get("/" + getattr(web, which))
    assets = dict.fromkeys(re.findall(r'(?:href|src)="(/static/[^"]+)"', page.text))
    total = len(page.content) + sum(len(client.get(a).content) for a in assets)
    assert len(assets) == 2
    assert total <= 100 * 1024, total


def test_guide_code_carries_only_styled_token_markup(client: TestClient, web: SimpleNamespace) -> None:
    """A token our stylesheet does not colour is plain text (half a bash guide's bytes were such spans)."""
    from vllm_recipes.web.markdown import _STYLED

    guide = client.get("/" + web.V4).text.split('<section class="guide"', 1)[1]
    classes = set(re.findall(r'<span class="([\w-]+)">', guide.split("</section>", 1)[0]))
    assert classes and classes <= _STYLED
    assert "se" not in classes  # line-continuation backslashes are not coloured


# --- omni ------------------------------------------------------------------------------------------


def test_omni_task_axes_rows(ui: TestClient) -> None:
    body = ui.get("/acme/Widget-Omni").text
    assert 'id="row-task"' not in body
    assert 'id="row-axis-input"' in body and 'id="row-axis-output"' in body
    assert body.index('id="row-install"') < body.index('id="row-hardware"') < body.index('id="row-axis-input"') \
        < body.index('id="row-variant"')
    assert "is-active" in pill(body, "axis-input:text") and "is-active" in pill(body, "axis-output:image")
    assert ">Picture<" in body and ">Clip<" in body  # value labels from task_axes
    # changing one axis keeps the other: text->image (t2i) to image input is i2i, to video output is t2v
    assert href(body, "axis-input:image") == "/acme/Widget-Omni?task=i2i"
    assert href(body, "axis-output:video") == "/acme/Widget-Omni?task=t2v"
    i2i = ui.get("/acme/Widget-Omni?task=i2i").text
    assert href(i2i, "axis-output:video") == "/acme/Widget-Omni?task=i2v"
    assert "/v1/chat/completions" in i2i and "image_url" in i2i
    assert "/v1/videos/sync" in ui.get("/acme/Widget-Omni?task=i2v").text


def test_omni_install_follows_the_recipe_and_variant_keeps_hardware(ui: TestClient) -> None:
    body = ui.get("/acme/Widget-Omni").text
    assert 'data-key="install:docker"' in body and 'data-key="install:pip"' not in body  # pip: false
    assert "docker pull vllm/vllm-openai:latest" in body and "docker run" in body
    r = ui.get("/acme/Widget-Omni?install=pip").text
    assert "does not offer a pip install" in r and 'data-url="/acme/Widget-Omni"' in r
    body = ui.get("/acme/Widget-Omni?hardware=h100").text
    assert href(body, "variant:fp8") == "/acme/Widget-Omni?hardware=h100&variant=fp8"
    assert "FP8 halves the memory." in body


# --- header search (needs JavaScript) ---------------------------------------------------------------


@pytest.fixture(scope="module")
def live_ui(ui_dir: Path, web: SimpleNamespace) -> Iterator[Any]:
    with web.LiveServer(create_app(load_catalog(ui_dir))) as server:
        yield server


@pytest.mark.browser
def test_header_search_limits_separators_and_every_word(browser: Any, live_ui: Any) -> None:
    ctx = browser.new_context(base_url=live_ui.url)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto("/browse")

    def results(q: str) -> tuple[list[str], list[str], str]:
        pg.fill("#site-q", q)
        pg.wait_for_selector("#search-results:not([hidden])")
        box = pg.locator("#search-results")
        heads = box.locator(".sh").all_inner_texts()
        links = box.locator("a").evaluate_all("els => els.map(a => a.getAttribute('href'))")
        provs = [h for h in links if h.count("/") == 1 and not h.startswith("/browse")]
        recs = [h for h in links if h.count("/") == 2]
        assert links[-1].startswith("/browse?q="), heads
        return provs, recs, links[-1]

    provs, recs, more = results("widget")
    assert len(provs) == 3 and len(recs) == 6  # nine providers and thirteen recipes match
    assert more == "/browse?q=widget"
    provs, recs, _ = results("wid-get_ultra")  # -_. are ignored
    assert recs == ["/echo/Widget-Ultra"] and provs == []
    provs, recs, _ = results("widget 7b")  # every word must match
    assert recs == ["/acme/Widget-7B"]
    _, recs, more = results("acme ultra")
    assert recs == [] and pg.locator("#search-results .empty").count() == 1
    assert more == "/browse?q=acme%20ultra"
    # the same rules on /browse?q= (no script needed)
    assert pg.goto(live_ui.url + "/browse?q=wid.get+ULTRA").ok
    assert pg.locator("table.browse tbody tr").count() == 1
    assert not errors, errors
    ctx.close()
