"""Section splitting, slugs, hashes and fact extraction."""

from __future__ import annotations

import signal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.attrs import attrs_block_plugin

from vllm_recipes.i18n.facts import extract_facts
from vllm_recipes.i18n.sections import PREAMBLE_SLUG, content_hash, guide_sections, heading_slug
from vllm_recipes.i18n.translation import parse_translation

V41_SLUGS = [
    "overview", "context-length", "images", "reasoning-and-tool-calling", "speculative-decoding",
    "serving-text-only", "prefilldecode-disaggregation", "memory", "prerequisites", "verifying",
    "performance-tuning", "mi355x-benchmark-server", "mi355x-tensor-parallel", "mi300x-tensor-parallel",
    "mi325x-tensor-parallel", "h200-tensor-parallel", "blackwell-tp-and-dep", "b200-agentx-tuning",
    "dgx-station-gb300-tensor-parallel", "kv-cache-offloading", "references",
]


def test_v41_guide_sections(recipe):
    secs = guide_sections(recipe.data["guide"])
    assert [s.slug for s in secs] == V41_SLUGS
    assert secs[11].level == 3 and secs[11].title == "MI355X benchmark server"
    assert all(s.hash.startswith("sha256:") and len(s.hash) == 23 for s in secs)
    # no heading inside the big bash block was taken for a section
    assert "exec vllm serve" in secs[11].markdown


def test_slugs_equal_the_web_anchor_plugin(recipe):
    """The page's anchors (markdown-it-py anchors_plugin) must be the slugs we hash by."""
    md = MarkdownIt("commonmark").use(anchors_plugin, max_level=6)
    ids = [t.attrGet("id") for t in md.parse(recipe.data["guide"]) if t.type == "heading_open"]
    assert ids == V41_SLUGS


def test_slug_rules():
    assert heading_slug("Prefill/Decode disaggregation") == "prefilldecode-disaggregation"
    assert heading_slug("DGX Station (GB300) Tensor Parallel") == "dgx-station-gb300-tensor-parallel"
    assert heading_slug("概览（Overview）") == "概览overview"
    guide = "Intro text.\n\n## Setup\n\na\n\n## Setup\n\nb\n\n```\n## not a heading\n```\n\nSetext\n------\n\n> ## quoted\n"
    secs = guide_sections(guide)
    assert [s.slug for s in secs] == [PREAMBLE_SLUG, "setup", "setup-1", "setext"]
    assert "## not a heading" in secs[2].markdown and "> ## quoted" in secs[3].markdown


def test_hash_ignores_whitespace_only_edits():
    a = guide_sections("## A\n\ntext  \nmore\n\n\n## B\n\nx\n")
    b = guide_sections("## A\r\n\r\ntext\r\nmore\r\n## B\n\nx")
    assert [s.hash for s in a] == [s.hash for s in b]
    assert content_hash("x y") != content_hash("x  y")


def test_anchored_markdown_gives_source_anchor_to_translated_heading():
    md = MarkdownIt("commonmark").use(attrs_block_plugin).use(anchors_plugin, max_level=6)
    html = md.render("{#mi355x-tensor-parallel}\n## MI355X 张量并行\n\n正文\n")
    assert '<h2 id="mi355x-tensor-parallel">' in html


def _kinds(text: str) -> list[tuple[str, str, bool]]:
    return [(f.kind, f.key, f.negated) for f in extract_facts(text)]


def test_facts_flags_env_images():
    got = _kinds("Pass `--engram-config '{\"x\":1}'`, set `VLLM_ROCM_USE_AITER=1` and use "
                 "`vllm/vllm-openai-rocm:nightly-rocm100` (not `:nightly`). A table |---|--:| has no flags.")
    assert got == [("flag", "--engram-config", False), ("env", "VLLM_ROCM_USE_AITER", False),
                   ("image", "vllm/vllm-openai-rocm:nightly-rocm100", False)]
    # a prefix of an image tag is a different image
    assert ("image", "vllm/vllm-openai-rocm:nightly") not in {(k, v) for k, v, _ in got}
    # single-word upper case, dunder-less names and flags inside words are not facts
    assert _kinds("PYTHONHASHSEED, MXFP4, UE8M0, foo--bar, --") == []


def test_facts_numbers_across_languages():
    en = _kinds("1,048,576 tokens over a 65,536-token window; 183 GiB (~196.6B params), 890 bytes, "
                "256K max_tokens, 1M-token prompt, a cap of 1024 tokens")
    zh = _kinds("1,048,576 tokens，65,536 token 的训练窗口；183 GiB（约 196.6B 参数），890 字节，"
                "256K 的 max_tokens，1M token 的 prompt，上限 1024 个 token")
    keys = [("number", k) for k in ("1048576 tokens", "65536 tokens", "183 GiB", "196.6B", "890 bytes",
                                     "256K", "1M tokens", "1024 tokens")]
    assert [(k, v) for k, v, _ in en] == keys
    assert [(k, v) for k, v, _ in zh] == keys
    # CJK punctuation right before a number, full-width digits
    assert _kinds("后，494 GiB 的内存池，约 ６６ GB") == [("number", "494 GiB", False), ("number", "66 GB", False)]
    # identifiers that merely contain digits and letters are not numbers
    assert _kinds("GB200 NVL4, W4A16, a8w4, UE8M0, TP4, 1P1D, d1b4028d7e, gfx950") == []


def test_facts_versions_dates_prs():
    got = _kinds("vLLM 0.30.0+ or v0.25.0, not 0.0.0.0; nightly from 2026-10-13; "
                 "[vllm-project/vllm#57491](https://github.com/vllm-project/vllm/pull/57491), "
                 "InferenceX #3058, see [config](https://github.com/o/r/blob/abc/x.yaml#L1761)")
    assert got == [("version", "0.30.0", False), ("version", "0.25.0", False), ("date", "2026-10-13", False),
                   ("pr", "#57491", False), ("pr", "#57491", False), ("pr", "#3058", False)]
    texts = [f.text for f in extract_facts("[x](https://github.com/vllm-project/vllm/pull/60397)")]
    assert texts == ["vllm-project/vllm#60397"]


def test_negation_is_per_sentence_in_both_languages():
    en = extract_facts("Bounded replay is on by default, so the recipe no longer passes "
                       "`--no-swa-bounded-replay`. Use `--monokernel` instead.")
    assert [(f.key, f.negated) for f in en] == [("--no-swa-bounded-replay", True), ("--monokernel", False)]
    zh = extract_facts("所以本 recipe 不再传递 `--no-swa-bounded-replay`。ROCm 另外还需要 "
                       "`--no-swa-bounded-replay`，由共享的 AMD override 提供；原因见那里的注释。")
    assert [(f.key, f.negated) for f in zh] == [("--no-swa-bounded-replay", True),
                                                 ("--no-swa-bounded-replay", False)]
    # a colon separates "the image is X: ... no longer needed"
    zh2 = extract_facts("在 NVIDIA 上是 `vllm/vllm-openai:nightly`：发布当天的标签不再需要。")
    assert [f.negated for f in zh2] == [False]
    # list items are separate sentences
    items = extract_facts("- `--a-flag` is removed\n- `--b-flag` is set\n")
    assert [(f.key, f.negated) for f in items] == [("--a-flag", True), ("--b-flag", False)]


# --- robustness --------------------------------------------------------------------------------

_ALPHABET = st.sampled_from([
    *"ab-_/:#.,;。：；（）\n `*|{}[]()0123456789GiBKMTtokens个字节中文VLLM_XZ",
    "--flag", "vllm/x:y", "#123", "https://github.com/o/r/pull/9", "no longer", "不再", "## h\n", "```\n",
    "{#s}\n", "---\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=80).map("".join))
def test_extract_and_parse_never_raise(text):
    for f in extract_facts(text):
        assert f.kind in ("flag", "env", "image", "number", "version", "date", "pr") and f.key
    guide_sections(text)
    t = parse_translation(text, hf_id="o/r", lang="zh", path=Path("x"), rel_path="x")
    assert all(p.kind == "invalid" for p in t.parse_problems)


def test_pathological_inputs_do_not_hang():
    """Catastrophic regex backtracking would hang here; the alarm is a hang guard, not a benchmark."""
    hostile = ["a." * 100_000, "a中" * 100_000, "-" * 200_000, "\n \n" * 60_000, "1," * 100_000,
               "](" * 100_000, "VLLM_" * 40_000, "x/" * 100_000 + ":"]

    def hung(*_a: object) -> None:
        raise AssertionError("fact extraction did not finish: catastrophic backtracking?")

    old = signal.signal(signal.SIGALRM, hung)
    try:
        for text in hostile:
            signal.alarm(60)
            facts = extract_facts(text)
            signal.alarm(0)
            assert facts is not None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
