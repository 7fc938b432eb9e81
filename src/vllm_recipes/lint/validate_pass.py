"""``validate``'s pass over every offered selection: dead values and the release lint, each piece of work once.

The straightforward path (:func:`.deadvalues.dead_value_findings` with a
:class:`.vllm_validate.ReleaseFindings` hook) resolves every offered selection
and, for each of its processes, dedupes the tokens (``finalize``), tallies them
and lints them. Across a recipe almost all of that repeats (the same processes
on many hardware profiles, feature sets and KV choices), so this pass gives the
same findings doing each piece once per distinct input:

- a selection equivalent to one already done is skipped (:class:`_Equivalence`:
  same plan and release, e.g. on hardware the recipe cannot tell apart);
- a process's dedupe depends only on its token values: the kept and shadowed
  positions are computed once per distinct value list (``finalized.py``) and
  read off each process's own tokens for the tally (their sources differ);
- its lint findings depend only on the kept values, the env names and the
  release: linted once per distinct combination (``vllm_plan.lint_kept``'s
  memo) and mapped to each process's sources; a finding already reported at
  its recipe location keeps the first selection as its example, as on the
  straightforward path;
- cyclic garbage collection is paused for the pass, and a large catalog's
  recipes are spread over worker processes (fork); the findings are gathered
  in catalog order.

``tests/lint/test_validate_pass.py`` holds the findings equal to the
straightforward path over a reduced benchmark catalog.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.diagnostics import Checker, Finding
from vllm_recipes.gcpause import cyclic_gc_paused
from vllm_recipes.jsvalues import as_map, get, is_map, truthy
from vllm_recipes.render.docker import docker_meta
from vllm_recipes.render.explain import plan_processes
from vllm_recipes.select.defaults import variant_entry
from vllm_recipes.select.gates import resolve_mode_key
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.context import Ctx, build_context, rendering_hardware_key
from vllm_recipes.synth.plan import Arg, EnvValue, Invocation, Plan
from vllm_recipes.synth.resolve import resolve_plan

from .deadvalues import (
    OfferedGroup,
    Tally,
    dead_value_report,
    offered_groups,
    offered_selections,
    pd_pool_request,
    tally_env,
)
from .derived_processes import (
    Derived,
    Process,
    base_feature_tokens,
    feature_set_processes,
    kv_option_processes,
)
from .finalized import FinalizedIndices, finalized_indices
from .vllm_lint import VllmFinding, starts_a_unit
from .vllm_plan import SEVERITY_RANK, lint_kept, target_for, with_sources
from .vllm_validate import ReleaseFindings

#: below this many recipes the pass stays in one process (forking costs more than it saves)
PARALLEL_MIN_RECIPES = 16
#: at most this many worker processes
MAX_WORKERS = 4

_value = itemgetter(0)  # Arg.value


class RecipePass:
    """Counts one recipe's resolved selections into its dead-value tally and (optionally) its release findings."""

    def __init__(self, catalog: Catalog, recipe: Recipe, forced: str | None = None, release: bool = True) -> None:
        self.rf = recipe.rel_path
        self.forced = forced
        self.memo = catalog.memo
        self.tally = Tally()
        self.release = ReleaseFindings(catalog, forced, recipe) if release else None
        #: id(token) -> token, every kept token (counted as emitted at the end: each object once; kept alive
        #: so the id stays theirs; memoized layers share their token objects across selections)
        self._kept_args: dict[int, Arg] = {}
        #: id(env) -> (env, its names), for envs already tallied (kept alive so the id stays theirs)
        self._envs: dict[int, tuple[Any, tuple[str, ...]]] = {}
        #: (variant, hardware, KV choice) -> the lint target (what ``target_for`` reads of a selection)
        self._targets: dict[tuple[str, str, str | None], Any] = {}
        #: the Mooncake deployments (the KV choices whose own ``min_vllm_version`` the target reads)
        self._stores = frozenset(k for k, spec in catalog.strategies.items()
                                 if get(spec, "deploy_type") == "kv_store_lb")
        #: memos of :meth:`add_suffix` by identity (each entry keeps its objects alive, so the ids stay theirs)
        self._tails: dict[tuple[int, int], tuple[Any, Any, frozenset[str] | None]] = {}
        self._prefixes: dict[tuple[int, int], tuple[Plan, frozenset[str] | None, bool]] = {}
        self._processes: dict[int, tuple[Plan, list[Process]]] = {}
        self._tails_done: dict[tuple[int, int, int, bool], tuple[Any, Any, Any]] = {}

    def add(self, sel: Selection, ctx: Ctx, plan: Plan) -> None:
        """A :data:`.deadvalues.PlanHook`: count one resolved selection."""
        self.add_processes(sel, ctx, plan_processes(plan, env_on_workers=True))

    def add_processes(self, sel: Selection, ctx: Ctx, processes: Iterable[Process]) -> None:
        """Count one selection given its serve processes (workers with the head's env)."""
        release = self.release
        target = self._target(sel, ctx) if release is not None else None
        new: list[tuple[VllmFinding, str, tuple[str | int, ...]]] = []
        for _title, inv, env in processes:
            args = inv.args
            fi = finalized_indices(self.memo, inv)
            self._tally_tokens(args, fi)
            names = self._env_names(env)
            if release is None or inv.binary != "vllm serve":
                continue
            found = lint_kept(ctx, fi.kept_values, names, target)  # memoized by those values
            if found:
                new.extend((f, src.file if src is not None else "", kp)
                           for f, src, kp in with_sources(found, fi.pick(args), env))  # type: ignore[misc]
        if new:
            # the plan's findings by severity, as lint_plan orders them (the first one at a location wins)
            new.sort(key=lambda x: SEVERITY_RANK[x[0].severity])
            for f, file, kp in new:
                release.add_finding(sel, f, file, kp)  # type: ignore[union-attr]

    def _target(self, sel: Selection, ctx: Ctx) -> Any:
        """The release ``sel`` is linted against, one object per (variant, hardware, Mooncake deployment):
        of the KV choice ``target_for`` reads only a Mooncake deployment's ``min_vllm_version``, so a KV
        option shares the target of no KV choice (and a tail counted once against it stays counted)."""
        kv = sel.kv_offload
        if kv is not None and kv not in self._stores:
            kv = None
        tkey = (sel.variant_key, sel.hw_id, kv)
        target = self._targets.get(tkey)
        if target is None:
            target = self._targets[tkey] = target_for(ctx, self.forced)[0]
        return target

    def add_suffix(self, sel: Selection, derived: Derived, base: Plan) -> bool:
        """Count a selection derived from ``base`` (counted before) by its new last tokens alone, when they
        provably change nothing else; ``False`` (nothing counted) when they might.

        Each base process is a prefix followed by ``derived.replaced``; the selection's processes are the
        same prefix followed by ``derived.suffix``. When neither tail has a flag of the prefix, starts with
        anything but a flag or holds an empty token, and no flag is dropped, every prefix token stays where
        it was: dedupe keeps and shadows what it did (units never span the seam, flags are compared
        exactly) and the lint reads the same units, each on its own. The prefix's findings and tally were
        then counted with the base (against the same release, with the very same env), so the selection adds
        only its tail's: its dedupe, tally and lint taken alone; and, when the env is not the base's, the new
        env's tally and lint (a process's env findings do not depend on its tokens).

        The tail's part is itself counted once per (tail, env, release): the tally gathers tokens and envs
        by identity and a finding already reported at its location is not reported again, so counting the
        very same tail objects a second time adds nothing (memoized layers share them across selections).
        """
        release = self.release
        target = None
        if release is not None:
            target = self._target(sel, derived.ctx)
            if target != self._targets.get((sel.variant_key, sel.hw_id, None)):
                return False
        old, new = derived.replaced, derived.suffix
        flags = self._tail_flags(old, new)
        if flags is None:
            return False
        prefix_flags, serves = self._prefix_facts(base, len(old))
        if prefix_flags is None or not flags.isdisjoint(prefix_flags):
            return False
        env = derived.env
        done_key = (id(new), id(env), id(target), serves)
        done = self._tails_done.get(done_key)
        if done is not None and done[0] is new and done[1] is env and done[2] is target:
            return True
        self._tails_done[done_key] = (new, env, target)
        names = self._env_names(env) if env is not None else ()  # (tallied once: every process has it)
        fi = finalized_indices(self.memo, Invocation("", new))
        self._tally_tokens(new, fi)  # (the same for every process: once)
        if release is None or not serves or not (new or env is not None):
            return True
        found = lint_kept(derived.ctx, fi.kept_values, names, target)  # type: ignore[arg-type]
        if found:
            tail = [(f, src.file if src is not None else "", kp)
                    for f, src, kp in with_sources(found, fi.pick(new), env or ())]  # type: ignore[misc]
            tail.sort(key=lambda x: SEVERITY_RANK[x[0].severity])
            for f, file, kp in tail:
                release.add_finding(sel, f, file, kp)
        return True

    def _tail_flags(self, old: tuple[Arg, ...], new: tuple[Arg, ...]) -> frozenset[str] | None:
        """The flags of both tails, or ``None`` when one starts with a value or holds an empty token
        (memoized by the tails' identities: memoized layers share them)."""
        key = (id(old), id(new))
        hit = self._tails.get(key)
        if hit is not None and hit[0] is old and hit[1] is new:
            return hit[2]
        old_values, new_values = tuple(map(_value, old)), tuple(map(_value, new))
        flags: frozenset[str] | None = frozenset(v for v in (*old_values, *new_values) if v.startswith("-"))
        for values in (old_values, new_values):
            if values and ("" in values or not (values[0].startswith("-") and starts_a_unit(values[0]))):
                flags = None
        self._tails[key] = (old, new, flags)
        return flags

    def _prefix_facts(self, base: Plan, cut: int) -> tuple[frozenset[str] | None, bool]:
        """The token values of every base process but its last ``cut`` (``None`` when a process drops flags;
        a tail's flags, which all start with ``-``, meet only the prefix's flags among them) and whether a
        process is ``vllm serve`` (memoized per base plan)."""
        key = (id(base), cut)
        hit = self._prefixes.get(key)
        if hit is not None and hit[0] is base:
            return hit[1], hit[2]
        flags: set[str] | None = set()
        serves = False
        for _title, inv, _env in self.processes_of(base):
            args = inv.args
            if inv.drop_flags:
                flags = None
            elif flags is not None:
                flags.update(map(_value, args[:len(args) - cut]))
            serves = serves or inv.binary == "vllm serve"
        facts = None if flags is None else frozenset(flags)
        self._prefixes[key] = (base, facts, serves)
        return facts, serves

    def processes_of(self, plan: Plan) -> list[Process]:
        """``plan_processes(plan, env_on_workers=True)`` (memoized per plan: a base plan is read often)."""
        hit = self._processes.get(id(plan))
        if hit is not None and hit[0] is plan:
            return hit[1]
        out = plan_processes(plan, env_on_workers=True)
        self._processes[id(plan)] = (plan, out)
        return out

    def _env_names(self, env: tuple[EnvValue, ...]) -> tuple[str, ...]:
        """The names of ``env``, tallying it the first time it is met (by identity)."""
        known = self._envs.get(id(env))
        if known is None or known[0] is not env:
            known = self._envs[id(env)] = (env, tuple(e.key for e in env))
            tally_env(self.tally, self.rf, env)
        return known[1]

    def _tally_tokens(self, args: tuple[Arg, ...], fi: FinalizedIndices) -> None:
        """:func:`.deadvalues.tally_invocation` on the memoized positions of ``finalize``: the kept tokens are
        gathered by identity (one C-level update) and counted as emitted in :meth:`findings`."""
        kept = fi.pick(args)  # type: ignore[misc]
        self._kept_args.update(zip(map(id, kept), kept, strict=True))
        if fi.shadowed:
            t, rf = self.tally, self.rf
            for i, w in fi.shadowed:
                tok = args[i]
                if tok.source.file == rf:
                    t.shadowed_by.setdefault(tok.key_path, set()).add(args[w].source.layer if w >= 0 else "?")

    def findings(self, recipe: Recipe) -> list[Finding]:
        """Dead values, then the release findings (the straightforward checker's order)."""
        rf, emitted = self.rf, self.tally.emitted
        emitted.update(a.key_path for a in self._kept_args.values() if a.source.file == rf)
        self._kept_args.clear()
        out = dead_value_report(recipe, self.tally)
        if self.release is not None:
            out.extend(self.release.findings)
        return out


def _hashable(sel: Selection) -> Any:
    """``sel`` compared exactly: by repr, as 8 and 8.0 are equal but render differently."""
    return repr(sel)


#: the selection fields compared as they are (hardware and modes are compared by what they select)
_PLAIN_FIELDS = tuple(f.name for f in fields(Selection) if f.name not in {"hw_id", "feature_modes"})
_plain_values = attrgetter(*_PLAIN_FIELDS)
#: where ``kv_offload`` and ``features`` sit among them
_KV_AT = _PLAIN_FIELDS.index("kv_offload")
_FEATURES_AT = _PLAIN_FIELDS.index("features")
_PD_AT = _PLAIN_FIELDS.index("pd_nodes")


class _Equivalence:
    """Keys under which two offered selections of one recipe give the same findings.

    Two selections resolve to the same plan (every token and env entry with
    the same value and source) and are linted against the same release when
    they differ only in what ``resolve`` and the lint target cannot see:

    - the hardware, when it looks the same to everything they read of it:
      :func:`synth.context.rendering_hardware_key` (the key the build shares
      whole renderings by: hardware classes, GPU count, single-node TP size;
      a named id, or a tray whose env the engine singles out, is its own
      class) plus the image (-> release); the KV option's brand check reads
      the brand, which the class holds;
    - the mode picks, when they select the same mode: the features layer reads
      a pick only through ``resolve_mode_key`` (a pick that is the default, or
      not allowed there, selects what no pick selects).

    The later of two equivalent selections is skipped: its findings are the
    earlier one's, which already named the earlier one as the example.
    """

    def __init__(self, catalog: Catalog, recipe: Recipe) -> None:
        self.catalog = catalog
        self.recipe = recipe
        self.features = as_map(recipe.data.get("features"))
        self._hardware: dict[tuple[str, str, str], Any] = {}
        self._images: dict[tuple[str, str], Any] = {}
        self._modes: dict[tuple[Any, ...], tuple[tuple[str, Any], ...]] = {}
        self._classes: dict[tuple[str, str, str], Any] = {}
        self._class_ids: dict[Any, int] = {}

    def hardware_key(self, sel: Selection) -> Any:
        """What resolving and linting ``sel`` read of its hardware (``None``: cannot tell, never shared)."""
        k = (sel.variant_key, sel.hw_id, sel.strategy)
        got = self._hardware.get(k, self)
        if got is self:
            try:
                got = self._compute(sel)
            except Exception:  # resolve will tell
                got = None
            self._hardware[k] = got
        return got

    def _hardware_class(self, sel: Selection) -> tuple[int, Any, Any] | None:
        """:meth:`hardware_key` with the key replaced by a number standing for it (hashed once per
        (variant, hardware, strategy), not once per selection)."""
        k = (sel.variant_key, sel.hw_id, sel.strategy)
        got = self._classes.get(k, self)
        if got is self:
            hardware = self.hardware_key(sel)
            got = None if hardware is None else (self._class_ids.setdefault(hardware[0], len(self._class_ids)),
                                                  hardware[1], hardware[2])
            self._classes[k] = got
        return got  # type: ignore[return-value]

    def _compute(self, sel: Selection) -> Any:
        # what resolving and rendering read of the hardware (the build shares renderings by the same key),
        # plus the image the lint target reads; the KV option's brand check is covered by the classes and
        # ``kv_offload`` itself is compared as a plain field
        r, hw = self.recipe, sel.hw_id
        vkey, variant = variant_entry(r.data, sel.variant_key)
        profile = as_map(self.catalog.hardware_profiles.get(hw))
        image = self._images.get((vkey, hw))
        if image is None:
            image = self._images[(vkey, hw)] = docker_meta(r.data, variant, profile, hw).image
        return ((rendering_hardware_key(self.catalog, r.data, r.rel_path, sel.variant_key, sel.strategy, hw),
                 image), variant, profile)

    def _effective_modes(self, sel: Selection, variant: Mapping[str, Any], profile: Mapping[str, Any]
                         ) -> tuple[tuple[str, Any], ...]:
        return self._modes_of(sel.variant_key, sel.hw_id, sel.features, sel.feature_modes, variant, profile)

    def _modes_of(self, variant_key: str, hw_id: str, features: tuple[str, ...], modes: tuple[tuple[str, str], ...],
                  variant: Mapping[str, Any], profile: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        """Each moded feature of ``features`` with the mode the features layer selects for it."""
        k = (variant_key, hw_id, features, modes)
        got = self._modes.get(k)
        if got is None:
            picks = []
            for f in features:
                feat = self.features.get(f)
                if is_map(feat) and truthy(feat.get("modes")):
                    pick = next((m for g, m in modes if g == f), None)  # (Selection.mode_for)
                    picks.append((f, resolve_mode_key(feat, f, variant, variant_key, profile, hw_id or None, pick)))
            got = self._modes[k] = tuple(picks)
        return got

    def key(self, sel: Selection, *, equivalent: bool = True) -> Any:
        """``sel`` itself, or (``equivalent``) its hardware and mode picks replaced by what they select.

        The other fields are compared with their types (8 and 8.0 are equal but render differently),
        a PD pool request given as a dict by its repr; a selection with another unhashable request value
        is compared by repr.
        """
        hardware = self._hardware_class(sel) if equivalent else None
        if hardware is None:
            return _hashable(sel)
        class_id, variant, profile = hardware
        values = _plain_values(sel)
        key = (class_id, self._effective_modes(sel, variant, profile), _pool_by_repr(values),
               tuple(map(type, values)))
        try:
            hash(key)
        except TypeError:  # an unhashable request value
            return repr(key)
        return key

class Keyed(NamedTuple):
    """An offered selection whose key was not met before: the key, the selection, and its base's."""

    key: Any
    sel: Selection
    #: the key of the plan it may be derived from (its features or KV option replaced by the defaults / none),
    #: or ``None``: it is resolved
    base_key: Any = None
    #: that base selection (feature sets only)
    base_sel: Selection | None = None


def keyed_selections(eq: _Equivalence, groups: Iterable[OfferedGroup], done: set[Any]) -> Iterator[Keyed]:
    """The first selection of each ``eq.key`` among :func:`.deadvalues.offered_selections` (in its order)
    that is not in ``done`` (each key met is added), keyed from the parts they share: the hardware class
    once per (variant, hardware, strategy), the mode picks once per feature set and hardware, the other
    fields spliced into the values of one template selection per strategy. A selection is built only for a
    new key (most keys repeat an earlier one). ``tests/lint/test_validate_pass_shortcuts.py`` holds every
    key, selection and base key equal to the selection-by-selection way.
    """
    strategies = eq.catalog.strategies
    add = done.add
    for g in groups:
        vk, hw, defaults = g.variant_key, g.hw_id, g.defaults
        modes: list[Any] | None = None
        for s, nodes in g.served:
            template = Selection(variant_key=vk, hw_id=hw, strategy=s, node_count=nodes, features=defaults)
            cls = eq._hardware_class(template)
            if cls is None:  # compared by repr, never derived
                for sel in _strategy_selections(g, s, nodes):
                    key = eq.key(sel)
                    n = len(done)
                    add(key)
                    if len(done) > n:
                        yield Keyed(key, sel)
                continue
            class_id, variant, profile = cls
            if modes is None:
                modes = [eq._modes_of(vk, hw, f, m, variant, profile) for f, m in g.feature_sets]
            values = _plain_values(template)
            types = tuple(map(type, values))
            # each feature set, and on PD each also with the pool request (its own template and base)
            rows = [(template, values, types)]
            if s == "pd_cluster":
                pool = _with_fields(template, node_count=1, pd_nodes=pd_pool_request())
                pool_values = _plain_values(pool)
                rows.append((pool, _pool_by_repr(pool_values), tuple(map(type, pool_values))))
            bases: list[tuple[Any, Selection]] = []
            for (feats, picks), eff in zip(g.feature_sets, modes, strict=True):
                for r, (row, row_values, row_types) in enumerate(rows):
                    key = (class_id, eff, (*row_values[:_FEATURES_AT], feats, *row_values[_FEATURES_AT + 1:]),
                           row_types)
                    first = len(bases) == r  # the first feature set is the defaults: the base of the others
                    n = len(done)
                    add(key)
                    if len(done) == n and not first:
                        continue
                    sel = _with_fields(row, features=feats, feature_modes=picks) if r == 0 else \
                        _with_fields(row, features=feats, feature_modes=picks, pd_nodes=pd_pool_request())
                    if first:
                        bases.append((key, sel))
                        if len(done) > n:
                            yield Keyed(key, sel)
                    elif feats != defaults or picks:
                        yield Keyed(key, sel, *bases[r])
                    else:
                        yield Keyed(key, sel)
            base_key = bases[0][0]
            kv_types = (*types[:_KV_AT], str, *types[_KV_AT + 1:])
            for kv in g.kv[s]:
                key = (class_id, modes[0], (*values[:_KV_AT], kv, *values[_KV_AT + 1:]), kv_types)
                n = len(done)
                add(key)
                if len(done) > n:
                    # a Mooncake store is resolved: its own deployment shape (deriving one measured no cheaper)
                    yield Keyed(key, _with_fields(template, kv_offload=kv),
                                None if not kv or kv in strategies else base_key)
        for kv_id, strategy, nc in g.stores:
            sel = Selection(variant_key=vk, hw_id=hw, strategy=strategy, node_count=nc, features=defaults,
                            kv_offload=kv_id)
            key = eq.key(sel)
            n = len(done)
            add(key)
            if len(done) > n:
                yield Keyed(key, sel)


def _pool_by_repr(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """The plain values with a PD pool request given as a dict replaced by its repr (hashable; its type
    stays in the key's types)."""
    pool = values[_PD_AT]
    if type(pool) is not dict:
        return values
    return (*values[:_PD_AT], repr(pool), *values[_PD_AT + 1:])


assert not hasattr(Selection, "__post_init__"), "_with_fields builds selections without __init__"


def _with_fields(template: Selection, **changes: Any) -> Selection:
    """``dataclasses.replace(template, **changes)`` without the frozen ``__init__``'s per-field ``__setattr__``
    (a Selection has no ``__post_init__``; the fast pass builds ~100 per recipe and variant)."""
    sel = object.__new__(Selection)
    fields_of = sel.__dict__
    fields_of.update(template.__dict__)
    fields_of.update(changes)
    return sel


def _strategy_selections(g: OfferedGroup, s: str, nodes: int) -> Iterator[Selection]:
    """The selections of one served strategy of ``g``, in :func:`.deadvalues.offered_selections`' order."""
    for feats, picks in g.feature_sets:
        yield Selection(variant_key=g.variant_key, hw_id=g.hw_id, strategy=s, node_count=nodes, features=feats,
                        feature_modes=picks)
        if s == "pd_cluster":
            yield Selection(variant_key=g.variant_key, hw_id=g.hw_id, strategy=s, node_count=1, features=feats,
                            feature_modes=picks, pd_nodes=pd_pool_request())
    for kv in g.kv[s]:
        yield Selection(variant_key=g.variant_key, hw_id=g.hw_id, strategy=s, node_count=nodes,
                        features=g.defaults, kv_offload=kv)


def recipe_pass_findings(catalog: Catalog, recipe: Recipe, forced: str | None = None,
                         release: bool = True, *, skip_equivalent: bool = True, derive: bool = True,
                         derive_suffix: bool = True) -> list[Finding]:
    """One recipe's dead values and (``release``) release-lint findings over its offered selections.

    ``skip_equivalent=False`` resolves every distinct selection (what the equivalence test compares against);
    ``derive=False`` resolves KV-option and other feature-set selections too instead of deriving them from
    their base plan (:mod:`.derived_processes`); ``derive_suffix=False`` counts each derived one in full
    instead of by its new tokens alone (:meth:`RecipePass.add_suffix`).
    """
    if recipe.is_omni:
        return []
    acc = RecipePass(catalog, recipe, forced, release)
    eq = _Equivalence(catalog, recipe)
    done: set[Any] = set()
    #: plans of the resolved selections without a KV choice, by key (what others are derived from)
    plain: dict[Any, Plan] = {}
    options: dict[Any, Any] = {}
    base_features: dict[Any, tuple[Arg, ...]] = {}
    #: (variant, hardware, strategy, node count) -> a context there without a KV choice (a feature set's is
    #: that one with its selection swapped in)
    contexts: dict[tuple[str, str, str, str], Ctx] = {}
    items: Iterable[Keyed]
    if skip_equivalent:
        items = keyed_selections(eq, offered_groups(catalog, recipe), done)
    else:
        items = (Keyed(key, sel) for sel in offered_selections(catalog, recipe)
                 if (key := eq.key(sel, equivalent=False)) not in done and not done.add(key))  # type: ignore[func-returns-value]
    for key, sel, bkey, base_sel in items:
        derived: Derived | None = None
        base = plain.get(bkey) if derive and bkey is not None else None
        if base is not None:
            if sel.kv_offload:
                derived = kv_option_processes(catalog, recipe, sel, base, options)
            else:
                assert base_sel is not None
                ckey = (sel.variant_key, sel.hw_id, sel.strategy, repr(sel.node_count))
                base_ctx = contexts.get(ckey)
                if base_ctx is None:
                    base_ctx = contexts[ckey] = build_context(catalog, recipe.data, recipe.rel_path, base_sel)
                known = base_features.get(bkey)
                if known is None:
                    known = base_features[bkey] = base_feature_tokens(catalog, recipe, base_sel, base_ctx)
                derived = feature_set_processes(catalog, recipe, sel, base_sel, base, known, base_ctx,
                                                acc.processes_of(base))
        if derived is not None:
            if not (derive_suffix and acc.add_suffix(sel, derived, base)):  # type: ignore[arg-type]
                acc.add_processes(sel, derived.ctx, derived.processes)
            continue
        try:
            # (``resolve`` without its per-selection answer cache: the pass never asks for a selection twice)
            ctx = build_context(catalog, recipe.data, recipe.rel_path, sel)
            plan = resolve_plan(ctx)
        except Exception:  # a selection that cannot resolve is the engine's finding, not the lint's
            continue
        if derive and sel.kv_offload is None and type(key) is tuple:
            plain[key] = plan
            contexts.setdefault((sel.variant_key, sel.hw_id, sel.strategy, repr(sel.node_count)), ctx)
        acc.add(sel, ctx, plan)
    return acc.findings(recipe)


def default_workers(n_recipes: int) -> int:
    """Worker processes for a catalog of ``n_recipes``: the usable cores (at most :data:`MAX_WORKERS`)."""
    if n_recipes < PARALLEL_MIN_RECIPES or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_WORKERS, cores))


#: what a forked worker reads (set by the parent just before it forks)
_FORKED: tuple[Catalog, str | None, bool] | None = None


def _worker_started() -> None:
    """A worker never runs the cyclic collector (see :mod:`vllm_recipes.gcpause`); it exits with the pool."""
    gc.disable()


def _recipe_in_worker(index: int) -> list[Finding]:
    assert _FORKED is not None
    catalog, forced, release = _FORKED
    return recipe_pass_findings(catalog, catalog.recipes[index], forced, release)


def catalog_pass_findings(catalog: Catalog, forced: str | None = None, *, release: bool = True,
                          workers: int | None = None) -> list[Finding]:
    """Every recipe's findings in catalog order; ``workers`` > 1 forks that many processes (default: by size)."""
    indices = [i for i, r in enumerate(catalog.recipes) if not r.is_omni]
    n = default_workers(len(indices)) if workers is None else workers
    if n <= 1 or len(indices) < 2:
        with cyclic_gc_paused():
            return [f for i in indices for f in recipe_pass_findings(catalog, catalog.recipes[i], forced, release)]
    global _FORKED
    _FORKED = (catalog, forced, release)
    # the parent's objects (catalog, memo, tables) move to the permanent generation before the fork, so
    # nothing in a worker ever walks them (each walk would copy their pages into the worker)
    gc.freeze()
    try:
        # the largest recipes first, so the last ones to finish are small and both workers end together
        order = sorted(indices, key=lambda i: -_size_estimate(catalog.recipes[i]))
        with multiprocessing.get_context("fork").Pool(min(n, len(indices)), initializer=_worker_started) as pool:
            parts = dict(zip(order, pool.map(_recipe_in_worker, order, chunksize=1), strict=True))
    finally:
        gc.unfreeze()
        _FORKED = None
    return [f for i in indices for f in parts[i]]


def _size_estimate(recipe: Recipe) -> int:
    """How much work a recipe's pass is, roughly: its variants (each one on every listed hardware; the
    count follows the measured time per recipe of the benchmark catalog, correlation 0.88)."""
    return len(as_map(recipe.data.get("variants")))


def validate_pass_checker(forced: str | None = None, *, release: bool = True, workers: int | None = None) -> Checker:
    """The catalog-wide checker ``validate`` runs: dead values and (``release``) the release lint in one pass."""

    def check(catalog: Catalog) -> list[Finding]:
        return catalog_pass_findings(catalog, forced, release=release, workers=workers)

    return check
