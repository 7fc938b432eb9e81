"""Fixtures for the translation tests (helpers live in ``i18n_support``)."""

from __future__ import annotations

from i18n_support import current_dir, recipe, recipes_dir

__all__ = ["current_dir", "recipe", "recipes_dir"]
