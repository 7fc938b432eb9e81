"""The nodes a rendering does not show, and how to get them (issue #27 item 7).

A multi-node TP/PP/DP plan prints every node. A prefill/decode pool over several nodes, or a
Mooncake deployment of several instances, prints one node (or instance) at a time: the one
``prefill_rank`` / ``decode_rank`` / ``kv_instance`` picks. Each front end says which one it
shows and how to see the others - the CLI with its options, the page with its pills.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllm_recipes.select.options import flag
from vllm_recipes.synth.plan import KvStorePlan, PdPlan, Plan


@dataclass(frozen=True)
class OtherNodes:
    """``shown`` (0-based) of ``total`` nodes or instances of ``what``; ``param`` picks another."""

    what: str
    shown: int
    total: int
    param: str

    def text(self) -> str:
        """With :func:`~vllm_recipes.select.options.flag` markers (spell them per reader)."""
        rest = [i for i in range(self.total) if i != self.shown]
        if self.what.startswith("Mooncake"):  # instances are numbered from 1, the option from 0
            pick = (f"{flag(self.param)} {rest[0]} prints instance {rest[0] + 1}" if len(rest) == 1 else
                    f"{flag(self.param)} I (0-{self.total - 1}) prints instance I+1")
            return f"showing {self.what} {self.shown + 1} of {self.total}; {pick}"
        pick = (f"{flag(self.param)} {rest[0]} prints node {rest[0]}" if len(rest) == 1 else
                f"{flag(self.param)} N (0-{self.total - 1}) prints node N")
        return f"showing {self.what} {self.shown} of nodes 0-{self.total - 1}; {pick}"


def other_nodes(plan: Plan) -> list[OtherNodes]:
    """What of ``plan`` is rendered one node (or instance) at a time."""
    out = []
    if isinstance(plan, PdPlan):
        for rp in (plan.prefill, plan.decode):
            total = int(rp.meta.get("nodes") or 1)
            if total > 1:
                out.append(OtherNodes(f"{rp.role} node", int(rp.meta.get("currentNode") or 0), total,
                                      f"{rp.role}_rank"))
    elif isinstance(plan, KvStorePlan) and plan.instances > 1:
        out.append(OtherNodes("Mooncake instance", plan.current_instance, plan.instances, "kv_instance"))
    return out
