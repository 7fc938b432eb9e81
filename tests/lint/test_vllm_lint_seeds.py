"""The release lint on the bundled seeds, end to end: validate, command, explain, API, page, vllm-flags."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli import engine_cmds, inspect_cmds, vllm_cmds  # noqa: F401  (register the commands)
from vllm_recipes.lint.vllm_validate import recipe_release_findings

V4 = "deepseek-ai/DeepSeek-V4-Flash"
V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
V41_FILE = "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory) -> str:
    """The bundled catalog with V4.1 as the seed document wrote it (``min_vllm_version: "0.30.0"``): the shipped
    recipe now says 0.31.0, the first release with the ``indexer_sparse_logits`` key it passes, so the window the
    lint reports is exercised on this copy."""
    import shutil

    root = Path(load_catalog().root)
    out = tmp_path_factory.mktemp("seed") / "recipes"
    shutil.copytree(root, out)
    f = out / V41_FILE
    text = f.read_text(encoding="utf-8")
    assert 'min_vllm_version: "0.31.0"' in text
    f.write_text(text.replace('min_vllm_version: "0.31.0"', 'min_vllm_version: "0.30.0"'), encoding="utf-8")
    return str(out)


def test_seeds_against_033_only_real_findings(catalog) -> None:
    """Forced to 0.33.0 no error remains; the warnings and notes are the recipes' real quirks."""
    found: Counter[tuple[str, str, str]] = Counter()
    for recipe in catalog.recipes:
        for f in recipe_release_findings(catalog, recipe, forced="0.33.0"):
            found[(recipe.hf_id, f.severity, f.code)] += 1
    assert not [k for k in found if k[1] == "error"]
    assert dict(found) == {
        # V4-Flash writes --default-chat-template-kwargs.thinking=true as one argv item
        (V4, "warning", "vllm-joined-value"): 8,
        # the GB10 B12X attention backend is not in stock vLLM (stock image on one arm, Spark image elsewhere)
        (V4, "warning", "vllm-unregistered-name"): 1,
        (V4, "info", "vllm-plugin"): 29,
        # --attention_config spelled with an underscore
        (V4, "info", "vllm-underscore"): 5,
    }


def test_v41_indexer_sparse_logits_window_at_file_line(seed_dir) -> None:
    catalog = load_catalog(seed_dir)
    recipe = catalog.recipe(V41)
    found = [f for f in recipe_release_findings(catalog, recipe) if "indexer_sparse_logits" in f.message]
    assert found and {f.code for f in found} == {"vllm-min-version"}
    f = found[0]
    assert f.file == V41_FILE and f.severity == "warning"
    assert "added in 0.31.0" in f.message and "min_vllm_version 0.30.0" in f.message
    line = (Path(catalog.root) / V41_FILE).read_text(encoding="utf-8").splitlines()[f.line - 1] \
        if (Path(catalog.root) / V41_FILE).exists() else ""
    assert "indexer_sparse_logits" in line


def test_shipped_v41_has_no_release_window(catalog) -> None:
    assert not [f for f in recipe_release_findings(catalog, catalog.recipe(V41)) if "indexer_sparse_logits" in f.message]


def test_validate_cli_reports_the_window_with_file_line(run_cli: Callable[..., Result], seed_dir) -> None:
    r = run_cli("validate", "--recipes-dir", seed_dir)
    assert r.exit_code == 0, r.output
    hits = [ln for ln in r.stdout.splitlines() if "indexer_sparse_logits" in ln]
    assert hits and all(":" in h.split(": warning:")[0] for h in hits)
    lines = (Path(seed_dir) / V41_FILE).read_text(encoding="utf-8").splitlines()
    for h in hits:  # each reported line:col holds the JSON that sets the key
        line_no = int(h.split("DeepSeek-V4.1-Flash.yaml:", 1)[1].split(":", 1)[0])
        assert "indexer_sparse_logits" in lines[line_no - 1] and "added in 0.31.0" in h


def test_validate_vllm_option(run_cli: Callable[..., Result]) -> None:
    r = run_cli("validate", "--vllm", "0.20")
    assert r.exit_code == 1  # V4.1 uses flags, keys and parsers newer than 0.20
    assert "not an option of vLLM 0.20.2" in r.stdout
    bad = run_cli("validate", "--vllm", "0.4")
    assert bad.exit_code == 2 and "known releases" in bad.output


def test_command_shows_info_findings_for_a_custom_image(run_cli: Callable[..., Result]) -> None:
    r = run_cli("command", V4, "--hardware", "dgx_spark_gb10")
    assert r.exit_code == 0
    assert "docker run" in r.stdout and "checked against" not in r.stdout  # stdout stays the commands
    assert "# checked against vLLM 0.33.0 (image eugr/spark-vllm-b12x:latest is not stock vLLM" in r.stderr
    assert "info [vllm-plugin] models/deepseek-ai/DeepSeek-V4-Flash.yaml:" in r.stderr


def test_command_json_and_explain_carry_the_findings(run_cli: Callable[..., Result], seed_dir) -> None:
    obj = json.loads(run_cli("command", V41, "--recipes-dir", seed_dir, "--hardware", "mi355x", "--format", "json").stdout)
    lint = obj["vllm_lint"]
    assert lint["release"] == "0.33.0" and lint["counts"]["warning"] == 3
    assert {f["code"] for f in lint["findings"]} == {"vllm-min-version"}
    assert lint["findings"][0]["file"] == V41_FILE
    assert lint["findings"][0]["key_path"].startswith("strategy_overrides.single_node_tp.hardware_overrides.")
    pinned = json.loads(run_cli("command", V41, "--hardware", "mi355x", "--vllm", "0.29", "--format", "json").stdout)
    assert pinned["vllm_lint"]["release"] == "0.29.0" and pinned["vllm_lint"]["counts"]["error"] > 0
    r = run_cli("explain", V41, "--recipes-dir", seed_dir, "--hardware", "mi355x")
    assert r.exit_code == 0 and "checked against vLLM 0.33.0" in r.stdout and "indexer_sparse_logits" in r.stdout


def test_vllm_extensions_declare_what_a_plugin_adds(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    (tmp_path / "models" / "acme").mkdir(parents=True)
    (tmp_path / "models" / "acme" / "Plug.yaml").write_text(textwrap.dedent("""\
        meta:
          title: Plug
          provider: Acme
          hardware: {h200: verified}
        model:
          model_id: acme/Plug
          min_vllm_version: "0.31.0"
          docker_image: {nvidia: "acme/vllm-plugin:1.0", amd: "acme/vllm-plugin-rocm:1.0"}
          vllm_extensions:
            flags: ["--acme-turbo"]
            env: ["VLLM_ACME_*"]
          base_args: ["--acme-turbo", "--acme-other", "--max_num_seqs", "8"]
          base_env: {VLLM_ACME_X: "1", VLLM_NOPE: "1"}
        variants:
          default: {precision: bf16, vram_minimum_gb: 10}
        compatible_strategies: [single_node_tp]
        """))
    r = run_cli("validate", "--recipes-dir", str(tmp_path), "--json")
    assert r.exit_code == 0, r.output
    mine = [(d["code"], d["severity"], d["line"], d["key_path"]) for d in json.loads(r.stdout)
            if d["file"].endswith("Plug.yaml") and d["code"].startswith("vllm")]
    assert sorted(set(mine)) == [  # once per image (NVIDIA and ROCm)
        ("vllm-plugin", "info", 12, "model.base_args[1]"),     # --acme-other: undeclared, image not stock
        ("vllm-plugin", "info", 13, "model.base_env.VLLM_NOPE"),
        ("vllm-underscore", "info", 12, "model.base_args[2]"),
    ]


def test_api_resolve_and_static_api_carry_vllm_lint(catalog) -> None:
    from vllm_recipes.api.tree import render_selection
    from vllm_recipes.web.app import create_app

    client = TestClient(create_app(catalog))
    body = client.get("/api/resolve", params={"model": V41, "hardware": "mi355x"}).json()
    assert list(body)[:4] == ["rendering", "explain", "selection", "commands"]
    assert body["rendering"]["vllm_lint"]["release"] == "0.33.0"
    assert list(body["rendering"])[-1] == "vllm_lint"
    obj = render_selection(catalog, catalog.recipe(V41), "default", "single_node_tp", "mi355x", 1, [])
    assert obj is not None and obj["vllm_lint"]["counts"] == body["rendering"]["vllm_lint"]["counts"]


def test_page_shows_the_badge(catalog) -> None:
    from vllm_recipes.web.app import create_app

    client = TestClient(create_app(catalog))
    html = client.get(f"/{V41}", params={"hardware": "mi355x"}).text
    assert 'data-vllm-lint' in html and "checked against vLLM 0.33" in html
    assert "indexer_sparse_logits" in html and "has-warnings" in html
    pinned = client.get(f"/{V4}", params={"hardware": "h200", "strategy": "single_node_tp"}).text
    assert "checked against vLLM 0.28" in pinned and "pinned image tag v0.28.0" in pinned  # the variant pins it
    assert "no findings" in pinned


def test_vllm_flags_command(run_cli: Callable[..., Result]) -> None:
    r = run_cli("vllm-flags", "--attention-config")
    assert r.exit_code == 0
    assert "JSON keys of AttentionConfig (unknown keys refused)" in r.stdout
    assert any("indexer_sparse_logits" in ln and "0.31.0-0.33.0" in ln for ln in r.stdout.splitlines())
    r = run_cli("vllm-flags", "swap-space", "--json")
    data = json.loads(r.stdout)
    assert data["releases"] == "0.10.2-0.17.1" and data["in_newest"] is False
    r = run_cli("vllm-flags", "--tensor-paralel-size")
    assert r.exit_code == 2 and "Did you mean --tensor-parallel-size" in r.output
    r = run_cli("vllm-flags", "--vllm", "0.10")
    assert r.stdout.startswith("vLLM 0.10.2: 176 flags")


def test_vllm_option_refused_for_omni_recipes(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    import yaml

    p = tmp_path / "models" / "acme" / "Omni.yaml"
    p.parent.mkdir(parents=True)
    p.write_text(yaml.safe_dump({
        "meta": {"title": "Omni", "provider": "Acme", "tasks": ["omni"], "hardware": {"h200": "verified"}},
        "model": {"model_id": "acme/Omni"}, "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 40}},
        "omni": {"port": 8091, "tasks": [{"id": "t2i", "label": "Text to image"}]}}, sort_keys=False))
    assert run_cli("command", "acme/Omni", "--recipes-dir", str(tmp_path)).exit_code == 0
    r = run_cli("command", "acme/Omni", "--recipes-dir", str(tmp_path), "--vllm", "0.33")
    assert r.exit_code == 2 and "omni recipe" in r.output


def test_explain_json_carries_each_process_lint_with_lines(run_cli: Callable[..., Result], seed_dir) -> None:
    """``explain --json`` keeps its list of process sections; each gets its process's ``vllm_lint``."""
    r = run_cli("explain", V41, "--recipes-dir", seed_dir, "--hardware", "mi355x", "--json")
    assert r.exit_code == 0, r.output
    sections = json.loads(r.stdout)
    assert [s["process"] for s in sections] == ["vLLM"] and sections[0]["entries"]
    lint = sections[0]["vllm_lint"]
    assert lint["release"] == "0.33.0"
    hit = next(f for f in lint["findings"] if "indexer_sparse_logits" in f["message"])
    assert hit["code"] == "vllm-min-version" and hit["process"] == "vLLM"
    assert hit["location"].startswith(V41_FILE + ":") and hit["file"] == V41_FILE
    # a multi-node plan: every rank's section has its own findings (the head's are not the only ones)
    r = run_cli("explain", V41, "--hardware", "h200", "--strategy", "multi_node_tp", "--nodes", "2", "--vllm", "0.29",
            "--json")
    assert r.exit_code == 0, r.output
    sections = json.loads(r.stdout)
    assert [s["process"] for s in sections] == ["Head", "Node 1"]
    for s in sections:
        assert s["vllm_lint"]["release"] == "0.29.0" and s["vllm_lint"]["counts"]["warning"] > 0
        assert {f["process"] for f in s["vllm_lint"]["findings"]} == {s["process"]}
        assert {f["subject"] for f in s["vllm_lint"]["findings"]} >= {"--tool-call-parser", "--reasoning-parser"}
