"""What the engine may see: a catalog without anything ``validate`` calls an error.

One rule for ``build-api`` and ``serve``: a recipe (or a strategy, KV-store
deployment or hardware profile) with a validation error is left out and its
errors are printed; nothing that fails validation reaches the synthesis
engine, so the engine only has to cope with what validation passes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .diagnostics import Finding, finding_from_load_error
from .forkmap import MISSING, forked_map
from .identifiers import is_name
from .loader import Catalog, Recipe, StaticData, hf_id_for, recipe_from_document
from .parsecache import CleanVerdicts, catalog_context
from .yamlsource import FrozenDict, YamlDocument

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
    return _usable_catalog(catalog, parallel)


#: validating in two processes pays from about this many recipes without a remembered verdict
PARALLEL_MIN_RECIPES = 16


def _usable_catalog(catalog: Catalog, parallel: bool) -> tuple[Catalog, list[Finding]]:
    fixed, findings = usable_static(catalog)
    findings = [finding_from_load_error(e) for e in (*catalog.load_errors, *catalog.refused)] + findings
    keep: list[Recipe] = []
    verdicts = CleanVerdicts(catalog.root, catalog_context([(s.rel_path, s.doc.digest) for s in catalog.sources]))
    keys = [verdicts.key(recipe.rel_path, recipe.doc.digest) for recipe in fixed.recipes]
    pending = {r.rel_path: r for r, key in zip(fixed.recipes, keys, strict=True) if not verdicts.known_clean(key)}
    found = EarlyErrors.found_for(fixed, pending.values())
    left = [r for rel, r in pending.items() if rel not in found]
    if parallel and len(left) >= PARALLEL_MIN_RECIPES:
        _vocabulary_of(fixed)  # (imports the validation code and builds the vocabulary once, before the fork)
        results = forked_map(lambda recipe: recipe_errors(fixed, recipe), left)
        found.update((r.rel_path, got) for r, got in zip(left, results or (), strict=False) if got is not MISSING)
    for recipe, key in zip(fixed.recipes, keys, strict=True):
        if recipe.rel_path not in pending:
            keep.append(recipe)
            continue
        errors = found.get(recipe.rel_path)
        if errors is None:
            errors = recipe_errors(fixed, recipe)
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


class EarlyErrors:
    """The errors of each recipe found while the catalog still loads (``load_catalog(prevalidate=True)``).

    Validation of a recipe reads nothing but the recipe and the catalog's other
    files, which are loaded before the recipes: a catalog of those alone
    validates each recipe as its parse arrives. The load keeps them in the
    catalog's memo (:meth:`memo`); :func:`usable_catalog` takes them from there.
    """

    #: ``Catalog.memo`` key: ``(the EarlyErrors, {(rel_path, digest): errors})``
    KEY = ("usable", "early errors")

    def __init__(self, root: Path, static: StaticData) -> None:
        self.static = static
        self.errors: dict[tuple[str, str | None], list[Finding]] = {}
        self._catalog = Catalog(root=root, taxonomy=static.taxonomy, platforms=static.platforms,
                                serving_strategies=static.serving_strategies, kv_stores=static.kv_stores,
                                recipes=(), sources=static.sources)

    def validate(self, rel: str, doc: YamlDocument) -> None:
        """Find the errors of the recipe file ``rel`` (the hook of :func:`.parsecache.parse_in_parallel`)."""
        try:
            recipe = recipe_from_document(doc, rel, hf_id_for(rel.removeprefix("models/")))
            self.errors[(rel, doc.digest)] = recipe_errors(self._catalog, recipe)
        except Exception:  # (not a recipe: the load reports it; anything else: usable_catalog validates it again)
            return

    def memo(self) -> dict[Any, Any]:
        """The entry the loaded catalog's memo starts with (none when nothing was validated)."""
        return {self.KEY: self} if self.errors else {}

    @classmethod
    def found_for(cls, catalog: Catalog, recipes: Iterable[Recipe]) -> dict[str, list[Finding]]:
        """``rel_path -> errors`` of those of ``recipes`` the load validated, if with these same files.

        Catalogs made with ``dataclasses.replace`` share the memo: errors found with
        other strategies, Mooncake deployments or hardware profiles do not count.
        """
        early = catalog.memo.get(cls.KEY)
        if early is None:
            return {}
        static = early.static
        if not (static.taxonomy is catalog.taxonomy and static.platforms is catalog.platforms
                and static.serving_strategies is catalog.serving_strategies and static.kv_stores is catalog.kv_stores):
            return {}
        errors = early.errors
        return {r.rel_path: errors[key] for r in recipes if (key := (r.rel_path, r.doc.digest)) in errors}


def is_usable(catalog: Catalog) -> bool:
    """Whether ``catalog`` came out of :func:`usable_catalog` (its findings were already reported)."""
    got = catalog.memo.get(_USABLE_KEY)
    return got is not None and got[0] is catalog and got[1][0] is catalog
