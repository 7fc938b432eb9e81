"""``vllm-recipes diff``: every change class on constructed catalog pairs, grouped output, JSON, git revisions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.catalog.fileset import load_catalog_from_files
from vllm_recipes.catalog.gitrev import GitSourceError, read_git_files
from vllm_recipes.cli.main import cli
from vllm_recipes.review.compare import Impact, compare_catalogs
from vllm_recipes.review.report import markdown_report, recipe_lines

V4 = "models/deepseek-ai/DeepSeek-V4-Flash.yaml"
V41 = "models/deepseek-ai/DeepSeek-V4.1-Flash.yaml"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return {p.relative_to(BUNDLED_DIR).as_posix(): p.read_bytes() for p in BUNDLED_DIR.rglob("*.yaml")}


@pytest.fixture(scope="module")
def base(files: dict[str, bytes]):
    return load_catalog_from_files(files)


def edited(files: dict[str, bytes], rel: str, old: str, new: str) -> dict[str, bytes]:
    text = files[rel].decode()
    assert text.count(old) == 1, f"fixture text not found once in {rel}: {old!r}"
    return {**files, rel: text.replace(old, new).encode()}


def impact_of(base, files: dict[str, bytes], rel: str, old: str, new: str) -> Impact:
    return compare_catalogs(base, load_catalog_from_files(edited(files, rel, old, new)), jobs=1)


def line_of(files: dict[str, bytes], rel: str, needle: str) -> int:
    return files[rel].decode().split(needle)[0].count("\n") + 1


def test_memory_catalog_equals_the_disk_catalog(base) -> None:
    disk = load_catalog(BUNDLED_DIR)
    assert base.recipes == disk.recipes
    assert (base.taxonomy, base.strategies, base.platforms) == (disk.taxonomy, disk.strategies, disk.platforms)
    assert [s.rel_path for s in base.sources] == [s.rel_path for s in disk.sources]


def test_missing_shared_files_fall_back_to_the_bundled_ones(files: dict[str, bytes]) -> None:
    only_models = {k: v for k, v in files.items() if k.startswith("models/")}
    cat = load_catalog_from_files(only_models)
    assert cat.taxonomy == load_catalog().taxonomy
    assert cat.strategy_files["pd_cluster"] == "<bundled>/strategies/pd_cluster.yaml"


def test_no_change_reports_nothing(base, files) -> None:
    impact = compare_catalogs(base, load_catalog_from_files(files), jobs=1)
    assert not impact.has_changes and impact.recipes == [] and impact.recipes_compared == 0


def test_flag_value_change_is_grouped_by_brand_with_its_yaml_line(base, files) -> None:
    old = '      - "--max-num-seqs"\n      - "512"'
    after = edited(files, V4, old, old.replace("512", "256"))
    impact = compare_catalogs(base, load_catalog_from_files(after), jobs=1)
    [recipe] = impact.recipes
    assert recipe.hf_id == "deepseek-ai/DeepSeek-V4-Flash" and recipe.status == "changed"
    [group] = recipe.groups
    line = line_of(after, V4, '      - "256"')
    assert group.change.before == "--max-num-seqs 512" and group.change.after == "--max-num-seqs 256"
    assert group.change.cause == f"{V4}:{line}"
    assert group.scope.startswith("on all 4 AMD GPUs")
    assert {k.hardware for k in group.keys} == {"mi300x", "mi325x", "mi350x", "mi355x"}
    assert set(group.processes) >= {"vLLM", "Prefill", "Decode"}
    assert recipe_lines(recipe)[0].startswith("`--max-num-seqs 512` -> `256` on all 4 AMD GPUs")
    d = impact.to_dict()
    change = d["recipes"][0]["changes"][0]
    assert change["kind"] == "flag" and change["change"] == "changed" and change["name"] == "--max-num-seqs"
    assert change["cause"] == f"{V4}:{line}" and change["count"] == len(group.keys)
    assert d["summary"]["recipes_changed"] == 1 and d["summary"]["changes"] == 1


def test_added_hardware_block_adds_flags_on_that_generation_only(base, files) -> None:
    impact = impact_of(base, files, V4, "hardware_overrides:\n  blackwell:",
                       'hardware_overrides:\n  hopper:\n    extra_args:\n      - "--max-num-seqs"\n'
                       '      - "64"\n  blackwell:')
    [recipe] = impact.recipes
    added = [g for g in recipe.groups if g.change.verb == "added"]
    assert added and all(g.change.after == "--max-num-seqs 64" for g in added)
    touched = {k.hardware for g in recipe.groups for k in g.keys}
    assert touched == {"h100", "h200"}


def test_removed_variant_makes_its_selections_disappear(base, files) -> None:
    text = files[V4].decode()
    start = text.index("  redhat_nvfp4:")
    end = text.index("\n  dspark:", start) + 1
    impact = impact_of(base, files, V4, text[start:end], "")
    [recipe] = impact.recipes
    assert recipe.disappeared and {k.variant for k in recipe.disappeared} == {"redhat_nvfp4"}
    assert not recipe.appeared
    assert recipe.selections_head == recipe.selections_base - len(recipe.disappeared)
    assert any(line.startswith(f"{len(recipe.disappeared)} selections disappeared") for line in recipe_lines(recipe))


def test_moved_default_strategy_is_reported_as_a_moved_default(base, files) -> None:
    impact = impact_of(base, files, V4, "default_strategy: single_node_tep", "default_strategy: single_node_tp")
    [recipe] = impact.recipes
    moved = [g for g in recipe.defaults if g.change.name == "recommended strategy"]
    assert moved and all((g.change.before, g.change.after) == ("single_node_tep", "single_node_tp") for g in moved)
    assert recipe.to_dict()["defaults"][0]["kind"] == "default"


def test_taxonomy_change_reaches_every_recipe_using_it(base, files) -> None:
    impact = impact_of(base, files, "taxonomy.yaml", 'VLLM_USE_RUST_FRONTEND: "1"', 'VLLM_USE_RUST_FRONTEND: "2"')
    assert impact.shared_changed == ["taxonomy.yaml"]
    assert impact.recipes_compared == 2
    assert {r.hf_id for r in impact.recipes} == {"deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4.1-Flash"}
    for recipe in impact.recipes:
        env = [g for g in recipe.groups if g.change.kind == "env"]
        assert env and env[0].change.before == "VLLM_USE_RUST_FRONTEND=1"
        assert env[0].change.after == "VLLM_USE_RUST_FRONTEND=2"


def test_new_validation_finding_and_broken_file_are_reported(base, files) -> None:
    impact = impact_of(base, files, V41, "\nmodel:\n", "\ndefault_strategy_typo: x\nmodel:\n")
    [recipe] = impact.recipes
    assert any("default_strategy_typo" in f.key_path for f in recipe.findings)
    broken = compare_catalogs(base, load_catalog_from_files({**files, V41: b"meta: [unclosed\n"}), jobs=1)
    [recipe] = broken.recipes
    assert recipe.status == "broken" and recipe.findings[0].code == "yaml"
    assert recipe_lines(recipe)[0] == f"recipe no longer loads: its {recipe.selections_base} selections are gone"


def test_parallel_comparison_equals_serial(base, files) -> None:
    after = load_catalog_from_files(edited(files, "taxonomy.yaml", 'VLLM_USE_RUST_FRONTEND: "1"',
                                           'VLLM_USE_RUST_FRONTEND: "0"'))
    assert compare_catalogs(base, after, jobs=2).to_dict() == compare_catalogs(base, after, jobs=1).to_dict()


def test_markdown_is_collapsible_and_capped(base, files) -> None:
    impact = impact_of(base, files, "taxonomy.yaml", 'VLLM_USE_RUST_FRONTEND: "1"', 'VLLM_USE_RUST_FRONTEND: "2"')
    full = markdown_report(impact)
    assert full.count("<details>") == 2 and "**2 of 2 recipes changed" in full
    capped = markdown_report(impact, cap=len(full) - 50)
    assert len(capped) < len(full) and capped.count("<details>") == 1
    assert "1 more recipe not shown" in capped and "**2 of 2 recipes changed" in capped


# --- the command line, directories and git revisions -------------------------------------------

def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def repo(tmp_path: Path, files: dict[str, bytes]) -> Path:
    """A git repository with the catalog under ``recipes/``, one commit, then an uncommitted edit."""
    root = tmp_path / "repo"
    _write(root / "recipes", files)
    (root / "README").write_text("not a recipe\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    _write(root / "recipes", edited(files, V4, '      - "--max-num-seqs"\n      - "512"',
                                    '      - "--max-num-seqs"\n      - "128"'))
    return root


def test_git_revision_is_read_without_touching_the_tree(repo: Path, files) -> None:
    before = (repo / "recipes" / V4).read_bytes()
    cat = load_catalog_from_files(read_git_files("HEAD", "recipes", repo))
    assert cat.recipe("deepseek-ai/DeepSeek-V4-Flash").doc.data == load_catalog_from_files(files).recipe(
        "deepseek-ai/DeepSeek-V4-Flash").doc.data
    assert (repo / "recipes" / V4).read_bytes() == before
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout.strip() == f"M recipes/{V4}"
    with pytest.raises(GitSourceError, match="unknown git revision"):
        read_git_files("nope", None, repo)
    with pytest.raises(GitSourceError, match="not a directory"):
        read_git_files("HEAD", "missing", repo)


def test_cli_diff_against_a_git_revision(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo / "recipes")
    monkeypatch.delenv("VLLM_RECIPES_DIR", raising=False)
    runner = CliRunner()
    text = runner.invoke(cli, ["diff", "git:HEAD"])
    assert text.exit_code == 0, text.output
    assert "`--max-num-seqs 512` -> `128` on all 4 AMD GPUs" in text.output
    assert f"({V4}:" in text.output
    as_json = runner.invoke(cli, ["diff", "git:HEAD", "--json"])
    data = json.loads(as_json.output)
    assert data["base"] == "git:HEAD" and data["recipes"][0]["changes"][0]["after"] == "--max-num-seqs 128"
    md = runner.invoke(cli, ["diff", "git:HEAD", "--format", "markdown"])
    assert md.output.startswith("### Recipe impact: `git:HEAD` -> `.`") and "<details>" in md.output
    assert runner.invoke(cli, ["diff", "git:HEAD", "--fail-on-change"]).exit_code == 1
    assert runner.invoke(cli, ["diff", "git:HEAD", ".", "--fail-on-change"]).exit_code == 1
    same = runner.invoke(cli, ["diff", "git:HEAD", "git:HEAD", "--fail-on-change"])
    assert same.exit_code == 0 and "No rendered change" in same.output


def test_cli_diff_two_directories_and_bad_sources(tmp_path: Path, files) -> None:
    _write(tmp_path / "a", files)
    _write(tmp_path / "b", edited(files, V4, "default_strategy: single_node_tep", "default_strategy: single_node_tp"))
    runner = CliRunner()
    res = runner.invoke(cli, ["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    assert res.exit_code == 0 and "default recommended strategy: `single_node_tep` -> `single_node_tp`" in res.output
    missing = runner.invoke(cli, ["diff", str(tmp_path / "nope"), str(tmp_path / "b")])
    assert missing.exit_code == 2 and "not found" in missing.output
    nogit = runner.invoke(cli, ["diff", "git:HEAD", str(tmp_path / "b")])
    assert nogit.exit_code == 2 and "git:HEAD" in nogit.output


def test_cli_diff_two_selections_of_one_recipe() -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["diff", "deepseek-ai/DeepSeek-V4.1-Flash", "--a", "hardware=h200", "--b",
                              "hardware=b200", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert (data["base"], data["head"]) == ("hardware=h200", "hardware=b200")
    changes = {c["name"]: c for c in data["recipes"][0]["changes"]}
    assert changes["--tensor-parallel-size"]["before"] == "--tensor-parallel-size 4"
    assert changes["--kv-cache-dtype"]["change"] == "added"
    bad = runner.invoke(cli, ["diff", "deepseek-ai/DeepSeek-V4.1-Flash", "--a", "gpu=h200", "--b", "hardware=b200"])
    assert bad.exit_code == 2 and "hardware" in bad.output
    unknown = runner.invoke(cli, ["diff", "deepseek-ai/DeepSeek-V4.1-Flash", "--a", "hardware=zz", "--b",
                                  "hardware=b200"])
    assert unknown.exit_code == 2 and "h200" in unknown.output


def test_comparison_loads_only_changed_recipes_and_parses_shared_files_once(files) -> None:
    from vllm_recipes.review.compare import catalogs_for_comparison

    after = edited(files, V4, "default_strategy: single_node_tep", "default_strategy: single_node_tp")
    a, b = catalogs_for_comparison(files, after)
    assert [r.rel_path for r in a.recipes] == [V4] == [r.rel_path for r in b.recipes]
    assert a.source_for("taxonomy.yaml").layers[-1] is b.source_for("taxonomy.yaml").layers[-1]  # type: ignore[union-attr]
    full = compare_catalogs(load_catalog_from_files(files), load_catalog_from_files(after), jobs=1)
    assert compare_catalogs(a, b, jobs=1).to_dict() == full.to_dict()
    shared = edited(files, "taxonomy.yaml", 'VLLM_USE_RUST_FRONTEND: "1"', 'VLLM_USE_RUST_FRONTEND: "2"')
    a, b = catalogs_for_comparison(files, shared)
    assert len(a.recipes) == len(b.recipes) == 2
    assert a.recipe("deepseek-ai/DeepSeek-V4-Flash").doc is b.recipe("deepseek-ai/DeepSeek-V4-Flash").doc


OMNI = """\
meta:
  title: Tiny omni
  provider: Acme
  tasks: [omni]
  hardware:
    h200: verified
model:
  model_id: acme/Omni
  base_args: ["--trust-remote-code"]
variants:
  default:
    precision: bf16
    vram_minimum_gb: 40
omni:
  port: 8091
  tasks:
    - id: t2v
      extra_args: ["--flow-shift", "5.0"]
    - id: t2i
"""


def test_omni_recipes_are_compared_per_task() -> None:
    rel = "models/acme/Omni.yaml"
    before = {rel: OMNI.encode()}
    after = {rel: OMNI.replace('"5.0"', '"7.0"').encode()}
    impact = compare_catalogs(load_catalog_from_files(before), load_catalog_from_files(after), jobs=1)
    [recipe] = impact.recipes
    [group] = recipe.groups
    assert (group.change.before, group.change.after) == ("--flow-shift 5.0", "--flow-shift 7.0")
    assert {k.strategy for k in group.keys} == {"task:t2v"} and group.scope.startswith("with task t2v, ")
    line = OMNI.split('"5.0"')[0].count("\n") + 1
    assert group.change.cause == f"{rel}:{line}"
