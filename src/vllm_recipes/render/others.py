"""The nodes a rendering does not show, and how to get them (issue #27 item 7): a PD pool over several nodes
or a Mooncake deployment of several instances prints the one node (instance) that ``prefill_rank`` /
``decode_rank`` / ``kv_instance`` picks."""

from __future__ import annotations

from vllm_recipes.select.options import flag
from vllm_recipes.synth.plan import KvStorePlan, PdPlan, Plan


def other_nodes(plan: Plan) -> list[str]:
    """Which node (or instance) of ``plan`` is shown and how to print another, with
    :func:`~vllm_recipes.select.options.flag` markers (spell them per reader)."""
    out = []
    if isinstance(plan, PdPlan):
        for rp in (plan.prefill, plan.decode):
            total, shown = int(rp.meta.get("nodes") or 1), int(rp.meta.get("currentNode") or 0)
            rest = [i for i in range(total) if i != shown]
            opt = flag(f"{rp.role}_rank")
            pick = (f"{opt} {rest[0]} prints node {rest[0]}" if len(rest) == 1 else
                    f"{opt} N (0-{total - 1}) prints node N")
            if total > 1:
                out.append(f"showing {rp.role} node {shown} of nodes 0-{total - 1}; {pick}")
    elif isinstance(plan, KvStorePlan) and plan.instances > 1:
        total, shown = plan.instances, plan.current_instance
        rest = [i for i in range(total) if i != shown]
        opt = flag("kv_instance")  # instances are numbered from 1, the option from 0
        pick = (f"{opt} {rest[0]} prints instance {rest[0] + 1}" if len(rest) == 1 else
                f"{opt} I (0-{total - 1}) prints instance I+1")
        out.append(f"showing Mooncake instance {shown + 1} of {total}; {pick}")
    return out
