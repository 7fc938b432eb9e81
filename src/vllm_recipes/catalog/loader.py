"""Loading recipe sources (public recipe layout) into one immutable :class:`Catalog`.

Layout: ``models/<org>/<repo>.yaml``, ``strategies/*.yaml``, ``kv_store/*.yaml``, ``taxonomy.yaml``,
``platforms.yaml``. Sources (directories, or remote ones fetched by :mod:`.remote`) are layered
over the bundled catalog (:mod:`.layers`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from vllm_recipes.jsvalues import as_map, get

from .layers import NAMED_DEPTH, TAXONOMY_DEPTH, LayeredDocument, merge_documents
from .parsecache import ParseCache
from .yamlsource import FrozenDict, YamlDocument, YamlLoadError, follow_symlinks_default, is_within, refusal

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "data"
ENV_RECIPES_DIR = "VLLM_RECIPES_DIR"
#: PD pool modes (synthesis.md §3.8): what a recipe may name and the builder offers.
POOL_MODES = ("tp", "tep", "dep")
#: the shared files of a catalog, and the directories of strategy and Mooncake deployment files
STATIC_NAMES = ("taxonomy.yaml", "platforms.yaml")
NAMED_DIRS = ("strategies", "kv_store")
#: Most nodes a PD pool may ask for (each node gets its own rendered command): more is a validation
#: error, and the engine never derives more.
MAX_POOL_NODES = 1024

def document_kind(rel_path: str) -> str:
    """``recipe``, ``taxonomy``, ``platforms``, ``strategy`` or ``kv_store`` from a file's path."""
    *_, parent, name = ["", *rel_path.replace(os.sep, "/").split("/")]
    if name in STATIC_NAMES:
        return name.removesuffix(".yaml")
    return {"strategies": "strategy", "kv_store": "kv_store"}.get(parent, "recipe")


def _mapping(value: Any) -> Mapping[str, Any]:
    """A section of the data that must be a mapping (anything else reads as empty), frozen."""
    if isinstance(value, FrozenDict):
        return value
    return FrozenDict(value if isinstance(value, dict) else ())


@dataclass(frozen=True)
class Recipe:
    """One recipe file: its identity, frozen data and source positions."""

    hf_id: str
    rel_path: str
    doc: YamlDocument
    #: the recipe source it came from (a directory, ``github:org/repo@commit``, ``bundled``)
    source: str = field(default="", compare=False)

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
        return _mapping(self.data.get("meta"))

    @property
    def model(self) -> Mapping[str, Any]:
        return _mapping(self.data.get("model"))

    @property
    def model_repo(self) -> str:
        """The Hugging Face repository it serves: ``model.model_id``, else its id."""
        return str(self.model.get("model_id") or self.hf_id)

    @property
    def variants(self) -> Mapping[str, Any]:
        return _mapping(self.data.get("variants"))

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
    #: whether this catalog came out of :func:`~.usable.usable_catalog` (its findings were reported)
    usable: bool = False
    #: the recipe sources it was made of, base layer first (``bundled`` is always the first)
    layers: tuple[str, ...] = ()

    @cached_property
    def strategies(self) -> Mapping[str, Any]:
        """The merged strategy map S: serving strategies, then kv stores (synthesis.md §1.1)."""
        kv_only = {name: spec for name, spec in self.kv_stores.items() if name not in self.serving_strategies}
        return FrozenDict({**self.serving_strategies, **kv_only})

    @cached_property
    def strategy_files(self) -> Mapping[str, str]:
        """Strategy / kv-store name -> the file it was read from (for provenance)."""
        files: dict[str, str] = {}
        for src in self.sources:
            name = get(src.doc.data, "name")
            if Path(src.rel_path).parent.name in NAMED_DIRS and isinstance(name, str):
                files[name] = src.rel_path
        return FrozenDict(files)

    @cached_property
    def taxonomy_file(self) -> str:
        found = (s.rel_path for s in self.sources if s.rel_path.endswith("taxonomy.yaml"))
        return next(found, "taxonomy.yaml")

    @cached_property
    def hardware_profiles(self) -> Mapping[str, Any]:
        return _mapping(self.taxonomy.get("hardware_profiles"))

    @cached_property
    def kv_offload_options(self) -> Mapping[str, Any]:
        return _mapping(self.taxonomy.get("kv_offload"))

    @cached_property
    def frontends(self) -> Mapping[str, Any]:
        return _mapping(self.taxonomy.get("frontends"))

    @cached_property
    def _by_lower_id(self) -> dict[str, Recipe]:
        return {r.hf_id.lower(): r for r in self.recipes}

    @cached_property
    def _variant_parents(self) -> dict[str, tuple[Recipe, str]]:
        """Variant model ids (lower case) -> (parent recipe, variant key); first wins."""
        out: dict[str, tuple[Recipe, str]] = {}
        for r in self.recipes:
            for vk, v in r.variants.items():
                mid = get(v, "model_id")
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
        return (recipe, None) if recipe is not None else self.variant_parent(model_id)

    def variant_parent(self, model_id: str) -> tuple[Recipe, str] | None:
        """The recipe and variant key whose variant serves ``model_id`` (case-insensitive)."""
        return self._variant_parents.get(model_id.lower())

    def load_error_for(self, hf_id: str) -> Any:
        """Why the recipe file for ``hf_id`` did not load (a :class:`YamlLoadError`, or the first finding
        of a recipe left out), so a front end says "failed to load" rather than "unknown"; else ``None``."""
        wanted = hf_id.lower()

        def matches(rel: str) -> bool:
            return rel.startswith("models/") and (hf_id_for(rel.removeprefix("models/")) or "").lower() == wanted

        for exc in (*self.load_errors, *self.refused):
            if matches(exc.position.file):
                return exc
        for finding in self.skipped:
            if matches(getattr(finding, "file", "")):
                return finding
        return None

    def close_matches(self, hf_id: str, n: int = 5) -> list[str]:
        import difflib

        got = difflib.get_close_matches(hf_id.lower(), list(self._by_lower_id), n=n, cutoff=0.4)
        return [self._by_lower_id[g].hf_id for g in got]

    def source_for(self, rel_path: str) -> YamlDocument | None:
        """The document shown as ``rel_path`` (a merged shared file, a layer's own file, or a recipe)."""
        for s in self.sources:
            if s.rel_path == rel_path:
                return s.doc
        for r in self.recipes:
            if r.rel_path == rel_path:
                return r.doc
        for s in self.sources:
            if not isinstance(s.doc, LayeredDocument):
                continue
            for layer in s.doc.layers:
                if layer.file == rel_path:
                    return layer
        return None

    def hardware_origins(self, hw_id: str) -> dict[str, list[str]]:
        """File -> the fields of hardware profile ``hw_id`` it supplied (layered taxonomies merge per field)."""
        profile = self.hardware_profiles.get(hw_id)
        out: dict[str, list[str]] = {}
        for key in as_map(profile):
            out.setdefault(self.origin_of(self.taxonomy_file, ("hardware_profiles", hw_id, key)), []).append(str(key))
        return out

    def origin_of(self, rel_path: str, key_path: tuple[str | int, ...]) -> str:
        """The file a value of the shared file ``rel_path`` came from (layered catalogs merge them)."""
        doc = self.source_for(rel_path)
        return doc.owner(key_path).file if isinstance(doc, LayeredDocument) else rel_path


def hf_id_for(rel_to_models: str) -> str | None:
    """``org/sub/Repo.yaml`` -> ``org/Repo`` (json-api.md §1.5); top-level files have none."""
    parts = rel_to_models.split("/")
    if len(parts) < 2:
        return None
    last = parts[-1].rsplit(".", 1)[0] if parts[-1].endswith((".yaml", ".yml")) else parts[-1]
    return f"{parts[0]}/{last}"


def escapes(path: Path, root: Path) -> bool:
    """Whether ``path`` is a symbolic link (or lies under one) that resolves outside ``root``."""
    try:
        return not is_within(os.path.realpath(path), root)
    except (OSError, ValueError):
        return True


def walk_models(directory: Path, root: Path, refused: list[Path] | None, follow_symlinks: bool) -> Iterator[Path]:
    """Depth-first walk, entries sorted by raw name bytes, dirs recursed in place (§1.4); files that link
    outside ``root`` go to ``refused`` instead, unless ``follow_symlinks``."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: os.fsencode(e.name))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from walk_models(Path(entry.path), root, refused, follow_symlinks)
        elif entry.name.endswith((".yaml", ".yml")) and entry.is_file():
            if not follow_symlinks and entry.is_symlink() and escapes(Path(entry.path), root):
                if refused is not None:
                    refused.append(Path(entry.path))
                continue
            yield Path(entry.path)


RecipesDirs = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


def recipe_source_specs(recipes_dir: RecipesDirs) -> list[str]:
    """The sources asked for: the argument(s), else ``$VLLM_RECIPES_DIR`` (space-separated), else none."""
    if recipes_dir is None or recipes_dir == () or recipes_dir == "":
        return os.environ.get(ENV_RECIPES_DIR, "").split()
    if isinstance(recipes_dir, str | os.PathLike):
        return [os.fspath(recipes_dir)]
    return [os.fspath(d) for d in recipes_dir]


def resolve_recipes_dirs(recipes_dir: RecipesDirs) -> list[tuple[str, Path]]:
    """``(label, local directory)`` of every source asked for, fetched if remote (:mod:`.remote`)."""
    specs = recipe_source_specs(recipes_dir)
    if not specs:  # the bundled catalog alone
        return []
    from .remote import LocalCopy, is_remote, local_copy

    copies = [local_copy(spec) if is_remote(spec) else LocalCopy(spec, Path(spec)) for spec in specs]
    return [(copy.label, copy.path) for copy in copies]


@dataclass(frozen=True)
class Layer:
    """The files of one recipe source, parsed; each document is named as it is shown (``prefix`` + path)."""

    label: str
    #: the shared files (:data:`STATIC_NAMES`, then those of :data:`NAMED_DIRS`) by relative path, in load order
    shared: Mapping[str, YamlDocument] = field(default_factory=dict)
    recipes: tuple[Recipe, ...] = ()
    errors: tuple[YamlLoadError, ...] = ()
    refused: tuple[YamlLoadError, ...] = ()
    all_ids: frozenset[str] = frozenset()


def catalog_paths(root: Path, refused: list[Path] | None = None, *, with_recipes: bool = True) -> list[str]:
    """The catalog files of the directory ``root``, relative to it, in load order: the shared files,
    then the recipes (§1.4); recipe files linking out of ``root`` go to ``refused`` instead."""
    rels = [name for name in STATIC_NAMES if (root / name).exists() or (root / name).is_symlink()]
    for sub in NAMED_DIRS:
        try:
            names = [p.name for p in (root / sub).iterdir() if p.name.endswith(".yaml") and p.is_file()]
        except OSError:
            names = []
        rels += [f"{sub}/{name}" for name in sorted(names, key=os.fsencode)]
    if with_recipes:
        found = walk_models(root / "models", root, refused, follow_symlinks_default())
        rels += [p.relative_to(root).as_posix() for p in found]
    return rels


def layer_of(label: str, rels: Sequence[str], parse: Callable[[str], YamlDocument],
             refused: tuple[YamlLoadError, ...] = ()) -> Layer:
    """The catalog files ``rels`` of one source (in load order), each parsed by ``parse``."""
    errors: list[YamlLoadError] = []
    shared: dict[str, YamlDocument] = {}
    recipes: list[Recipe] = []
    all_ids: set[str] = set()
    for rel in rels:
        is_recipe = rel.startswith("models/")
        hf_id = hf_id_for(rel.removeprefix("models/")) if is_recipe else None
        if hf_id is not None:
            all_ids.add(hf_id)
        try:
            doc = parse(rel)
            if is_recipe:
                recipes.append(dataclasses.replace(recipe_from_document(doc, doc.file, hf_id), source=label))
            else:
                shared[rel] = doc
        except YamlLoadError as exc:
            errors.append(exc)
    return Layer(label, FrozenDict(shared), tuple(recipes), tuple(errors), refused, frozenset(all_ids))


def read_layer(root: Path, label: str, prefix: str = "", *, with_recipes: bool = True) -> Layer:
    """Parse the catalog files of the directory ``root`` (files are shown as ``prefix`` + relative path)."""
    cache = ParseCache(root)

    def read(rel: str) -> YamlDocument:
        path = root / rel
        if path.is_symlink() and not follow_symlinks_default() and escapes(path, root):
            raise refusal(prefix + rel)
        return cache.read(path, prefix + rel)

    refused: list[Path] = []
    layer = layer_of(label, catalog_paths(root, refused, with_recipes=with_recipes), read,
                     tuple(refusal(prefix + p.relative_to(root).as_posix()) for p in refused))
    cache.save()
    return layer


def _by_name(layer: Layer, sub: str) -> dict[str, YamlDocument]:
    """A layer's files in ``sub`` (strategies, kv stores) by ``name`` (else the file stem; later same-name
    files replace)."""
    out: dict[str, YamlDocument] = {}
    for rel, doc in layer.shared.items():
        if rel.startswith(f"{sub}/"):
            name = get(doc.data, "name")
            out[name if isinstance(name, str) else Path(doc.file).stem] = doc
    return out


def _merged(docs: Sequence[YamlDocument], depth: int, supplement: YamlDocument | None) -> YamlDocument:
    """The sources' documents merged, filled in from the bundled one (the bundled one alone if no source has it)."""
    if not docs:
        assert supplement is not None
        return supplement
    return merge_documents(docs[-1].file, docs, depth, supplement)


def _merge_static(layers: Sequence[Layer], base: Layer | None, name: str, sources: list[SourceFile]) -> Any:
    """``taxonomy.yaml`` or ``platforms.yaml`` merged per entry and field over the base (``None``: no source has it)."""
    docs = [layer.shared[name] for layer in layers if name in layer.shared]
    fill = base.shared.get(name) if base is not None else None
    if not docs and fill is None:
        return None
    doc = _merged(docs, TAXONOMY_DEPTH, fill)
    sources.append(SourceFile(doc.file, doc))
    return doc.data if isinstance(doc.data, dict) else None


def _merge_named(layers: Sequence[Layer], base: Layer | None, sub: str, sources: list[SourceFile]) -> FrozenDict:
    """Strategy or KV-store files merged per name over the base's (the base's whole when no source has any)."""
    groups: dict[str, list[YamlDocument]] = {}
    for layer in layers:
        for name, doc in _by_name(layer, sub).items():
            groups.setdefault(name, []).append(doc)
    fills = _by_name(base, sub) if base is not None else {}
    out: dict[str, Any] = {}
    for name, docs in (groups or {name: [] for name in fills}).items():
        doc = _merged(docs, NAMED_DEPTH, fills.get(name))
        sources.append(SourceFile(doc.file, doc))
        out[name] = doc.data
    return FrozenDict(out)


def _layered_recipes(layers: Sequence[Layer]) -> tuple[Recipe, ...]:
    """Recipes of later layers replace earlier ones per model id, in place (the listing keeps its order);
    a source with two files for one id keeps both (validation warns)."""
    recipes: dict[tuple[str, int], Recipe] = {}
    for layer in layers:
        own: dict[str, list[Recipe]] = {}
        for recipe in layer.recipes:
            own.setdefault(recipe.hf_id.lower(), []).append(recipe)
        for key, found in own.items():
            for gone in [k for k in recipes if k[0] == key and k[1]]:
                del recipes[gone]
            for i, recipe in enumerate(found):
                recipes[(key, i)] = recipe
    return tuple(recipes.values())


def assemble(root: Path, layers: Sequence[Layer], base: Layer | None = None) -> Catalog:
    """One catalog of ``layers`` (first to last) over the supplement ``base`` (the bundled catalog,
    :mod:`.layers`): recipes replaced per model id, shared files merged per entry and per field."""
    sources: list[SourceFile] = []
    taxonomy = _merge_static(layers, base, "taxonomy.yaml", sources)
    platforms = _merge_static(layers, base, "platforms.yaml", sources)
    strategies = _merge_named(layers, base, "strategies", sources)
    kv_stores = _merge_named(layers, base, "kv_store", sources)
    return Catalog(
        root=root,
        taxonomy=taxonomy or FrozenDict(),
        platforms=platforms,
        serving_strategies=strategies,
        kv_stores=kv_stores,
        recipes=_layered_recipes(layers),
        sources=tuple(sources),
        load_errors=tuple(e for layer in layers for e in layer.errors),
        all_ids=frozenset(i for layer in layers for i in layer.all_ids),
        refused=tuple(e for layer in layers for e in layer.refused),
        layers=tuple(layer.label for layer in (*([base] if base is not None else []), *layers)),
    )


def bundled_layer(prefix: str = "<bundled>/", *, with_recipes: bool = False) -> Layer:
    """The catalog shipped with this package: as the base layer of other sources, its shared files only."""
    return read_layer(BUNDLED_DIR, "bundled", prefix, with_recipes=with_recipes)


def load_catalog(recipes_dir: RecipesDirs = None) -> Catalog:
    """Load recipe sources, layered in order (``None``: ``$VLLM_RECIPES_DIR``, else the bundled catalog).

    Raises ``FileNotFoundError`` for a missing directory, :class:`~.remote.SourceError` for a remote
    source that can neither be fetched nor found in the cache.
    """
    dirs = resolve_recipes_dirs(recipes_dir)
    for _label, path in dirs:
        if not path.is_dir():
            raise FileNotFoundError(f"recipes directory not found: {path}")
    bundled = BUNDLED_DIR.resolve()
    dirs = [(label, path) for label, path in dirs if path.resolve() != bundled]
    if not dirs:
        return assemble(BUNDLED_DIR, [bundled_layer("", with_recipes=True)])
    # the top layer's files are shown by their relative path, the lower layers' by their full one
    *lower, (label, path) = dirs
    layers = [*(read_layer(p, la, f"{p.resolve()}/") for la, p in lower), read_layer(path, label)]
    return assemble(path, layers, bundled_layer())


_KINDS = {"tuple": "a list", "str": "a string", "int": "a number", "float": "a number", "bool": "a boolean"}


def recipe_from_document(doc: YamlDocument, rel: str, hf_id: str | None) -> Recipe:
    """A parsed recipe file as a :class:`Recipe`; raises :class:`YamlLoadError` when it cannot be one."""
    if hf_id is None:
        raise YamlLoadError(rel, 1, 1, "recipe files must live at models/<org>/<repo>.yaml")
    if not isinstance(doc.data, dict):
        kind = "an empty file" if doc.data is None else _KINDS.get(type(doc.data).__name__, type(doc.data).__name__)
        raise YamlLoadError(rel, 1, 1, f"a recipe must be a mapping at the top level, got {kind}")
    return Recipe(hf_id, rel, doc)
