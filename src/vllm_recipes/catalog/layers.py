"""Layered catalogs: the files of several recipe sources merged per entry and per field.

Recipes replace per model id; shared files merge per entry and field, over the bundled catalog
as a supplement; a merged document keeps each value's position (docs/decisions-catalog.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .yamlsource import FrozenDict, KeyPath, Position, YamlDocument

#: how many levels of mappings merge key by key, below which a value is replaced whole
TAXONOMY_DEPTH = 3  # document -> section -> entry -> (fields replaced whole)
NAMED_DEPTH = 1  # strategy / kv-store document -> (fields replaced whole)


class LayeredDocument(YamlDocument):
    """A document merged from several layers; positions come from the layer each value came from."""

    __slots__ = ("layers", "origin")

    layers: tuple[YamlDocument, ...]
    #: key path (down to the merge depth) -> the layer document that supplied its value
    origin: Mapping[KeyPath, YamlDocument]

    def __init__(self, file: str, data: Any, layers: Sequence[YamlDocument],
                 origin: Mapping[KeyPath, YamlDocument]) -> None:
        super().__init__(file, data, source=None)
        object.__setattr__(self, "layers", tuple(layers))
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "_duplicates", None)  # (indexed from the layers on first use)

    def __reduce__(self) -> tuple[Any, ...]:
        return (LayeredDocument, (self.file, self.data, self.layers, dict(self.origin)))

    def owner(self, path: KeyPath) -> YamlDocument:
        """The layer document that supplied the value at ``path`` (its nearest merged ancestor)."""
        for n in range(len(path), -1, -1):
            got = self.origin.get(tuple(path[:n]))
            if got is not None:
                return got
        return self.layers[-1]

    def _index(self) -> None:
        positions: dict[KeyPath, Position] = {(): Position(self.file, 1, 1)}
        for layer in self.layers:
            for path, pos in layer.positions.items():
                if path and self.owner(path) is layer:
                    positions[path] = pos
        duplicates = tuple(d for layer in self.layers for d in layer.duplicate_keys)
        object.__setattr__(self, "_positions", positions)
        object.__setattr__(self, "_duplicates", duplicates)


def merge_documents(file: str, docs: Sequence[YamlDocument], depth: int,
                    supplement: YamlDocument | None = None) -> YamlDocument:
    """``docs`` (base first) merged into one document shown as ``file``, filled in from ``supplement``
    (one document and no supplement: returned as is)."""
    if len(docs) == 1 and supplement is None:
        return docs[0]
    origin: dict[KeyPath, YamlDocument] = {}
    data: Any = None
    for doc in docs:
        data = _merge(data, doc.data, doc, (), depth, origin)
    if supplement is not None:
        data = _fill(data, supplement.data, supplement, (), depth, origin)
        docs = (supplement, *docs)
    return LayeredDocument(file, data, docs, origin)


def _fill(data: Any, base: Any, doc: YamlDocument, path: KeyPath, depth: int,
          origin: dict[KeyPath, YamlDocument]) -> Any:
    """``data`` with the keys it lacks taken from ``base``: whole sections (at the top) and fields of the
    entries it has (``depth`` levels down); never entries of its own."""
    if not (isinstance(data, dict) and isinstance(base, dict)) or depth <= 0:
        return data
    top, fields = not path, depth == 1
    merged = dict(data)
    for key, value in base.items():
        child = (*path, key)
        if key in merged:
            merged[key] = _fill(merged[key], value, doc, child, depth - 1, origin)
        elif top or fields:
            merged[key] = value
            origin[child] = doc
    return FrozenDict(merged)


def _keyed_by_id(value: Any) -> dict[str, Any] | None:
    """A list of mappings that all carry a distinct string ``id``, by id (else ``None``)."""
    if not isinstance(value, tuple) or not value:
        return None
    out: dict[str, Any] = {}
    for item in value:
        ident = item.get("id") if isinstance(item, dict) else None
        if not isinstance(ident, str) or ident in out:
            return None
        out[ident] = item
    return out


def _merge(old: Any, new: Any, doc: YamlDocument, path: KeyPath, depth: int,
           origin: dict[KeyPath, YamlDocument]) -> Any:
    """``new`` (from ``doc``) laid over ``old``, key by key for ``depth`` levels of mappings."""
    if depth > 0 and isinstance(old, dict) and isinstance(new, dict):
        merged = dict(old)
        for key, value in new.items():
            child = (*path, key)
            if key in merged:
                merged[key] = _merge(merged[key], value, doc, child, depth - 1, origin)
            else:
                merged[key] = value
                _claim(child, doc, origin)
        return FrozenDict(merged)
    old_ids, new_ids = _keyed_by_id(old), _keyed_by_id(new)
    if depth > 0 and old_ids is not None and new_ids is not None:
        # platforms: a list of {id: ...} entries merges by id; the list's positions are the new layer's
        items = dict(old_ids)
        for ident, item in new_ids.items():
            items[ident] = _merge(items[ident], item, doc, (), depth - 1, {}) if ident in items else item
        _claim(path, doc, origin)
        return tuple(items.values())
    _claim(path, doc, origin)
    return new


def _claim(path: KeyPath, doc: YamlDocument, origin: dict[KeyPath, YamlDocument]) -> None:
    """``doc`` supplies everything at and below ``path`` (entries of earlier layers below it are gone)."""
    for p in [p for p in origin if len(p) > len(path) and p[:len(path)] == path]:
        del origin[p]
    origin[path] = doc
