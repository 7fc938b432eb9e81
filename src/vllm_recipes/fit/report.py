"""Will it fit? One selection's memory plan, from the same resolved plan the command is rendered from.

:func:`fit_state` is the pure entry point (CLI, web, API and MCP). Custom hardware is a profile added to
a copy of the catalog, so the command is still synthesized by the normal pipeline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vllm_recipes.catalog import Catalog, FrozenDict, Recipe
from vllm_recipes.jsvalues import as_map
from vllm_recipes.select.defaults import recommend_strategy
from vllm_recipes.select.selection import Selection
from vllm_recipes.select.state import PageState, candidate_strategies
from vllm_recipes.synth.context import Ctx
from vllm_recipes.synth.plan import Plan
from vllm_recipes.synth.resolve import resolve

from .architecture import Architecture, estimated_checkpoint_gib, recipe_architecture
from .checks import architecture_checks, recipe_context_length
from .hardware import GpuTarget, profile_target
from .memory import GIB, ProcessFit, ProcessShape, fit_process
from .shape import plan_shapes
from .vllm_rules import parse_release, rules_for

if TYPE_CHECKING:
    from .checkpoints import CheckpointInfo

CUSTOM_ID = "custom"


#: exit codes of ``vllm-recipes fit`` per verdict (2 is bad input, as for every command)
EXIT_CODES = {"starts": 0, "does not start": 1, "unknown": 3}


@dataclass(frozen=True)
class FitReport:
    hf_id: str
    variant: str
    strategy: str
    node_count: int
    hardware: GpuTarget
    architecture: Architecture | None
    checkpoint_gib: float | None
    weights_source: str
    processes: tuple[ProcessFit, ...] = ()
    #: architecture checks the command fails (TP vs heads, context)
    checks: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: what the planner would need to answer ("architecture", "checkpoint size"): the verdict is "unknown"
    missing: tuple[str, ...] = ()
    #: the vLLM release whose memory rules were applied
    release: str = ""

    @property
    def starts(self) -> bool:
        return bool(self.processes) and not self.errors and not self.checks and all(p.starts for p in self.processes)

    @property
    def verdict(self) -> str:
        """``starts`` / ``does not start`` / ``unknown`` (the planner lacks a fact; see :attr:`missing`)."""
        if self.missing:
            return "unknown"
        return "starts" if self.starts else "does not start"

    @property
    def kv_tokens(self) -> int:
        return min((p.kv_tokens for p in self.processes), default=0)


# --- custom hardware --------------------------------------------------------------------------

def template_id(catalog: Catalog, target: GpuTarget, fallback: str) -> str:
    """The catalog profile a custom target is built on: its own, else one of its brand (``fallback`` first)."""
    profiles = catalog.hardware_profiles
    if target.profile_id in profiles:
        return target.profile_id  # type: ignore[return-value]
    same_brand = [k for k, p in profiles.items() if as_map(p).get("brand") == target.brand]
    return fallback if fallback in same_brand else next(iter(same_brand), fallback)


def with_custom_profile(catalog: Catalog, target: GpuTarget, template: str) -> Catalog:
    """A copy of ``catalog`` with a ``custom`` profile: the template's family, the target's GPUs."""
    base = dict(catalog.hardware_profiles.get(template) or {})
    base.pop("restricted", None)
    base.update(display_name=target.label, gpu_count=target.gpus_per_node,
                vram_gb=target.gpu_gib * target.gpus_per_node, scalable=False, custom=True)
    profiles = FrozenDict({**catalog.hardware_profiles, CUSTOM_ID: FrozenDict(base)})
    taxonomy = FrozenDict({**catalog.taxonomy, "hardware_profiles": profiles})
    return dataclasses.replace(catalog, taxonomy=taxonomy)


def retarget(catalog: Catalog, recipe: Recipe, sel: Selection, strategy_given: bool) -> Selection:
    """Move a selection to the ``custom`` profile of ``catalog`` (one node; a single-node strategy by default)."""
    strategy = sel.strategy
    if not strategy_given and as_map(catalog.strategies.get(strategy)).get("deploy_type") != "single_node":
        cands = candidate_strategies(catalog, recipe, CUSTOM_ID, 1)
        rec = recommend_strategy(recipe.data, 1)
        strategy = rec if rec in cands else (cands[0] if cands else strategy)
    single = as_map(catalog.strategies.get(strategy)).get("deploy_type") == "single_node"
    return dataclasses.replace(sel, hw_id=CUSTOM_ID, strategy=strategy,
                               node_count=1 if single else sel.node_count,
                               pd_nodes=None if strategy != "pd_cluster" else sel.pd_nodes)


# --- the fit ----------------------------------------------------------------------------------

def checkpoint_size(arch: Architecture | None, recipe: Recipe, variant_key: str,
                    cached_gib: float | None = None, *, override_gib: float | None = None,
                    info: CheckpointInfo | None = None) -> tuple[float | None, str]:
    """Checkpoint GiB of a variant and where the figure comes from, best source first; the parameter-count
    estimate is the last resort."""
    if override_gib is not None:
        return override_gib, "--weights-gib"
    if arch is not None and arch.checkpoint_for(variant_key) is not None:
        return arch.checkpoint_for(variant_key), "recipe architecture_facts.checkpoint_gib"
    if info is not None:
        return info.gib, info.describe()
    if cached_gib is not None:
        return cached_gib, "safetensors index in the Hugging Face cache"
    variant = recipe.variants.get(variant_key) or {}
    est = estimated_checkpoint_gib(recipe.model.get("parameter_count"), variant.get("precision"), arch)
    if est is not None:
        return est, (f"estimate: parameter_count {recipe.model.get('parameter_count')} at "
                     f"{variant.get('precision') or 'bf16'} precision")
    return None, "unknown"


def checkpoint_repo(recipe: Recipe, variant_key: str) -> str:
    """The Hub repository a variant's weights come from (its own ``model_id``, else the recipe's)."""
    variant = recipe.variants.get(variant_key) or {}
    return str(variant.get("model_id") or recipe.model_repo)


def draft_weights_gib(arch: Architecture, shape: ProcessShape) -> float:
    """Weights of a separate EAGLE-style draft head: one decoder layer (about 12 x hidden^2 parameters) at
    the model dtype, plus EAGLE-3's fusion of three hidden states. An estimate; MTP layers ship in the checkpoint."""
    m = shape.spec_method.lower()
    if not m.startswith("eagle") or not arch.hidden_size:
        return 0.0
    h = arch.hidden_size
    params = 12 * h * h * max(1, shape.draft_layers) + (3 * h * h if m == "eagle3" else 0)
    return params * arch.dtype_bytes / GIB


def fit_plan(recipe: Recipe, ctx: Ctx, plan: Plan, target: GpuTarget, arch: Architecture | None,
             *, context: int | None = None, cached_checkpoint_gib: float | None = None,
             release: str | None = None, weights_gib: float | None = None,
             checkpoint: CheckpointInfo | None = None) -> FitReport:
    """The fit of an already resolved plan on ``target`` (pure); ``release``: the vLLM release whose memory
    rules apply (default: the newest read); ``checkpoint``: the variant's safetensors summary when known."""
    sel = ctx.sel
    if arch is not None and checkpoint is not None and checkpoint.expert_bytes and arch.expert_fraction \
            and arch.checkpoint_for(sel.variant_key) is None:
        arch = dataclasses.replace(arch, expert_fraction=checkpoint.expert_fraction)
    ckpt, ck_source = checkpoint_size(arch, recipe, sel.variant_key, cached_checkpoint_gib,
                                      override_gib=weights_gib, info=checkpoint)
    rules = rules_for(release)
    head = FitReport(hf_id=recipe.hf_id, variant=sel.variant_key, strategy=sel.strategy, node_count=sel.node_count,
                     hardware=target, architecture=arch, checkpoint_gib=ckpt, weights_source=ck_source,
                     release=rules.release)
    if arch is None:
        return dataclasses.replace(head, missing=("architecture",),
                                   errors=(f"the architecture of {recipe.hf_id} is not known yet",))
    if ckpt is None:
        return dataclasses.replace(head, missing=("checkpoint size",),
                                   errors=(f"the size of the {sel.variant_key} checkpoint is not known yet",))
    shapes = plan_shapes(plan, arch, parse_release(rules.release))
    model_len = recipe_context_length(recipe)
    total = target.gpus_per_node * max(1, sel.node_count)
    procs = tuple(fit_process(arch, ckpt, target.gpu_gib, s, context, model_len=model_len, release=rules.release,
                              gpu_name=target.label, gpus_available=total, draft_gib=draft_weights_gib(arch, s))
                  for s in shapes)
    notes = list(target.notes)
    if not ck_source.startswith(("recipe", "--weights-gib", "safetensors")):
        notes.append(f"weights: {ck_source}")
    if any(draft_weights_gib(arch, s) for s in shapes):
        notes.append("speculative decoding: the draft head's weights are estimated from the hidden size")
    for s in shapes:
        if s.role == "serve" and s.gpus > total:
            notes.append(f"the command uses {s.gpus} GPUs (TP {s.tp} x PP {s.pp} x DP {s.dp}); "
                         f"{target.label} x {max(1, sel.node_count)} node(s) has {total}")
    return dataclasses.replace(head, processes=procs, checks=architecture_checks(arch, shapes, model_len),
                               notes=tuple(notes))


#: the vLLM release a fit plans for: a version, or a function of the resolved context (a front end's
#: ``lint.vllm_plan.target_for``: fit itself does not import the lint)
ReleaseChoice = str | Callable[[Ctx], str | None] | None


def fit_state(catalog: Catalog, recipe: Recipe, state: PageState, target: GpuTarget | None = None,
              arch: Architecture | None = None, *, context: int | None = None, strategy_given: bool = False,
              cached_checkpoint_gib: float | None = None, release: ReleaseChoice = None,
              weights_gib: float | None = None, checkpoint: CheckpointInfo | None = None,
              resolution: tuple[Ctx, Plan] | None = None) -> FitReport:
    """Fit a builder state on ``target`` (default: the state's own hardware profile). Pure.
    ``resolution``: the state's ``(ctx, plan)`` when the caller already has it."""
    sel = state.selection
    arch = arch or recipe_architecture(recipe)
    notes: tuple[str, ...] = ()
    if target is None or (not target.custom and target.profile_id == sel.hw_id):
        target = target or profile_target(catalog.hardware_profiles, sel.hw_id)
        ctx, plan = resolution or resolve(catalog, recipe, sel)
    else:
        catalog = with_custom_profile(catalog, target, template_id(catalog, target, sel.hw_id))
        ctx, plan = resolve(catalog, recipe, retarget(catalog, recipe, sel, strategy_given))
        notes = ("custom profile: hardware-specific recipe overrides of catalog profiles do not apply",)
    report = fit_plan(recipe, ctx, plan, target, arch, context=context, weights_gib=weights_gib,
                      release=release(ctx) if callable(release) else release, checkpoint=checkpoint,
                      cached_checkpoint_gib=cached_checkpoint_gib)
    return dataclasses.replace(report, notes=(*report.notes, *notes))


# --- JSON form --------------------------------------------------------------------------------

def _gib(b: float) -> float:
    return round(b / GIB, 2)


#: the fields of :func:`process_dict` the ``/api/resolve`` summary keeps
SUMMARY_KEYS = ("role", "weights_gib", "kv_budget_gib", "kv_tokens", "max_model_len", "context", "concurrency",
                "starts", "exact")


def process_dict(p: ProcessFit) -> dict[str, Any]:
    s = p.shape
    return {
        "role": p.role,
        "parallelism": {"tp": s.tp, "pp": s.pp, "dp": s.dp, "dcp": s.dcp, "expert_parallel": s.expert_parallel,
                        "gpus_per_rank": s.tp * s.pp},
        "gpu_memory_gib": _gib(p.gpu_memory), "gpu_memory_utilization": p.utilization,
        "weights_gib": _gib(p.weights), "activation_gib": _gib(p.activation), "non_torch_gib": _gib(p.non_torch),
        "cuda_graphs_gib": _gib(p.cuda_graphs), "kv_budget_gib": _gib(p.kv_budget),
        "kv_cache_dtype": s.kv_cache_dtype, "block_size": p.block_size,
        "kv_bytes_per_token": round(p.kv_bytes_per_token, 1), "kv_tokens": p.kv_tokens,
        "kv_tokens_per_group": p.kv_tokens_per_group, "kv_groups": p.kv_groups, "num_blocks": p.num_blocks,
        "concurrency_at_max_len": round(p.concurrency_at_max_len, 2), "kv_needed_gib": _gib(p.kv_needed),
        "forward_gib": _gib(p.forward), "sampler_gib": _gib(p.sampler), "moe_workspace_gib": _gib(p.moe_workspace),
        "max_num_batched_tokens": p.max_num_batched_tokens, "failure": p.failure or None,
        "kv_tokens_bound": p.kv_tokens_bound, "exact": p.exact,
        "max_model_len": p.max_model_len, "context": p.context, "concurrency": p.concurrency,
        "concurrency_uncapped": p.concurrency_uncapped, "max_num_seqs": p.max_num_seqs,
        "concurrency_all_ranks": p.concurrency * s.dp, "starts": p.starts,
        "levers": [{"kind": lv.kind, "change": lv.change, "kv_tokens": lv.tokens, "starts": lv.starts,
                    "detail": lv.detail} for lv in p.levers],
        "notes": list(p.notes),
    }


def report_dict(r: FitReport) -> dict[str, Any]:
    a = r.architecture
    return {
        "model": r.hf_id, "variant": r.variant, "strategy": r.strategy, "nodes": r.node_count,
        "hardware": r.hardware.to_dict(),
        "architecture": None if a is None else {"attention": a.attention, "layers": a.num_layers,
                                                "exact": a.exact, "source": a.source},
        "checkpoint_gib": None if r.checkpoint_gib is None else round(r.checkpoint_gib, 2),
        "weights_source": r.weights_source,
        "verdict": r.verdict,
        "starts": r.starts,
        "missing": list(r.missing),
        "vllm_release": r.release,
        "processes": [process_dict(p) for p in r.processes],
        "errors": [*r.errors, *r.checks],
        "notes": list(r.notes),
    }


def summary_dict(r: FitReport) -> dict[str, Any]:
    """The compact form embedded in ``/api/resolve``."""
    return {"starts": r.starts, "verdict": r.verdict, "missing": list(r.missing), "hardware": r.hardware.label,
            "processes": [{k: d[k] for k in SUMMARY_KEYS} for d in map(process_dict, r.processes)],
            "errors": [*r.errors, *r.checks]}
