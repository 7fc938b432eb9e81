"""What the engine may see: a catalog without anything ``validate`` calls an error.

One rule for ``build-api`` and ``serve``: a recipe (or a strategy, KV-store
deployment or hardware profile) with a validation error is left out and its
errors are printed; nothing that fails validation reaches the synthesis
engine, so the engine only has to cope with what validation passes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from vllm_recipes.gcpause import cyclic_gc_paused

from .diagnostics import Finding, finding_from_load_error
from .forkmap import MISSING, forked_map
from .identifiers import is_name
from .loader import EARLY_ERRORS_KEY, Catalog, Recipe
from .parsecache import CleanVerdicts, catalog_context
from .yamlsource import FrozenDict

__all__ = ["is_usable", "recipe_errors", "skip_lines", "usable_catalog", "usable_static"]

_VOCAB_KEY = ("usable", "vocabulary")
_USABLE_KEY = ("usable", "catalog")


def recipe_errors(catalog: Catalog, recipe: Recipe, ignore: Iterable[str] = ()) -> list[Finding]:
    """The validation errors of one recipe (codes in ``ignore`` left out), path id included."""
    from .identifiers import hf_id_findings
    from .validate import validate_document

    vocab = _vocabulary_of(catalog)
    skip = frozenset(ignore)
    found = [*validate_document(recipe.doc, "recipe", catalog, vocab, errors_only=True),
             *hf_id_findings(recipe.doc, recipe.hf_id)]
    return [f for f in found if f.is_error and f.code not in skip]


def _vocabulary_of(catalog: Catalog) -> Any:
    """The catalog's validation vocabulary, made once per catalog."""
    from .validate import _vocabulary

    # (``dataclasses.replace`` copies share ``memo``: every entry names the catalog it is for)
    got = catalog.memo.get(_VOCAB_KEY)
    if got is None or got[0] is not catalog:
        got = catalog.memo[_VOCAB_KEY] = (catalog, _vocabulary(catalog))
    return got[1]


def skip_lines(rel_path: str, errors: Sequence[Finding]) -> list[str]:
    """The stderr lines saying a file was skipped, and why (one finding per line)."""
    n = len(errors)
    return [f"  ✗ skipping {rel_path}: {n} validation error{'s' if n != 1 else ''}",
            *(f"    {f.format()}" for f in errors)]


def _static_errors(catalog: Catalog) -> list[Finding]:
    from .validate import document_kind, validate_document

    out: list[Finding] = []
    for src in catalog.sources:
        kind = document_kind(src.rel_path)
        out += [f for f in validate_document(src.doc, kind, catalog, errors_only=True)
                if f.is_error and f.code == "bad-id"]
    return out


def usable_static(catalog: Catalog) -> tuple[Catalog, list[Finding]]:
    """``catalog`` without strategies, KV-store deployments and hardware profiles whose id is unsafe.

    Their ids become output paths (``strategies/<name>.json``, ``hw/<id>.json``),
    so an unsafe one is dropped with its error; everything else is kept as is.
    """
    bad = [k for k in (*catalog.serving_strategies, *catalog.kv_stores, *catalog.hardware_profiles)
           if not is_name(k)]
    if not bad:
        return catalog, []
    errors = _static_errors(catalog)
    taxonomy = catalog.taxonomy
    if any(not is_name(k) for k in catalog.hardware_profiles):
        profiles = FrozenDict((k, v) for k, v in catalog.hardware_profiles.items() if is_name(k))
        taxonomy = FrozenDict({**taxonomy, "hardware_profiles": profiles})
    fixed = dataclasses.replace(
        catalog, taxonomy=taxonomy,
        serving_strategies=FrozenDict((k, v) for k, v in catalog.serving_strategies.items() if is_name(k)),
        kv_stores=FrozenDict((k, v) for k, v in catalog.kv_stores.items() if is_name(k)),
        skipped=(*catalog.skipped, *errors))
    return fixed, errors


def usable_catalog(catalog: Catalog, *, parallel: bool = False) -> tuple[Catalog, list[Finding]]:
    """``catalog`` without any recipe that has a validation error (and with :func:`usable_static`).

    Returns the catalog and every reason something is missing from it: files
    that do not load or were refused, and the errors of each recipe left out
    (also kept in ``Catalog.skipped``). ``parallel``: recipes without a remembered
    verdict (a first start) are validated on two cores (:func:`.forkmap.forked_map`);
    for command-line entry points.
    """
    done = catalog.memo.get(_USABLE_KEY)
    if done is not None and done[0] is catalog:
        return done[1]
    with cyclic_gc_paused():  # validation builds many small acyclic objects (pydantic models, findings)
        return _usable_catalog(catalog, parallel)


#: validating in two processes pays from about this many recipes without a remembered verdict
PARALLEL_MIN_RECIPES = 16


def _usable_catalog(catalog: Catalog, parallel: bool) -> tuple[Catalog, list[Finding]]:
    fixed, findings = usable_static(catalog)
    findings = [finding_from_load_error(e) for e in (*catalog.load_errors, *catalog.refused)] + findings
    keep: list[Recipe] = []
    verdicts = CleanVerdicts(catalog.root, catalog_context([(s.rel_path, s.doc.digest) for s in catalog.sources]))
    keys = [verdicts.key(recipe.rel_path, recipe.doc.digest) for recipe in fixed.recipes]
    pending = [r for r, key in zip(fixed.recipes, keys, strict=True) if not verdicts.known_clean(key)]
    early = _early_errors(fixed)
    found = {r.rel_path: early[(r.rel_path, r.doc.digest)] for r in pending if (r.rel_path, r.doc.digest) in early}
    left = [r for r in pending if r.rel_path not in found]
    if parallel and len(left) >= PARALLEL_MIN_RECIPES:
        _vocabulary_of(fixed)  # (imports the validation code and builds the vocabulary once, before the fork)
        results = forked_map(lambda recipe: recipe_errors(fixed, recipe), left)
        found.update((r.rel_path, got) for r, got in zip(left, results or (), strict=False) if got is not MISSING)
    pending_paths = {r.rel_path for r in pending}
    for recipe, key in zip(fixed.recipes, keys, strict=True):
        if recipe.rel_path not in pending_paths:
            keep.append(recipe)
            continue
        errors = found[recipe.rel_path] if recipe.rel_path in found else recipe_errors(fixed, recipe)
        if errors:
            findings += errors
            continue
        keep.append(recipe)
        verdicts.add(key)
    verdicts.save()
    if len(keep) == len(fixed.recipes) and fixed is catalog:
        result = catalog, findings
    else:
        result = dataclasses.replace(fixed, recipes=tuple(keep), skipped=tuple(findings)), findings
    catalog.memo[_USABLE_KEY] = (catalog, result)
    result[0].memo[_USABLE_KEY] = (result[0], (result[0], []))  # already usable: nothing more to skip
    return result


def _early_errors(catalog: Catalog) -> dict[tuple[str, str | None], list[Finding]]:
    """The recipe errors the load found while parsing (``prevalidate``), if made with these same files.

    Catalogs made with ``dataclasses.replace`` share the memo: errors found with
    other strategies, Mooncake deployments or hardware profiles do not count.
    """
    got = catalog.memo.get(EARLY_ERRORS_KEY)
    if got is None:
        return {}
    static, errors = got
    same = (static.taxonomy is catalog.taxonomy and static.platforms is catalog.platforms
            and static.serving_strategies is catalog.serving_strategies and static.kv_stores is catalog.kv_stores)
    return errors if same else {}


def is_usable(catalog: Catalog) -> bool:
    """Whether ``catalog`` came out of :func:`usable_catalog` (its findings were already reported)."""
    got = catalog.memo.get(_USABLE_KEY)
    return got is not None and got[0] is catalog and got[1][0] is catalog
