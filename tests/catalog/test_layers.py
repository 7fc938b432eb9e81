"""Layered catalogs: the bundled catalog is the base layer; shared files merge per entry and per field."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from validate_helpers import GOOD

from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli.main import cli

#: a public-layout taxonomy: h200 without our device_resource/arch, and a profile of its own
PUBLIC_TAXONOMY = """\
hardware_profiles:
  h200:
    brand: NVIDIA
    generation: hopper
    display_name: "H200 (public)"
    gpu_count: 8
    vram_gb: 1128
    multi_node: false
  newbox:
    brand: NVIDIA
    generation: hopper
    display_name: New box
    gpu_count: 4
    vram_gb: 320
tasks:
  - id: text
    display_name: Text
strategies: [single_node_tp, multi_node_tp, pd_cluster]
"""

#: a public pd_cluster strategy without our routers block
PUBLIC_PD = """\
name: pd_cluster
display_name: "PD cluster (public)"
description: Disaggregated prefill and decode.
"""


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def _public(tmp_path: Path) -> Path:
    return _tree(tmp_path / "public", {
        "taxonomy.yaml": PUBLIC_TAXONOMY,
        "strategies/pd_cluster.yaml": PUBLIC_PD,
        "strategies/single_node_tp.yaml": "name: single_node_tp\ndisplay_name: TP (public)\n",
        "strategies/single_node_tep.yaml": "name: single_node_tep\ndisplay_name: TEP (public)\n",
        "models/org/Test.yaml": GOOD,
        "models/org/Other.yaml": GOOD.replace("org/Test", "org/Other").replace("Test Model", "Other Model"),
    })


def test_a_public_taxonomy_keeps_the_bundled_fields_it_lacks(tmp_path: Path) -> None:
    cat = load_catalog(_public(tmp_path))
    h200 = cat.hardware_profiles["h200"]
    assert h200["display_name"] == "H200 (public)"  # the public value wins field by field
    assert h200["device_resource"] == "nvidia.com/gpu" and h200["arch"] == "sm90"  # ours stay
    # the sources decide which entries exist (the bundled catalog only fills in their fields), in their order
    assert list(cat.hardware_profiles) == ["h200", "newbox"]
    assert "device_resource" not in cat.hardware_profiles["newbox"]
    # a section whose shape differs (a list of tasks here, a mapping in ours) is replaced whole
    assert cat.taxonomy["tasks"] == ({"id": "text", "display_name": "Text"},)
    assert "rust" in cat.frontends  # a section the public file lacks comes from ours


def test_a_public_strategy_keeps_our_fields(tmp_path: Path) -> None:
    cat = load_catalog(_public(tmp_path))
    pd = cat.strategies["pd_cluster"]
    assert pd["display_name"] == "PD cluster (public)"
    assert "routers" in pd  # our extension block survives
    assert cat.strategy_files["pd_cluster"] == "strategies/pd_cluster.yaml"
    # the source's strategies/ decides which exist (file order), the bundled files fill in their fields
    assert list(cat.serving_strategies) == ["pd_cluster", "single_node_tep", "single_node_tp"]
    assert cat.serving_strategies["single_node_tp"]["deploy_type"] == "single_node"
    assert "kv_store_centralized_mooncake" in cat.kv_stores  # a directory no source has: the bundled one


def test_positions_name_the_layer_each_value_came_from(tmp_path: Path) -> None:
    cat = load_catalog(_public(tmp_path))
    assert cat.taxonomy_file == "taxonomy.yaml"
    doc = cat.source_for("taxonomy.yaml")
    assert doc is not None
    own = doc.position(("hardware_profiles", "h200", "display_name"))
    assert (own.file, own.line) == ("taxonomy.yaml", 5)
    base = doc.position(("hardware_profiles", "h200", "device_resource"))
    assert base.file == "<bundled>/taxonomy.yaml" and base.line > 1
    assert cat.origin_of("taxonomy.yaml", ("hardware_profiles", "h200", "device_resource")) == \
        "<bundled>/taxonomy.yaml"


def test_k8s_export_works_on_a_taxonomy_without_device_resource(tmp_path: Path) -> None:
    root = _public(tmp_path)
    got = CliRunner().invoke(cli, ["export", "org/Test", "--to", "k8s", "--recipes-dir", str(root)])
    assert got.exit_code == 0, got.output
    assert "nvidia.com/gpu" in got.output


def test_two_sources_a_later_recipe_wins_and_a_new_one_appears(tmp_path: Path) -> None:
    public = _public(tmp_path)
    private = _tree(tmp_path / "private", {
        "models/org/Test.yaml": GOOD.replace("Test Model", "Test Model (ours)"),
        "models/acme/Mine.yaml": GOOD.replace("org/Test", "acme/Mine").replace("Test Model", "Mine"),
        "taxonomy.yaml": "hardware_profiles:\n  h200:\n    display_name: Our H200\n",
    })
    cat = load_catalog([public, private])
    assert list(cat.hardware_profiles) == ["h200", "newbox"]  # sources merge entries among themselves
    ids = [r.hf_id for r in cat.recipes]
    assert ids == ["org/Other", "org/Test", "acme/Mine"]  # replaced in place, new ones after
    test = cat.recipe("org/Test")
    assert test is not None and test.title == "Test Model (ours)" and test.source == str(private)
    other = cat.recipe("org/Other")
    assert other is not None and other.source == str(public)
    assert other.rel_path == f"{public.resolve()}/models/org/Other.yaml"  # lower layers: absolute paths
    h200 = cat.hardware_profiles["h200"]
    # three layers, field by field: ours (top), the public one, the bundled one
    assert (h200["display_name"], h200["vram_gb"], h200["device_resource"]) == ("Our H200", 1128, "nvidia.com/gpu")
    assert cat.layers == ("bundled", str(public), str(private))
    assert cat.recipe("deepseek-ai/DeepSeek-V4-Flash") is None  # bundled recipes are not a layer of others


def test_repeated_recipes_dir_on_the_command_line(tmp_path: Path) -> None:
    public = _public(tmp_path)
    private = _tree(tmp_path / "private", {
        "models/acme/Mine.yaml": GOOD.replace("org/Test", "acme/Mine").replace("Test Model", "Mine")})
    got = CliRunner().invoke(cli, ["list", "--json", "--recipes-dir", str(public), "--recipes-dir", str(private)])
    assert got.exit_code == 0, got.output
    assert "acme/Mine" in got.output and "org/Other" in got.output
    env = CliRunner().invoke(cli, ["list", "--json"], env={"VLLM_RECIPES_DIR": f"{public} {private}"})
    assert env.exit_code == 0 and env.output == got.output


def test_the_bundled_catalog_alone_is_unchanged() -> None:
    cat = load_catalog()
    assert cat.layers == ("bundled",) and cat.taxonomy_file == "taxonomy.yaml"
    assert {r.hf_id for r in cat.recipes} >= {"deepseek-ai/DeepSeek-V4-Flash"}
    assert all(r.source == "bundled" for r in cat.recipes)


def test_explain_names_the_recipe_source_and_where_each_hardware_fact_came_from(tmp_path: Path) -> None:
    root = _public(tmp_path)
    got = CliRunner().invoke(cli, ["explain", "org/Test", "--hardware", "h200", "--recipes-dir", str(root)])
    assert got.exit_code == 0, got.output
    lines = got.output.splitlines()
    assert f"recipe from {root}: models/org/Test.yaml" in lines
    assert "hardware h200: brand, generation, display_name, gpu_count, vram_gb, multi_node from taxonomy.yaml" in lines
    assert any(ln.startswith("hardware h200: ") and "device_resource" in ln and ln.endswith(
        "from <bundled>/taxonomy.yaml") for ln in lines)
    shown = CliRunner().invoke(cli, ["show", "org/Test", "--json", "--recipes-dir", str(root)])
    h200 = next(h for h in __import__("json").loads(shown.stdout)["hardware"] if h["id"] == "h200")
    assert h200["sources"]["device_resource"] == "<bundled>/taxonomy.yaml"
    assert h200["sources"]["display_name"] == "taxonomy.yaml"
