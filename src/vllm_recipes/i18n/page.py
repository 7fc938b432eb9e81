"""What the website and JSON API need from translations: language choice, URLs, notices.

``/<hf_id>?lang=<lang>`` is the same page translated; a stale section keeps its translation with
a notice linking to the original section, an untranslated one shows the original.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_recipes.catalog import Recipe

from .sections import guide_sections
from .translation import HEADER_KEYS, SOURCE_LANG, DriftFinding, Translation

MAX_ACCEPT_LANGUAGE = 4096
_TAG = re.compile(r"^(?:[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*|\*)$")


# --- language negotiation --------------------------------------------------------------


def parse_accept_language(header: str | None) -> list[str]:
    """Language tags of an ``Accept-Language`` header, most preferred first (q=0 dropped)."""
    if not header:
        return []
    prefs: list[tuple[float, int, str]] = []
    for i, part in enumerate(header[:MAX_ACCEPT_LANGUAGE].split(",")[:64]):
        tag, _, params = part.strip().partition(";")
        tag = tag.strip()
        if not tag or not _TAG.match(tag):
            continue
        q = 1.0
        for p in params.split(";"):
            name, _, val = p.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(val.strip())
                except ValueError:
                    q = -1.0
        if not 0.0 < q <= 1.0:
            continue
        prefs.append((-q, i, tag))
    return [tag for _, _, tag in sorted(prefs)]


def _match(tag: str, available: Mapping[str, str]) -> str | None:
    """Exact tag, then ever shorter prefixes (``zh-Hans-CN`` -> ``zh-Hans`` -> ``zh``), then
    any available tag with the same primary language; ``available`` maps lower case -> original."""
    parts = tag.lower().split("-")
    for n in range(len(parts), 0, -1):
        if hit := available.get("-".join(parts[:n])):
            return hit
    for low in sorted(available):
        if low.split("-")[0] == parts[0]:
            return available[low]
    return None


def negotiate_language(query_lang: str | None, accept_language: str | None,
                       available: Iterable[str]) -> str | None:
    """The translation to show, or None for the recipe's own language.

    An explicit ``?lang=`` wins outright (``en`` or a tag we lack: the original); else the first
    ``Accept-Language`` preference, in q order, that is English, ``*`` or available decides.
    """
    avail = {a.lower(): a for a in available if a and a.lower() != SOURCE_LANG}
    if query_lang is not None and query_lang.strip():
        q = query_lang.strip().replace("_", "-")
        original = not _TAG.match(q) or q == "*" or q.lower().split("-")[0] == SOURCE_LANG
        return None if original else _match(q, avail)
    for tag in parse_accept_language(accept_language):
        if tag == "*" or tag.lower().split("-")[0] == SOURCE_LANG:
            return None
        if hit := _match(tag, avail):
            return hit
    return None


# --- URLs and the JSON API ---------------------------------------------------------------


def original_section_url(hf_id: str, slug: str) -> str:
    """The section in the recipe's own language (``lang=en`` overrides Accept-Language)."""
    return f"/{hf_id}?lang={SOURCE_LANG}#{slug}"


def translations_index_entry(translations: Mapping[str, Translation]) -> dict[str, dict[str, Any]]:
    """``{lang: {"path": "/<hf_id>?lang=<lang>", "stale": bool}}`` for a recipe's JSON, langs sorted
    (empty without translations: the API then omits the key)."""
    return {lang: {"path": f"/{t.hf_id}?lang={lang}", "stale": t.stale}
            for lang, t in sorted(translations.items())}


# --- notices -----------------------------------------------------------------------------

NOTICES: Mapping[str, Mapping[str, str]] = {
    "en": {
        "page_stale": "This translation was made from the {source_date} revision of the recipe, "
                      "which was updated on {current_date}; marked sections may be out of date.",
        "section_stale": "This section's translation may be out of date: the original changed "
                         "after it was translated.",
        "section_untranslated": "This section has not been translated yet; the original follows.",
        "no_longer_true": "No longer in the recipe: {tokens}.",
        "view_original": "Read the original section",
    },
    "zh": {
        "page_stale": "本译文根据 {source_date} 版的英文原文翻译，原文已于 {current_date} 更新；"
                      "标注的章节可能已过时，请以英文原文为准。",
        "section_stale": "本节译文可能已过时：英文原文在翻译之后有改动。",
        "section_untranslated": "本节尚未翻译，以下为英文原文。",
        "no_longer_true": "原文中已不再成立：{tokens}。",
        "view_original": "查看英文原文",
    },
}


def notice_text(lang: str, key: str, **fields: str) -> str:
    """A notice in ``lang`` (falling back to its primary language, then English)."""
    table = NOTICES.get(lang) or NOTICES.get(lang.split("-")[0]) or NOTICES["en"]
    return (table.get(key) or NOTICES["en"][key]).format(**fields)


@dataclass(frozen=True, slots=True)
class GuideBlock:
    """One section of the page's guide, in source order, ready to render."""

    slug: str
    level: int
    title: str
    #: Markdown to render (translated, or the original when untranslated)
    markdown: str
    #: language of ``markdown``
    lang: str
    #: ``current``, ``stale`` or ``untranslated``
    status: str
    findings: tuple[DriftFinding, ...]
    #: link to the same section in the original
    original_url: str
    #: localized notice text, or None when the section is current
    notice: str | None

    @property
    def anchored_markdown(self) -> str:
        """Markdown whose heading gets anchor ``slug`` under ``attrs_block_plugin``."""
        return self.markdown if self.level == 0 else f"{{#{self.slug}}}\n{self.markdown}"

    def notice_html(self, page_lang: str) -> str:
        """The notice as a small escaped HTML block (empty when current)."""
        if not self.notice:
            return ""
        link = html.escape(notice_text(page_lang, "view_original"))
        return (f'<div class="i18n-notice i18n-notice--{self.status}" role="note" '
                f'lang="{html.escape(page_lang)}">{html.escape(self.notice)} '
                f'<a href="{html.escape(self.original_url)}" hreflang="{SOURCE_LANG}">{link}</a></div>')


def compose_guide(recipe: Recipe, translation: Translation) -> list[GuideBlock]:
    """The guide of the translated page: every current source section, in order."""
    guide = recipe.data.get("guide")
    blocks: list[GuideBlock] = []
    for src in guide_sections(guide) if isinstance(guide, str) else []:
        url = original_section_url(recipe.hf_id, src.slug)
        tr = translation.section(src.slug)
        findings = translation.findings_for(src.slug)
        if tr is None:
            blocks.append(GuideBlock(src.slug, src.level, src.title, src.markdown, SOURCE_LANG, "untranslated",
                                     findings, url, notice_text(translation.lang, "section_untranslated")))
            continue
        notice = None
        if findings:
            notice = notice_text(translation.lang, "section_stale")
            gone = [f.token for f in findings if f.kind == "removed"]
            if gone:
                notice += " " + notice_text(translation.lang, "no_longer_true", tokens=", ".join(gone))
        blocks.append(GuideBlock(src.slug, tr.level, tr.title, tr.markdown, translation.lang,
                                 "stale" if findings else "current", findings, url, notice))
    return blocks


def page_notice(recipe: Recipe, translation: Translation) -> str | None:
    """The page-level notice for a stale translation (None when it is current)."""
    if not translation.stale:
        return None
    current = recipe.meta.get("date_updated")
    return notice_text(translation.lang, "page_stale",
                       source_date=translation.source_date_updated or "?",
                       current_date=str(current) if current else "?")


@dataclass(frozen=True, slots=True)
class HeaderText:
    """One header field of the page (title, description, performance_headline)."""

    key: str
    text: str
    lang: str
    stale: bool


def translated_header(recipe: Recipe, translation: Translation | None) -> dict[str, HeaderText]:
    """Header fields for the page: translated where the translation has them, else original."""
    out: dict[str, HeaderText] = {}
    for key in HEADER_KEYS:
        val = recipe.meta.get(key)
        if translation is not None and key in translation.header:
            stale = bool(translation.findings_for(f"meta.{key}"))
            out[key] = HeaderText(key, translation.header[key], translation.lang, stale)
        elif isinstance(val, str):
            out[key] = HeaderText(key, val, SOURCE_LANG, False)
    return out
