"""The static JSON API (json-api.md, extensions.md): every file as bytes, built in memory (pure), so the
website serves the very bytes ``build-api`` writes (:mod:`vllm_recipes.api.writer`).

Recipes are rendered independently (in parallel); they interact only through the order in which they write
and clean paths (two variants promoted to one model id, §5.9), which :func:`merge_outputs` replays.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from vllm_recipes.catalog import BUNDLED_DIR, Catalog, Recipe
from vllm_recipes.catalog.diagnostics import Finding, finding_from_load_error
from vllm_recipes.catalog.featuremodes import feature_mode_error, feature_mode_messages
from vllm_recipes.catalog.usable import recipe_errors, skip_lines, usable_static
from vllm_recipes.catalog.yamlsource import FrozenDict, YamlLoadError, load_yaml_file, thaw
from vllm_recipes.jsvalues import as_map, get, js_str, truthy
from vllm_recipes.parallel import parallel_map
from vllm_recipes.render.install import hardware_install_block, has_hardware_install, install_block
from vllm_recipes.select.defaults import listed_hardware

from .tree import HardwareRendering, Rendered, Warn, render_for_hardware

#: Hook adding top-level keys to every recipe file (e.g. ``translations``); see :func:`build_api`.
ExtraRecipeKeys = Callable[[Recipe], Mapping[str, Any] | None]

#: A write (``"w"``, path, bytes) or the stale cleanup of a variant tree (``"rm"``, base, None).
Op = tuple[str, str, bytes | None]

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
    d = path
    while True:
        i = d.rfind("/")
        if i <= 0:
            return
        d = d[:i]
        if d in dirs:
            return
        dirs.add(d)


class ApiBuildError(Exception):
    """The build cannot produce an API (the CLI prints the message and exits 1)."""


class FeatureModeError(ApiBuildError):
    """json-api.md §10.2: a recipe's feature modes are inconsistent (exact reference text)."""


# JSON encoding (json-api.md §3)

def encode(obj: Any) -> bytes:
    """The reference bytes: ``json.dumps(indent=2, ensure_ascii=False)``, UTF-8, no newline.

    Written by orjson (a fifth of the build's time otherwise), whose bytes are the same except for floats it
    spells otherwise (non-finite, or below 1e-4 in size), which :func:`_orjson_writes_alike` looks for, and
    integers beyond 64 bits and non-string keys, which it refuses: such a value takes ``json.dumps``.
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
    #: models.json entries: the parent first, then one per promotion (§9)
    entries: list[dict[str, Any]] = field(default_factory=list)
    has_recommended: bool = False
    alternatives: int = 0
    per_hardware: int = 0
    promoted: int = 0
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

def _source_data(catalog: Catalog, name: str) -> tuple[bool, Any]:
    """The verbatim data of a top-level catalog file (``taxonomy.yaml``/``platforms.yaml``)."""
    for src in catalog.sources:
        if src.rel_path.removeprefix("<bundled>/") == name:
            return True, src.doc.data
    return False, None


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
        hp = q.get("hardware_profile") if isinstance(q, dict) else None
        out.append((f"quickstart/{'undefined' if hp is None else js_str(hp)}.json", encode(q)))
    return out


def static_files(catalog: Catalog) -> list[tuple[str, bytes]]:
    """§4.1-§4.4 in the reference's write order."""
    out: list[tuple[str, bytes]] = []
    found, tax = _source_data(catalog, "taxonomy.yaml")
    out.append(("taxonomy.json", encode(tax if found else catalog.taxonomy)))
    found, plat = _source_data(catalog, "platforms.yaml")
    if found:
        out.append(("platforms.json", encode(plat)))
    for name, spec in catalog.serving_strategies.items():
        out.append((f"strategies/{name}.json", encode(spec)))
    out.append(("strategies.json", encode(catalog.serving_strategies)))
    for name, spec in catalog.kv_stores.items():
        out.append((f"kv_store/{name}.json", encode(spec)))
    out.append(("kv_store.json", encode(catalog.kv_stores)))
    return out


def platforms_count(catalog: Catalog) -> int:
    found, plat = _source_data(catalog, "platforms.yaml")
    lst = plat.get("platforms") if found and isinstance(plat, dict) else None
    return len(lst) if isinstance(lst, list | tuple) else 0


# One recipe (§5-§7)

def _ordered(r: Mapping[str, Any]) -> dict[str, Any]:
    """§5.8 recipe key ordering: ``hf_id``, ``meta``, ``recommended_command`` first."""
    out = {k: r[k] for k in ("hf_id", "meta", "recommended_command") if k in r}
    for k, v in r.items():
        if k not in out:
            out[k] = v
    return out


def _entry(hf_id: str, meta: Any, url: str, json_path: str) -> dict[str, Any]:
    """A models.json entry (§9); ``title``/``provider`` only when the meta has them."""
    e: dict[str, Any] = {"hf_id": hf_id}
    if isinstance(meta, dict):
        for k in ("title", "provider"):
            if k in meta:
                e[k] = meta[k]
    e["url"], e["json"] = url, json_path
    return e


class _RecipeBuilder:
    """Builds one recipe's :class:`RecipeOutput`; renders each (variant, hardware) once."""

    def __init__(self, catalog: Catalog, recipe: Recipe, extra_keys: ExtraRecipeKeys | None) -> None:
        self.catalog = catalog
        self.recipe = recipe
        self.extra_keys = extra_keys
        self.res = RecipeOutput()
        #: (vk, hw) -> (rendering or None, its warnings, encoded alternatives)
        self._hw: dict[tuple[str, str], tuple[HardwareRendering | None, list[str], list[tuple[str, bytes]]]] = {}
        self._hw_lists: dict[str, list[str]] = {}
        self._rendered = Rendered(catalog)

    def _render_hw(self, vk: str, hw: str) -> tuple[HardwareRendering | None, list[tuple[str, bytes]]]:
        got = self._hw.get((vk, hw))
        if got is None:
            warnings: list[str] = []
            b = render_for_hardware(self.catalog, self.recipe, vk, hw, warnings.append, self._rendered)
            alts = [(s, encode(rendering)) for s, rendering in b.alternatives] if b is not None else []
            got = (b, warnings, alts)
            self._hw[(vk, hw)] = got
        # replay the warnings: the reference renders (and fails) again for every tree
        self.res.warnings.extend(got[1])
        return got[0], got[2]

    def tree(self, vk: str, base: str) -> dict[str, Any] | None:
        """§6 ``renderVariantTree``: writes the tree's files, returns ``recommended_command``."""
        recipe, r = self.recipe, self.recipe.data
        variants = as_map(r.get("variants"))
        variant = variants.get(vk)
        if not truthy(variant) or recipe.is_omni:
            return None
        ops = self.res.ops
        ops.append(("rm", base, None))
        variant = as_map(variant)
        hw_ids = self._hw_lists.get(vk)
        if hw_ids is None:
            hw_ids = self._hw_lists[vk] = listed_hardware(self.catalog.hardware_profiles, variant, r)
        default_hw = hw_ids[0]
        built = []
        for hw in hw_ids:
            b, alts = self._render_hw(vk, hw)
            if b is not None:
                built.append((hw, b, alts))
        if not built or built[0][0] != default_hw:
            return None
        by_hw: dict[str, str] = {}
        rc: dict[str, Any] = {}
        for hw, b, alts in built:
            d = f"{base}/strategies" if hw == default_hw else f"{base}/hw/{hw}/strategies"
            links: dict[str, str] = {}
            for s, data in alts:
                path = f"{d}/{s}.json"
                ops.append(("w", path, data))
                links[s] = "/" + path
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
        out = dict(rc)
        out["by_hardware"] = by_hw
        return out

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
        res.entries.append(_entry(parent, out.get("meta"), f"/{parent}", f"/{parent}.json"))
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
        p = dict(r)
        p["hf_id"] = mid
        p["meta"] = {**as_map(r.get("meta")), "derived_from": parent, "variant": vk}
        p["model"] = {**as_map(r.get("model")), "model_id": mid}
        p["variants"] = {"default": core}
        p["recommended_command"] = rv
        pout = _ordered(p)
        self.res.ops.append(("w", f"{mid}.json", encode(pout)))
        e = _entry(mid, pout["meta"], f"/{parent}", f"/{mid}.json")
        e["derived_from"] = parent
        self.res.entries.append(e)
        self.res.promoted += 1


def _recipe_json(recipe: Recipe) -> dict[str, Any]:
    """§5.2-§5.3: the recipe's data with its id, the synthesized install block in ``model``, no dependencies."""
    r: dict[str, Any] = thaw(recipe.data)
    r["hf_id"] = recipe.hf_id
    inst = install_block(recipe.data)
    model = r.get("model")
    if truthy(model):
        m = {k: v for k, v in model.items() if k != "install"} if isinstance(model, dict) else {}
        if inst:
            m["install"] = inst
        r["model"] = m
    elif inst:
        r["model"] = {"install": inst}
    r.pop("dependencies", None)
    return r


def build_recipe(catalog: Catalog, recipe: Recipe, extra_recipe_keys: ExtraRecipeKeys | None = None
                 ) -> RecipeOutput:
    """Everything one recipe contributes to the API (json-api.md §5-§9).

    A recipe with validation errors contributes nothing but the lines saying why
    (feature-mode errors are §10.2's job: :func:`build_api` aborts on them or skips the recipe).
    """
    errors = recipe_errors(catalog, recipe, ignore=("feature-mode",))
    if errors:
        return RecipeOutput(warnings=skip_lines(recipe.rel_path, errors), errors=errors)
    return _RecipeBuilder(catalog, recipe, extra_recipe_keys).build()


# Parallel rendering

def _build_one(job: tuple[Catalog, Recipe, ExtraRecipeKeys | None]) -> RecipeOutput:
    return build_recipe(*job)


# Merging (reference write order, including stale cleanup)

class _Tree:
    """The output directory as the reference mutates it: writes and recursive deletions."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self._dirs: set[str] = set()

    def write(self, path: str, data: bytes) -> None:
        self.files[path] = data
        add_parent_dirs(path, self._dirs)

    def rmtree(self, base: str) -> None:
        if base in self._dirs:
            prefix = base + "/"
            self.files = {k: v for k, v in self.files.items() if not k.startswith(prefix)}
            self._dirs = {d for d in self._dirs if not d.startswith(prefix) and d != base}


def merge_outputs(outputs: Iterable[RecipeOutput],
                  before: Iterable[tuple[str, bytes]] = ()) -> dict[str, bytes]:
    """Replay every recipe's operations in walk order; the last writer of a path wins.

    ``before``: files written ahead of the recipes (the static catalog files, §4.1-§4.4).
    """
    tree = _Tree()
    for path, data in before:
        tree.write(path, data)
    for res in outputs:
        for kind, path, written in res.ops:
            if kind == "w" and written is not None:
                tree.write(path, written)
            else:
                tree.rmtree(path)
    return tree.files


def models_index(outputs: Sequence[RecipeOutput]) -> list[dict[str, Any]]:
    """§9: parents in walk order, then every promotion in promotion order (duplicates kept)."""
    parents = [res.entries[0] for res in outputs if res.entries]
    promoted = [e for res in outputs for e in res.entries[1:]]
    return parents + promoted


def summary_text(c: BuildCounts) -> str:
    """The §10.1 stdout text, exactly."""
    line = (f"✓ JSON API: {c.models} models ({c.with_recommended} with recommended_command, "
            f"{c.alternatives} default-hw alternatives, {c.per_hardware} per-hw renderings), "
            f"{c.promoted} promoted variants, {c.strategies} strategies, {c.kv_stores} kv-store deployments, "
            f"{c.platforms} platforms")
    if c.collisions:
        line += f" ({c.collisions} variant collision{'s' if c.collisions > 1 else ''} skipped)"
    # the example paths name models of this catalog (a reader tries them), else the reference's
    tail = SUMMARY_TAIL
    if c.example_model:
        tail = tail.replace("/moonshotai/Kimi-K2.5.json", f"/{c.example_model}.json")
        variant = f", e.g. /{c.example_variant}.json" if c.example_variant else ""
        tail = tail.replace(", e.g. /zai-org/GLM-5.1-FP8.json", variant)
    return line + "\n" + tail


def count_outputs(outputs: Sequence[RecipeOutput], strategies: int, kv_stores: int,
                  platforms: int) -> BuildCounts:
    """The §10.1 numbers; promoted trees do not count towards alternatives/per-hw renderings."""
    c = BuildCounts(models=sum(not res.skipped for res in outputs), strategies=strategies, kv_stores=kv_stores,
                    platforms=platforms)
    for res in outputs:
        c.with_recommended += res.has_recommended
        c.alternatives += res.alternatives
        c.per_hardware += res.per_hardware
        c.promoted += res.promoted
        c.collisions += res.collisions
        if res.entries and not c.example_model:
            c.example_model = str(res.entries[0].get("hf_id") or "")
        if len(res.entries) > 1 and not c.example_variant:
            c.example_variant = str(res.entries[1].get("hf_id") or "")
    return c


def assemble(catalog: Catalog, outputs: Sequence[RecipeOutput]) -> dict[str, bytes]:
    """The whole tree in the reference's write order: static files, recipes, models.json, quickstart."""
    tree = merge_outputs(outputs, static_files(catalog))
    tree["models.json"] = encode(models_index(outputs))
    tree.update(quickstart_files(catalog))
    return tree


def build_api(catalog: Catalog, warn: Warn | None = None, *,
              extra_recipe_keys: ExtraRecipeKeys | None = None,
              jobs: int | None = None, strict: bool = True) -> ApiBuild:
    """Build the whole JSON API in memory.

    ``warn`` receives each stderr line (§10.1) as it happens. ``extra_recipe_keys``
    may add top-level keys (appended, e.g. ``translations``) to every recipe file
    and its promoted copies. ``jobs``: worker processes (``None``: every core,
    see :func:`~vllm_recipes.parallel.parallel_map`; 1: serial).
    ``strict``: refuse a catalog with files that do not load (else skip them, each with a warning).

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
    outputs: list[RecipeOutput] = []
    for res in parallel_map(_build_one, [(catalog, r, extra_recipe_keys) for r in recipes], jobs=jobs,
                            min_items=12):
        outputs.append(res)
        findings += res.errors
        say(res.warnings)
    if bad is not None:
        raise bad
    counts = count_outputs(outputs, len(catalog.serving_strategies), len(catalog.kv_stores),
                           platforms_count(catalog))
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
