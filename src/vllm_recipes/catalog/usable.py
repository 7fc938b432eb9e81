"""What the engine may see: a catalog without anything ``validate`` calls an error.

One rule for ``build-api`` and ``serve``: what has a validation error is left out and its errors
printed, so the engine only has to cope with what validation passes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .diagnostics import Finding, finding_at, finding_from_load_error, plural
from .identifiers import data_file_identifier_findings, hf_id_findings, is_name
from .loader import Catalog, Recipe
from .verdicts import Verdicts
from .yamlsource import FrozenDict


def recipe_errors(catalog: Catalog, recipe: Recipe, ignore: Iterable[str] = ()) -> list[Finding]:
    """The validation errors of one recipe (codes in ``ignore`` left out), path id included."""
    from .validate import validate_document

    skip = frozenset(ignore)
    found = [*validate_document(recipe.doc, "recipe", catalog, errors_only=True),
             *hf_id_findings(recipe.doc, recipe.hf_id)]
    return [f for f in found if f.is_error and f.code not in skip]


def validation_errors(catalog: Catalog, recipes: Iterable[Recipe]) -> list[list[Finding]]:
    """:func:`recipe_errors` of each recipe, but none for one the :class:`Verdicts` found clean as it is
    now (no pydantic models then); the clean ones are remembered."""
    verdicts = Verdicts(catalog)
    found: list[list[Finding]] = []
    for recipe in recipes:
        if verdicts.clean(recipe):
            found.append([])
            continue
        errors = recipe_errors(catalog, recipe)
        if not errors:
            verdicts.remember(recipe)
        found.append(errors)
    verdicts.save()
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
    from .validate import document_kind  # (pydantic: only when something is left out)

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
