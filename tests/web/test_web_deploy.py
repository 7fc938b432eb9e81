"""The Deploy tabs and ``/api/export``: the same bytes as ``vllm-recipes export -o -``, over real HTTP too."""

from __future__ import annotations

import html
import os
import re
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from vllm_recipes.cli import export_cmds  # noqa: F401  (registers `export`)
from vllm_recipes.cli.main import cli

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
DEP2 = "hardware=h200&strategy=multi_node_dep"


def _cli(*args: str) -> str:
    res = CliRunner().invoke(cli, ["export", *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def _tabs(page: str) -> dict[str, str]:
    """Deploy tab key -> its panel HTML."""
    section = page[page.index("data-deploy-targets"):]
    parts = section.split('<div class="panel" data-target="')[1:]
    return {part.split('"', 1)[0]: part for part in parts}


def _href(panel: str) -> str:
    return html.unescape(re.search(r'<a class="btn" href="([^"]+)" download>', panel).group(1))


def test_page_shows_the_four_deploy_tabs_linking_the_cli_bytes(client: Any) -> None:
    page = client.get(f"/{V41}?{DEP2}").text
    labels = re.findall(r'<label for="dt-[a-z0-9-]+" class="tab">([^<]+)</label>', page)
    assert labels == ["Kubernetes", "Compose", "Slurm", "vLLM config"]
    tabs = _tabs(page)
    assert set(tabs) == {"k8s", "compose", "slurm", "vllm-config"}
    args = ["--hardware", "h200", "--strategy", "multi_node_dep"]
    for target in ("k8s", "slurm", "vllm-config"):
        href = _href(tabs[target])
        assert client.get(href).text == _cli(V41, *args, "--to", target), target
    # a selection the target cannot express: the link answers with the reason
    r = client.get(_href(tabs["compose"]))
    assert r.status_code == 422 and "Compose runs on one machine" in r.json()["error"]


def test_download_link_works_without_javascript(client: Any) -> None:
    page = client.get(f"/{V41}").text
    k8s = _tabs(page)["k8s"]
    href = html.unescape(re.search(r'<a class="btn" href="([^"]+)" download>', k8s).group(1))
    r = client.get(href)
    assert r.status_code == 200
    assert r.headers["content-disposition"] == 'attachment; filename="deepseek-v4-1-flash-k8s.yaml"'
    assert r.text == _cli(V41, "--to", "k8s")


def test_api_export_media_types_and_errors(client: Any) -> None:
    base = f"/api/export?model={V41}&{DEP2}"
    r = client.get(base + "&to=k8s&namespace=serving&name=dsv41&pvc=hf")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/yaml")
    assert r.text == _cli(V41, "--hardware", "h200", "--strategy", "multi_node_dep", "--to", "k8s",
                          "--namespace", "serving", "--name", "dsv41", "--pvc", "hf")
    r = client.get(base + "&to=slurm")
    assert r.headers["content-type"].startswith("text/x-shellscript")
    r = client.get(base + "&to=compose")
    assert r.status_code == 422 and r.json()["param"] == "to"
    r = client.get(base + "&to=helm")
    assert r.status_code == 400 and r.json()["choices"] == ["k8s", "compose", "slurm", "vllm-config"]
    r = client.get(f"/api/export?model={V41}&hardware=nope&to=k8s")
    assert r.status_code == 400 and r.json()["param"] == "hardware"
    r = client.get(f"/api/export?model={V41}&to=k8s&name=Bad_Name")
    assert r.status_code == 422 and "DNS label" in r.json()["error"]


def test_openapi_describes_api_export(client: Any) -> None:
    spec = client.get("/api/openapi.json").json()
    op = spec["paths"]["/api/export"]["get"]
    names = [p["name"] for p in op["parameters"]]
    assert {"model", "to", "namespace", "name", "pvc", "image", "hardware"} <= set(names)
    assert set(op["responses"]["200"]["content"]) == {"text/yaml", "text/x-shellscript", "text/plain"}


def test_api_export_over_real_http(live: Any) -> None:
    r = httpx.get(f"{live.url}/api/export", params={"model": V41, "to": "compose"}, timeout=30)
    assert r.status_code == 200
    assert r.text == _cli(V41, "--to", "compose")


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")
def test_deploy_tab_copy_and_remembered_target(browser: Any, live: Any) -> None:
    ctx = browser.new_context(base_url=live.url, permissions=["clipboard-read", "clipboard-write"])
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"/{V41}?{DEP2}")
    pg.click('label[for="dt-slurm"]')
    panel = pg.locator('[data-deploy-targets] .panel[data-target="slurm"]')
    assert panel.is_visible()
    panel.locator("button.copy").wait_for(state="visible")
    panel.locator("button.copy").click()
    pg.wait_for_function("() => document.querySelector('[data-target=slurm] button.copy').textContent === 'Copied'")
    assert pg.evaluate("navigator.clipboard.readText()") == _cli(V41, "--hardware", "h200", "--strategy",
                                                                  "multi_node_dep", "--to", "slurm")
    # an in-place builder update keeps the chosen target
    pg.click('a[data-key="hardware:b200"]')
    pg.wait_for_url(re.compile(r"hardware=b200"))
    pg.wait_for_function("() => document.querySelector('#dt-slurm') && document.querySelector('#dt-slurm').checked")
    pg.wait_for_function("() => document.querySelector('[data-target=slurm] pre code').textContent"
                         ".includes('--gpus-per-node=8')")
    # a target that cannot express the selection says why
    pg.click('label[for="dt-compose"]')
    pg.wait_for_function("() => document.querySelector('[data-target=compose] p').textContent.includes('one machine')")
    assert not errors, errors
    ctx.close()
