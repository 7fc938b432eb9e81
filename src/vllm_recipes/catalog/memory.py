"""Loading a catalog from files held in memory (a git revision, a test fixture).

The same public layout as :func:`~vllm_recipes.catalog.loader.load_catalog`
(``models/``, ``strategies/``, ``kv_store/``, ``taxonomy.yaml``,
``platforms.yaml``), read from a ``{relative posix path: bytes}`` mapping so a
revision can be compared without checking it out over the user's tree.
The bundled catalog is the base layer, as on disk.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from .loader import (
    Catalog,
    Layer,
    Recipe,
    assemble,
    bundled_layer,
    hf_id_for,
    recipe_from_document,
    walk_models,
)
from .yamlsource import MAX_FILE_BYTES, YamlDocument, YamlLoadError, parse_yaml

STATIC_NAMES = ("taxonomy.yaml", "platforms.yaml")
NAMED_DIRS = ("strategies", "kv_store")


#: parsed documents by (path, bytes): both sides of a comparison parse a shared file once
ParseCache = dict[tuple[str, bytes], YamlDocument | YamlLoadError]


def is_catalog_file(rel: str) -> bool:
    """The files a catalog is made of (everything else in a tree is ignored)."""
    if rel in STATIC_NAMES:
        return True
    top, _, rest = rel.partition("/")
    if top in NAMED_DIRS:
        return "/" not in rest and rest.endswith(".yaml")
    return top == "models" and rest.endswith((".yaml", ".yml"))


def read_catalog_files(root: str | os.PathLike[str]) -> dict[str, bytes]:
    """The catalog files of a directory as ``{relative path: bytes}`` (the disk loader's file set).

    Unreadable or oversized files are left out here; they are read (and reported)
    by the loader, so this is only used where a comparison needs bytes.
    """
    base = Path(root)
    found: list[Path] = []
    for name in STATIC_NAMES:
        if (base / name).is_file():
            found.append(base / name)
    for sub in NAMED_DIRS:
        d = base / sub
        if d.is_dir():
            found.extend(p for p in d.iterdir() if p.name.endswith(".yaml") and p.is_file())
    found.extend(walk_models(base / "models"))
    out: dict[str, bytes] = {}
    for p in found:
        try:
            if p.stat().st_size <= MAX_FILE_BYTES:
                out[p.relative_to(base).as_posix()] = p.read_bytes()
        except OSError:
            continue
    return out


def _parse(files: Mapping[str, bytes], rel: str, cache: ParseCache | None) -> YamlDocument:
    if cache is None:
        return parse_yaml(files[rel], rel)
    key = (rel, files[rel])
    got = cache.get(key)
    if got is None:
        try:
            got = parse_yaml(files[rel], rel)
        except YamlLoadError as exc:
            got = exc
        cache[key] = got
    if isinstance(got, YamlLoadError):
        raise got
    return got


def path_key(rel: str) -> tuple[bytes, ...]:
    """Depth-first order with directories recursed in place, by raw name bytes (as the disk walk)."""
    return tuple(os.fsencode(part) for part in rel.split("/"))


def _named_files(files: Mapping[str, bytes], sub: str) -> list[str]:
    prefix = sub + "/"
    return sorted((rel for rel in files if rel.startswith(prefix) and "/" not in rel[len(prefix):]
                   and rel.endswith(".yaml")), key=path_key)


def files_layer(files: Mapping[str, bytes], label: str, cache: ParseCache | None = None) -> Layer:
    """The catalog files of ``files`` parsed as one layer (documents named by their relative path)."""
    errors: list[YamlLoadError] = []

    def parse(rel: str) -> YamlDocument | None:
        try:
            return _parse(files, rel, cache)
        except YamlLoadError as exc:
            errors.append(exc)
            return None

    static = {name: parse(name) if name in files else None for name in STATIC_NAMES}
    named = {sub: tuple(d for d in map(parse, _named_files(files, sub)) if d is not None) for sub in NAMED_DIRS}
    recipes: list[Recipe] = []
    all_ids: set[str] = set()
    for rel in sorted((r for r in files if r.startswith("models/") and r.endswith((".yaml", ".yml"))), key=path_key):
        hf_id = hf_id_for(rel.removeprefix("models/"))
        if hf_id is not None:
            all_ids.add(hf_id)
        doc = parse(rel)
        if doc is None:
            continue
        try:
            recipes.append(dataclasses.replace(recipe_from_document(doc, rel, hf_id), source=label))
        except YamlLoadError as exc:
            errors.append(exc)
    return Layer(label, static["taxonomy.yaml"], static["platforms.yaml"], named["strategies"], named["kv_store"],
                 tuple(recipes), tuple(errors), (), frozenset(all_ids))


def load_catalog_from_files(files: Mapping[str, bytes], root: str | os.PathLike[str] = "<memory>",
                            cache: ParseCache | None = None) -> Catalog:
    """A :class:`Catalog` from in-memory files over the bundled one; ``root`` only labels it.

    ``cache`` shares parsed documents between catalogs (documents are immutable).
    """
    return assemble(Path(root), [files_layer(files, str(root), cache)], bundled_layer())
