"""docs/first-recipe.md and the minimal recipe of docs/reference/recipe-format.md work as written.

The guide's recipes are written out exactly as the reader would save them; each `vllm-recipes`
line of its shell blocks runs (against that directory), the command it documents is the command
printed, the fits say what the guide says, and the pages it links show the same commands.
"""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import engine_cmds, export_cmds, fit_cmds  # noqa: F401  (registers the commands)
from vllm_recipes.web import create_app

DOCS = Path(__file__).resolve().parents[1] / "docs"
GUIDE = (DOCS / "first-recipe.md").read_text(encoding="utf-8")
FORMAT = (DOCS / "reference" / "recipe-format.md").read_text(encoding="utf-8")
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(text: str, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(text) if kind == lang]


def save_recipes(text: str, root: Path, prefix: str) -> list[str]:
    """Write every YAML block whose first line names its file (``# my-recipes/models/...``)."""
    ids = []
    for body in blocks(text, "yaml"):
        m = re.match(rf"# {re.escape(prefix)}(models/(\S+)\.yaml)", body)
        if m:
            (root / m.group(1)).parent.mkdir(parents=True, exist_ok=True)
            (root / m.group(1)).write_text(body, encoding="utf-8")
            ids.append(m.group(2))
    return ids


@pytest.fixture(scope="module")
def my_recipes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("guide") / "my-recipes"
    root.mkdir()
    assert save_recipes(GUIDE, root, "my-recipes/") == ["meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-V3"]
    return root


def guide_commands(root: Path) -> list[list[str]]:
    out = []
    for body in blocks(GUIDE, "sh"):
        for line in body.splitlines():
            if line.startswith("vllm-recipes ") and not line.startswith("vllm-recipes serve"):
                out.append([root.as_posix() if a == "my-recipes" else a for a in shlex.split(line)[1:]])
    return out


def test_every_command_of_the_guide_runs(run_cli: Callable[..., Result], my_recipes: Path) -> None:
    cmds = guide_commands(my_recipes)
    assert len(cmds) == 9
    for args in cmds:
        res = run_cli(*args)
        code, out, err = res.exit_code, res.stdout, res.stderr
        # `fit` exits 1 when the plan does not start (the guide says so); anything else must succeed
        assert code == 0 or (args[0] == "fit" and code == 1 and "does not start" in out), (args, err)
        if args[0] == "validate":
            assert "0 errors, 0 warnings" in out + err


def test_the_dense_recipe_gives_the_documented_command_on_one_gpu(run_cli: Callable[..., Result], my_recipes: Path) -> None:
    documented = next(b for b in blocks(GUIDE, "sh") if b.startswith("vllm serve meta-llama"))
    res = run_cli("command", "meta-llama/Llama-3.1-8B-Instruct", "--recipes-dir", str(my_recipes))
    code, out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and out == documented
    assert "hardware rtx_pro_6000 (default)" in err  # the recipe's one-GPU default, not an 8-GPU node
    res = run_cli("fit", "meta-llama/Llama-3.1-8B-Instruct", "--recipes-dir", str(my_recipes))
    code, out = res.exit_code, res.stdout
    assert code == 0 and "verdict: starts" in out and "RTX Pro 6000 (1x" in out


def test_the_moe_recipe_scales_out_and_fits_as_the_guide_says(run_cli: Callable[..., Result], my_recipes: Path) -> None:
    base = ["deepseek-ai/DeepSeek-V3", "--recipes-dir", str(my_recipes)]
    out = run_cli("command", *base).stdout
    assert "--tensor-parallel-size 8" in out and "--enable-expert-parallel" in out
    out = run_cli("command", *base, "--hardware", "h100").stdout
    assert "# Head" in out and "# Node 1" in out and "--tensor-parallel-size 16" in out
    assert "verdict: starts" in run_cli("fit", *base, "--hardware", "h100").stdout
    dep = run_cli("fit", *base, "--hardware", "h100", "--strategy", "multi_node_dep", "--nodes", "2").stdout
    assert "does not start" in dep and "lever" in dep
    res = run_cli("command", *base, "--hardware", "h100", "--strategy", "multi_node_tp", "--nodes", "3")
    code, err = res.exit_code, res.stderr
    assert code == 2 and "128 attention heads" in err and "2, 4, 8, 16" in err


def test_the_pages_the_guide_links_show_the_same_commands(run_cli: Callable[..., Result], my_recipes: Path) -> None:
    links = re.findall(r"<http://127\.0\.0\.1:8000(/[^>]+)>", GUIDE)
    assert len(links) == 2
    with TestClient(create_app(load_catalog(my_recipes))) as client:
        for link in links:
            page = client.get(link)
            assert page.status_code == 200
            path, _, query = link.partition("?")
            args = ["command", path.strip("/"), "--recipes-dir", str(my_recipes)]
            for k, v in (kv.split("=") for kv in query.split("&") if kv):
                args += [f"--{k}", v]
            first_block = run_cli(*args).stdout.split("\n\n")[0].removeprefix("# Head\n")
            shown = html.unescape(re.search(r'<code class="cmd-text" data-subst>(.*?)</code>', page.text, re.S)[1])
            assert shown.strip() == first_block.strip()
            assert 'id="fit"' in page.text and "fit-verdict fit-ok" in page.text


def test_the_minimal_recipe_of_the_format_reference(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    assert save_recipes(FORMAT, tmp_path, "") == ["acme/Tiny-Chat-1B"]
    res = run_cli("validate", "--recipes-dir", str(tmp_path))
    code, out, err = res.exit_code, res.stdout, res.stderr
    assert code == 0 and "0 errors" in out + err
    res = run_cli("command", "acme/Tiny-Chat-1B", "--recipes-dir", str(tmp_path))
    code, out = res.exit_code, res.stdout
    assert code == 0 and out == "vllm serve acme/Tiny-Chat-1B \\\n  --tensor-parallel-size 1\n"
