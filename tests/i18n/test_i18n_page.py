"""What the website and JSON API call: language negotiation, index entry, page composition."""

from __future__ import annotations

import json

import pytest
from i18n_support import HF_ID
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.attrs import attrs_block_plugin

from vllm_recipes.catalog import load_catalog
from vllm_recipes.i18n import (
    compose_guide,
    load_translations,
    negotiate_language,
    page_notice,
    translated_header,
    translations_index_entry,
)
from vllm_recipes.i18n.page import original_section_url, parse_accept_language

AVAILABLE = ["zh", "pt-BR", "zh-Hant"]


@pytest.mark.parametrize(("query", "header", "expected"), [
    # explicit parameter wins, header ignored
    ("zh", None, "zh"),
    ("zh", "pt-BR", "zh"),
    ("ZH", None, "zh"),
    ("zh-CN", None, "zh"),            # prefix fallback
    ("zh_Hant", None, "zh-Hant"),     # underscore accepted, exact tag preferred
    ("zh-Hant-TW", None, "zh-Hant"),  # longest available prefix
    ("pt", None, "pt-BR"),            # same primary language
    ("en", "zh", None),               # the original, even if the browser prefers zh
    ("en-GB", "zh", None),
    ("fr", "zh", None),               # no fr translation: the original, not the header's pick
    ("../../etc", "zh", None),        # junk is the original
    # no parameter: Accept-Language
    (None, "zh-CN,zh;q=0.9,en;q=0.8", "zh"),
    ("", "zh-TW;q=0.9, zh-Hant;q=0.95", "zh-Hant"),
    (None, "en-US,en;q=0.9,zh;q=0.8", None),    # English preferred over zh
    (None, "fr-FR, de;q=0.9, zh;q=0.5", "zh"),  # first language we have
    (None, "fr;q=1, zh;q=0", None),             # q=0 means "not acceptable"
    (None, "*", None),
    (None, "zh;q=abc, pt-br", "pt-BR"),         # malformed q drops that entry
    (None, None, None),
    (None, "", None),
])
def test_negotiate_language(query, header, expected):
    assert negotiate_language(query, header, AVAILABLE) == expected


def test_negotiate_without_translations():
    assert negotiate_language("zh", "zh", []) is None
    assert negotiate_language(None, "zh", {}) is None


def test_parse_accept_language_order_and_limits():
    assert parse_accept_language("a;q=0.1, b, c;q=0.5, d;q=0.5") == ["b", "c", "d", "a"]
    assert parse_accept_language("x" * 10_000) == []
    assert len(parse_accept_language(",".join(["zh"] * 500))) == 64


def test_translations_index_entry(catalog):
    ts = load_translations(catalog)
    entry = translations_index_entry(ts[HF_ID])
    assert entry == {"zh": {"path": f"/{HF_ID}?lang=zh", "stale": True}}
    assert list(entry["zh"]) == ["path", "stale"]
    json.dumps(entry)  # plain JSON
    assert translations_index_entry({}) == {}


def test_index_entry_of_current_translation(current_dir):
    entry = translations_index_entry(load_translations(load_catalog(current_dir))[HF_ID])
    assert entry == {"zh": {"path": f"/{HF_ID}?lang=zh", "stale": False}}


def test_compose_guide_of_shipped_zh(catalog, recipe):
    t = load_translations(catalog)[HF_ID]["zh"]
    blocks = compose_guide(recipe, t)
    by = {b.slug: b for b in blocks}
    assert [b.slug for b in blocks] == [b for b in by]  # source order, every section once
    assert len(blocks) == 21
    # current sections: translated, no notice
    assert by["overview"].status == "current" and by["overview"].lang == "zh"
    assert by["overview"].notice is None and by["overview"].markdown.startswith("## 概览")
    # stale sections: translated text plus a notice naming what is no longer true
    pre = by["prerequisites"]
    assert pre.status == "stale" and pre.lang == "zh"
    assert "vllm/vllm-openai-rocm:nightly" in pre.notice and "已过时" in pre.notice
    assert "--no-swa-bounded-replay" in by["mi355x-tensor-parallel"].notice
    assert pre.original_url == f"/{HF_ID}?lang=en#prerequisites" == original_section_url(HF_ID, "prerequisites")
    # new sections: the original, marked untranslated
    new = by["mi300x-tensor-parallel"]
    assert new.status == "untranslated" and new.lang == "en" and new.markdown.startswith("## MI300X")
    assert "尚未翻译" in new.notice
    assert {b.slug for b in blocks if b.status != "current"} == t.stale_sections


def test_notice_html_is_escaped_and_links_to_the_original(catalog, recipe):
    t = load_translations(catalog)[HF_ID]["zh"]
    block = next(b for b in compose_guide(recipe, t) if b.slug == "mi325x-tensor-parallel")
    html = block.notice_html("zh")
    assert html.startswith('<div class="i18n-notice i18n-notice--stale" role="note" lang="zh">')
    assert f'<a href="/{HF_ID}?lang=en#mi325x-tensor-parallel" hreflang="en">查看英文原文</a>' in html
    assert "<script" not in block.notice_html("zh\"><script>")
    current = next(b for b in compose_guide(recipe, t) if b.slug == "overview")
    assert current.notice_html("zh") == ""


def test_composed_page_keeps_source_anchors(catalog, recipe):
    """Rendered with attrs_block + anchors, the zh page has the English anchors, so
    ``?lang=en#slug`` and ``?lang=zh#slug`` point at the same section."""
    t = load_translations(catalog)[HF_ID]["zh"]
    md = MarkdownIt("commonmark").use(attrs_block_plugin).use(anchors_plugin, max_level=6)
    text = "\n\n".join(b.anchored_markdown for b in compose_guide(recipe, t))
    ids = [tok.attrGet("id") for tok in md.parse(text) if tok.type == "heading_open"]
    assert ids == [b.slug for b in compose_guide(recipe, t)]


def test_page_notice_and_header(catalog, recipe, current_dir):
    t = load_translations(catalog)[HF_ID]["zh"]
    notice = page_notice(recipe, t)
    assert "2026-09-20" in notice and "2026-10-13" in notice
    header = translated_header(recipe, t)  # the shipped file translates no header text
    assert header["description"].lang == "en" and header["description"].text == recipe.meta["description"]
    fresh = load_translations(load_catalog(current_dir))[HF_ID]["zh"]
    assert page_notice(recipe, fresh) is None
    assert translated_header(recipe, None)["title"].text == "DeepSeek-V4.1-Flash"


def test_a_page_checks_only_its_own_recipe_s_translations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checking a translation renders every offered selection of its recipe: a page pays only for its own."""
    from starlette.testclient import TestClient

    import vllm_recipes.i18n as i18n
    from vllm_recipes.web import create_app

    catalog = load_catalog()
    checked: list[str] = []
    real = i18n.check
    monkeypatch.setattr(i18n, "check", lambda c, r, t, v: checked.append(t.rel_path) or real(c, r, t, v))
    app = create_app(catalog)
    client = TestClient(app)
    other = next(r for r in catalog.recipes if r.hf_id != HF_ID)
    assert client.get("/" + other.hf_id).status_code == 200
    assert checked == []  # a recipe without translations checks none
    zh = client.get("/" + HF_ID, headers={"Accept-Language": "zh"})
    assert zh.status_code == 200 and 'lang="zh' in zh.text
    assert checked == ["models/deepseek-ai/DeepSeek-V4.1-Flash.zh.md"]  # its own, once
    assert client.get("/" + HF_ID + "?lang=zh").status_code == 200 and len(checked) == 1
    web = app.state.web
    assert web.translations_of(catalog.recipe(HF_ID)).keys() == i18n.load_translations(catalog)[HF_ID].keys()
