"""Stage 1 - load: YAML files -> validated, immutable catalog data (no commands, no web)."""

from .loader import BUNDLED_DIR, Catalog, Recipe, load_catalog
from .yamlsource import FrozenDict, YamlLoadError, format_key_path

__all__ = [
    "BUNDLED_DIR",
    "Catalog",
    "FrozenDict",
    "Recipe",
    "YamlLoadError",
    "format_key_path",
    "load_catalog",
]
