"""Translated recipe guides that know when they are stale (issue #6).

Format, slugs, hashes, drift rules and the web's use of this API: ``docs/decisions-i18n.md``.
"""

from __future__ import annotations

from dataclasses import replace

from vllm_recipes.catalog import Catalog, Recipe

from .drift import SourceView, check, source_view
from .page import compose_guide, negotiate_language, page_notice, translated_header, translations_index_entry
from .sections import content_hash, guide_sections
from .translation import (
    DriftFinding,
    Translation,
    read_translation,
    read_translations,
    split_translation_name,
)


def check_all(catalog: Catalog) -> list[Translation]:
    """Every translation file under ``<root>/models``, checked, in path order (one without a recipe
    beside it has a single ``no-recipe`` finding)."""
    out: list[Translation] = []
    views: dict[str, SourceView] = {}
    for t, recipe in read_translations(catalog):
        if recipe is None:
            out.append(replace(t, findings=(DriftFinding(
                "-", "no-recipe", t.hf_id, f"no recipe models/{t.hf_id}.yaml beside this translation"),)))
            continue
        if recipe.rel_path not in views:
            views[recipe.rel_path] = source_view(catalog, recipe)
        out.append(check(catalog, recipe, t, views[recipe.rel_path]))
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
    base = recipe.rel_path.rsplit(".", 1)[0]  # models/<org>/<repo>
    stem = base.rsplit("/", 1)[-1]
    directory = (catalog.root / recipe.rel_path).parent
    out: dict[str, Translation] = {}
    try:
        names = sorted(p.name for p in directory.iterdir() if p.is_file())
    except OSError:
        return out
    view = None
    for name in names:
        split = split_translation_name(name)
        if split is None or split[0] != stem:
            continue
        lang = split[1]
        t = read_translation(directory / name, hf_id=recipe.hf_id, lang=lang, rel_path=f"{base}.{lang}.md")
        view = view or source_view(catalog, recipe)
        out[lang] = check(catalog, recipe, t, view)
    return out


__all__ = [
    "check_all",
    "compose_guide",
    "content_hash",
    "guide_sections",
    "load_translations",
    "negotiate_language",
    "page_notice",
    "translated_header",
    "translations_for",
    "translations_index_entry",
]
