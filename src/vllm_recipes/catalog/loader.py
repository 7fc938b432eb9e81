"""Loading a recipe directory (public recipe layout) into an immutable :class:`Catalog`.

Layout: ``models/<org>/<repo>.yaml``, ``strategies/*.yaml``, ``kv_store/*.yaml``,
``taxonomy.yaml``, ``platforms.yaml``. Whatever a user directory lacks comes
from the bundled catalog shipped inside this package. Nothing here knows about
commands or the web.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .parsecache import ParseCache, parse_in_parallel, read_document
from .yamlsource import (  # noqa: F401  (ENV_FOLLOW_SYMLINKS: re-exported for the CLI)
    ENV_FOLLOW_SYMLINKS,
    FrozenDict,
    YamlDocument,
    YamlLoadError,
    follow_symlinks_default,
)

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "data"
ENV_RECIPES_DIR = "VLLM_RECIPES_DIR"
#: ``1``: read files reached through symbolic links that resolve outside the recipes directory.


@dataclass(frozen=True)
class Recipe:
    """One recipe file: its identity, frozen data and source positions."""

    hf_id: str
    rel_path: str
    doc: YamlDocument

    @property
    def data(self) -> Mapping[str, Any]:
        return self.doc.data

    @property
    def org(self) -> str:
        return self.hf_id.split("/", 1)[0]

    @property
    def repo(self) -> str:
        return self.hf_id.split("/", 1)[1]

    @property
    def meta(self) -> Mapping[str, Any]:
        m = self.data.get("meta")
        return m if isinstance(m, dict) else FrozenDict()

    @property
    def model(self) -> Mapping[str, Any]:
        m = self.data.get("model")
        return m if isinstance(m, dict) else FrozenDict()

    @property
    def variants(self) -> Mapping[str, Any]:
        v = self.data.get("variants")
        return v if isinstance(v, dict) else FrozenDict()

    @property
    def is_omni(self) -> bool:
        tasks = self.meta.get("tasks")
        return isinstance(tasks, tuple | list) and "omni" in tasks

    @property
    def title(self) -> str:
        t = self.meta.get("title")
        return t if isinstance(t, str) else self.repo

    @property
    def provider(self) -> str:
        p = self.meta.get("provider")
        return p if isinstance(p, str) else self.org


@dataclass(frozen=True)
class SourceFile:
    """A non-recipe catalog file (taxonomy, strategy, kv store, platforms)."""

    rel_path: str
    doc: YamlDocument


@dataclass(frozen=True)
class Catalog:
    """Everything loaded from one recipes directory; immutable and cheap to query."""

    root: Path
    taxonomy: Mapping[str, Any]
    platforms: Mapping[str, Any] | None
    #: serving strategies (``strategies/``), by ``name``, in file order
    serving_strategies: Mapping[str, Any]
    #: Mooncake deployments (``kv_store/``), by ``name``, in file order
    kv_stores: Mapping[str, Any]
    recipes: tuple[Recipe, ...]
    sources: tuple[SourceFile, ...] = ()
    #: files that could not be parsed (or whose top level is not a mapping)
    load_errors: tuple[YamlLoadError, ...] = ()
    #: every hf_id found by the path pre-scan (json-api.md §5.0), parse failures included
    all_ids: frozenset[str] = field(default_factory=frozenset)
    #: files refused without being read (symbolic links out of the recipes directory)
    refused: tuple[YamlLoadError, ...] = ()
    #: validation errors of recipes and catalog entries left out by :func:`usable_catalog`
    skipped: tuple[Any, ...] = ()
    #: memo for pure functions of this (immutable) catalog, e.g. per-recipe layer plans
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def strategies(self) -> Mapping[str, Any]:
        """The merged strategy map S: serving strategies, then kv stores (synthesis.md §1.1)."""
        merged = dict(self.serving_strategies)
        for name, spec in self.kv_stores.items():
            if name not in merged:
                merged[name] = spec
        return FrozenDict(merged)

    @cached_property
    def strategy_files(self) -> Mapping[str, str]:
        """Strategy / kv-store name -> the file it was read from (for provenance)."""
        out: dict[str, str] = {}
        for src in self.sources:
            top = src.rel_path.removeprefix("<bundled>/").split("/", 1)[0]
            if top in ("strategies", "kv_store") and isinstance(src.doc.data, dict):
                name = src.doc.data.get("name")
                if isinstance(name, str):
                    out[name] = src.rel_path
        return FrozenDict(out)

    @cached_property
    def taxonomy_file(self) -> str:
        for src in self.sources:
            if src.rel_path.endswith("taxonomy.yaml"):
                return src.rel_path
        return "taxonomy.yaml"

    @cached_property
    def hardware_profiles(self) -> Mapping[str, Any]:
        hp = self.taxonomy.get("hardware_profiles")
        return hp if isinstance(hp, dict) else FrozenDict()

    @cached_property
    def kv_offload_options(self) -> Mapping[str, Any]:
        kv = self.taxonomy.get("kv_offload")
        return kv if isinstance(kv, dict) else FrozenDict()

    @cached_property
    def frontends(self) -> Mapping[str, Any]:
        fe = self.taxonomy.get("frontends")
        return fe if isinstance(fe, dict) else FrozenDict()

    @cached_property
    def _by_lower_id(self) -> dict[str, Recipe]:
        return {r.hf_id.lower(): r for r in self.recipes}

    @cached_property
    def _variant_parents(self) -> dict[str, tuple[Recipe, str]]:
        """Variant model ids (lower case) -> (parent recipe, variant key); first wins."""
        out: dict[str, tuple[Recipe, str]] = {}
        for r in self.recipes:
            for vk, v in r.variants.items():
                mid = v.get("model_id") if isinstance(v, dict) else None
                if isinstance(mid, str) and "/" in mid:
                    key = mid.lower()
                    if key not in self._by_lower_id and key not in out:
                        out[key] = (r, vk)
        return out

    def recipe(self, hf_id: str) -> Recipe | None:
        """Case-insensitive lookup of a recipe by hf_id."""
        return self._by_lower_id.get(hf_id.lower())

    def find(self, model_id: str) -> tuple[Recipe, str | None] | None:
        """A recipe by hf_id (``(recipe, None)``), else the parent of a variant's own
        model id (``(parent, variant key)``); case-insensitive; ``None`` when unknown."""
        recipe = self.recipe(model_id)
        if recipe is not None:
            return recipe, None
        return self.variant_parent(model_id)

    def variant_parent(self, model_id: str) -> tuple[Recipe, str] | None:
        """The recipe and variant key whose variant serves ``model_id`` (case-insensitive)."""
        return self._variant_parents.get(model_id.lower())

    def load_error_for(self, hf_id: str) -> Any:
        """Why the recipe file for ``hf_id`` did not load (case-insensitive): a
        :class:`YamlLoadError` of :attr:`load_errors` or :attr:`refused`, or the first
        validation finding of a recipe left out (:attr:`skipped`); ``None`` if none. Lets a
        front-end say "failed to load" rather than "unknown"."""
        wanted = hf_id.lower()

        def matches(rel: str) -> bool:
            return rel.startswith("models/") and (hf_id_for(rel.removeprefix("models/")) or "").lower() == wanted

        for exc in (*self.load_errors, *self.refused):
            if matches(exc.position.file):
                return exc
        for finding in self.skipped:  # left out for a validation error (catalog/usable.py)
            if matches(getattr(finding, "file", "")):
                return finding
        return None

    def close_matches(self, hf_id: str, n: int = 5) -> list[str]:
        import difflib

        ids = [r.hf_id for r in self.recipes]
        lowered = {i.lower(): i for i in ids}
        got = difflib.get_close_matches(hf_id.lower(), list(lowered), n=n, cutoff=0.4)
        return [lowered[g] for g in got]

    def source_for(self, rel_path: str) -> YamlDocument | None:
        for s in self.sources:
            if s.rel_path == rel_path:
                return s.doc
        for r in self.recipes:
            if r.rel_path == rel_path:
                return r.doc
        return None


def hf_id_for(rel_to_models: str) -> str | None:
    """``org/sub/Repo.yaml`` -> ``org/Repo`` (json-api.md §1.5); top-level files have none."""
    parts = rel_to_models.split("/")
    if len(parts) < 2:
        return None
    last = parts[-1]
    for ext in (".yaml", ".yml"):
        if last.endswith(ext):
            last = last[: -len(ext)]
            break
    return f"{parts[0]}/{last}"


def escapes(path: Path, root: Path) -> bool:
    """Whether ``path`` is a symbolic link (or lies under one) that resolves outside ``root``."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return True
    top = os.path.realpath(root)
    return real != top and not real.startswith(top.rstrip(os.sep) + os.sep)


def refusal(rel: str) -> YamlLoadError:
    """The finding for a file refused because it links out of the recipes directory."""
    return YamlLoadError(rel, 1, 1, "symbolic link to a file outside the recipes directory; refused "
                                    "(--follow-symlinks reads it)")


def walk_models(models_dir: Path, refused: list[Path] | None = None, *,
                root: Path | None = None, follow_symlinks: bool | None = None) -> Iterator[Path]:
    """Depth-first walk, entries sorted by raw name bytes, dirs recursed in place (§1.4).

    Files that link outside ``root`` (default: the parent of ``models_dir``) are not
    yielded but appended to ``refused``, unless ``follow_symlinks``.
    """
    if follow_symlinks is None:
        follow_symlinks = follow_symlinks_default()
    if root is None:
        root = models_dir.parent
    try:
        entries = sorted(os.scandir(models_dir), key=lambda e: os.fsencode(e.name))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from walk_models(Path(entry.path), refused, root=root, follow_symlinks=follow_symlinks)
        elif entry.name.endswith((".yaml", ".yml")) and entry.is_file():
            if not follow_symlinks and entry.is_symlink() and escapes(Path(entry.path), root):
                if refused is not None:
                    refused.append(Path(entry.path))
                continue
            yield Path(entry.path)


def resolve_recipes_dir(recipes_dir: str | os.PathLike[str] | None) -> Path:
    """The directory to load: explicit argument, else ``$VLLM_RECIPES_DIR``, else bundled."""
    if recipes_dir:
        return Path(recipes_dir)
    env = os.environ.get(ENV_RECIPES_DIR)
    return Path(env) if env else BUNDLED_DIR


def _pick(root: Path, rel: str) -> tuple[Path, str] | None:
    """The user's copy of ``rel`` if present, else the bundled one."""
    for base in (root, BUNDLED_DIR):
        p = base / rel
        if p.exists() or p.is_symlink():
            return p, rel if base == root else f"<bundled>/{rel}"
    return None


def _outside(path: Path, base: Path) -> bool:
    return path.is_symlink() and not follow_symlinks_default() and escapes(path, base)


def _load_named_dir(root: Path, sub: str, sources: list[SourceFile],
                    errors: list[YamlLoadError], cache: ParseCache | None = None) -> dict[str, Any]:
    """Load ``sub/*.yaml`` keyed by each file's ``name`` (later same-name files replace)."""
    directory = root / sub
    prefix = sub
    if not directory.is_dir():
        directory, prefix = BUNDLED_DIR / sub, f"<bundled>/{sub}"
    out: dict[str, Any] = {}
    try:
        files = sorted((p for p in directory.iterdir() if p.name.endswith(".yaml") and p.is_file()),
                       key=lambda p: os.fsencode(p.name))
    except OSError:
        return out
    for path in files:
        rel = f"{prefix}/{path.name}"
        if _outside(path, root if prefix == sub else BUNDLED_DIR):
            errors.append(refusal(rel))
            continue
        try:
            doc = read_document(cache, path, rel)
        except YamlLoadError as exc:
            errors.append(exc)
            continue
        add_named(out, sources, rel, doc)
    return out


def add_named(out: dict[str, Any], sources: list[SourceFile], rel: str, doc: YamlDocument) -> None:
    """Record a strategy / kv-store file, keyed by its ``name`` (else the file stem; later ones replace)."""
    sources.append(SourceFile(rel, doc))
    if isinstance(doc.data, dict):
        name = doc.data.get("name")
        out[name if isinstance(name, str) else Path(rel).stem] = doc.data


@dataclass(frozen=True)
class StaticData:
    """Everything but the recipes: taxonomy, platforms, strategies, Mooncake deployments."""

    taxonomy: Mapping[str, Any]
    platforms: Mapping[str, Any] | None
    serving_strategies: Mapping[str, Any]
    kv_stores: Mapping[str, Any]
    sources: tuple[SourceFile, ...]
    errors: tuple[YamlLoadError, ...]


def load_static(root: Path, cache: ParseCache | None = None) -> StaticData:
    """The non-recipe files of ``root``, each falling back to the bundled copy."""
    sources: list[SourceFile] = []
    errors: list[YamlLoadError] = []
    docs: dict[str, Any] = {}
    for name in ("taxonomy.yaml", "platforms.yaml"):
        picked = _pick(root, name)
        if picked and _outside(picked[0], BUNDLED_DIR if picked[1].startswith("<bundled>/") else root):
            errors.append(refusal(picked[1]))
        elif picked:
            try:
                doc = read_document(cache, *picked)
            except YamlLoadError as exc:
                errors.append(exc)
                continue
            sources.append(SourceFile(picked[1], doc))
            if isinstance(doc.data, dict):
                docs[name] = doc.data
    serving = _load_named_dir(root, "strategies", sources, errors, cache)
    kv = _load_named_dir(root, "kv_store", sources, errors, cache)
    return StaticData(docs.get("taxonomy.yaml", FrozenDict()), docs.get("platforms.yaml"), FrozenDict(serving),
                      FrozenDict(kv), tuple(sources), tuple(errors))


_KINDS = {"tuple": "a list", "str": "a string", "int": "a number", "float": "a number", "bool": "a boolean"}


def recipe_from_document(doc: YamlDocument, rel: str, hf_id: str | None) -> Recipe:
    """A parsed recipe file as a :class:`Recipe`; raises :class:`YamlLoadError` when it cannot be one."""
    if hf_id is None:
        raise YamlLoadError(rel, 1, 1, "recipe files must live at models/<org>/<repo>.yaml")
    if not isinstance(doc.data, dict):
        kind = "an empty file" if doc.data is None else _KINDS.get(type(doc.data).__name__, type(doc.data).__name__)
        raise YamlLoadError(rel, 1, 1, f"a recipe must be a mapping at the top level, got {kind}")
    return Recipe(hf_id, rel, doc)


def load_catalog(recipes_dir: str | os.PathLike[str] | None = None, *, parallel: bool = False,
                 meanwhile: Callable[[], object] | None = None, prevalidate: bool = False) -> Catalog:
    """Load a recipes directory (``None``: ``$VLLM_RECIPES_DIR`` or the bundled catalog).

    ``parallel``: parse the recipes the parse cache lacks in two processes
    (:func:`.parsecache.parse_in_parallel`); for command-line entry points.
    ``meanwhile`` runs once while a child parses, if there is one (``serve``
    prepares its web layer there, work it would otherwise do later).
    ``prevalidate`` (with ``parallel``): while the child parses, this process
    also finds the validation errors of each recipe the child has sent, for
    :func:`~.usable.usable_catalog` (``serve`` and ``build-api`` call it next).
    """
    root = resolve_recipes_dir(recipes_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"recipes directory not found: {root}")
    return _load_catalog_at(root, parallel, meanwhile, prevalidate)


def _load_catalog_at(root: Path, parallel: bool, meanwhile: Callable[[], object] | None,
                     prevalidate: bool = False) -> Catalog:
    cache = ParseCache(root, write_behind=parallel)
    static = load_static(root, cache)
    errors: list[YamlLoadError] = list(static.errors)
    recipes: list[Recipe] = []
    all_ids: set[str] = set()
    models_dir = root / "models"
    refused: list[Path] = []
    paths = list(walk_models(models_dir, refused, root=root))
    early = None
    if parallel:
        if prevalidate:
            from .usable import EarlyErrors

            early = EarlyErrors(root, static)
        parse_in_parallel(cache, [(p, f"models/{p.relative_to(models_dir).as_posix()}") for p in paths], meanwhile,
                          early.validate if early is not None else None)
    for path in paths:
        rel_models = path.relative_to(models_dir).as_posix()
        hf_id = hf_id_for(rel_models)
        rel = f"models/{rel_models}"
        if hf_id is not None:
            all_ids.add(hf_id)
        try:
            recipes.append(recipe_from_document(read_document(cache, path, rel), rel, hf_id))
        except YamlLoadError as exc:
            errors.append(exc)
    cache.save()

    return Catalog(
        root=root,
        taxonomy=static.taxonomy,
        platforms=static.platforms,
        serving_strategies=static.serving_strategies,
        kv_stores=static.kv_stores,
        recipes=tuple(recipes),
        sources=static.sources,
        load_errors=tuple(errors),
        all_ids=frozenset(all_ids),
        refused=tuple(refusal(f"models/{p.relative_to(models_dir).as_posix()}") for p in refused),
        memo=early.memo() if early is not None else {},
    )
