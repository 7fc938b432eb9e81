"""The static JSON API (json-api.md, extensions.md): every file as bytes, built in memory.

The website serves the very bytes ``build-api`` writes. Recipes render independently (in parallel); they
interact only through the order in which they write and clean paths (two variants promoted to one id, §5.9),
which :func:`assemble` replays.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import orjson

from vllm_recipes.catalog import BUNDLED_DIR, Catalog, Recipe
from vllm_recipes.catalog.diagnostics import Finding, finding_from_load_error, plural
from vllm_recipes.catalog.featuremodes import feature_mode_error, feature_mode_messages
from vllm_recipes.catalog.usable import recipe_errors, skip_lines, usable_static
from vllm_recipes.catalog.yamlsource import FrozenDict, YamlDocument, YamlLoadError, load_yaml_file, thaw
from vllm_recipes.jsvalues import as_list, as_map, get, js_str, truthy
from vllm_recipes.parallel import parallel_map
from vllm_recipes.render.install import hardware_install_block, has_hardware_install, install_block
from vllm_recipes.select.defaults import listed_hardware

from .tree import HardwareRendering, Rendered, Warn, render_for_hardware

#: Hook adding top-level keys to every recipe file (e.g. ``translations``); see :func:`build_api`.
ExtraRecipeKeys = Callable[[Recipe], Mapping[str, Any] | None]

#: A write (``"w"``, path, bytes) or the stale cleanup of a variant tree (``"rm"``, base, None).
Op = tuple[str, str, bytes | None]

#: One hardware's rendering of a variant and its alternatives, encoded: (hardware, rendering, [(strategy, bytes)]).
Built = tuple[str, HardwareRendering, list[tuple[str, bytes]]]

#: The 11 fixed lines after the first console line (json-api.md §10.1, verbatim).
SUMMARY_TAIL = (
    "  /models.json\n"
    "  /{hf_id}.json                                (e.g. /moonshotai/Kimi-K2.5.json)\n"
    "  /{hf_id}/strategies/{strategy}.json          (default-hw alternatives)\n"
    "  /{hf_id}/hw/{hw}.json                        (per-hardware rendering)\n"
    "  /{hf_id}/hw/{hw}/strategies/{strategy}.json  (per-(hw, strategy) alternatives)\n"
    "  /{variant_hf_id}.json                        (promoted variants, e.g. /zai-org/GLM-5.1-FP8.json)\n"
    "  /strategies.json\n"
    "  /kv_store.json\n"
    "  /kv_store/{id}.json                          (per-deployment spec)\n"
    "  /taxonomy.json\n"
    "  /platforms.json"
)


def add_parent_dirs(path: str, dirs: set[str]) -> None:
    """Add every directory ``path`` needs to ``dirs`` (stops at the first one already known)."""
    i = path.rfind("/")
    while i > 0 and (d := path[:i]) not in dirs:
        dirs.add(d)
        i = path.rfind("/", 0, i)


def parent_dirs(paths: Iterable[str]) -> set[str]:
    """Every directory the ``paths`` need."""
    dirs: set[str] = set()
    for path in paths:
        add_parent_dirs(path, dirs)
    return dirs


class ApiBuildError(Exception):
    """The build cannot produce an API (the CLI prints the message and exits 1)."""


class FeatureModeError(ApiBuildError):
    """json-api.md §10.2: a recipe's feature modes are inconsistent (exact reference text)."""


# JSON encoding (json-api.md §3)

def encode(obj: Any) -> bytes:
    """The reference bytes: ``json.dumps(indent=2, ensure_ascii=False)``, UTF-8, no newline, via orjson.

    A value holding a float orjson would write differently (:func:`_orjson_writes_alike`), an integer beyond
    64 bits or a non-string key goes to ``json.dumps`` instead (a fifth of the build, were it used for all).
    """
    if _orjson_writes_alike(obj):
        with contextlib.suppress(TypeError):  # (orjson.JSONEncodeError)
            return orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")


def _orjson_writes_alike(value: Any) -> bool:
    """``value`` holds only strings, integers, booleans, ``None``, (frozen) dicts, lists, tuples and floats that
    orjson writes as ``repr`` does (zero, or finite from 1e-4 up in size)."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            continue
        if t is dict or t is FrozenDict:
            stack.extend(v.values())
        elif t is list or t is tuple:
            stack.extend(v)
        elif t is not float or not (v == 0 or 1e-4 <= abs(v) < math.inf):
            return False
    return True


# Results

@dataclass
class BuildCounts:
    """The numbers of the §10.1 console line."""

    models: int = 0
    with_recommended: int = 0
    alternatives: int = 0
    per_hardware: int = 0
    promoted: int = 0
    strategies: int = 0
    kv_stores: int = 0
    platforms: int = 0
    collisions: int = 0
    #: ids of this build for the example paths (empty: the reference's examples)
    example_model: str = ""
    example_variant: str = ""


@dataclass
class RecipeOutput:
    """Everything one recipe contributes, in the order the reference performs it."""

    ops: list[Op] = field(default_factory=list)
    #: models.json entries: the parent first, then one per promoted variant (§9)
    entries: list[dict[str, Any]] = field(default_factory=list)
    has_recommended: bool = False
    alternatives: int = 0
    per_hardware: int = 0
    collisions: int = 0
    #: stderr lines (collision and synthesis-failure warnings), in emission order
    warnings: list[str] = field(default_factory=list)
    #: the validation errors it is left out for (``warnings`` says which): no files, not counted
    errors: list[Finding] = field(default_factory=list)

    @property
    def skipped(self) -> bool:
        return bool(self.errors)


@dataclass
class ApiBuild:
    """A whole API in memory: ``files`` maps a path relative to the API root to its bytes."""

    files: dict[str, bytes]
    #: the §10.1 stdout text (12 lines, no trailing newline)
    summary: str
    counts: BuildCounts
    #: every stderr warning, in order (already passed to ``warn`` as they happened)
    warnings: list[str]
    #: the catalog the API shows: without what validation left out (so ``llms.txt`` shows the same recipes), usable
    catalog: Catalog


# Static files (§4)

def _source_doc(catalog: Catalog, name: str) -> YamlDocument | None:
    """The verbatim document of a top-level catalog file (``taxonomy.yaml``/``platforms.yaml``)."""
    return next((src.doc for src in catalog.sources if src.rel_path.removeprefix("<bundled>/") == name), None)


def quickstart_files(catalog: Catalog) -> list[tuple[str, bytes]]:
    """§4.5: ``quickstart/<hardware_profile>.json`` per ``quickstart/*.yaml`` of the recipes dir, else of the
    bundled one (optional), sorted by name bytes."""
    d = next((b / "quickstart" for b in (catalog.root, BUNDLED_DIR) if (b / "quickstart").is_dir()), None)
    if d is None:
        return []
    out = []
    names = sorted((p for p in d.iterdir() if p.name.endswith(".yaml") and p.is_file()),
                   key=lambda p: os.fsencode(p.name))
    for p in names:
        try:
            q = load_yaml_file(p, f"quickstart/{p.name}").data
        except YamlLoadError as exc:
            raise ApiBuildError(str(exc)) from exc
        hp = get(q, "hardware_profile")
        out.append((f"quickstart/{'undefined' if hp is None else js_str(hp)}.json", encode(q)))
    return out


def static_files(catalog: Catalog) -> dict[str, bytes]:
    """§4.1-§4.4 in the reference's write order."""
    taxonomy = _source_doc(catalog, "taxonomy.yaml")
    files = {"taxonomy.json": encode(catalog.taxonomy if taxonomy is None else taxonomy.data)}
    if (platforms := _source_doc(catalog, "platforms.yaml")) is not None:
        files["platforms.json"] = encode(platforms.data)
    for name, spec in catalog.serving_strategies.items():
        files[f"strategies/{name}.json"] = encode(spec)
    files["strategies.json"] = encode(catalog.serving_strategies)
    for name, spec in catalog.kv_stores.items():
        files[f"kv_store/{name}.json"] = encode(spec)
    files["kv_store.json"] = encode(catalog.kv_stores)
    return files


# One recipe (§5-§7)

def _ordered(r: Mapping[str, Any]) -> dict[str, Any]:
    """§5.8 recipe key ordering: ``hf_id``, ``meta``, ``recommended_command`` first."""
    # a merged dict keeps each key at its first position but takes the later value (here the same one)
    return {**{k: r[k] for k in ("hf_id", "meta", "recommended_command") if k in r}, **r}


def _entry(hf_id: str, meta: Any, page: str) -> dict[str, Any]:
    """A models.json entry (§9), shown on ``page``'s page (a promoted variant's parent); ``title``/``provider``
    only when the meta has them."""
    shown = {k: meta[k] for k in ("title", "provider") if k in meta} if isinstance(meta, dict) else {}
    return {"hf_id": hf_id, **shown, "url": f"/{page}", "json": f"/{hf_id}.json"}


class _RecipeBuilder:
    """Builds one recipe's :class:`RecipeOutput`; renders each (variant, hardware) once."""

    def __init__(self, catalog: Catalog, recipe: Recipe, extra_keys: ExtraRecipeKeys | None) -> None:
        self.catalog = catalog
        self.recipe = recipe
        self.extra_keys = extra_keys
        self.res = RecipeOutput()
        #: variant key -> :meth:`_render`'s answer (a variant promoted from the default has a second tree)
        self._built: dict[str, tuple[list[Built], list[str]]] = {}
        self._rendered = Rendered(catalog)

    def _render(self, vk: str, variant: Mapping[str, Any]) -> tuple[list[Built], list[str]]:
        """Each listed hardware's rendering of the variant with its encoded alternatives, default hardware
        first (none when that one renders nothing), and the warnings."""
        warnings: list[str] = []
        hw_ids = listed_hardware(self.catalog.hardware_profiles, variant, self.recipe.data)
        built = []
        for hw in hw_ids:
            b = render_for_hardware(self.catalog, self.recipe, vk, hw, warnings.append, self._rendered)
            if b is not None:
                built.append((hw, b, [(s, encode(rendering)) for s, rendering in b.alternatives]))
        return (built if built and built[0][0] == hw_ids[0] else []), warnings

    def tree(self, vk: str, base: str) -> dict[str, Any] | None:
        """§6 ``renderVariantTree``: writes the tree's files, returns ``recommended_command``."""
        r = self.recipe.data
        variants = as_map(r.get("variants"))
        if not truthy(variants.get(vk)) or self.recipe.is_omni:
            return None
        ops = self.res.ops
        ops.append(("rm", base, None))
        if vk not in self._built:
            self._built[vk] = self._render(vk, as_map(variants[vk]))
        built, warnings = self._built[vk]
        self.res.warnings.extend(warnings)  # the reference renders (and fails) again for every tree
        if not built:
            return None
        default_hw = built[0][0]
        by_hw: dict[str, str] = {}
        rc: dict[str, Any] = {}
        for hw, b, alts in built:
            d = f"{base}/strategies" if hw == default_hw else f"{base}/hw/{hw}/strategies"
            ops += [("w", f"{d}/{s}.json", data) for s, data in alts]
            links = {s: f"/{d}/{s}.json" for s, _data in alts}
            rec = dict(b.recommended)
            if links:
                rec["alternatives"] = links
            rendered_variant = as_map(get(variants, rec.get("variant")))
            if has_hardware_install(rendered_variant, hw):
                # extensions §2.5: the per-hardware install follows the variant's override
                rec["install"] = hardware_install_block(r, rendered_variant, hw, rec.get("docker_image"))
            path = f"{base}/hw/{hw}.json"
            ops.append(("w", path, encode(rec)))
            by_hw[hw] = "/" + path
            if hw == default_hw:
                rc = rec
        return {**rc, "by_hardware": by_hw}

    def build(self) -> RecipeOutput:
        recipe, res = self.recipe, self.res
        parent = recipe.hf_id
        r = _recipe_json(recipe)                                                     # §5.2-§5.3
        rc = self.tree("default", parent)                                            # §5.4
        if rc is not None:
            r["recommended_command"] = rc
        promoted = self._promoted()                                                  # §5.5
        variants: Any = r.get("variants")
        for vk, mid, _ in promoted:                                                  # §5.6
            variants[vk] = {**variants[vk], "json": f"/{mid}.json"}
        for k in ("strategy_overrides", "compatible_strategies", "default_strategy"):  # §5.7
            r.pop(k, None)
        if self.extra_keys is not None:
            extra = self.extra_keys(recipe)
            if extra:
                r.update(extra)

        out = _ordered(r)                                                            # §5.8
        res.ops.append(("w", f"{parent}.json", encode(out)))
        res.entries.append(_entry(parent, out.get("meta"), parent))
        rcv = out.get("recommended_command")
        if truthy(rcv):
            res.has_recommended = True
            res.alternatives = len(as_map(get(rcv, "alternatives")))
            res.per_hardware = len(as_map(get(rcv, "by_hardware")))
        for vk, mid, rv in promoted:                                                 # §5.9
            self._write_promoted(r, vk, mid, rv)
        return res

    def _promoted(self) -> list[tuple[str, str, dict[str, Any]]]:
        """§5.5: variants with their own model id that become recipes of their own (unless that id has one)."""
        res, parent = self.res, self.recipe.hf_id
        promoted: list[tuple[str, str, dict[str, Any]]] = []
        for vk, vcfg in as_map(self.recipe.data.get("variants")).items():
            mid = get(vcfg, "model_id")
            if not isinstance(mid, str) or "/" not in mid:
                continue
            if mid in self.catalog.all_ids:
                res.warnings.append(f"  ⚠ skipping variant promotion: {mid} (variant of {parent}) "
                                    "collides with standalone recipe")
                res.collisions += 1
                continue
            rv = self.tree(vk, mid)
            if rv is not None:
                promoted.append((vk, mid, rv))
        return promoted

    def _write_promoted(self, r: dict[str, Any], vk: str, mid: str, rv: dict[str, Any]) -> None:
        """§5.9: a promoted variant's file: the parent's JSON with that variant alone, under its model id."""
        parent = self.recipe.hf_id
        core = {k: v for k, v in r["variants"][vk].items() if k not in ("model_id", "json")}
        pout = _ordered({**r, "hf_id": mid, "meta": {**as_map(r.get("meta")), "derived_from": parent, "variant": vk},
                         "model": {**as_map(r.get("model")), "model_id": mid}, "variants": {"default": core},
                         "recommended_command": rv})
        self.res.ops.append(("w", f"{mid}.json", encode(pout)))
        self.res.entries.append({**_entry(mid, pout["meta"], parent), "derived_from": parent})


def _recipe_json(recipe: Recipe) -> dict[str, Any]:
    """§5.2-§5.3: the recipe's data with its id, the synthesized install block in ``model``, no dependencies."""
    r: dict[str, Any] = thaw(recipe.data)
    r["hf_id"] = recipe.hf_id
    inst = install_block(recipe.data)
    if truthy(r.get("model")) or inst:
        m = {k: v for k, v in as_map(r.get("model")).items() if k != "install"}
        if inst:
            m["install"] = inst
        r["model"] = m
    r.pop("dependencies", None)
    return r


def build_recipe(catalog: Catalog, recipe: Recipe, extra_recipe_keys: ExtraRecipeKeys | None = None
                 ) -> RecipeOutput:
    """Everything one recipe contributes to the API (json-api.md §5-§9); with validation errors, only the lines
    saying why (feature-mode errors are §10.2's job: :func:`build_api` aborts on them or skips the recipe)."""
    errors = recipe_errors(catalog, recipe, ignore=("feature-mode",))
    if errors:
        return RecipeOutput(warnings=skip_lines(recipe.rel_path, errors), errors=errors)
    return _RecipeBuilder(catalog, recipe, extra_recipe_keys).build()


def summary_text(c: BuildCounts) -> str:
    """The §10.1 stdout text, exactly."""
    line = (f"✓ JSON API: {c.models} models ({c.with_recommended} with recommended_command, "
            f"{c.alternatives} default-hw alternatives, {c.per_hardware} per-hw renderings), "
            f"{c.promoted} promoted variants, {c.strategies} strategies, {c.kv_stores} kv-store deployments, "
            f"{c.platforms} platforms")
    if c.collisions:
        line += f" ({plural(c.collisions, 'variant collision')} skipped)"
    # the example paths name models of this catalog (a reader tries them), else the reference's
    tail = SUMMARY_TAIL
    if c.example_model:
        tail = tail.replace("/moonshotai/Kimi-K2.5.json", f"/{c.example_model}.json")
        variant = f", e.g. /{c.example_variant}.json" if c.example_variant else ""
        tail = tail.replace(", e.g. /zai-org/GLM-5.1-FP8.json", variant)
    return line + "\n" + tail


def _index(outputs: Sequence[RecipeOutput]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The models.json entries: each recipe's parent (``entries[0]``) in walk order, and every promotion
    (``entries[1:]``) in promotion order."""
    return ([res.entries[0] for res in outputs if res.entries],
            [e for res in outputs for e in res.entries[1:]])


def count_outputs(catalog: Catalog, outputs: Sequence[RecipeOutput]) -> BuildCounts:
    """The §10.1 numbers; promoted trees do not count towards alternatives/per-hw renderings."""
    parents, promotions = _index(outputs)
    # the platforms.json file's own rule (a lower layer's platforms.yaml is not written, so not counted)
    platforms = _source_doc(catalog, "platforms.yaml")
    return BuildCounts(models=sum(not res.skipped for res in outputs),
                       with_recommended=sum(res.has_recommended for res in outputs),
                       alternatives=sum(res.alternatives for res in outputs),
                       per_hardware=sum(res.per_hardware for res in outputs), promoted=len(promotions),
                       strategies=len(catalog.serving_strategies), kv_stores=len(catalog.kv_stores),
                       platforms=len(as_list(get(platforms.data if platforms is not None else None, "platforms"))),
                       collisions=sum(res.collisions for res in outputs),
                       example_model=parents[0]["hf_id"] if parents else "",
                       example_variant=promotions[0]["hf_id"] if promotions else "")


def assemble(catalog: Catalog, outputs: Sequence[RecipeOutput]) -> dict[str, bytes]:
    """The whole tree as the reference writes it: the static files, every recipe's operations in walk order
    (the last writer of a path wins, a variant tree's stale files go first), models.json, quickstart."""
    files = static_files(catalog)
    dirs = parent_dirs(files)
    for res in outputs:
        for kind, path, data in res.ops:
            if kind == "w" and data is not None:
                files[path] = data
                add_parent_dirs(path, dirs)
            elif path in dirs:
                prefix = path + "/"
                files = {k: v for k, v in files.items() if not k.startswith(prefix)}
                dirs = {d for d in dirs if not d.startswith(prefix) and d != path}
    # §9: parents in walk order, then every promotion in promotion order (duplicates kept)
    parents, promotions = _index(outputs)
    files["models.json"] = encode(parents + promotions)
    files.update(quickstart_files(catalog))
    return files


def build_api(catalog: Catalog, warn: Warn | None = None, *,
              extra_recipe_keys: ExtraRecipeKeys | None = None,
              jobs: int | None = None, strict: bool = True) -> ApiBuild:
    """Build the whole JSON API in memory.

    ``warn`` receives each stderr line (§10.1) as it happens. ``extra_recipe_keys`` may add top-level keys
    (appended, e.g. ``translations``) to every recipe file and its promoted copies. ``jobs``: worker processes
    (``None``: every core, see :func:`~vllm_recipes.parallel.parallel_map`; 1: serial). ``strict``: refuse a
    catalog with files that do not load (else skip them, each with a warning).
    Raises :class:`FeatureModeError` (§10.2) or :class:`ApiBuildError`.
    """
    if strict and catalog.load_errors:  # a file that does not parse aborts the build, as in the reference (§5.1)
        raise ApiBuildError("cannot build the JSON API, these files do not load:\n"
                            + "\n".join(f"  {e}" for e in catalog.load_errors))
    catalog, static_errors = usable_static(catalog)
    warnings: list[str] = []

    def say(lines: Iterable[str]) -> None:
        for line in lines:
            warnings.append(line)
            if warn is not None:
                warn(line)

    say(f"  ✗ skipping {e}" for e in (*catalog.load_errors, *catalog.refused))
    say(f"  ✗ skipping {f.format()}" for f in static_errors)
    findings = [*map(finding_from_load_error, (*catalog.load_errors, *catalog.refused)), *static_errors]
    # §5.1: validation aborts at the first bad recipe; the ones before it still render (and warn).
    # Not strict (build-api, serve, MCP): such a recipe is skipped with its messages, never the catalog.
    bad: FeatureModeError | None = None
    recipes: list[Recipe] = []
    for recipe in catalog.recipes:
        messages = feature_mode_messages(recipe.data)
        if messages and strict:
            bad = FeatureModeError(feature_mode_error(recipe.rel_path, messages))
            break
        if messages:
            errors = [f for f in recipe_errors(catalog, recipe) if f.code == "feature-mode"]
            findings += errors
            say(skip_lines(recipe.rel_path, errors))
        else:
            recipes.append(recipe)
    outputs = parallel_map(partial(build_recipe, catalog, extra_recipe_keys=extra_recipe_keys), recipes, jobs=jobs,
                           min_items=12)
    for res in outputs:
        findings += res.errors
        say(res.warnings)
    if bad is not None:
        raise bad
    counts = count_outputs(catalog, outputs)
    shown = tuple(r for r, res in zip(recipes, outputs, strict=True) if not res.skipped)
    return ApiBuild(files=assemble(catalog, outputs), summary=summary_text(counts), counts=counts,
                    warnings=warnings, catalog=shown_catalog(catalog, shown, findings))


def shown_catalog(catalog: Catalog, recipes: tuple[Recipe, ...], findings: list[Finding]) -> Catalog:
    """What :func:`~vllm_recipes.catalog.usable.usable_catalog` would make of ``catalog``: without what the build
    left out, ``usable`` (each finding was reported). What ``catalog`` computed is kept while its recipes are."""
    if catalog.usable and recipes == catalog.recipes:
        return catalog
    shown = replace(catalog, recipes=recipes, skipped=tuple(findings), usable=True)
    if recipes == catalog.recipes:
        vars(shown).update((k, v) for k, v in vars(catalog).items() if k not in Catalog.__dataclass_fields__)
    return shown
