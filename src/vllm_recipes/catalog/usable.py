"""What the engine may see: a catalog without anything ``validate`` calls an error.

One rule for ``build-api`` and ``serve``: what has a validation error is left out and its errors
printed, so the engine only has to cope with what validation passes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from .diagnostics import Finding, finding_at, finding_from_load_error, plural
from .identifiers import data_file_identifier_findings, hf_id_findings, is_name
from .loader import Catalog, Recipe, document_kind
from .parsecache import pack_path, read_pack, write_pack
from .yamlsource import FrozenDict

_PACKAGE = Path(__file__).resolve().parent.parent


def recipe_errors(catalog: Catalog, recipe: Recipe, ignore: Iterable[str] = ()) -> list[Finding]:
    """The validation errors of one recipe (codes in ``ignore`` left out), path id included."""
    from .validate import validate_document

    skip = frozenset(ignore)
    found = [*validate_document(recipe.doc, "recipe", catalog, errors_only=True),
             *hf_id_findings(recipe.doc, recipe.hf_id)]
    return [f for f in found if f.is_error and f.code not in skip]


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


def _verdict_key(recipe: Recipe, shared: bytes) -> str | None:
    """What a clean verdict on ``recipe`` is kept under: the digest of the text it was parsed from (its data,
    repeated keys and positions), its name and model id (``None``: built from data, never remembered)."""
    if recipe.doc.text is None:
        return None
    text = "\0".join((recipe.doc.text, recipe.doc.file, recipe.hf_id))
    return hashlib.blake2b(text.encode(), digest_size=20, key=shared).hexdigest()


def validation_errors(catalog: Catalog, recipes: Iterable[Recipe]) -> list[list[Finding]]:
    """:func:`recipe_errors` of each recipe, but none for one remembered clean exactly as it is now.

    Finding "no error" builds the pydantic models, ~0.2 CPU-s, as much as the rest of ``command``. A clean
    verdict is keyed by the digest of everything it depends on (the file's text, its name and model id, the
    catalog's shared data, the code of ``catalog/`` and pydantic's version), so it cannot go stale; errors
    are never remembered. One pack per recipes directory beside the parse cache's.
    """
    root = Path(catalog.root)
    pack = pack_path(root, "clean") if root.is_dir() else None
    shared = _shared_digest(catalog) if pack is not None else b""
    clean: dict[str, Any] = read_pack(pack)
    changed = False
    found: list[list[Finding]] = []
    for recipe in recipes:
        key = _verdict_key(recipe, shared) if pack is not None else None
        if key is not None and clean.get(recipe.doc.file) == key:
            found.append([])
            continue
        errors = recipe_errors(catalog, recipe)
        if not errors and key is not None:
            clean[recipe.doc.file] = key
            changed = True
        found.append(errors)
    if pack is not None and changed:
        write_pack(pack, clean)
    return found


def fails_validation(catalog: Catalog, recipe: Recipe) -> bool:
    """Whether ``recipe`` has validation errors (only a catalog ``serve --watch`` previews holds such):
    a failure on one is the recipe's error (one log line), not the engine's (a traceback)."""
    return not catalog.usable and bool(recipe_errors(catalog, recipe))


def skip_lines(rel_path: str, errors: Sequence[Finding]) -> list[str]:
    """The stderr lines saying a file was skipped, and why (one finding per line)."""
    return [f"  ✗ skipping {rel_path}: {plural(len(errors), 'validation error')}",
            *(f"    {f.format()}" for f in errors)]


def usable_static(catalog: Catalog) -> tuple[Catalog, list[Finding]]:
    """``catalog`` without strategies, KV-store deployments and hardware profiles whose id is unsafe
    (ids become output paths) or that are not a mapping (every stage reads their fields), with the errors.
    """
    def kept(section: Mapping[str, Any]) -> FrozenDict:
        return FrozenDict((k, v) for k, v in section.items() if is_name(k) and isinstance(v, dict))

    strategies = kept(catalog.serving_strategies)
    kv_stores = kept(catalog.kv_stores)
    profiles = kept(catalog.hardware_profiles)
    unchanged = (len(strategies) == len(catalog.serving_strategies) and len(kv_stores) == len(catalog.kv_stores)
                 and len(profiles) == len(catalog.hardware_profiles))
    if unchanged:
        return catalog, []
    # (what validation says of an unsafe id; a file whose top level is no mapping has no ids)
    errors = [f for src in catalog.sources if isinstance(src.doc.data, dict)
              for f in data_file_identifier_findings(src.doc, document_kind(src.rel_path))]
    where = catalog.source_for(catalog.taxonomy_file)
    for k, v in catalog.hardware_profiles.items():
        if is_name(k) and not isinstance(v, dict) and where is not None:
            errors.append(finding_at(where, ("hardware_profiles", k), "error",
                                     f"hardware profile {k!r} must be a mapping of its fields; left out", "type"))
    for section in (catalog.serving_strategies, catalog.kv_stores):
        for k, v in section.items():
            if is_name(k) and not isinstance(v, dict):
                file = catalog.strategy_files.get(k, f"strategies/{k}.yaml")
                errors.append(Finding("error", file, 1, 1, "<root>", f"{k!r} is not a mapping; left out", "type"))
    taxonomy = catalog.taxonomy
    if len(profiles) < len(catalog.hardware_profiles):
        taxonomy = FrozenDict({**taxonomy, "hardware_profiles": profiles})
    fixed = dataclasses.replace(catalog, taxonomy=taxonomy, serving_strategies=strategies, kv_stores=kv_stores,
                                skipped=(*catalog.skipped, *errors))
    return fixed, errors


def usable_catalog(catalog: Catalog) -> tuple[Catalog, list[Finding]]:
    """``catalog`` without any recipe that has a validation error (and with :func:`usable_static`), and
    every reason something is missing from it (also kept in ``Catalog.skipped``)."""
    if catalog.usable:
        return catalog, []
    fixed, findings = usable_static(catalog)
    findings = [finding_from_load_error(e) for e in (*catalog.load_errors, *catalog.refused)] + findings
    keep: list[Recipe] = []
    for recipe, errors in zip(fixed.recipes, validation_errors(fixed, fixed.recipes), strict=True):
        if errors:
            findings += errors
        else:
            keep.append(recipe)
    return dataclasses.replace(fixed, recipes=tuple(keep), skipped=tuple(findings), usable=True), findings
