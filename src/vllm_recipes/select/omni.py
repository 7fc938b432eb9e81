"""Omni recipe tasks (synthesis.md §10.1) and the omni selection (hardware, variant, task)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_list, as_map, first_truthy, get, is_map

from .defaults import pick_default_hardware
from .options import flag
from .state import Refusals, hardware_block_reason, hardware_choices, install_tabs, pick_install

OMNI_TASK_IDS = ("t2i", "i2i", "t2v", "i2v", "ti2v", "t2a")


@dataclass(frozen=True)
class OmniTask:
    id: str
    key: str
    label: Any
    endpoint: Any
    model_id: Any
    description: Any
    axes: Any
    extra_args: tuple[Any, ...]
    hardware_overrides: Mapping[str, Any]
    index: int = 0


def resolve_omni_tasks(recipe: Mapping[str, Any]) -> list[OmniTask]:
    """§10.1 ``resolveOmniTasks``."""
    out = []
    for i, t in enumerate(as_list(get(recipe.get("omni"), "tasks"))):
        tid = t if isinstance(t, str) else get(t, "id")
        if not tid or tid not in OMNI_TASK_IDS:
            continue
        m = as_map(t)
        out.append(OmniTask(
            id=tid, key=first_truthy(m.get("key"), tid), label=m.get("label"), endpoint=m.get("endpoint"),
            model_id=m.get("model_id"), description=m.get("description"), axes=first_truthy(m.get("axes"), {}),
            extra_args=tuple(as_list(m.get("extra_args"))), hardware_overrides=as_map(m.get("hardware_overrides")),
            index=i))
    return out


def task_for_hardware(task: OmniTask, hw_id: str) -> tuple[OmniTask, Any]:
    """§10.1 ``resolveOmniTaskForHardware``; also returns the override block used."""
    ov = task.hardware_overrides.get(hw_id)
    if not is_map(ov):
        return task, None
    taken = {k: first_truthy(ov.get(k), getattr(task, k)) for k in ("label", "endpoint", "model_id", "description")}
    return replace(task, **taken, extra_args=task.extra_args + tuple(as_list(ov.get("extra_args")))), ov


@dataclass(frozen=True)
class OmniSelection:
    variant_key: str
    hw_id: str
    task: OmniTask | None
    install: str
    #: install tabs offered on this hardware
    install_tabs: tuple[str, ...] = ("pip", "docker")
    #: lenient mode: what was dropped from the request, and why
    notices: tuple[str, ...] = ()


def select_omni(catalog: Catalog, recipe: Recipe, hardware: str | None, variant: str | None, task: str | None,
                install: str | None, *, strict: bool = True) -> OmniSelection:
    """Validate an omni request. Strict: raise ``SelectionError`` naming the valid
    choices; lenient (the page): drop the parameter and keep a notice."""
    refuse = Refusals(strict)
    r = recipe.data
    variants = recipe.variants
    if variant is not None and variant not in variants:
        refuse("variant", f"{flag('variant')} {variant!r} is not a variant of {recipe.hf_id}.", list(variants))
        variant = None
    vk = variant or "default"
    vdata = as_map(variants.get(vk))
    if hardware is not None and (reason := hardware_block_reason(catalog, recipe, vdata, hardware)):
        refuse("hardware", f"{flag('hardware')} {hardware!r} is not available for {recipe.hf_id}: {reason}.",
               hardware_choices(catalog, recipe, vdata))
        hardware = None
    hw = hardware if hardware is not None else pick_default_hardware(catalog.hardware_profiles, vdata, r)
    tasks = resolve_omni_tasks(r)
    found = next((t for t in tasks if t.key == task), None)
    if task is not None and found is None:
        refuse("task", f"{flag('task')} {task!r} is not a task of {recipe.hf_id}.", [t.key for t in tasks])
    chosen = found or (tasks[0] if tasks else None)
    # a recipe that disables both tabs still needs a way to run: offer both
    tabs = install_tabs(r, vdata, hw) or ["pip", "docker"]
    install = pick_install(refuse, recipe.hf_id, hw, tabs, install)
    return OmniSelection(vk, hw, chosen, install, tuple(tabs), tuple(refuse.notices))
