"""Which node counts split a model evenly (issue #27 item 8).

A multi-node strategy multiplies one parallel size by the node count (5 H100 nodes of
``multi_node_tp``: TP 40). vLLM refuses a tensor-parallel size that does not divide the attention
heads, and splits experts unevenly when their count is not a multiple of the expert-parallel size.
With the head count from ``model.architecture_facts`` the rule is exact (refused); otherwise the
power-of-two rule gives a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_recipes.jsvalues import as_list, as_map, is_number

from .gates import MAX_NODES


@dataclass(frozen=True)
class Split:
    """What grows with the node count: tensor parallelism (heads) and/or expert parallelism (experts)."""

    tensor: bool
    experts: bool


#: what each PD pool mode (``prefill_mode``/``decode_mode``) splits
_POOL_SPLITS = {"tp": Split(True, False), "tep": Split(True, True), "dep": Split(False, True)}


@dataclass(frozen=True)
class NodeCountIssue:
    """A node count that does not split the model evenly, and the counts that do."""

    nodes: int
    size: int
    #: ``tensor-parallel`` or ``expert-parallel``
    split: str
    reason: str
    valid: tuple[int, ...]
    #: ``True``: from the model's architecture (vLLM refuses it); ``False``: the power-of-two rule
    exact: bool
    role: str = ""

    @property
    def severity(self) -> str:
        return "error" if self.exact and self.split == "tensor-parallel" else "warning"

    def problem(self) -> str:
        who = f"{self.role} pool: " if self.role else ""
        return f"{who}{self.nodes} nodes give {self.split} size {self.size}, which {self.reason}"

    def text(self) -> str:
        counts = ", ".join(map(str, self.valid)) or "none up to " + str(MAX_NODES)
        return f"{self.problem()}; node counts that split evenly: {counts}"


def strategy_split(strategy: Mapping[str, Any]) -> Split | None:
    """The split a multi-node strategy scales with its nodes (``None``: TP+PP, TP+DP, PD pools, single node)."""
    if strategy.get("deploy_type") != "multi_node" or strategy.get("parallelism") in ("tp_pp", "tp_dp"):
        return None
    experts = "--enable-expert-parallel" in as_list(strategy.get("vllm_args"))
    flag = strategy.get("parallel_flag")
    if flag == "--tensor-parallel-size":
        return Split(True, experts)
    if flag == "--data-parallel-size" and experts:
        return Split(False, True)
    return None


def pool_split(mode: Any) -> Split | None:
    return _POOL_SPLITS.get(str(mode))


def _count(facts: Mapping[str, Any], key: str) -> int | None:
    v = facts.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def node_count_issue(recipe: Mapping[str, Any], split: Split | None, gpus_per_node: Any, nodes: int,
                     role: str = "") -> NodeCountIssue | None:
    """The issue of ``nodes`` nodes of ``gpus_per_node`` GPUs for ``split``, ``None`` when it divides evenly."""
    if split is None or nodes < 2 or not is_number(gpus_per_node) or gpus_per_node < 1:
        return None
    gpn = int(gpus_per_node)
    facts = as_map(as_map(recipe.get("model")).get("architecture_facts"))
    checks: list[tuple[str, int | None, str]] = []
    if split.tensor:
        checks.append(("tensor-parallel", _count(facts, "num_attention_heads"), "attention heads"))
    if split.experts:
        checks.append(("expert-parallel", _count(facts, "num_experts"), "experts"))
    for name, known, noun in checks:
        def ok(n: int, known: int | None = known) -> bool:
            gpus = n * gpn  # >= 2
            return known % gpus == 0 if known else gpus & (gpus - 1) == 0  # (a power of two)

        if ok(nodes):
            continue
        size = nodes * gpn
        reason = (f"does not divide the model's {known} {noun}" if known
                  else f"is not a power of two (the model's {noun} are not known; they almost always are "
                       "a power of two times a small factor)")
        valid = tuple(n for n in range(2, MAX_NODES + 1) if ok(n))
        return NodeCountIssue(nodes, size, name, reason, valid, exact=known is not None, role=role)
    return None
