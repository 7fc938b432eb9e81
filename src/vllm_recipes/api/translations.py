"""The ``translations`` key the JSON API adds to recipes (docs/decisions.md, issue #6).

One hook serves ``build-api`` and the live server, so their bytes agree. The i18n package is imported only for
a recipe with a translation file beside it: a catalog without translations never pays for it.
"""

from __future__ import annotations

import os
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe

from .build import ExtraRecipeKeys, build_api


def _has_translation_file(catalog: Catalog, recipe: Recipe) -> bool:
    path = catalog.root / recipe.rel_path
    stem = path.name.rsplit(".", 1)[0] + "."
    try:
        return any(n.startswith(stem) and n.endswith(".md") for n in os.listdir(path.parent))
    except OSError:
        return False


def translations_hook(catalog: Catalog) -> ExtraRecipeKeys:
    """``recipe -> {"translations": {lang: {path, stale}}}`` (``None`` without translations)."""

    def recipe_keys(recipe: Recipe) -> dict[str, Any] | None:
        if not _has_translation_file(catalog, recipe):
            return None
        from vllm_recipes.i18n import translations_for, translations_index_entry

        entry = translations_index_entry(translations_for(catalog, recipe))
        return {"translations": entry} if entry else None

    return recipe_keys


def api_files(catalog: Catalog, jobs: int | None = 1) -> dict[str, bytes]:
    """Every file ``build-api`` writes, its very bytes (translations included): what the live server and the
    MCP resources serve. Not strict: a file that does not load is skipped (with a warning), never the catalog."""
    return build_api(catalog, jobs=jobs, strict=False, extra_recipe_keys=translations_hook(catalog)).files
