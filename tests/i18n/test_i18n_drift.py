"""Drift check of translations against the current recipe (issue #6, item 4)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from i18n_support import HF_ID, SHIPPED_ZH, current_zh_text

from vllm_recipes.catalog import load_catalog
from vllm_recipes.i18n import check_all, drift, guide_sections, load_translations, translations_for
from vllm_recipes.i18n.drift import check_translation, docker_images, emittable_facts
from vllm_recipes.i18n.facts import EMITTABLE, extract_facts
from vllm_recipes.i18n.translation import read_translation

ZH_REL = "models/deepseek-ai/DeepSeek-V4.1-Flash.zh.md"

#: Reviewed by reading the seed translation (2026-09-20) against today's guide (2026-10-13):
#: the AMD image changed, --no-swa-bounded-replay is no longer passed (MI355X, MI325X), the
#: MI355X section gained the monokernel and bounded-replay paragraphs, three sections are new;
#: and (2026-12-01) the first release with the Blackwell indexer_sparse_logits key became 0.31.0.
#: Everything else the translation says is still true and must not be reported.
EXPECTED_SHIPPED = [
    ("prerequisites", "source-unverified", "Prerequisites"),
    ("prerequisites", "removed-version", "0.30.0"),
    ("prerequisites", "removed-image", "vllm/vllm-openai-rocm:nightly"),
    ("prerequisites", "added-version", "0.31.0"),
    ("prerequisites", "added-image", "vllm/vllm-openai-rocm:nightly-rocm100"),
    ("mi355x-tensor-parallel", "source-unverified", "MI355X Tensor Parallel"),
    ("mi355x-tensor-parallel", "removed-flag", "--no-swa-bounded-replay"),
    ("mi355x-tensor-parallel", "added-flag", "--monokernel"),
    ("mi355x-tensor-parallel", "added-pr", "vllm-project/vllm#60397"),
    ("mi355x-tensor-parallel", "added-pr", "vllm-project/vllm#61082"),
    ("mi355x-tensor-parallel", "added-env", "VLLM_ROCM_MONO_DECODE"),
    ("mi355x-tensor-parallel", "added-pr", "vllm-project/vllm#59039"),
    ("mi355x-tensor-parallel", "added-date", "2026-10-13"),
    ("mi300x-tensor-parallel", "untranslated", "MI300X Tensor Parallel"),
    ("mi325x-tensor-parallel", "source-unverified", "MI325X Tensor Parallel"),
    ("mi325x-tensor-parallel", "removed-flag", "--no-swa-bounded-replay"),
    ("b200-agentx-tuning", "untranslated", "B200 AgentX tuning"),
    ("dgx-station-gb300-tensor-parallel", "untranslated", "DGX Station (GB300) Tensor Parallel"),
]


def _triples(findings):
    return [(f.section, f.label, f.token) for f in findings]


def _shipped(catalog):
    return load_translations(catalog)[HF_ID]["zh"]


def test_shipped_zh_is_stale_with_exactly_the_real_drift(catalog):
    t = _shipped(catalog)
    assert t.rel_path == ZH_REL
    assert t.source_date_updated == "2026-09-20"
    assert t.stale
    assert _triples(t.findings) == EXPECTED_SHIPPED


def test_shipped_zh_names_the_issue_tokens_with_explanations(catalog):
    t = _shipped(catalog)
    removed = {(f.section, f.token): f for f in t.findings if f.kind == "removed"}
    flag = removed[("mi355x-tensor-parallel", "--no-swa-bounded-replay")]
    assert "no longer emits" in flag.explanation and "only as no longer applying" in flag.explanation
    image = removed[("prerequisites", "vllm/vllm-openai-rocm:nightly")]
    assert image.token_kind == "image" and "does not mention it" in image.explanation
    assert image.line is not None
    assert SHIPPED_ZH.read_text(encoding="utf-8").split("\n")[image.line - 1].startswith("## 前置条件")


def test_shipped_zh_unchanged_sections_record_current_hashes(catalog, recipe):
    """Sections that still say what the English says record today's hash: no findings there."""
    t = _shipped(catalog)
    current = {s.slug: s.hash for s in guide_sections(recipe.data["guide"])}
    unverified = {"prerequisites", "mi355x-tensor-parallel", "mi325x-tensor-parallel"}
    for slug, h in t.source_hashes.items():
        if slug in unverified:
            assert h is None
        else:
            assert h == current[slug], slug
    assert t.stale_sections == unverified | {
        "mi300x-tensor-parallel", "b200-agentx-tuning", "dgx-station-gb300-tensor-parallel"}


def test_shipped_zh_keeps_the_seed_text(catalog):
    """The Chinese of the user's document is carried over verbatim (only Markdown restored)."""
    seed = Path(__file__).resolve().parent / "fixtures" / "zh_seed_document.txt"
    text = seed.read_text(encoding="utf-8")
    body = text[text.index("概览（Overview）"):text.index("\n---\n")]
    cjk = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”‘’—–…•×]")
    expected = "".join(cjk.findall(body)).replace("•", "")
    body_md = SHIPPED_ZH.read_text(encoding="utf-8").split("\n---\n", 1)[1]
    assert "".join(cjk.findall(body_md)) == expected


def test_translation_of_current_revision_is_clean(current_dir):
    cat = load_catalog(current_dir)
    ts = load_translations(cat)
    t = ts[HF_ID]["zh"]
    assert t.source_date_updated == "2026-10-13"
    assert t.findings == ()
    assert not t.stale
    # the same result through the per-recipe entry point
    assert not translations_for(cat, cat.recipe(HF_ID))["zh"].stale


def test_bundled_recipe_in_user_dir_still_drifts(recipes_dir):
    """A user directory with the stale translation copied in reports the same findings."""
    shutil.copy(SHIPPED_ZH, recipes_dir / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.zh.md")
    t = load_translations(load_catalog(recipes_dir))[HF_ID]["zh"]
    assert _triples(t.findings) == EXPECTED_SHIPPED


def _write(dirpath: Path, text: str) -> None:
    (dirpath / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.zh.md").write_text(text, encoding="utf-8")


def _check(dirpath: Path):
    return _triples(load_translations(load_catalog(dirpath))[HF_ID]["zh"].findings)


def test_recipe_change_after_translation_is_reported(current_dir):
    """The recipe stops passing --moe-backend aiter and rewrites the sentence: both signals fire."""
    y = current_dir / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml"
    src = y.read_text(encoding="utf-8")
    src = src.replace('      - "--moe-backend"\n      - "aiter"\n', "")
    src = src.replace("- On AMD, the generated command passes `--moe-backend aiter` rather than naming a kernel.",
                      "- On AMD, the generated command lets vLLM pick the MoE backend.")
    y.write_text(src, encoding="utf-8")
    found = _check(current_dir)
    assert ("prerequisites", "removed-flag", "--moe-backend") not in found  # still in the benchmark script
    assert found[0] == ("prerequisites", "source-changed", "Prerequisites")
    assert len(found) == 1


def test_flag_gone_everywhere_is_removed_drift(current_dir):
    y = current_dir / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml"
    src = y.read_text(encoding="utf-8").replace("--mm-encoder-tp-mode", "--mm-encoder-parallel")
    y.write_text(src, encoding="utf-8")
    found = _check(current_dir)
    assert ("images", "source-changed", "Images") in found
    assert ("images", "removed-flag", "--mm-encoder-tp-mode") in found
    assert ("images", "added-flag", "--mm-encoder-parallel") in found


def test_number_change_is_reported(current_dir):
    y = current_dir / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml"
    src = y.read_text(encoding="utf-8").replace("38.5 GiB of KV per GPU", "40.5 GiB of KV per GPU")
    y.write_text(src, encoding="utf-8")
    assert _check(current_dir) == [
        ("h200-tensor-parallel", "source-changed", "H200 Tensor Parallel"),
        ("h200-tensor-parallel", "removed-number", "38.5 GiB"),
        ("h200-tensor-parallel", "added-number", "40.5 GiB"),
    ]


def test_tampered_hash_orphan_and_deliberately_untranslated(current_dir, recipe):
    text = current_zh_text(recipe)
    refs = next(s for s in guide_sections(recipe.data["guide"]) if s.slug == "references")
    # wrong hash for "verifying"
    verifying = next(s for s in guide_sections(recipe.data["guide"]) if s.slug == "verifying")
    text = text.replace(f"verifying: {verifying.hash}", "verifying: sha256:0000000000000000")
    # drop the references section but keep its current hash: deliberately left untranslated
    text = text[: text.index("{#references}")] + "{#gone-section}\n## 已删除的一节\n\n旧内容 `--old-flag`。\n"
    found = _triples(check_translation(load_catalog(current_dir), recipe, _parse(text, current_dir)))
    assert refs.hash in text
    assert found == [
        ("verifying", "source-changed", "Verifying"),
        ("gone-section", "orphaned-section", "gone-section"),
        ("gone-section", "removed-flag", "--old-flag"),
    ]


def _parse(text: str, d: Path):
    p = d / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.zh.md"
    p.write_text(text, encoding="utf-8")
    return read_translation(p, hf_id=HF_ID, lang="zh", rel_path=ZH_REL)


def test_invalid_files_are_stale_not_fatal(recipes_dir):
    d = recipes_dir / "models" / "deepseek-ai"
    (d / "DeepSeek-V4.1-Flash.zh.md").write_text("no front matter\n\n## 标题\n", encoding="utf-8")
    (d / "DeepSeek-V4.1-Flash.ja.md").write_text("---\nlang: [\n---\n", encoding="utf-8")
    (d / "Missing-Model.fr.md").write_text("---\nlang: fr\n---\n", encoding="utf-8")
    results = {t.rel_path: t for t in check_all(load_catalog(recipes_dir))}
    assert set(results) == {f"models/deepseek-ai/{n}" for n in (
        "DeepSeek-V4.1-Flash.ja.md", "DeepSeek-V4.1-Flash.zh.md", "Missing-Model.fr.md")}
    assert all(t.stale for t in results.values())
    zh = results["models/deepseek-ai/DeepSeek-V4.1-Flash.zh.md"]
    assert zh.findings[0].kind == "invalid" and "front matter" in zh.findings[0].explanation
    ja = results["models/deepseek-ai/DeepSeek-V4.1-Flash.ja.md"]
    assert ja.findings[0].kind == "invalid" and ja.findings[0].line in (2, 3)
    fr = results["models/deepseek-ai/Missing-Model.fr.md"]
    assert _triples(fr.findings) == [("-", "no-recipe", "deepseek-ai/Missing-Model")]
    # orphans are not offered to the website
    assert set(load_translations(load_catalog(recipes_dir))) == {HF_ID}


def test_front_matter_mismatches_are_invalid(current_dir, recipe):
    text = current_zh_text(recipe).replace("lang: zh", "lang: ja").replace(
        f"recipe: {HF_ID}", "recipe: deepseek-ai/Other")
    found = [f for f in check_translation(load_catalog(current_dir), recipe, _parse(text, current_dir))
             if f.kind == "invalid"]
    assert [f.token for f in found] == ["ja", "deepseek-ai/Other"]


def test_duplicate_section_claim_is_invalid(current_dir, recipe):
    text = current_zh_text(recipe) + "\n{#overview}\n## 又一个概览\n\n文字。\n"
    found = check_translation(load_catalog(current_dir), recipe, _parse(text, current_dir))
    assert [(f.section, f.kind) for f in found] == [("overview", "invalid")]


def test_translated_header_text_is_checked(current_dir, recipe):
    from vllm_recipes.i18n import content_hash

    desc = recipe.meta["description"]
    good = ("description: DeepSeek V4.1 Flash 视觉-语言 MoE（552B 主干；每个 prompt token 激活 8B，"
            "每个 output token 激活 16B）。\n")
    text = current_zh_text(recipe).replace("source_hashes:\n",
                                           good + f"source_hashes:\n  meta.description: {content_hash(desc)}\n")
    assert check_translation(load_catalog(current_dir), recipe, _parse(text, current_dir)) == []
    bad = text.replace("MoE（552B 主干；", "MoE（600B 主干；")
    found = _triples(check_translation(load_catalog(current_dir), recipe, _parse(bad, current_dir)))
    assert found == [("meta.description", "removed-number", "600B"),
                     ("meta.description", "added-number", "552B")]


def test_emittable_images_follow_docker_resolution(catalog, recipe):
    images = docker_images(catalog, recipe)
    assert images == {"vllm/vllm-openai:nightly", "vllm/vllm-openai:cu129-nightly",
                      "vllm/vllm-openai-rocm:nightly-rocm100"}
    keys = emittable_facts(catalog, recipe)
    assert ("flag", "--monokernel") in keys            # strategy override args
    assert ("flag", "--kv-transfer-config") in keys    # catalog KV offload / PD strategy
    assert ("env", "VLLM_USE_RUST_FRONTEND") in keys   # taxonomy frontends
    assert ("env", "VLLM_ROCM_USE_AITER") in keys      # recipe env map keys
    assert ("flag", "--no-swa-bounded-replay") not in keys
    assert ("image", "vllm/vllm-openai-rocm:nightly") not in keys


def test_emittable_ignores_prose(catalog, recipe):
    """A flag only named in a description is not something the recipe emits."""
    keys = emittable_facts(catalog, recipe)
    assert ("env", "UNIFORM_BATCH") not in keys  # guide-only identifier
    assert all(k[0] in ("flag", "env", "image") for k in keys)


_PIECES = ["--max-model-len", "--kv-cache-dtype fp8", "VLLM_USE_DEEP_GEMM=1", "NCCL_IB_HCA", "vllm/vllm-openai:v0.33.0",
           "lmsysorg/x:1.2", "[doc](https://github.com/a/b/pull/123)", "](", "(", ")", "v0.31.0", "2026-01-02", "#1234",
           "8 GB", "12K tokens", "https://example.com/--not-a-flag", "`--x`", "\\", " ", "\t", "--a.b", "X_Y", "中文",
           "ＶＬＬＭ_Ｘ", "--in-link)", "](--x)"]


@settings(max_examples=300, deadline=None)
@example(["see [the doc](\n--in-link) and --real"])  # a link target across a line break hides a flag
@example(["8\nGB --x"])
@given(st.lists(st.lists(st.lists(st.sampled_from(_PIECES), max_size=6).map(" ".join), max_size=5)
                .map("\n".join), max_size=6))
def test_emittable_keys_from_distinct_lines_equal_those_of_whole_texts(texts: list[str]) -> None:
    """The line-wise shortcut of ``_keys`` finds exactly the flags, env vars and images of the whole texts."""
    whole = {(f.kind, f.key) for t in texts for f in extract_facts(t) if f.kind in EMITTABLE}
    assert drift._keys(texts, emittable=True) == whole
    assert drift._keys(texts) == {(f.kind, f.key) for t in texts for f in extract_facts(t)}  # all kinds: whole texts


def test_emittable_advanced_flags_are_the_builders_presets(recipes_dir: Path) -> None:
    """An expert-parallel strategy opted in by ``strategy_hardware`` gets the builder's EP weight filter
    preset, so a translation naming that flag is not told the recipe cannot emit it."""
    path = recipes_dir / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml"
    text = path.read_text(encoding="utf-8")
    listed = ("compatible_strategies:\n  - single_node_tp\n  - single_node_tep\n  - single_node_dep\n"
              "  - multi_node_tp\n  - multi_node_tep\n  - multi_node_dep\n  - pd_cluster\n")
    assert listed in text
    text = text.replace(listed, "compatible_strategies:\n  - single_node_tp\n")
    text = text.replace("strategy_hardware:\n", "strategy_hardware:\n  multi_node_tep:\n    h200: supported\n", 1)
    path.write_text(text, encoding="utf-8")
    catalog = load_catalog(recipes_dir)
    keys = emittable_facts(catalog, catalog.recipe(HF_ID))
    assert ("flag", "--enable-ep-weight-filter") in keys
    assert ("flag", "--max-num-seqs") in keys  # a preset every strategy has
