"""Full builds straight into a directory: worker processes parse, render and write.

:func:`~vllm_recipes.api.build.build_api` keeps every file in memory, which the
website wants. For the CLI that would mean shipping the whole API (hundreds of
MB for a large catalog) from the workers back to one process and writing it
from there. Here each worker parses its recipes, renders them and writes their
files into the fresh build directory itself, returning only paths.

That is exact because recipes interact only through overlapping tree bases
(json-api.md §5.9: the last render of a base wins, and each render first
deletes its base). Every recipe whose bases overlap another recipe's is
rendered again in the main process, its worker-written files are removed, and
the group is replayed in walk order.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.catalog.yamlsource import YamlLoadError
from vllm_recipes.gcpause import cyclic_gc_paused

from .build import (
    ApiBuildError,
    ApiLayout,
    BuildCounts,
    ExtraRecipeKeys,
    FeatureModeError,
    RecipeOutput,
    Warn,
    _auto_jobs,
    build_api,
    build_recipe,
    catalog_counts,
    catalog_orjson_safe,
    encode_index,
    merge_outputs,
    models_index,
    quickstart_files,
    static_files,
    summary_text,
)
from .inputs import (
    HookFactory,
    InputScan,
    RecipeInput,
    misplaced_recipe_errors,
    parse_recipe,
    skipped_static_lines,
    static_catalog,
)
from .writer import check_paths, write_files


@dataclass
class DirectoryBuild:
    """A full build written into a directory (bytes are on disk, not here)."""

    summary: str
    counts: BuildCounts
    warnings: list[str]
    #: per-recipe provenance, walk order, ops without bytes (for the incremental cache)
    recipes: list[RecipeOutput]
    layout: ApiLayout
    #: every file written, relative to the directory
    files: list[str]
    #: the static part of the catalog (taxonomy, strategies, kv stores, platforms)
    catalog: Catalog | None = None


def _write_into(dest: str, files: dict[str, bytes | None], made: set[str]) -> None:
    """Write ``files`` under ``dest``, each through an open descriptor of its directory.

    ``openat`` on a directory fd skips resolving the whole path again for each of
    the tens of thousands of files (most directories hold several); ``made``
    remembers directories already created (by this process) across calls.
    """
    check_paths(files)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
    dir_flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    dir_fds: dict[str, int] = {}
    try:
        for path, data in files.items():
            assert data is not None
            i = path.rfind("/")
            d, name = (path[:i], path[i + 1:]) if i > 0 else ("", path)
            dfd = dir_fds.get(d)
            if dfd is None:
                if d and d not in made:
                    os.makedirs(f"{dest}/{d}", exist_ok=True)  # exist_ok: the other worker may race us
                    made.add(d)
                dfd = dir_fds[d] = os.open(f"{dest}/{d}" if d else dest, dir_flags)
            fd = os.open(name, flags, 0o666, dir_fd=dfd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
    finally:
        for dfd in dir_fds.values():
            os.close(dfd)


_state: tuple[Catalog, Sequence[RecipeInput], ExtraRecipeKeys | None, bool, str] | None = None
_made_dirs: set[str] = set()


def _work(i: int) -> tuple[str, Any]:
    """Parse, validate, render and write one recipe; returns ("ok", output without bytes) or an error."""
    assert _state is not None
    catalog, inputs, hook, safe, dest = _state
    try:
        recipe = parse_recipe(inputs[i])
    except (OSError, YamlLoadError) as exc:
        return "load", str(exc)
    try:
        from .build import check_feature_modes

        check_feature_modes(recipe)
    except FeatureModeError as exc:
        return "invalid", (exc.rel_path, exc.messages)
    res = build_recipe(catalog, recipe, hook, static_safe=safe)
    # the recipe's own final files (a recipe can overwrite itself: two variants, one model id)
    _write_into(dest, merge_outputs([res]), _made_dirs)
    res.ops = [(k, p, None) for k, p, _ in res.ops]
    return "ok", res


def _claims(res: RecipeOutput) -> set[str]:
    """The paths a recipe's files live under (or next to, for ``<id>.json``)."""
    return set() if res.skipped else {*res.bases, res.hf_id}


def contested_recipes(outputs: Sequence[RecipeOutput]) -> set[int]:
    """Indices of recipes whose claims overlap (equal or nested) another recipe's."""
    owners: dict[str, set[int]] = {}
    for i, res in enumerate(outputs):
        for b in _claims(res):
            owners.setdefault(b, set()).add(i)
    contested: set[int] = set()
    for b, idx in owners.items():
        if len(idx) > 1:
            contested |= idx
        j = b.find("/")
        while j > 0:
            anc = owners.get(b[:j])
            if anc:
                contested |= idx | anc
            j = b.find("/", j + 1)
    return contested


def _static_touched(before: Sequence[str], outputs: Sequence[RecipeOutput]) -> bool:
    """Does any recipe overwrite or delete a static catalog file? (Only with odd names.)"""
    claims = {b for res in outputs for b in _claims(res)}
    for p in before:
        j = p.find("/")
        while j > 0:
            if p[:j] in claims:
                return True
            j = p.find("/", j + 1)
        if p.endswith(".json") and p[:-5] in claims:
            return True
    return False


def build_to_directory(scan: InputScan, dest: Path, warn: Warn | None = None, *,
                       hook_factory: HookFactory | None = None, jobs: int | None = None) -> DirectoryBuild:
    """Build the whole API into the empty directory ``dest`` (same bytes as :func:`build_api`)."""
    misplaced = misplaced_recipe_errors(scan)
    if misplaced:
        raise ApiBuildError("cannot build the JSON API, these files do not load:\n"
                            + "\n".join(f"  {e}" for e in misplaced))
    catalog = static_catalog(scan.root, (), scan.all_ids)
    notes = skipped_static_lines(scan, catalog)
    hook = hook_factory(catalog) if hook_factory is not None else None
    safe = catalog_orjson_safe(catalog)
    inputs = scan.recipes
    n = len(inputs)
    jobs = _auto_jobs(n) if jobs is None else max(1, min(jobs, n))
    global _state
    _state = (catalog, inputs, hook, safe, os.fspath(dest))
    _made_dirs.clear()
    try:
        with cyclic_gc_paused():
            if jobs <= 1:
                results = [_work(i) for i in range(n)]
            else:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                ctx = multiprocessing.get_context("fork")
                with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                    chunk = max(1, min(4, n // (jobs * 8)))
                    results = list(pool.map(_work, range(n), chunksize=chunk))
    finally:
        _state = None

    # one file that does not load is skipped with its error, never the whole build (issue #28)
    outputs: list[RecipeOutput] = []
    warnings: list[str] = [*notes, *(f"  ✗ skipping {msg}" for kind, msg in results if kind == "load")]
    for kind, value in results:
        if kind == "load":
            continue
        if kind == "invalid":
            for w in warnings:
                if warn is not None:
                    warn(w)
            raise FeatureModeError(*value)
        outputs.append(value)
        warnings.extend(value.warnings)

    before = static_files(catalog)
    if _static_touched([p for p, _ in before], outputs):
        return _from_memory(scan, dest, warn, hook_factory, jobs)
    for w in warnings:
        if warn is not None:
            warn(w)

    contested = sorted(contested_recipes(outputs))
    if contested:
        # replay the interacting recipes in walk order, with bytes this time
        root = os.fspath(dest)
        for i in contested:
            for path in merge_outputs([outputs[i]]):
                with contextlib.suppress(FileNotFoundError):  # two of them may have written it
                    os.unlink(f"{root}/{path}")
        redo = [build_recipe(catalog, parse_recipe(inputs[i]), hook, static_safe=safe) for i in contested]
        _write_into(root, merge_outputs(redo), set())
        for i, res in zip(contested, redo, strict=True):
            res.ops = [(k, p, None) for k, p, _ in res.ops]
            outputs[i] = res

    static = dict(before)
    static["models.json"] = encode_index(models_index(outputs))
    after = ["models.json"]
    for path, data in quickstart_files(catalog):
        static[path] = data
        after.append(path)
    _write_into(os.fspath(dest), static, set())
    files = list(merge_outputs(outputs, [(p, None) for p, _ in before]))
    files += [p for p in after if p not in files]
    counts = catalog_counts(catalog, outputs)
    return DirectoryBuild(summary_text(counts), counts, warnings, outputs,
                          ApiLayout([p for p, _ in before], after), files, catalog)


def _from_memory(scan: InputScan, dest: Path, warn: Warn | None, hook_factory: HookFactory | None,
                 jobs: int | None) -> DirectoryBuild:
    """The general (slower) route: everything in memory, then written out."""
    for entry in os.scandir(dest):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    catalog = load_catalog(scan.root)
    api = build_api(catalog, warn, extra_recipe_keys=hook_factory(catalog) if hook_factory else None, jobs=jobs)
    write_files(dest, api.files)
    for res in api.recipes:
        res.ops = [(k, p, None) for k, p, _ in res.ops]
    return DirectoryBuild(api.summary, api.counts, api.warnings, api.recipes, api.layout, list(api.files),
                          catalog)
