"""Omni recipes (synthesis.md §10): tasks instead of strategies, ``--omni`` always last."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_list, as_map, first_truthy, get, is_map, js_str, truthy
from vllm_recipes.select.defaults import variant_entry
from vllm_recipes.select.lookups import gen_or_nvidia_with_key
from vllm_recipes.select.omni import OmniTask, task_for_hardware

from .plan import Arg, EnvValue, Invocation, Source


@dataclass(frozen=True)
class OmniPlan:
    serve: Invocation
    env: tuple[EnvValue, ...]
    model_id: str
    task: OmniTask | None = None
    deploy_type: str = "omni"
    notes: tuple[str, ...] = field(default_factory=tuple)


def resolve_omni(catalog: Catalog, recipe: Recipe, variant_key: str, task: OmniTask | None, hw_id: str) -> OmniPlan:
    """§10.2 ``resolveOmniCommand`` with provenance."""
    r = recipe.data
    rf = recipe.rel_path
    vkey, variant = variant_entry(r, variant_key)
    profile = as_map(catalog.hardware_profiles.get(hw_id))
    model = as_map(r.get("model"))
    ov_block = None
    if task is not None:
        task, ov_block = task_for_hardware(task, hw_id)
    model_id = first_truthy(task.model_id if task else None, variant.get("model_id"), model.get("model_id"), "unknown")
    non_default = variant_key != "default"

    env: dict[str, EnvValue] = {}

    def merge(m: Any, layer: str, path: tuple[str | int, ...]) -> None:
        if is_map(m):
            for k, v in m.items():
                old = env.get(k)
                env[k] = EnvValue(k, v, Source(layer, rf, (*path, k)),
                                  (*old.shadowed, (old.value, old.source)) if old else ())

    args: list[Arg] = []

    def add(tokens: Any, layer: str, path: tuple[str | int, ...]) -> None:
        src = Source(layer, rf, path)
        for i, t in enumerate(as_list(tokens)):
            args.append(Arg(t if isinstance(t, str) else js_str(t) if truthy(t) else "", src, i))

    rhit = gen_or_nvidia_with_key(r.get("hardware_overrides"), profile)
    vhit = gen_or_nvidia_with_key(variant.get("hardware_overrides"), profile)
    exact = get(variant.get("hardware_overrides"), hw_id)
    merge(model.get("base_env"), "base", ("model", "base_env"))
    if non_default:
        merge(variant.get("extra_env"), "variant", ("variants", vkey, "extra_env"))
    if rhit:
        merge(get(rhit[1], "extra_env"), "recipe-generation", ("hardware_overrides", rhit[0], "extra_env"))
    if vhit:
        merge(get(vhit[1], "extra_env"), "variant-generation", ("variants", vkey, "hardware_overrides", vhit[0], "extra_env"))
    merge(get(exact, "extra_env"), "variant-hardware", ("variants", vkey, "hardware_overrides", hw_id, "extra_env"))

    add(model.get("base_args"), "base", ("model", "base_args"))
    if non_default:
        add(variant.get("extra_args"), "variant", ("variants", vkey, "extra_args"))
    if task is not None and task.extra_args:
        add(task.extra_args, "omni-task", ("omni", "tasks", task.index, "extra_args"))
    if rhit:
        add(get(rhit[1], "extra_args"), "recipe-generation", ("hardware_overrides", rhit[0], "extra_args"))
    if vhit:
        add(get(vhit[1], "extra_args"), "variant-generation", ("variants", vkey, "hardware_overrides", vhit[0], "extra_args"))
    add(get(exact, "extra_args"), "variant-hardware", ("variants", vkey, "hardware_overrides", hw_id, "extra_args"))
    port = get(r.get("omni"), "port")
    if truthy(port):
        src = Source("omni", rf, ("omni", "port"))
        args += [Arg("--port", src), Arg(js_str(port), src)]
    args.append(Arg("--omni", Source("omni", "", (), "omni recipes always end with --omni")))
    binary = first_truthy(get(r.get("omni"), "serve_binary"), "vllm serve")
    notes = (f"hardware override for task {task.key} on {hw_id}",) if ov_block is not None and task else ()
    return OmniPlan(Invocation(str(model_id), tuple(args), str(binary)), tuple(env.values()), str(model_id), task,
                    notes=notes)
