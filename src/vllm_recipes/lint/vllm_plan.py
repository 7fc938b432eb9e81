"""The release-aware lint applied to a resolved plan, with findings located at recipe lines.

Every ``vllm serve`` process of the plan is linted on exactly the tokens the
renderers print (``render.shell``'s dedupe), so the lint sees what the user
runs. A finding's token or env entry carries its provenance (``Source``),
which :func:`render.explain.locate` turns into ``file:line``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from vllm_recipes.catalog import format_key_path
from vllm_recipes.jsvalues import as_map, get
from vllm_recipes.render import shell
from vllm_recipes.render.docker import docker_meta
from vllm_recipes.render.explain import locate, plan_processes
from vllm_recipes.select.nodes import node_count_issue, pool_split, strategy_split
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import (
    EnvValue,
    Invocation,
    PdPlan,
    Plan,
    Source,
)

from .vllm_lint import LintTarget, VllmFinding, choose_target, lint_tokens
from .vllm_tables import parse_version

SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class PlanFinding:
    """A lint finding of one process, located at the recipe value that produced it."""

    finding: VllmFinding
    process: str
    #: ``file:line`` (empty for computed values)
    location: str
    file: str
    key_path: tuple[str | int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the recipe value by file and key path (line numbers depend on how the catalog
        was loaded - the incremental API build keeps no positions - so they stay in the text outputs)."""
        f = self.finding
        return {"code": f.code, "severity": f.severity, "subject": f.subject, "message": f.message,
                "process": self.process or None, "file": self.file or None,
                "key_path": format_key_path(self.key_path) if self.file else None}


@dataclass(frozen=True)
class PlanLint:
    """What the page, the API and the CLI show: the checked release and the findings."""

    target: LintTarget
    findings: tuple[PlanFinding, ...]

    @property
    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.finding.severity] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """The ``vllm_lint`` key of ``/api/resolve`` and the static API (an addition to json-api.md)."""
        return {"release": self.target.release, "reason": self.target.reason, "counts": self.counts,
                "findings": [f.to_dict() for f in self.findings]}


#: a selection's variant key, KV choice and image
ReleaseKey = tuple[str, str | None, str | None]


def release_key(ctx: Ctx) -> ReleaseKey:
    """All that :func:`target_for` reads of a selection besides its catalog, recipe and ``forced`` (its
    variant is the recipe's entry of the key): a recipe's releases can be remembered by it."""
    return ctx.sel.variant_key, ctx.sel.kv_offload, image_of(ctx)


def image_of(ctx: Ctx) -> str | None:
    """The image the selection's commands run in: all the release lint reads of the hardware (so hardware
    that differs only in the rest of its docker settings reads alike to it)."""
    return ctx.hw.read(_image, ctx.recipe, ctx.variant)


def _image(recipe: Mapping[str, Any], variant: Mapping[str, Any], profile: Mapping[str, Any],
           hw_id: str) -> str | None:
    return docker_meta(recipe, variant, profile, hw_id).image


def target_for(ctx: Ctx, forced: str | None = None) -> tuple[LintTarget, list[VllmFinding]]:
    """The release the selection's commands run (see :func:`vllm_lint.choose_target`): its image's, and the
    highest ``min_vllm_version`` of the recipe, the variant and a Mooncake deployment."""
    catalog, recipe, variant, kv_offload = ctx.catalog, ctx.recipe, ctx.variant, ctx.sel.kv_offload
    image = image_of(ctx)
    model = recipe.get("model")
    versions = [get(model, "min_vllm_version"), variant.get("min_vllm_version")]
    if kv_offload:
        spec = catalog.strategies.get(kv_offload)
        if get(spec, "deploy_type") == "kv_store_lb":
            versions.append(get(spec, "min_vllm_version"))
    parsed = [(parse_version(str(v)), str(v)) for v in versions if v]
    known = [(p, v) for p, v in parsed if p is not None]
    min_version = max(known)[1] if known else None
    ext = as_map(get(model, "vllm_extensions"))
    ext_flags = tuple(str(f) for f in ext.get("flags") or ())
    ext_env = tuple(str(e) for e in ext.get("env") or ())
    target, notes = _target(image, min_version, forced, ext_flags, ext_env)
    return target, list(notes)


@lru_cache(maxsize=1024)
def _target(image: str | None, min_version: str | None, forced: str | None, flags: tuple[str, ...],
            env: tuple[str, ...]) -> tuple[LintTarget, tuple[VllmFinding, ...]]:
    """:func:`choose_target`, remembered (bounded): a pure function of its arguments, and ``validate``
    asks it for thousands of selections of a few images."""
    target, notes = choose_target(image, min_version, forced=forced, declared_flags=flags, declared_env=env)
    return target, tuple(notes)


def process_findings(inv: Invocation, env: tuple[EnvValue, ...], target: LintTarget
                     ) -> list[tuple[VllmFinding, Source | None, tuple[str | int, ...]]]:
    """Each finding of one ``vllm serve`` process with the source and key path of its token or env entry."""
    out: list[tuple[VllmFinding, Source | None, tuple[str | int, ...]]] = []
    # (tuple of a list, not of a generator: validate calls this per process, and the list form is faster)
    values = tuple([a.value for a in inv.args])
    names = tuple([e.key for e in env])
    # (lint_tokens reports the tokens, then the env: an env name's findings read neither the tokens nor the others)
    for f in (*_lint_process(values, inv.drop_flags, target), *_lint_env(names, target)):
        if f.token_index is not None:
            arg = inv.args[f.token_index]
            out.append((f, arg.source, arg.key_path))
        elif f.env_key is not None:
            src = next(e.source for e in env if e.key == f.env_key)
            out.append((f, src, src.key_path))
        else:
            out.append((f, None, ()))
    return out


@lru_cache(maxsize=4096)
def _lint_process(values: tuple[str, ...], drop_flags: tuple[str, ...], target: LintTarget
                  ) -> tuple[VllmFinding, ...]:
    """:func:`lint_tokens` of the tokens the process runs (``render.shell``'s dedupe of ``values``), each
    ``token_index`` an index into ``values``. Remembered (bounded): ``validate`` meets the same lists in
    thousands of selections, and a pure function of its arguments."""
    kept = shell.dedupe_positions(values, drop_flags)[0]
    return tuple(f if f.token_index is None else f._replace(token_index=kept[f.token_index])
                 for f in lint_tokens([values[i] for i in kept], (), target))


@lru_cache(maxsize=1024)
def _lint_env(names: tuple[str, ...], target: LintTarget) -> tuple[VllmFinding, ...]:
    """:func:`lint_tokens` of a process's env names alone. Remembered (bounded): a catalog's processes have
    a few hundred distinct envs."""
    return tuple(lint_tokens((), names, target))


def _located(ctx: Ctx, title: str, inv: Invocation, env: tuple[EnvValue, ...], target: LintTarget,
             locate_findings: bool) -> list[PlanFinding]:
    catalog = ctx.catalog
    return [PlanFinding(f, title, locate(catalog, src, kp) if src is not None and locate_findings else "",
                        src.file if src is not None else "", kp)
            for f, src, kp in process_findings(inv, env, target)]


def _deduped(findings: Iterable[PlanFinding], out: list[PlanFinding]) -> list[PlanFinding]:
    """``out`` plus each distinct finding once (by code, message and recipe value), errors first."""
    seen: set[tuple[str, str, str, tuple[str | int, ...]]] = set()
    for pf in findings:
        dedupe = (pf.finding.code, pf.finding.message, pf.file, pf.key_path)
        if dedupe not in seen:
            seen.add(dedupe)
            out.append(pf)
    out.sort(key=lambda p: SEVERITY_RANK[p.finding.severity])
    return out


def node_findings(ctx: Ctx, plan: Plan) -> list[PlanFinding]:
    """Node counts that do not split the model evenly (``select/nodes.py``, the rule the selection refuses by)."""
    pools: list[tuple[str, Any, Any]] = []
    if isinstance(plan, PdPlan):
        pools = [(rp.role, pool_split(rp.meta.get("parallelism")), rp.meta.get("nodes")) for rp in (plan.prefill, plan.decode)]
    elif ctx.deploy_type == "multi_node":
        pools = [("", strategy_split(ctx.strategy), ctx.sel.node_count)]
    out = []
    for role, split, nodes in pools:
        issue = node_count_issue(ctx.recipe, split, ctx.gpu_count, int(nodes or 1), role)
        if issue is not None:
            key = ("model", "architecture_facts", "num_attention_heads" if issue.split == "tensor-parallel"
                   else "num_experts") if issue.exact else ()
            found = VllmFinding("node-count", issue.severity, f"{issue.nodes} nodes", issue.text())  # type: ignore[arg-type]
            out.append(PlanFinding(found, role.capitalize(), "", ctx.recipe_file if issue.exact else "", key))
    return out


def lint_plan(ctx: Ctx, plan: Plan, *, forced: str | None = None, locate_findings: bool = True) -> PlanLint:
    """The findings of every process of a resolved selection (deduplicated across processes).

    ``locate_findings=False`` leaves ``location`` empty (``validate`` locates each distinct finding once).
    """
    target, notes = target_for(ctx, forced)
    found = (pf for title, inv, env in plan_processes(plan, env_on_workers=True) if inv.binary == "vllm serve"
             for pf in _located(ctx, title, inv, env, target, locate_findings))
    return PlanLint(target, tuple(_deduped(found, [*(PlanFinding(n, "", "", "", ()) for n in notes),
                                                   *node_findings(ctx, plan)])))


def process_lints(ctx: Ctx, plan: Plan, *, forced: str | None = None) -> dict[str, PlanLint]:
    """Per process title, its located findings and the notes on the image (``explain --json``)."""
    target, notes = target_for(ctx, forced)
    return {title: PlanLint(target, tuple(_deduped(_located(ctx, title, inv, env, target, True),
                                                   [PlanFinding(n, "", "", "", ()) for n in notes])))
            for title, inv, env in plan_processes(plan, env_on_workers=True) if inv.binary == "vllm serve"}


def with_vllm_lint(obj: dict[str, Any], ctx: Ctx, plan: Plan, forced: str | None = None) -> dict[str, Any]:
    """A rendering object plus its ``vllm_lint`` key (the CLI's JSON, ``/api/resolve``, the static API).

    The JSON form names files and key paths, not lines, so findings are not located.
    """
    obj["vllm_lint"] = lint_plan(ctx, plan, forced=forced, locate_findings=False).to_dict()
    return obj


def with_process_lint(sections: list[dict[str, Any]], lints: Mapping[str, PlanLint]) -> list[dict[str, Any]]:
    """``explain --json``'s sections, each with the ``vllm_lint`` of its process (the list shape is kept).

    The findings carry their ``location`` (``file:line``) as the explain entries do.
    """
    for section in sections:
        lint = lints.get(section["process"])
        if lint is not None:
            obj = lint.to_dict()
            obj["findings"] = [{**d, "location": p.location or None}
                               for p, d in zip(lint.findings, obj["findings"], strict=True)]
            section["vllm_lint"] = obj
    return sections


def findings_text(lint: PlanLint) -> Iterable[str]:
    """Lines for a terminal: the badge, then ``severity code location: message``."""
    c = lint.counts
    yield (f"# checked against vLLM {lint.target.release} ({lint.target.reason}): "
           f"{c['error']} errors, {c['warning']} warnings, {c['info']} notes")
    for p in lint.findings:
        f = p.finding
        where = f" {p.location}" if p.location else ""
        yield f"#   {f.severity} [{f.code}]{where}: {f.message}"
