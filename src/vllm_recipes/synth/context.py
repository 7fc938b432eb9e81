"""Values computed once per resolve (synthesis.md §5.0)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from operator import attrgetter
from typing import Any, Generic, TypeVar

from vllm_recipes.catalog import Catalog
from vllm_recipes.jsvalues import (
    as_map,
    first_present,
    first_truthy,
    get,
    is_map,
    is_number,
    truthy,
)
from vllm_recipes.select.defaults import resolve_single_node_tp, variant_entry
from vllm_recipes.select.gates import (
    kv_offload_allowed_for_strategy,
    kv_offload_brand_supported,
    kv_offload_supported_for_recipe,
    node_gpus,
)
from vllm_recipes.select.lookups import gen_or_nvidia_with_key, keyed_with_key
from vllm_recipes.select.selection import FeatureModes, Selection

T = TypeVar("T")
R = TypeVar("R")
#: one recorded read: the function, its arguments, whether it reads the modes, and its value
Read = tuple[Callable[..., Any], tuple[Any, ...], bool, Any]


class Hardware:
    """The selection's hardware (profile and id) and feature modes, read through :meth:`read` (with
    ``modes=True`` for the modes), which records each read.

    ``validate`` resolves thousands of selections that differ only in their hardware or modes. The resolve
    sees them only through these reads, so when each read of an earlier resolve gives the same value for
    another selection (:meth:`reads_alike`), that resolve's plan and findings are the other selection's
    too: ``validate`` skips it, exactly (no rule is restated to decide it).
    """

    __slots__ = ("_known", "_profile", "id", "modes", "reads")

    def __init__(self, hw_id: str, profile: Mapping[str, Any], modes: FeatureModes = (),
                 known: dict[tuple[Any, ...], Read] | None = None) -> None:
        self.id = hw_id
        self._profile = profile
        self.modes = modes
        #: each distinct read once, by the function and the identity of its arguments (which it keeps alive),
        #: with whether it reads the modes
        self.reads: dict[tuple[Any, ...], Read] = {}
        #: where read values are found and kept: these reads, or (``known``) those of other resolves on the
        #: same hardware and modes, so that a value is computed once for them all
        self._known = self.reads if known is None else known

    @classmethod
    def of(cls, catalog: Catalog, hw_id: str, modes: FeatureModes = ()) -> Hardware:
        return cls(hw_id, as_map(catalog.hardware_profiles.get(hw_id)), modes)

    def fresh(self) -> Hardware:
        """The same hardware and modes, recording its own reads (none yet), whose values are found in (and
        kept to) these reads."""
        return Hardware(self.id, self._profile, self.modes, known=self.reads)

    def read(self, fn: Callable[..., T], *args: Any, modes: bool = False) -> T:
        """``fn(*args, profile, hw_id)``, recorded (``fn`` must be a pure function of its arguments);
        ``modes``: ``fn(*args, feature_modes, profile, hw_id)``."""
        key = (fn, *map(id, args))
        got = self.reads.get(key)
        if got is None:
            got = self._known.get(key)
            if got is None:
                value = fn(*args, self.modes, self._profile, self.id) if modes else fn(*args, self._profile, self.id)
                got = self._known[key] = (fn, args, modes, value)
            self.reads[key] = got
        return got[3]

    def reads_alike(self, other: Hardware) -> bool:
        """Whether every read recorded here gives the same value on ``other`` (read, so recorded, there)."""
        theirs = other.reads
        try:
            for key, (fn, args, modes, value) in self.reads.items():
                got = theirs.get(key)  # (mostly there: ``other`` is probed for many selections)
                if not _same(other.read(fn, *args, modes=modes) if got is None else got[3], value):
                    return False
        except Exception:  # a read that fails on the other hardware is not alike
            return False
        return True

    @property
    def profile(self) -> Mapping[str, Any]:
        """The whole profile (recorded as such: no other profile reads alike)."""
        return self.read(_whole_profile)

    # The lookups below give None for anything but a mapping, on any hardware: only a mapping is a read.

    def exact(self, m: Any) -> Any:
        """``m[hw_id]`` (synthesis.md §2.4)."""
        return self.read(_exact, m) if is_map(m) else None

    def gen_or_nvidia(self, m: Any) -> tuple[str, Any] | None:
        return self.read(_gen_or_nvidia, m) if is_map(m) else None

    def keyed(self, m: Any) -> tuple[str | int, Any] | None:
        return self.read(keyed_with_key, m) if is_map(m) else None


#: every field of a selection but what :class:`Hardware` reads (its hardware and feature modes)
_LESS_HARDWARE = attrgetter(*(f.name for f in fields(Selection) if f.name not in ("hw_id", "feature_modes")))


def less_hardware(sel: Selection) -> str:
    """The key of :class:`AlikeResolves`: everything of ``sel`` but what :class:`Hardware` reads (as text:
    PD requests are dicts)."""
    return repr(_LESS_HARDWARE(sel))


class AlikeResolves(Generic[R]):
    """Earlier resolves' results, by the selection less its hardware and feature modes (:func:`less_hardware`),
    with the hardware reads of each: a selection whose hardware and modes read like an earlier one's
    (:meth:`Hardware.reads_alike`) has that one's result (``validate`` skips it, ``build-api`` reuses it)."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._done: dict[Hashable, list[tuple[Hardware, R]]] = {}
        #: each hardware and modes, with the earlier resolves' reads read again on it
        self._probes: dict[tuple[str, FeatureModes], Hardware] = {}

    def _probe(self, hw_id: str, modes: FeatureModes) -> Hardware:
        return self._probes.get((hw_id, modes)) or self._probes.setdefault(
            (hw_id, modes), Hardware.of(self._catalog, hw_id, modes))

    def hardware(self, hw_id: str, modes: FeatureModes = ()) -> Hardware:
        """A fresh :class:`Hardware` for a resolve on ``hw_id`` and ``modes``: its reads are its own, their
        values those of the probe (a per-hardware fact is computed once for every resolve on it)."""
        return self._probe(hw_id, modes).fresh()

    def find(self, rest: Hashable, hw_id: str, modes: FeatureModes = ()) -> tuple[R] | None:
        """``(result,)`` of an earlier resolve of ``rest`` that reads alike on ``hw_id`` and ``modes``, else None."""
        probe = self._probe(hw_id, modes)
        for reads, result in self._done.get(rest, ()):
            if reads.reads_alike(probe):
                return (result,)
        return None

    def add(self, rest: Hashable, reads: Hardware, result: R) -> None:
        self._done.setdefault(rest, []).append((reads, result))


def _whole_profile(profile: Mapping[str, Any], hw_id: str) -> Mapping[str, Any]:
    return profile


def _exact(m: Any, profile: Mapping[str, Any], hw_id: str) -> Any:
    return m.get(hw_id) if is_map(m) and hw_id else None


def _gen_or_nvidia(m: Any, profile: Mapping[str, Any], hw_id: str) -> tuple[str, Any] | None:
    return gen_or_nvidia_with_key(m, profile)


def _same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same value to any reader: equal scalars of one type, sequences or
    dataclasses of such, or the very same object (a mapping of the catalog)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, str | int):  # (bool is an int)
        return a == b
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(map(_same, a, b))
    return is_dataclass(a) and all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)


@dataclass(frozen=True)
class Ctx:
    """Everything a layer may read; built once per resolve."""

    catalog: Catalog
    recipe: Mapping[str, Any]
    recipe_file: str
    sel: Selection
    variant: Mapping[str, Any]
    #: the variants key whose data is used (given key, else ``default``); for key paths
    variant_data_key: str
    strategy: Mapping[str, Any]
    strategy_file: str
    deploy_type: str
    #: the hardware, read through :class:`Hardware` (``hw_id`` and ``profile`` read all of it)
    hw: Hardware
    model_id: str
    so: Mapping[str, Any] | None
    parallel_flag: str
    is_multi: bool
    is_pd: bool
    is_pd_multi: bool
    kv_store: Mapping[str, Any] | None
    kv_store_file: str
    kv_composing: bool
    kv_opt: Mapping[str, Any] | None
    kv_instance_count: int
    kv_current: int
    mp_master_addr: str
    frontend: str
    frontend_env: Mapping[str, Any]

    @property
    def hw_id(self) -> str:
        return self.hw.read(_hw_id)

    @property
    def profile(self) -> Mapping[str, Any]:
        return self.hw.profile

    # Read when used, so that a resolve that does not use them reads alike on hardware where they differ.

    @property
    def gpu_count(self) -> Any:
        return self.hw.read(_gpu_count)

    @property
    def total_gpus(self) -> Any:
        return self.gpu_count * max(1, self.node_count)

    @property
    def single_node_tp(self) -> Any:
        return self.hw.read(_single_node_tp, self.recipe, self.variant, self.sel.strategy)

    @property
    def strategy_name(self) -> str:
        return self.sel.strategy

    @property
    def node_count(self) -> int:
        return self.sel.node_count

    @property
    def features(self) -> Mapping[str, Any]:
        return as_map(self.recipe.get("features"))


def recipe_frontend(recipe: Mapping[str, Any]) -> str:
    """extensions §2.1: ``model.default_frontend``, absent means ``python``."""
    fe = get(recipe.get("model"), "default_frontend")
    return fe if isinstance(fe, str) and fe else "python"


def build_context(catalog: Catalog, recipe: Mapping[str, Any], recipe_file: str, sel: Selection,
                  hw: Hardware | None = None) -> Ctx:
    """The context of one selection (synthesis.md §5.0); ``hw``: its hardware, when given."""
    vkey, variant = variant_entry(recipe, sel.variant_key)
    strategies = catalog.strategies
    strategy = as_map(strategies.get(sel.strategy))
    raw_deploy_type = strategy.get("deploy_type")
    deploy_type = str(raw_deploy_type) if truthy(raw_deploy_type) else "single_node"
    so = get(recipe.get("strategy_overrides"), sel.strategy)
    hw = hw or Hardware.of(catalog, sel.hw_id, sel.feature_modes)

    kv_store = None
    kv_offload = sel.kv_offload
    if kv_offload and get(strategies.get(kv_offload), "deploy_type") == "kv_store_lb":
        kv_store = strategies[kv_offload]
    kv_composing = kv_store is not None and raw_deploy_type != "pd_cluster"
    kv_opt = None
    if kv_offload:
        opt = catalog.kv_offload_options.get(kv_offload)
        if (is_map(opt) and kv_offload_allowed_for_strategy(opt, sel.strategy, strategy)
                and kv_offload_supported_for_recipe(opt, kv_offload, recipe)
                and hw.read(_brand_supported, opt)):
            kv_opt = opt
    kv_count, kv_current = _kv_counts(kv_store, sel.kv_instances)

    frontend = sel.frontend or recipe_frontend(recipe)
    model_id = first_truthy(variant.get("model_id"), get(recipe.get("model"), "model_id"), "unknown")
    node_count = sel.node_count
    return Ctx(
        catalog=catalog,
        recipe=recipe,
        recipe_file=recipe_file,
        sel=sel,
        variant=variant,
        variant_data_key=vkey,
        strategy=strategy,
        strategy_file=catalog.strategy_files.get(sel.strategy, f"strategies/{sel.strategy}.yaml"),
        deploy_type=deploy_type,
        hw=hw,
        model_id=model_id if isinstance(model_id, str) else str(model_id),
        so=so if is_map(so) else None,
        parallel_flag=str(first_truthy(strategy.get("parallel_flag"), "--tensor-parallel-size")),
        is_multi=raw_deploy_type == "multi_node" and node_count > 1,
        is_pd=raw_deploy_type == "pd_cluster",
        is_pd_multi=raw_deploy_type == "pd_cluster" and node_count > 1,
        kv_store=kv_store,
        kv_store_file=catalog.strategy_files.get(kv_offload or "", f"kv_store/{kv_offload}.yaml"),
        kv_composing=kv_composing,
        kv_opt=kv_opt,
        kv_instance_count=kv_count,
        kv_current=kv_current,
        mp_master_addr=f"$VLLM_INSTANCE_{kv_current + 1}" if kv_composing and kv_count > 1 else "$HEAD_IP",
        frontend=frontend,
        frontend_env=as_map(get(catalog.frontends.get(frontend), "env")),
    )


def _hw_id(profile: Mapping[str, Any], hw_id: str) -> str:
    return hw_id


def _gpu_count(profile: Mapping[str, Any], hw_id: str) -> Any:
    """GPUs on one node by :func:`node_gpus`, except that no count at all is one GPU (an unknown hardware id,
    which every front end refuses: the engine's tests render it as a single GPU)."""
    count = profile.get("gpu_count")
    return 1 if count is None else node_gpus(count)


def _brand_supported(opt: Mapping[str, Any], profile: Mapping[str, Any], hw_id: str) -> bool:
    return kv_offload_brand_supported(opt, profile)


def _single_node_tp(recipe: Mapping[str, Any], variant: Mapping[str, Any], strategy: str,
                    profile: Mapping[str, Any], hw_id: str) -> Any:
    return resolve_single_node_tp(recipe, variant, profile, strategy, hw_id)


def _kv_counts(kv_store: Mapping[str, Any] | None, kv_instances: Any) -> tuple[Any, int]:
    """Mooncake instance count and current instance for the selection's ``kv_instances``."""
    obj = kv_instances if is_map(kv_instances) else {"count": kv_instances}
    count = obj.get("count")
    if is_number(count) and count >= 1 and math.isfinite(count):
        kv_count = math.floor(count)
    elif kv_store is not None and truthy(kv_store.get("default_instances")):
        kv_count = kv_store["default_instances"]
    else:
        kv_count = 2
    cur = first_present(obj.get("current"), 0)
    cur = cur if is_number(cur) and math.isfinite(cur) else 0
    return kv_count, int(max(0, min(kv_count - 1, cur)))
