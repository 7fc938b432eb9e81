"""Incremental JSON API builds: re-render only the recipes whose inputs changed.

``.OUT.cache.json`` (beside ``OUT``, see :func:`~vllm_recipes.api.writer.cache_path`)
records the content hash of every input file (recipes, taxonomy, platforms,
strategies, kv stores, quickstart, extra inputs), a
fingerprint of this package's code, and for every recipe what it contributed:
its output operations (paths, no bytes), models.json entries, counts, warnings,
the tree bases it cleans and its promotion candidates.

What a recipe's output depends on, and therefore what is re-rendered:

* its own file (content hash);
* the static catalog files and the code: any change means a full build;
* ALL_IDS, through the promotion collision check (§5.5): a recipe is re-rendered
  when one of its promotion candidates became or stopped being a recipe id;
* other recipes writing into the same tree base (two variants promoted to one
  model id, §5.9): the last writer wins and each tree render first deletes its
  base, so every recipe whose bases overlap a re-rendered (or removed) recipe's
  old or new bases is re-rendered too, until nothing new is pulled in.

Everything else keeps its bytes on disk: no other recipe's path can be touched by
the re-rendered ones, so replaying just their operations in walk order gives
exactly the tree a full build gives (tests compare both byte for byte). The
static catalog comes from a JSON snapshot in the cache (checked to rebuild it
exactly when it was taken), so a one-recipe rebuild parses one YAML file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from vllm_recipes.catalog import Recipe
from vllm_recipes.catalog.loader import refusal, resolve_recipes_dir
from vllm_recipes.catalog.yamlsource import YamlLoadError
from vllm_recipes.gcpause import cyclic_gc_paused
from vllm_recipes.jsvalues import js_str

from .build import (
    ApiLayout,
    BuildCounts,
    FeatureModeError,
    RecipeOutput,
    Warn,
    build_recipe,
    catalog_orjson_safe,
    check_feature_modes,
    decode_ops,
    encode_index,
    merge_outputs,
    summary_text,
)
from .disk import DirectoryBuild, build_to_directory
from .inputs import (
    CACHE_VERSION,
    HookFactory,
    InputScan,
    catalog_from_snapshot,
    hook_id,
    parse_recipe,
    scan_inputs,
    static_catalog,
    static_snapshot,
)
from .writer import (
    build_lock,
    cache_path,
    check_replaceable,
    commit_swapped,
    discard_trees,
    drop_cache,
    new_build_dir,
    resolve_out,
    stale_siblings,
    swap_into_place,
    unsafe_paths,
    write_cache,
)


def cache_bytes(scan: InputScan, recipes: Sequence[RecipeOutput | Mapping[str, Any]], layout: ApiLayout,
                counts: BuildCounts, snapshot: Any = None, static_notes: Sequence[str] = ()) -> bytes:
    """The cache describing a build of ``scan`` (``recipes``: outputs, or entries of the previous cache)."""
    hashes = {r.rel_path: r.hash for r in scan.recipes}
    entries = []
    for res in recipes:
        if isinstance(res, RecipeOutput):
            entries.append({**res.to_cache(), "hash": hashes.get(res.rel_path, "")})
        else:
            entries.append(res)
    return orjson.dumps({
        "version": CACHE_VERSION,
        "fingerprint": scan.fingerprint,
        "static": scan.static,
        "all_ids": sorted(scan.all_ids),
        "layout": [layout.before, layout.after],
        "static_counts": [counts.strategies, counts.kv_stores, counts.platforms],
        "static_data": snapshot,
        "static_notes": list(static_notes),
        "recipes": entries,
    })


class _CacheEntry(BaseModel):
    """One recipe's line of the cache (what :meth:`RecipeOutput.to_cache` writes)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    rel_path: str
    hf_id: str
    hash: str
    ops: list[Annotated[str, StringConstraints(min_length=2, pattern=r"^[rsw]")]]
    entries: list[dict[str, Any]]
    counts: Annotated[list[Annotated[int, Field(ge=0, lt=2 ** 53)]], Field(min_length=5, max_length=5)]
    warnings: list[str]
    bases: list[str]
    mids: list[str]
    skipped: bool = False


class _Cache(BaseModel):
    """The whole cache file; anything else is discarded (and the build is a full one)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    version: Literal[CACHE_VERSION]  # type: ignore[valid-type]
    fingerprint: str
    static: dict[str, str]
    all_ids: list[str]
    layout: Annotated[list[list[str]], Field(min_length=2, max_length=2)]
    static_counts: Annotated[list[Annotated[int, Field(ge=0, lt=2 ** 53)]], Field(min_length=3, max_length=3)]
    static_data: list[Annotated[list[Any], Field(min_length=2, max_length=2)]] | None
    static_notes: list[str]
    recipes: list[_CacheEntry]


def read_cache(out: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, str | None]:
    """``(cache, None)``, ``(None, None)`` when there is none, or ``(None, why it was discarded)``.

    The cache is an input like any other: it must parse, have this version's shape, and
    name only paths inside the API (checked again by the writer) before it is trusted.
    """
    path = cache_path(Path(out))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return None, f"{path} is not valid JSON ({exc})"
    if isinstance(data, dict) and data.get("version") != CACHE_VERSION:
        return None, f"{path} is from another version ({js_str(data.get('version'))[:20]})"
    try:
        checked = _Cache.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "top level"
        return None, f"{path} has an unexpected shape ({where}: {err.get('msg', 'invalid')})"
    if checked.static_data is not None and not all(isinstance(x[0], str) for x in checked.static_data):
        return None, f"{path} has an unexpected shape (static_data)"
    paths = [p for r in checked.recipes for k, p, _ in decode_ops(r.ops) if k == "w"]
    # (a skipped recipe wrote nothing: its id may well be the unsafe one it was skipped for)
    paths += [b for r in checked.recipes if not r.skipped for b in (*r.bases, r.hf_id)]
    if unsafe_paths(paths) or unsafe_paths(p for part in checked.layout for p in part):
        return None, f"{path} names paths outside the API; refused"
    return data, None


def load_cache(out: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The cache of the API at ``out``, or None when missing, unreadable, misshapen or of another version."""
    return read_cache(out)[0]


@dataclass
class IncrementalBuild:
    """What :func:`build_incremental` / :func:`build_full` did."""

    #: ``full`` (everything rebuilt and swapped in), ``incremental`` or ``unchanged``
    mode: str
    reason: str
    summary: str
    counts: BuildCounts
    warnings: list[str]
    #: recipe files that were rendered
    rendered: list[str] = field(default_factory=list)
    written: int = 0
    deleted: int = 0
    #: one line when the build cache was discarded (unreadable, misshapen, other version)
    notice: str | None = None


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _full(out: Path, warn: Warn | None, hook_factory: HookFactory | None, scan: InputScan,
          jobs: int | None, reason: str, background_cleanup: bool = False) -> IncrementalBuild:
    """Build everything into a fresh sibling of ``out`` and swap it in (the previous API survives errors)."""
    check_replaceable(out)
    stale = stale_siblings(out)
    tmp = new_build_dir(out)
    try:
        db: DirectoryBuild = build_to_directory(scan, tmp, warn, hook_factory=hook_factory, jobs=jobs)
        snapshot = static_snapshot(db.catalog) if db.catalog is not None else None
        notes = [f"  ✗ skipping {f.format()}" for f in db.catalog.skipped] if db.catalog is not None else []
        cache = cache_bytes(scan, db.recipes, db.layout, db.counts, snapshot, notes)
        drop_cache(out)  # from here until the new cache is written, a crash means "no cache"
        old = swap_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    write_cache(out, cache)
    discard_trees([*stale, *([old] if old is not None else [])], background=background_cleanup)
    return IncrementalBuild("full", reason, db.summary, db.counts, db.warnings,
                            rendered=[r.rel_path for r in db.recipes], written=len(db.files))


def build_full(recipes_dir: str | os.PathLike[str] | None, out: str | os.PathLike[str],
               warn: Warn | None = None, *, hook_factory: HookFactory | None = None,
               extra_inputs: Sequence[str | os.PathLike[str]] = (), jobs: int | None = None,
               background_cleanup: bool = False) -> IncrementalBuild:
    """A full atomic build that also leaves a cache for the next incremental one.

    ``background_cleanup``: delete the replaced tree in a detached process (the CLI does).
    """
    root = resolve_recipes_dir(recipes_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"recipes directory not found: {root}")
    out = resolve_out(out)
    with build_lock(out):
        scan = scan_inputs(root, catalog_root=root, extra_inputs=extra_inputs, hook_key=hook_id(hook_factory))
        return _full(out, warn, hook_factory, scan, jobs, "requested", background_cleanup)


def build_incremental(recipes_dir: str | os.PathLike[str] | None, out: str | os.PathLike[str],
                      warn: Warn | None = None, *, hook_factory: HookFactory | None = None,
                      extra_inputs: Sequence[str | os.PathLike[str]] = (),
                      changed: Iterable[str | os.PathLike[str]] | None = None,
                      jobs: int | None = None, background_cleanup: bool = False) -> IncrementalBuild:
    """Bring the API at ``out`` up to date, re-rendering as little as possible.

    Falls back to a full atomic build when there is no usable cache, a static
    input or the code changed, a recipe fails to load or validate (so the error
    is exactly the full build's), or most recipes are dirty anyway.
    ``changed`` lists the files known to have changed: the others are not even read.
    """
    root = resolve_recipes_dir(recipes_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"recipes directory not found: {root}")
    out = resolve_out(out)
    with build_lock(out):
        return _incremental(root, out, warn, hook_factory, extra_inputs, changed, jobs, background_cleanup)


def _incremental(root: Path, out: Path, warn: Warn | None, hook_factory: HookFactory | None,
                 extra_inputs: Sequence[str | os.PathLike[str]],
                 changed: Iterable[str | os.PathLike[str]] | None, jobs: int | None,
                 background_cleanup: bool) -> IncrementalBuild:
    cache, notice = read_cache(out) if out.is_dir() else (None, None)
    trust: dict[str, str] | None = None
    changed_set = {Path(os.path.realpath(p)) for p in changed} if changed is not None else None
    if cache is not None and changed_set is not None:
        trust = {**cache.get("static", {}), **{r["rel_path"]: r["hash"] for r in cache["recipes"]}}
    scan = scan_inputs(root, catalog_root=root, extra_inputs=extra_inputs, hook_key=hook_id(hook_factory),
                       trust=trust, changed=changed_set)

    def full(reason: str) -> IncrementalBuild:
        result = _full(out, warn, hook_factory, scan, jobs, reason, background_cleanup)
        result.notice = notice
        return result

    if cache is None:
        return full("build cache discarded" if notice else "no build cache")
    if cache.get("fingerprint") != scan.fingerprint:
        return full("code or options changed")
    if cache.get("static") != scan.static:
        return full("catalog data changed")
    if any(r.hf_id is None for r in scan.recipes):
        return full("recipe outside models/<org>/")

    cached: dict[str, dict[str, Any]] = {r["rel_path"]: r for r in cache["recipes"]}
    current = {r.rel_path: r for r in scan.recipes}
    order = {rel: i for i, rel in enumerate(current)}
    all_ids = scan.all_ids
    delta = set(cache["all_ids"]) ^ all_ids
    dirty: set[str] = set()
    for r in scan.recipes:
        c = cached.get(r.rel_path)
        if c is None or c["hash"] != r.hash or (delta and any(m in delta for m in c["mids"])):
            dirty.add(r.rel_path)
    removed = [c for rel, c in cached.items() if rel not in current]
    notes = [*(f"  ✗ skipping {refusal(rel)}" for rel in scan.refused), *cache["static_notes"]]
    strategies, kv_stores, platforms = cache["static_counts"]
    before, after = cache["layout"]

    def counts_and_warnings(rendered: Mapping[str, RecipeOutput]) -> tuple[BuildCounts, list[str]]:
        c = BuildCounts(models=0, strategies=strategies, kv_stores=kv_stores, platforms=platforms)
        lines: list[str] = list(notes)
        for r in scan.recipes:
            res = rendered.get(r.rel_path)
            if res is not None:
                n = (res.has_recommended, res.alternatives, res.per_hardware, res.promoted, res.collisions)
                lines += res.warnings
                c.models += not res.skipped
            else:
                n = cached[r.rel_path]["counts"]
                lines += cached[r.rel_path]["warnings"]
                c.models += not cached[r.rel_path].get("skipped", False)
            c.with_recommended += n[0]
            c.alternatives += n[1]
            c.per_hardware += n[2]
            c.promoted += n[3]
            c.collisions += n[4]
        if warn is not None:
            for line in lines:
                warn(line)
        return c, lines

    if not dirty and not removed:
        counts, warnings = counts_and_warnings({})
        return IncrementalBuild("unchanged", "no input changed", summary_text(counts), counts, warnings)
    if len(dirty) > max(8, len(scan.recipes) // 2):
        return full(f"{len(dirty)} of {len(scan.recipes)} recipes changed")

    rendered: dict[str, RecipeOutput] = {}
    touched: list[str] = [b for c in removed for b in (*c["bases"], c["hf_id"])]

    def overlapping() -> set[str]:
        """Unrendered recipes whose trees share a base with something re-rendered or removed."""
        return {rel for rel, c in cached.items()
                if rel in current and rel not in rendered
                and any(_overlaps(b, t) for b in (*c["bases"], c["hf_id"]) for t in touched)}

    snapshot = cache.get("static_data")
    catalog = (catalog_from_snapshot(snapshot, root, all_ids) if snapshot is not None
               else static_catalog(root, (), all_ids))
    hook = hook_factory(catalog) if hook_factory is not None else None
    safe = catalog_orjson_safe(catalog)
    pending = dirty | overlapping()
    with cyclic_gc_paused():
        while pending:
            recipes: list[Recipe] = []
            for rel in sorted(pending, key=order.__getitem__):
                try:
                    rec = parse_recipe(current[rel])
                    check_feature_modes(rec)
                except (OSError, YamlLoadError, FeatureModeError):
                    # let the full build report it exactly as it always does
                    return full(f"{rel} does not load or validate")
                recipes.append(rec)
            for rec in recipes:
                res = build_recipe(catalog, rec, hook, static_safe=safe)
                rendered[rec.rel_path] = res
                touched += [*res.bases, res.hf_id]
                old = cached.get(rec.rel_path)
                if old is not None:
                    touched += [*old["bases"], old["hf_id"]]
            pending = overlapping()

        # Only the re-rendered recipes' paths can change: every other recipe's files are
        # untouched by them (no shared base, see the closure above) and stay as they are.
        in_order = [rendered[r.rel_path] for r in scan.recipes if r.rel_path in rendered]
        new_tree = merge_outputs(in_order)
        old_paths: set[str] = set()
        for rel in [*rendered, *(c["rel_path"] for c in removed)]:
            c = cached.get(rel)
            if c is not None:
                old_paths.update(p for k, p, _ in decode_ops(c["ops"]) if k == "w")
        if (old_paths | set(new_tree)) & {*before, *after}:
            return full("a recipe writes over a catalog file")
        counts, warnings = counts_and_warnings(rendered)
        entries = [rendered[r.rel_path].entries if r.rel_path in rendered else cached[r.rel_path]["entries"]
                   for r in scan.recipes]
        index = [e[0] for e in entries if e] + [x for e in entries for x in e[1:]]
        new_tree["models.json"] = encode_index(index)

    writes: dict[str, bytes] = {}
    for path, data in new_tree.items():
        assert data is not None
        with contextlib.suppress(OSError), open(out / path, "rb") as fh:
            if fh.read() == data:
                continue
        writes[path] = data
    deletes = sorted(old_paths - set(new_tree))
    layout = ApiLayout(list(before), list(after))
    new_cache = [rendered.get(r.rel_path) or cached[r.rel_path] for r in scan.recipes]
    cache_data = cache_bytes(scan, new_cache, layout, counts, snapshot, cache["static_notes"])
    if not writes and not deletes:
        write_cache(out, cache_data)
    else:
        # the whole new tree: re-rendered files as bytes, every other file hard-linked from OUT,
        # swapped in at once - a crash leaves the old or the new tree, never a mixture
        everything = [rendered[r.rel_path] if r.rel_path in rendered else RecipeOutput.from_cache(cached[r.rel_path])
                      for r in scan.recipes]
        whole = merge_outputs(everything, [(p, None) for p in before])
        for p in after:
            whole[p] = None
        whole["models.json"] = new_tree["models.json"]
        commit_swapped(out, whole, cache_data, background=background_cleanup)
    return IncrementalBuild("incremental", f"{len(dirty)} recipe file(s) changed", summary_text(counts),
                            counts, warnings, rendered=sorted(rendered, key=order.__getitem__),
                            written=len(writes), deleted=len(deletes))
