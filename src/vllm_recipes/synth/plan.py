"""The synthesized plan: what to run, with every token's provenance.

A :class:`Plan` is the output of the synthesize stage and the input of the
render stage. Argument lists here are *raw* (before the pre-filter and
last-wins dedupe of synthesis.md §7); rendering decides the final text while
keeping what each surviving token shadowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

KeyPath = tuple[str | int, ...]

# Source, Arg and EnvValue are created for every token of every resolve: they are
# immutable NamedTuples because those construct ~4x faster than frozen dataclasses.


class Source(NamedTuple):
    """Where a value comes from: a named layer and a key path in a file."""

    layer: str
    file: str = ""
    key_path: KeyPath = ()
    note: str = ""


class Arg(NamedTuple):
    """One argument token and where it came from (``position``: its index in the source list)."""

    value: str
    source: Source
    position: int | None = None

    @property
    def key_path(self) -> KeyPath:
        return self.source.key_path if self.position is None else (*self.source.key_path, self.position)


class EnvValue(NamedTuple):
    """A final env entry, plus the values it replaced (oldest first)."""

    key: str
    value: Any
    source: Source
    shadowed: tuple[tuple[Any, Source], ...] = ()


@dataclass(frozen=True, slots=True)
class Invocation:
    """One ``vllm serve`` process: model id and raw argument tokens."""

    model_id: str
    args: tuple[Arg, ...]
    binary: str = "vllm serve"
    #: flags removed (with their values) after dedupe, e.g. parsers moved to an SMG gateway
    drop_flags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Companion:
    feature: str
    label: str
    description: str
    command: str


@dataclass(frozen=True, slots=True)
class RouterPlan:
    """A router process as its lines (first line unindented, others flags)."""

    lines: tuple[str, ...]
    install: str = "uv pip install vllm-router"
    port: int | None = None
    kind: str = "vllm-router"


@dataclass(frozen=True)
class SinglePlan:
    deploy_type: str
    serve: Invocation
    env: tuple[EnvValue, ...]
    companions: tuple[Companion, ...] = ()


@dataclass(frozen=True)
class MultiNodePlan:
    node_count: int
    head: Invocation
    workers: tuple[Invocation, ...]
    env: tuple[EnvValue, ...]
    deploy_type: str = "multi_node"


@dataclass(frozen=True)
class PdRolePlan:
    role: str
    serve: Invocation
    env: tuple[EnvValue, ...]
    #: nodes, parallelism, tp, dpLocal, dpSize, poolGpus, currentNode, startRank (synthesis §8.3)
    meta: dict[str, Any]


@dataclass(frozen=True)
class MooncakeBlock:
    master: dict[str, Any]
    store: dict[str, Any] | None
    config: Any
    config_note: str
    install: str | None


@dataclass(frozen=True)
class PdPlan:
    node_count: int
    prefill: PdRolePlan
    decode: PdRolePlan
    router: RouterPlan
    router_config: Any
    mooncake: MooncakeBlock | None = None
    deploy_type: str = "pd_cluster"


@dataclass(frozen=True)
class KvStorePlan:
    serving_strategy: str
    node_count: int
    instances: int
    current_instance: int
    master: dict[str, Any]
    store: dict[str, Any] | None
    vllm: Invocation
    workers: tuple[Invocation, ...]
    multi_node_instance: bool
    env: tuple[EnvValue, ...]
    install: str | None
    router: RouterPlan | None
    mooncake_config: Any
    mooncake_config_note: str
    deploy_type: str = "kv_store_lb"


Plan = SinglePlan | MultiNodePlan | PdPlan | KvStorePlan
