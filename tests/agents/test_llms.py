"""llms.txt / llms-full.txt: every command in them is the engine's rendering of the selection it names.

The test parses the files as an agent would (``Selection:`` line, then a fenced
block), resolves each selection again through ``/api/resolve``'s payload and
compares the text; then checks ``build-api`` writes and ``--check``s them.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from click.testing import CliRunner

from vllm_recipes.api.llms import llms_full_txt, llms_txt, recipe_hardware
from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.cli import api_cmds  # noqa: F401  (registers build-api)
from vllm_recipes.cli.main import cli
from vllm_recipes.render.deployment import Block, deployment_text
from vllm_recipes.web.api import resolve_payload

V4 = "deepseek-ai/DeepSeek-V4-Flash"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
BLOCK = re.compile(r"^Selection: (?P<url>\S+)\n\n(?P<fence>`{3,})bash\n(?P<body>.*?)\n(?P=fence)$", re.S | re.M)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def engine_text(catalog: Catalog, url: str) -> str:
    items = parse_qsl(urlsplit(url).query)
    payload = resolve_payload(catalog, items)
    blocks = [Block(c["key"], c["title"], c["text"], c["kind"], c["description"]) for c in payload["commands"]]
    return deployment_text(blocks)


def test_every_command_in_llms_full_is_the_engines(catalog: Catalog) -> None:
    text = llms_full_txt(catalog)
    found = list(BLOCK.finditer(text))
    expected = sum(len(recipe_hardware(catalog, r)) for r in catalog.recipes)
    assert len(found) == expected > 20
    for m in found:
        assert m["body"] == engine_text(catalog, m["url"]), m["url"]
    # one section per recipe, the default hardware marked
    assert "## deepseek-ai/DeepSeek-V4.1-Flash\n" in text
    assert "### gb200 (default): single_node_tp, 1 node" in text
    assert "### h200 (default): single_node_tep, 1 node" in text


def test_llms_txt_lists_every_recipe_with_its_default(catalog: Catalog) -> None:
    text = llms_txt(catalog, base="https://recipes.example")
    assert text.startswith("# vLLM Recipes\n\n> ")
    assert "## How to get a command" in text and "## Recipes" in text and "## Optional" in text
    assert f"- [{V41}](https://recipes.example/{V41}): " in text
    assert "(default gb200, single_node_tp; JSON: https://recipes.example/deepseek-ai/DeepSeek-V4.1-Flash.json)" in text
    assert "[llms-full.txt](https://recipes.example/llms-full.txt)" in text
    for hw in catalog.hardware_profiles:
        assert hw in text


def test_a_recipe_that_cannot_render_is_said_not_dropped(catalog: Catalog,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_recipes.api import llms

    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("engine exploded")

    monkeypatch.setattr(llms, "resolve", boom)
    short, full = llms_txt(catalog), llms_full_txt(catalog)
    assert f"[{V41}](/{V41}): " in short
    assert "no default command (RuntimeError: engine exploded)" in short
    assert "No command: RuntimeError: engine exploded" in full
    assert not BLOCK.search(full)


def test_build_api_writes_and_checks_them(tmp_path: Path, catalog: Catalog) -> None:
    out = tmp_path / "public"
    res = CliRunner().invoke(cli, ["build-api", str(out)])
    assert res.exit_code == 0, res.stderr
    assert (out / "llms.txt").read_text(encoding="utf-8") == llms_txt(catalog)
    assert (out / "llms-full.txt").read_text(encoding="utf-8") == llms_full_txt(catalog)
    assert CliRunner().invoke(cli, ["build-api", str(out), "--check"]).exit_code == 0
    (out / "llms.txt").write_text("stale\n", encoding="utf-8")
    stale = CliRunner().invoke(cli, ["build-api", str(out), "--check"])
    assert stale.exit_code == 1 and "llms.txt" in stale.stdout
    # every build writes both into the new tree before swapping it in: missing or stale ones come back
    (out / "llms.txt").unlink()
    (out / "llms-full.txt").write_text("stale\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["build-api", str(out)]).exit_code == 0
    assert (out / "llms.txt").read_text(encoding="utf-8") == llms_txt(catalog)
    assert (out / "llms-full.txt").read_text(encoding="utf-8") == llms_full_txt(catalog)
    no = tmp_path / "bare"
    assert CliRunner().invoke(cli, ["build-api", str(no), "--no-llms"]).exit_code == 0
    assert not (no / "llms.txt").exists()
