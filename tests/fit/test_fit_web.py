"""The Fit panel (server-rendered, same figures as the CLI), /api/fit, the fit summary of /api/resolve."""

from __future__ import annotations

import html
import json
import re

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from vllm_recipes.catalog import Catalog
from vllm_recipes.cli import fit_cmds  # noqa: F401  (registers the command)
from vllm_recipes.cli.main import cli
from vllm_recipes.web import create_app

V4 = "deepseek-ai/DeepSeek-V4-Flash"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"


@pytest.fixture(scope="module")
def client(catalog: Catalog) -> TestClient:
    return TestClient(create_app(catalog))


def panel(body: str) -> dict[str, list[str]]:
    sec = re.search(r'<section class="fit" id="fit".*?</section>', body, re.S)
    assert sec, "no Fit panel"
    rows = re.findall(r'<tr><th scope="row">(.*?)</th>(.*?)</tr>', sec.group(0), re.S)
    return {html.unescape(k): [html.unescape(v) for v in re.findall(r"<td>(.*?)</td>", cells)] for k, cells in rows}


def cli_json(*args: str) -> dict:
    return json.loads(CliRunner().invoke(cli, ["fit", *args, "--json"]).stdout)


@pytest.mark.parametrize("query,args", [
    ("hardware=h200&ctx=131072", ["--hardware", "h200", "--context", "131072"]),
    ("hardware=h200&strategy=pd_cluster", ["--hardware", "h200", "--strategy", "pd_cluster"]),
])
def test_panel_matches_the_cli(client: TestClient, query: str, args: list[str]) -> None:
    body = client.get(f"/{V4}?{query}").text
    rows = panel(body)
    obj = cli_json(V4, *args)
    procs = obj["processes"]
    assert rows["Weights per GPU"] == [f"{p['weights_gib']:,.2f} GiB" for p in procs]
    assert rows["KV budget per GPU"] == [f"{p['kv_budget_gib']:,.2f} GiB" for p in procs]
    assert [v.split(" ")[0] for v in rows["KV capacity (tokens)"]] == [f"{p['kv_tokens']:,}" for p in procs]
    assert [v.split(" at ")[0] for v in rows["Concurrency"]] == [f"{p['concurrency']:,}" for p in procs]
    assert [v.split(" at ")[1].split(" ")[0] for v in rows["Concurrency"]] == [f"{p['context']:,}" for p in procs]
    assert ("fit-ok" in body) == obj["starts"]


def test_ctx_links_keep_the_selection_and_round_trip(client: TestClient) -> None:
    body = client.get(f"/{V41}?hardware=h200").text
    links = dict((html.unescape(lab), html.unescape(href)) for href, lab in
                 re.findall(r'<a class="pill[^"]*" href="([^"]+)" data-nav data-key="ctx:[^"]+"[^>]*>([^<]+)</a>', body))
    assert links["128k"] == f"/{V41}?hardware=h200&ctx=131072"
    page = client.get(links["128k"]).text
    assert f'data-url="/{V41}?hardware=h200&amp;ctx=131072"' in page  # canonical, ctx kept on every pill link
    assert "Concurrency" in panel(page) and "at 131,072" in panel(page)["Concurrency"][0]
    assert "hardware=b200&amp;ctx=131072" in page
    frag = client.get(f"/{V41}/builder?hardware=h200&ctx=262144").text  # the in-place (JS) update carries it too
    assert "at 262,144" in panel(frag)["Concurrency"][0]


def test_unusable_ctx_is_ignored_on_the_page(client: TestClient) -> None:
    r = client.get(f"/{V4}?ctx=lots")
    assert r.status_code == 200 and "Unknown parameter" not in r.text
    assert "at 1,048,576" in panel(r.text)["Concurrency"][0]  # the max-model-len


def test_api_fit(client: TestClient) -> None:
    r = client.get("/api/fit", params={"model": V4, "hardware": "h200", "ctx": "128k"})
    assert r.status_code == 200
    obj = r.json()
    assert obj == cli_json(V4, "--hardware", "h200", "--context", "131072")
    r = client.get("/api/fit", params={"gpus": "8", "gpu_memory": "141", "context": "131072"})
    assert r.status_code == 200 and any(x["model"] == V4 for x in r.json()["results"])
    r = client.get("/api/fit", params={"model": V4, "gpu": "RTX 5900"})
    assert r.status_code == 400 and r.json()["param"] == "gpu" and "RTX 5090" in r.json()["choices"]
    for bad in ({"model": V4, "ctx": "lots"}, {"gpus": "0", "gpu_memory": "8"}, {"gpu_memory": "x"}, {}):
        r = client.get("/api/fit", params=bad)
        assert r.status_code == 400, bad
        assert set(r.json()) == {"error", "param", "choices"}
    assert client.get("/api/fit", params={"model": V4, "hardware": "h999"}).status_code == 400


def test_resolve_carries_the_fit_summary_and_openapi_documents_fit(client: TestClient) -> None:
    fit = client.get("/api/resolve", params={"model": V4, "hardware": "h200"}).json()["fit"]
    full = cli_json(V4, "--hardware", "h200")
    assert fit["starts"] == full["starts"]
    assert fit["processes"][0]["kv_tokens"] == full["processes"][0]["kv_tokens"]
    at = client.get("/api/resolve", params={"model": V4, "hardware": "h200", "ctx": "131072"}).json()["fit"]
    assert at["processes"][0]["context"] == 131072  # a page URL's query works as is
    spec = client.get("/api/openapi.json").json()
    assert "/api/fit" in spec["paths"]
    names = {p["name"] for p in spec["paths"]["/api/fit"]["get"]["parameters"]}
    assert {"model", "hardware", "ctx", "gpu", "gpu_memory", "gpus"} <= names
    assert "fit" in spec["components"]["schemas"]["Resolve"]["properties"]
