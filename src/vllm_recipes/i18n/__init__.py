"""Translated recipe guides that know when they are stale (issue #6).

Format, slugs, hashes and drift rules: ``docs/decisions-i18n.md``.

Typical use::

    catalog = load_catalog()
    translations = load_translations(catalog)           # {hf_id: {lang: Translation}}
    lang = negotiate_language(request.query_params.get("lang"),
                              request.headers.get("accept-language"),
                              translations.get(recipe.hf_id, {}))
    if lang:
        t = translations[recipe.hf_id][lang]
        blocks = compose_guide(recipe, t)                # sections + notices
    api_json["translations"] = translations_index_entry(translations.get(recipe.hf_id, {}))
"""

from __future__ import annotations

from vllm_recipes.catalog import Catalog, Recipe

from .drift import check, check_translation, emittable_facts, source_view
from .facts import Fact, extract_facts
from .page import (
    NOTICES,
    GuideBlock,
    HeaderText,
    compose_guide,
    negotiate_language,
    notice_text,
    original_section_url,
    page_notice,
    parse_accept_language,
    translated_header,
    translation_url,
    translations_index_entry,
)
from .sections import PREAMBLE_SLUG, Section, content_hash, guide_sections, heading_slug
from .translation import (
    SOURCE_LANG,
    DriftFinding,
    TranslatedSection,
    Translation,
    discover_translation_files,
    parse_translation,
    read_translation,
    split_translation_name,
    translation_rel_path,
    with_findings,
)


def check_all(catalog: Catalog) -> list[Translation]:
    """Every translation file under ``<root>/models``, checked, in path order.

    Files without a recipe beside them come back with a single ``no-recipe`` finding.
    """
    out: list[Translation] = []
    for tf in discover_translation_files(catalog):
        t = read_translation(tf.path, hf_id=tf.hf_id, lang=tf.lang, rel_path=tf.rel_path)
        if tf.recipe is None:
            out.append(with_findings(t, [DriftFinding(
                "-", "no-recipe", tf.hf_id,
                f"no recipe models/{tf.hf_id}.yaml beside this translation")]))
        else:
            out.append(check(catalog, tf.recipe, t))
    return out


def load_translations(catalog: Catalog) -> dict[str, dict[str, Translation]]:
    """``{hf_id: {lang: Translation}}`` for every recipe with translations, each checked."""
    out: dict[str, dict[str, Translation]] = {}
    for t in check_all(catalog):
        if catalog.recipe(t.hf_id) is not None:
            out.setdefault(t.hf_id, {})[t.lang] = t
    return out


def translations_for(catalog: Catalog, recipe: Recipe) -> dict[str, Translation]:
    """The checked translations of one recipe, by language (reads only its directory)."""
    stem = recipe.rel_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    directory = (catalog.root / recipe.rel_path).parent
    out: dict[str, Translation] = {}
    try:
        names = sorted(p.name for p in directory.iterdir() if p.is_file())
    except OSError:
        return out
    for name in names:
        split = split_translation_name(name)
        if split is None or split[0] != stem:
            continue
        lang = split[1]
        t = read_translation(directory / name, hf_id=recipe.hf_id, lang=lang,
                             rel_path=translation_rel_path(recipe, lang))
        out[lang] = check(catalog, recipe, t)
    return out


__all__ = [
    "NOTICES",
    "PREAMBLE_SLUG",
    "SOURCE_LANG",
    "DriftFinding",
    "Fact",
    "GuideBlock",
    "HeaderText",
    "Section",
    "TranslatedSection",
    "Translation",
    "check",
    "check_all",
    "check_translation",
    "compose_guide",
    "content_hash",
    "discover_translation_files",
    "emittable_facts",
    "extract_facts",
    "guide_sections",
    "heading_slug",
    "load_translations",
    "negotiate_language",
    "notice_text",
    "original_section_url",
    "page_notice",
    "parse_accept_language",
    "parse_translation",
    "read_translation",
    "source_view",
    "translated_header",
    "translation_rel_path",
    "translation_url",
    "translations_for",
    "translations_index_entry",
]
