"""Remembered "no validation error" verdicts, so ``command`` need not build the pydantic models.

That check costs ~0.2 CPU-s, as much as the rest of ``command``. A clean verdict is keyed by the
digest of everything it depends on (the file's text, its name and model id, the catalog's shared
data, the code of ``catalog/`` and pydantic's version), so it cannot go stale; errors are never
remembered. One pack per recipes directory beside the parse cache's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

from .loader import Catalog, Recipe
from .parsecache import pack_path, read_pack, write_pack

_PACKAGE = Path(__file__).resolve().parent.parent


@cache
def _code_digest() -> bytes:
    """The validator's code: every module of ``catalog/``, ``jsvalues.py``, pydantic's version, Python's."""
    h = hashlib.blake2b(sys.version.encode(), digest_size=20)
    spec = importlib.util.find_spec("pydantic")
    files = [*sorted((_PACKAGE / "catalog").glob("*.py")), _PACKAGE / "jsvalues.py"]
    if spec is not None and spec.origin is not None:
        files.append(Path(spec.origin).with_name("version.py"))
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.digest()


def _shared_digest(catalog: Catalog) -> bytes:
    shared = [catalog.taxonomy, catalog.platforms, catalog.serving_strategies, catalog.kv_stores]
    text = json.dumps(shared, ensure_ascii=False, default=repr)
    return hashlib.blake2b(text.encode(), digest_size=20, key=_code_digest()).digest()


class Verdicts:
    """The remembered clean recipes of ``catalog``'s directory; :meth:`save` after :meth:`remember`."""

    def __init__(self, catalog: Catalog) -> None:
        root = Path(catalog.root)
        self._pack = pack_path(root, "clean") if root.is_dir() else None
        self._shared = _shared_digest(catalog) if self._pack is not None else b""
        self._entries: dict[str, Any] = read_pack(self._pack)
        self._added = False

    def _key(self, recipe: Recipe) -> str | None:
        source = recipe.doc.text  # the text it was parsed from: its data, repeated keys and positions
        if self._pack is None or source is None:
            return None
        text = "\0".join((source, recipe.doc.file, recipe.hf_id))
        return hashlib.blake2b(text.encode(), digest_size=20, key=self._shared).hexdigest()

    def clean(self, recipe: Recipe) -> bool:
        """Whether ``recipe`` was found to have no validation error, exactly as it is now."""
        key = self._key(recipe)
        return key is not None and self._entries.get(recipe.doc.file) == key

    def remember(self, recipe: Recipe) -> None:
        """Note that :func:`.usable.recipe_errors` found no error in ``recipe``."""
        key = self._key(recipe)
        if key is not None and self._entries.get(recipe.doc.file) != key:
            self._entries[recipe.doc.file] = key
            self._added = True

    def save(self) -> None:
        if self._pack is not None and self._added:
            write_pack(self._pack, self._entries)
