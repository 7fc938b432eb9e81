"""Loading a catalog from files held in memory (``{relative posix path: bytes}``, e.g. a git revision),
in the public layout over the bundled catalog, without checking anything out over the user's tree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .loader import NAMED_DIRS, STATIC_NAMES, Catalog, assemble, bundled_layer, catalog_paths, layer_of
from .yamlsource import MAX_FILE_BYTES, YamlDocument, YamlLoadError, parse_yaml

#: parsed documents by (path, bytes): both sides of a comparison parse a shared file once
ParsedFiles = dict[tuple[str, bytes], YamlDocument | YamlLoadError]


def is_catalog_file(rel: str) -> bool:
    """The files a catalog is made of (everything else in a tree is ignored)."""
    if rel in STATIC_NAMES:
        return True
    top, _, rest = rel.partition("/")
    if top in NAMED_DIRS:
        return "/" not in rest and rest.endswith(".yaml")
    return top == "models" and rest.endswith((".yaml", ".yml"))


def read_catalog_files(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """The catalog files of a directory as ``{relative path: bytes}`` (the disk loader's file set);
    unreadable or oversized ones are left out (the loader reports them)."""
    base = Path(root)
    out: dict[str, bytes] = {}
    for rel in catalog_paths(base):
        try:
            if (base / rel).stat().st_size <= MAX_FILE_BYTES:
                out[rel] = (base / rel).read_bytes()
        except OSError:
            continue
    return out


def path_key(rel: str) -> tuple[bytes, ...]:
    """Depth-first order with directories recursed in place, by raw name bytes (as the disk walk)."""
    return tuple(os.fsencode(part) for part in rel.split("/"))


def _load_order(rel: str) -> tuple[int, tuple[bytes, ...]]:
    """The disk loader's order: the shared files, strategies, kv stores, then the recipes."""
    return (*STATIC_NAMES, *NAMED_DIRS, "models").index(rel.partition("/")[0]), path_key(rel)


def load_catalog_from_files(files: Mapping[str, bytes], root: str | os.PathLike[str] = "<memory>",
                            cache: ParsedFiles | None = None) -> Catalog:
    """A :class:`Catalog` from in-memory files over the bundled one; ``root`` only labels it, ``cache``
    shares parsed (immutable) documents between catalogs."""
    cache = {} if cache is None else cache

    def parse(rel: str) -> YamlDocument:
        got = cache.get((rel, files[rel]))
        if got is None:
            try:
                got = parse_yaml(files[rel], rel)
            except YamlLoadError as exc:
                got = exc
            cache[(rel, files[rel])] = got
        if isinstance(got, YamlLoadError):
            raise got
        return got

    rels = sorted(filter(is_catalog_file, files), key=_load_order)
    return assemble(Path(root), [layer_of(str(root), rels, parse)], bundled_layer())
