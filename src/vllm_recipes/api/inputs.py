"""The inputs of a JSON API build: which files, their content hashes, the static catalog.

Shared by full builds (:mod:`vllm_recipes.api.disk`) and incremental ones
(:mod:`vllm_recipes.api.incremental`), which must agree on what a recipe's
inputs are: its YAML file plus the files beside it named ``<stem>.*`` (its
translations), while taxonomy/platforms/strategies/kv stores/quickstart are
inputs of every recipe.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vllm_recipes
from vllm_recipes.catalog import BUNDLED_DIR, Catalog, Recipe
from vllm_recipes.catalog.loader import hf_id_for, resolve_recipes_dir, walk_models
from vllm_recipes.catalog.usable import usable_static
from vllm_recipes.catalog.yamlsource import FrozenDict, parse_yaml

from .build import ApiBuildError, ExtraRecipeKeys

#: Bumped whenever the cache layout or the meaning of a hash changes.
CACHE_VERSION = 3


def content_hash(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


@functools.cache
def code_fingerprint() -> str:
    """Changes whenever this package's code (or version) changes: cached output is then void."""
    pkg = Path(vllm_recipes.__file__).resolve().parent
    h = hashlib.sha1(vllm_recipes.__version__.encode(), usedforsecurity=False)
    for p in sorted(pkg.rglob("*.py")):
        st = p.stat()
        h.update(f"{p.relative_to(pkg)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


#: Makes the ``extra_recipe_keys`` hook of :func:`build_api` for a catalog (e.g. i18n translations).
HookFactory = Callable[[Catalog], ExtraRecipeKeys | None]


def hook_id(factory: HookFactory | None) -> str:
    if factory is None:
        return ""
    return f"{getattr(factory, '__module__', '')}.{getattr(factory, '__qualname__', type(factory).__name__)}"


@dataclass
class RecipeInput:
    rel_path: str
    hf_id: str | None
    path: Path
    hash: str
    raw: bytes | None = None


@dataclass
class InputScan:
    """Every input file of a build with its content hash (recipes in walk order)."""

    root: Path
    static: dict[str, str]
    recipes: list[RecipeInput]
    fingerprint: str
    #: recipe files refused without being read (links out of the recipes directory)
    refused: list[str] = field(default_factory=list)

    @property
    def all_ids(self) -> set[str]:
        return {r.hf_id for r in self.recipes if r.hf_id}


def _static_paths(root: Path) -> list[Path]:
    """The non-recipe inputs, resolved like the loader does (user file, else bundled)."""
    out: list[Path] = []
    for name in ("taxonomy.yaml", "platforms.yaml"):
        for base in (root, BUNDLED_DIR):
            if (base / name).exists():
                out.append(base / name)
                break
    for sub in ("strategies", "kv_store", "quickstart"):
        for base in (root, BUNDLED_DIR):
            d = base / sub
            if d.is_dir():
                out += sorted(p for p in d.iterdir() if p.name.endswith(".yaml") and p.is_file())
                break
    return out


def _expand(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(x for x in p.rglob("*") if x.is_file())
        elif p.exists():
            out.append(p)
    return out


def scan_inputs(recipes_dir: str | os.PathLike[str] | None, *, catalog_root: Path | None = None,
                extra_inputs: Sequence[str | os.PathLike[str]] = (), hook_key: str = "",
                trust: Mapping[str, str] | None = None, changed: set[Path] | None = None) -> InputScan:
    """Hash every input. With ``changed``, files not listed keep their ``trust``ed (cached) hash."""
    root = catalog_root or resolve_recipes_dir(recipes_dir)

    changed_names = {os.path.realpath(p) for p in changed} if changed is not None else set()

    def trusted(key: str, path: Path) -> str | None:
        if changed is not None and trust is not None and key in trust and \
                os.path.realpath(path) not in changed_names:
            return trust[key]
        return None

    def digest(key: str, path: Path) -> tuple[str, bytes | None]:
        h = trusted(key, path)
        if h is not None:
            return h, None
        raw = path.read_bytes()
        return content_hash(raw), raw

    static: dict[str, str] = {}
    for p in [*_static_paths(root), *_expand(extra_inputs)]:
        key = os.fspath(p.resolve())
        static[key] = digest(key, p)[0]
    recipes: list[RecipeInput] = []
    models = root / "models"
    prefix = os.fspath(models) + os.sep
    listings: dict[str, list[str]] = {}
    refused: list[Path] = []
    for path in walk_models(models, refused, root=root):
        spath = os.fspath(path)
        rel_models = spath[len(prefix):].replace(os.sep, "/")
        rel = f"models/{rel_models}"
        side = _sidecars(spath, listings)
        h = None
        if not any(os.path.realpath(p) in changed_names for p in side):
            h = trusted(rel, path)
        raw = None
        if h is None:
            raw = path.read_bytes()
            h = content_hash(raw)
            if side:
                # files beside the recipe named <stem>.* (translations) are part of its inputs
                h = content_hash((h + "".join(f"|{os.path.basename(p)}:{content_hash(Path(p).read_bytes())}"
                                              for p in side)).encode())
        recipes.append(RecipeInput(rel, hf_id_for(rel_models), path, h, raw))
    fp = content_hash(f"{CACHE_VERSION}|{code_fingerprint()}|{os.fspath(root.resolve())}|{hook_key}".encode())
    refused_rel = [f"models/{os.fspath(p)[len(prefix):].replace(os.sep, '/')}" for p in refused]
    return InputScan(root, static, recipes, fp, refused_rel)


def _sidecars(recipe_path: str, listings: dict[str, list[str]]) -> list[str]:
    """Non-recipe files beside a recipe whose name starts with ``<stem>.`` (e.g. ``X.zh.md``)."""
    d, name = os.path.split(recipe_path)
    names = listings.get(d)
    if names is None:
        try:
            names = sorted(e.name for e in os.scandir(d) if e.is_file() and not e.name.endswith((".yaml", ".yml")))
        except OSError:
            names = []
        listings[d] = names
    if not names:
        return []
    stem = name.rsplit(".", 1)[0] + "."
    return [os.path.join(d, n) for n in names if n.startswith(stem)]


def static_catalog(root: Path, recipes: Sequence[Recipe], all_ids: set[str]) -> Catalog:
    """A catalog with the full static data but only the recipes we are about to render."""
    from vllm_recipes.catalog.loader import load_static

    static = load_static(root)
    if static.errors:
        raise ApiBuildError("\n".join(str(e) for e in static.errors))
    return usable_static(Catalog(root=root, taxonomy=static.taxonomy, platforms=static.platforms,
                                 serving_strategies=static.serving_strategies, kv_stores=static.kv_stores,
                                 recipes=tuple(recipes), sources=static.sources, all_ids=frozenset(all_ids)))[0]


def skipped_static_lines(scan: InputScan, catalog: Catalog) -> list[str]:
    """stderr lines for what a build leaves out besides recipes: refused links, unsafe static ids."""
    from vllm_recipes.catalog.loader import refusal

    return [*(f"  ✗ skipping {refusal(rel)}" for rel in scan.refused),
            *(f"  ✗ skipping {f.format()}" for f in catalog.skipped)]


def parse_recipe(ri: RecipeInput) -> Recipe:
    """Parse one recipe file (raises :class:`YamlLoadError` like the loader would)."""
    from vllm_recipes.catalog.loader import recipe_from_document

    raw = ri.raw if ri.raw is not None else ri.path.read_bytes()
    return recipe_from_document(parse_yaml(raw, ri.rel_path), ri.rel_path, ri.hf_id)


def misplaced_recipe_errors(scan: InputScan) -> list[str]:
    """Recipe files directly under ``models/`` have no hf_id (json-api.md Appendix D.7): refused."""
    return [f"{r.rel_path}:1:1: recipe files must live at models/<org>/<repo>.yaml"
            for r in scan.recipes if r.hf_id is None]


def catalog_from_snapshot(snapshot: Sequence[Sequence[Any]], root: Path, all_ids: Iterable[str]) -> Catalog:
    """Rebuild the static catalog from :func:`static_snapshot` (skips YAML parsing on incremental builds)."""
    from vllm_recipes.catalog.loader import SourceFile
    from vllm_recipes.catalog.yamlsource import YamlDocument, freeze

    sources = [SourceFile(rel, YamlDocument(rel, freeze(data), {})) for rel, data in snapshot]
    taxonomy: Any = FrozenDict()
    platforms: Any = None
    serving: dict[str, Any] = {}
    kv: dict[str, Any] = {}
    for src in sources:
        name, d = src.rel_path.removeprefix("<bundled>/"), src.doc.data
        if name == "taxonomy.yaml":
            taxonomy = d if isinstance(d, dict) else FrozenDict()
        elif name == "platforms.yaml":
            platforms = d if isinstance(d, dict) else None
        elif isinstance(d, dict):
            top, _, fname = name.partition("/")
            key = d.get("name") if isinstance(d.get("name"), str) else fname.rsplit(".", 1)[0]
            if top == "strategies":
                serving[key] = d
            elif top == "kv_store":
                kv[key] = d
    return usable_static(Catalog(root=root, taxonomy=taxonomy, platforms=platforms,
                                 serving_strategies=FrozenDict(serving), kv_stores=FrozenDict(kv), recipes=(),
                                 sources=tuple(sources), all_ids=frozenset(all_ids)))[0]


def static_snapshot(catalog: Catalog) -> list[list[Any]] | None:
    """The static catalog files' data as JSON, or None when that would not rebuild it exactly."""
    import orjson

    from .build import encode, orjson_safe

    data = [[s.rel_path, s.doc.data] for s in catalog.sources]
    if not orjson_safe(data):
        return None
    snapshot = orjson.loads(orjson.dumps(data))
    rebuilt = catalog_from_snapshot(snapshot, catalog.root, catalog.all_ids)

    def shape(c: Catalog) -> bytes:
        return encode([c.taxonomy, c.platforms, c.serving_strategies, c.kv_stores, c.taxonomy_file,
                       c.strategy_files])

    return snapshot if shape(rebuilt) == shape(catalog) else None
