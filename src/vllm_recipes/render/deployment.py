"""What a user copies: one titled block per process, in launch order (the CLI's text output and the
website's command tabs). Pip mode prefixes ``export K=V`` lines; docker mode wraps each ``vllm serve``
in ``docker run`` (synthesis.md §9).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from vllm_recipes.jsvalues import js_str
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import EnvValue, Invocation, KvStorePlan, MultiNodePlan, PdPlan, Plan, SinglePlan

from .docker import docker_run_text
from .rendering import env_pairs, meta_for
from .shell import assignment, render_invocation, router_text


@dataclass(frozen=True)
class Block:
    """One copyable process (or file) of a deployment."""

    key: str
    title: str
    text: str
    #: ``serve`` for vLLM processes, else ``router``, ``companion``, ``mooncake``, ``config``
    kind: str
    description: str = ""

    def as_json(self) -> dict[str, str]:
        """The block as ``/api/resolve`` and the page's JSON twin list it under ``commands``."""
        return {"key": self.key, "title": self.title, "kind": self.kind, "description": self.description,
                "text": self.text}


def export_lines(env: tuple[EnvValue, ...]) -> list[str]:
    return [f"export {assignment(e.key, js_str(e.value))}" for e in env]


def serve_text(ctx: Ctx, inv: Invocation, env: tuple[EnvValue, ...], install: str, port: int = 8000) -> str:
    cmd = render_invocation(inv)[0]
    if install == "docker":
        return docker_run_text(cmd, env_pairs(env), meta_for(ctx), port)
    return "\n".join([*export_lines(env), cmd])


def deployment_blocks(ctx: Ctx, plan: Plan, install: str = "pip") -> list[Block]:
    """Every process of ``plan`` in launch order, as copyable text."""
    blocks: list[Block] = []
    if isinstance(plan, SinglePlan):
        for c in plan.companions:
            blocks.append(Block(f"companion-{c.feature}", c.label, c.command, "companion", c.description))
        blocks.append(Block("serve", "vLLM", serve_text(ctx, plan.serve, plan.env, install), "serve"))
    elif isinstance(plan, MultiNodePlan):
        blocks.append(Block("head", "Head", serve_text(ctx, plan.head, plan.env, install), "serve"))
        for i, w in enumerate(plan.workers, start=1):
            blocks.append(Block(f"node-{i}", f"Node {i}", serve_text(ctx, w, plan.env, install), "serve"))
    elif isinstance(plan, PdPlan):
        if plan.mooncake is not None:
            blocks += _mooncake_blocks(plan.mooncake.config, plan.mooncake.config_note, plan.mooncake.master,
                                       plan.mooncake.store)
        for rp, port in ((plan.prefill, 8001), (plan.decode, 8002)):
            blocks.append(Block(rp.role, rp.role.capitalize(), serve_text(ctx, rp.serve, rp.env, install, port),
                                "serve"))
        blocks.append(Block("router", "Router", router_text(plan.router.lines), "router",
                            f"Install: {plan.router.install}"))
    elif isinstance(plan, KvStorePlan):
        blocks += _mooncake_blocks(plan.mooncake_config, plan.mooncake_config_note, plan.master, plan.store)
        inst = f"instance {plan.current_instance + 1} of {plan.instances}"
        desc = f"Install first: {plan.install}" if plan.install else ""
        head = ("vllm-head", f"vLLM {inst}: head") if plan.multi_node_instance else ("vllm", f"vLLM {inst}")
        blocks.append(Block(*head, serve_text(ctx, plan.vllm, plan.env, install), "serve", desc))
        blocks += [Block(f"vllm-node-{i}", f"vLLM {inst}: node {i}", serve_text(ctx, w, plan.env, install), "serve",
                         desc) for i, w in enumerate(plan.workers, start=1)]  # none on a one-node instance
        if plan.router is not None:
            blocks.append(Block("router", "Router", router_text(plan.router.lines), "router",
                                f"Install: {plan.router.install}; listens on port {plan.router.port}"))
    return blocks


def write_file_text(path_var: str, content: str) -> str:
    """A heredoc writing ``content`` to ``$path_var``: unquoted, so the ``$MOONCAKE_*`` placeholders are
    filled from the user's environment; quoted when the text holds anything else a shell would expand."""
    delim = "'EOF'" if any(c in content for c in ("`", "\\", "$(", "${")) else "EOF"
    return f"cat > \"${path_var}\" <<{delim}\n{content}\nEOF"


def _mooncake_blocks(config: Any, note: str, master: dict[str, Any], store: dict[str, Any] | None) -> list[Block]:
    cfg_json = json.dumps(config, indent=2, ensure_ascii=False)
    out = [Block("mooncake-config", "Mooncake config", write_file_text("MOONCAKE_CONFIG_PATH", cfg_json), "config",
                 note),
           Block("mooncake-master", "Mooncake master", str(master.get("command") or ""), "mooncake",
                 str(master.get("description") or ""))]
    if store is not None:
        text = str(store.get("command") or "")
        if store.get("config") is not None:
            store_json = json.dumps(store["config"], indent=2, ensure_ascii=False)
            text = write_file_text("MOONCAKE_STORE_CONFIG_PATH", store_json) + "\n" + text
        out.append(Block("mooncake-store", "Mooncake store", text, "mooncake",
                         " ".join(x for x in (str(store.get("description") or ""), str(store.get("note") or "")) if x)))
    return out


def deployment_text(blocks: list[Block]) -> str:
    """All blocks as one copyable text with ``# Title`` separators (single block: bare)."""
    if len(blocks) == 1:
        return blocks[0].text
    parts = []
    for b in blocks:
        header = f"# {b.title}"
        if b.description:
            header += "\n# " + b.description.replace("\n", "\n# ")
        parts.append(f"{header}\n{b.text}")
    return "\n\n".join(parts)
