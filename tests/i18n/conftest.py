"""Fixtures for the translation tests (helpers live in ``i18n_support``)."""

from __future__ import annotations

from i18n_support import catalog, current_dir, recipe, recipes_dir

__all__ = ["catalog", "current_dir", "recipe", "recipes_dir"]
