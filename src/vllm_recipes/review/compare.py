"""Comparing two catalogs recipe by recipe: which selections render differently, and why.

Pure: two loaded catalogs in, :class:`Impact` out. A recipe is compared when its file's data changed, or
when a shared input (taxonomy, platforms, strategies, kv_store) changed - then every recipe is. Identical
changes across selections are grouped, so a review names one change once with the scope it applies to ("on
all 7 NVIDIA GPUs").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.diagnostics import Finding, finding_from_load_error
from vllm_recipes.catalog.fileset import ParsedFiles, load_catalog_from_files
from vllm_recipes.catalog.loader import document_kind
from vllm_recipes.catalog.validate import validate_document
from vllm_recipes.parallel import parallel_map
from vllm_recipes.render.explain import locate

from .scope import describe_scope
from .selections import DefaultKey, ReviewedSelections, SelectionKey, reviewed_selections
from .snapshot import Snapshot, snapshot


@dataclass(frozen=True, order=True)
class Change:
    """One rendered difference. ``before``/``after`` ``None``: absent on that side."""

    kind: str  # flag | env | image | output | synthesis | default
    process: str
    name: str
    before: str | None
    after: str | None
    #: ``file:line`` that caused it: the new value's source, or the removed value's (base side)
    cause: str = ""

    @property
    def verb(self) -> str:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "changed"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "change": self.verb, "name": self.name,
                "before": self.before, "after": self.after, "cause": self.cause or None}


@dataclass(frozen=True)
class Group:
    """One change and every selection (or default slot) it applies to."""

    change: Change
    keys: tuple[SelectionKey | DefaultKey, ...]
    scope: str
    #: the processes (``vLLM``, ``Head``, ``Prefill`` ...) the change shows in
    processes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**self.change.to_dict(), "processes": list(self.processes), "scope": self.scope,
                "count": len(self.keys),
                "selections": [k.label if isinstance(k, SelectionKey) else
                               f"variant={k.variant}" + (f" hardware={k.hardware}" if k.hardware else "")
                               for k in self.keys]}


@dataclass
class RecipeImpact:
    """Everything that changed for one recipe file."""

    hf_id: str
    file: str
    status: str  # changed | added | removed | broken (no longer loads)
    selections_base: int = 0
    selections_head: int = 0
    groups: list[Group] = field(default_factory=list)
    defaults: list[Group] = field(default_factory=list)
    appeared: list[SelectionKey] = field(default_factory=list)
    disappeared: list[SelectionKey] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.status != "changed" or self.groups or self.defaults or self.appeared
                    or self.disappeared or self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hf_id": self.hf_id, "file": self.file, "status": self.status,
            "selections": {"base": self.selections_base, "head": self.selections_head},
            "changes": [g.to_dict() for g in self.groups],
            "defaults": [g.to_dict() for g in self.defaults],
            "appeared": [k.label for k in self.appeared],
            "disappeared": [k.label for k in self.disappeared],
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class Impact:
    """The whole review: shared files that changed and every recipe with a difference."""

    base: str
    head: str
    shared_changed: list[str]
    recipes: list[RecipeImpact]
    recipes_compared: int
    selections_compared: int
    shared_findings: list[Finding] = field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.recipes or self.shared_changed or self.shared_findings)

    def counts(self) -> dict[str, int]:
        return {
            "recipes_compared": self.recipes_compared, "recipes_changed": len(self.recipes),
            "selections_compared": self.selections_compared,
            "changes": sum(len(r.groups) for r in self.recipes),
            "defaults_moved": sum(len(r.defaults) for r in self.recipes),
            "selections_appeared": sum(len(r.appeared) for r in self.recipes),
            "selections_disappeared": sum(len(r.disappeared) for r in self.recipes),
            "new_findings": sum(len(r.findings) for r in self.recipes) + len(self.shared_findings),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "head": self.head, "summary": self.counts(),
                "shared_changed": self.shared_changed,
                "shared_findings": [f.to_dict() for f in self.shared_findings],
                "recipes": [r.to_dict() for r in self.recipes]}


# Comparing two snapshots

def snapshot_changes(base_cat: Catalog, a: Snapshot, head_cat: Catalog, b: Snapshot) -> list[Change]:
    """Every difference between two rendered selections, each with its cause."""
    if a.error or b.error:
        return [] if a.error == b.error else [Change("synthesis", "", "command synthesis", a.error, b.error)]
    if a.flags == b.flags and a.env == b.env and a.image == b.image and a.other == b.other:
        return []

    def cause(key: Any, side: str) -> str:
        snap, cat = (b, head_cat) if side == "head" else (a, base_cat)
        origin = snap.origins.get(key)
        if origin is None:
            return ""
        src, kp = origin
        return locate(cat, src, kp) or src.note or src.layer

    out = [*_keyed_changes("flag", a.flags, b.flags, lambda flag, v: flag if v is None else f"{flag} {v}", cause),
           *_keyed_changes("env", a.env, b.env, lambda var, v: f"{var}={v}", cause)]
    if a.image != b.image:
        out.append(Change("image", "", "image", a.image, b.image))
    for name in dict.fromkeys([*a.other, *b.other]):
        oa, ob = a.other.get(name), b.other.get(name)
        if oa != ob:
            out.append(Change("output", "", name, None if oa is None else oa.decode(),
                              None if ob is None else ob.decode()))
    return out


def _keyed_changes(kind: str, a: Mapping[Any, str | None], b: Mapping[Any, str | None],
                   shown: Callable[[str, str | None], str], cause: Callable[[Any, str], str]) -> list[Change]:
    """Flags (``(process, flag, n)``) or env vars (``(process, VAR)``) added, removed or changed; the cause
    on the side that has the entry, head when both do."""
    out: list[Change] = []
    for key in dict.fromkeys([*a, *b]):
        in_a, in_b = key in a, key in b
        if in_a and in_b and a[key] == b[key]:
            continue
        out.append(Change(kind, key[0], key[1], shown(key[1], a[key]) if in_a else None,
                          shown(key[1], b[key]) if in_b else None, cause(key, "head" if in_b else "base")))
    return out


# One recipe

def _finding_key(f: Finding) -> tuple[str, str, str, str]:
    """What makes two findings the same (positions ignored: lines move)."""
    return (f.severity, f.code, f.key_path, f.message)


def _new_file_findings(base_cat: Catalog, head_cat: Catalog, rel_path: str, kind: str) -> list[Finding]:
    """The load errors and validation findings of a file in ``head_cat`` that it had not in ``base_cat``."""
    def findings(catalog: Catalog) -> list[Finding]:
        found = [finding_from_load_error(e) for e in catalog.load_errors if e.position.file == rel_path]
        doc = catalog.source_for(rel_path)
        return found + validate_document(doc, kind, catalog) if doc is not None else found

    old = {_finding_key(f) for f in findings(base_cat)}
    return [f for f in findings(head_cat) if _finding_key(f) not in old]


def _selection_of(state: Any) -> Any:
    """A builder state's selection; omni selections are their own."""
    return getattr(state, "selection", state)


def _status(a: Recipe | None, b: Recipe | None, head_cat: Catalog, rel_path: str) -> str:
    if a is not None and b is not None:
        return "changed"
    if b is not None:
        return "added"
    # gone, or present but no longer loadable (its findings say why)
    return "broken" if any(e.position.file == rel_path for e in head_cat.load_errors) else "removed"


def _changed_groups(base_cat: Catalog, a: Recipe, sa: ReviewedSelections, head_cat: Catalog, b: Recipe,
                    sb: ReviewedSelections, common: list[Any]) -> list[Group]:
    """Render every selection both sides offer and group equal changes by the selections they touch."""
    by_change: dict[Change, dict[Any, None]] = {}
    processes: dict[Change, dict[str, None]] = {}
    for key in common:
        snap_a = snapshot(base_cat, a, _selection_of(sa.states[key]))
        snap_b = snapshot(head_cat, b, _selection_of(sb.states[key]))
        for c in snapshot_changes(base_cat, snap_a, head_cat, snap_b):
            # one change in several processes of a selection (head and workers, both PD pools) is one change
            merged = replace(c, process="")
            by_change.setdefault(merged, {})[key] = None
            processes.setdefault(merged, {})[c.process] = None
    groups = [Group(c, tuple(keys), describe_scope(list(keys), common, head_cat.hardware_profiles),
                    tuple(p for p in processes[c] if p)) for c, keys in by_change.items()]
    return sorted(groups, key=lambda g: (-len(g.keys), g.change))


def _moved_defaults(sa: ReviewedSelections, sb: ReviewedSelections, head_cat: Catalog) -> list[Group]:
    """Defaults (hardware, strategy, ...) that now pick another value, grouped by what moved."""
    moved: dict[Change, list[Any]] = {}
    for dk in dict.fromkeys([*sa.defaults, *sb.defaults]):
        da, db = sa.defaults.get(dk), sb.defaults.get(dk)
        if da != db and da is not None and db is not None:
            moved.setdefault(Change("default", "", dk.what, str(da), str(db)), []).append(dk)
    groups = []
    for c, keys in moved.items():
        universe = [k for k in sb.defaults if k.what == c.name and k in sa.defaults]
        groups.append(Group(c, tuple(keys), describe_scope(keys, universe, head_cat.hardware_profiles)))
    return sorted(groups, key=lambda g: (g.change.name, -len(g.keys)))


def compare_recipe(base_cat: Catalog, head_cat: Catalog, rel_path: str) -> RecipeImpact:
    """The impact of one recipe file (present on either side or both)."""
    a = next((r for r in base_cat.recipes if r.rel_path == rel_path), None)
    b = next((r for r in head_cat.recipes if r.rel_path == rel_path), None)
    hf_id = next((r.hf_id for r in (b, a) if r is not None), rel_path)
    sa = reviewed_selections(base_cat, a) if a is not None else ReviewedSelections({}, {})
    sb = reviewed_selections(head_cat, b) if b is not None else ReviewedSelections({}, {})
    impact = RecipeImpact(hf_id, rel_path, _status(a, b, head_cat, rel_path), len(sa.states), len(sb.states))
    impact.findings = _new_file_findings(base_cat, head_cat, rel_path, "recipe")
    if a is None or b is None:
        return impact
    common = [k for k in sb.states if k in sa.states]
    impact.appeared = [k for k in sb.states if k not in sa.states]
    impact.disappeared = [k for k in sa.states if k not in sb.states]
    impact.groups = _changed_groups(base_cat, a, sa, head_cat, b, sb, common)
    impact.defaults = _moved_defaults(sa, sb, head_cat)
    return impact


# Whole catalogs

def catalogs_for_comparison(base_files: Mapping[str, bytes], head_files: Mapping[str, bytes],
                            base_label: str = "base", head_label: str = "head") -> tuple[Catalog, Catalog]:
    """Both sides of a comparison, each identical file parsed once.

    When no shared file (taxonomy, platforms, strategies, kv_store) differs, only the recipe files whose
    bytes differ are loaded: nothing else can change, and a recipe's resolution and validation read no
    other recipe.
    """
    def shared(files: Mapping[str, bytes]) -> dict[str, bytes]:
        return {k: v for k, v in files.items() if not k.startswith("models/")}

    if shared(base_files) == shared(head_files):
        same = {k for k, v in base_files.items() if k.startswith("models/") and head_files.get(k) == v}
        base_files = {k: v for k, v in base_files.items() if k not in same}
        head_files = {k: v for k, v in head_files.items() if k not in same}
    cache: ParsedFiles = {}
    return (load_catalog_from_files(base_files, base_label, cache),
            load_catalog_from_files(head_files, head_label, cache))


def _shared_data(catalog: Catalog) -> dict[str, Any]:
    """Each shared file's data by its path (the ``<bundled>/`` prefix dropped, so both sides match)."""
    return {s.rel_path.removeprefix("<bundled>/"): s.doc.data for s in catalog.sources}


def changed_shared_files(base_cat: Catalog, head_cat: Catalog) -> list[str]:
    """Taxonomy, platforms, strategy and kv_store files whose data differ (added/removed included)."""
    a, b = _shared_data(base_cat), _shared_data(head_cat)
    return sorted(name for name in {*a, *b} if a.get(name) != b.get(name))


def changed_recipe_files(base_cat: Catalog, head_cat: Catalog) -> list[str]:
    """Recipe files whose data differ, or that exist (or fail to load) on one side only."""
    a = {r.rel_path: r.data for r in base_cat.recipes}
    b = {r.rel_path: r.data for r in head_cat.recipes}
    broken_a = {e.position.file: e.message for e in base_cat.load_errors if e.position.file.startswith("models/")}
    broken_b = {e.position.file: e.message for e in head_cat.load_errors if e.position.file.startswith("models/")}
    names = {*a, *b, *broken_a, *broken_b}
    return sorted(n for n in names if a.get(n) != b.get(n) or broken_a.get(n) != broken_b.get(n))


def compare_catalogs(base_cat: Catalog, head_cat: Catalog, base_label: str = "base", head_label: str = "head",
                     *, jobs: int | None = None) -> Impact:
    """The impact of turning ``base_cat`` into ``head_cat``."""
    shared = changed_shared_files(base_cat, head_cat)
    names = changed_recipe_files(base_cat, head_cat)
    if shared:
        everything = {r.rel_path for r in base_cat.recipes} | {r.rel_path for r in head_cat.recipes}
        names = sorted(everything | set(names))
    impacts = parallel_map(partial(compare_recipe, base_cat, head_cat), names, jobs=jobs)
    compared = sum(min(i.selections_base, i.selections_head) for i in impacts if i.status == "changed")
    shared_findings = [f for name in shared for f in _new_file_findings(base_cat, head_cat, name, document_kind(name))]
    return Impact(base_label, head_label, shared, [i for i in impacts if i.has_changes], len(names), compared,
                  shared_findings)


def compare_selections(catalog: Catalog, recipe: Recipe, a: tuple[str, Any], b: tuple[str, Any]) -> Impact:
    """Two selections of one recipe side by side (``(label, Selection)`` each)."""
    label_a, sel_a = a
    label_b, sel_b = b
    changes = snapshot_changes(catalog, snapshot(catalog, recipe, sel_a), catalog, snapshot(catalog, recipe, sel_b))
    impact = RecipeImpact(recipe.hf_id, recipe.rel_path, "changed", 1, 1)
    impact.groups = [Group(c, (), "", (c.process,) if c.process else ()) for c in changes]
    return Impact(label_a, label_b, [], [impact] if changes else [], 1, 1)
