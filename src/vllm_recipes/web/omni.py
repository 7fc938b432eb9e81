"""The builder for omni recipes (ui.md "Omni recipes"): install, hardware, task, variant. The command
is ``synth.omni.resolve_omni``'s, printed as the CLI prints it; snippets are per task type."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_list, as_map, get, is_map
from vllm_recipes.render.explain import sections_json
from vllm_recipes.render.omni import explain_omni, render_omni
from vllm_recipes.select.defaults import pick_default_hardware, variant_or_default
from vllm_recipes.select.gates import variant_runs_on
from vllm_recipes.select.omni import OmniSelection, OmniTask, resolve_omni_tasks, select_omni
from vllm_recipes.select.params import OMNI_NAMES
from vllm_recipes.select.state import hardware_block_reason
from vllm_recipes.service.url import MAX_VALUE, recipe_url
from vllm_recipes.synth.omni import resolve_omni

from .builder import (
    BlockView,
    CommandAreaView,
    HardwareLink,
    Pill,
    Row,
    Snippet,
    brand_hardware_row,
    env_names,
    fill,
    hardware_note,
    install_core,
    install_pills,
    variant_pills,
)
from .wording import upper_first

IMAGE_TEMPLATE = """curl http://{host}:{port}{endpoint} \\
  -H "Content-Type: application/json" \\
  -d '{
    "model": "{model}",
    "prompt": "A watercolor fox in a snowy forest",
    "n": 1,
    "size": "1024x1024",
    "response_format": "b64_json"
  }' | python3 -c 'import base64, json, sys; open("out.png", "wb").write(base64.b64decode(json.load(sys.stdin)["data"][0]["b64_json"]))'"""
EDIT_TEMPLATE = """curl http://{host}:{port}{endpoint} \\
  -H "Content-Type: application/json" \\
  -d '{
    "model": "{model}",
    "messages": [{"role": "user", "content": [
      {"type": "text", "text": "Turn the sky into a sunset"},
      {"type": "image_url", "image_url": {"url": "https://example.com/input.png"}}
    ]}]
  }'"""
VIDEO_TEMPLATE = """curl http://{host}:{port}{endpoint} \\
  -F model={model} \\
  -F prompt="A paper boat drifting down a rainy street"{image} \\
  -o out.mp4"""
AUDIO_TEMPLATE = """curl http://{host}:{port}{endpoint} \\
  -H "Content-Type: application/json" \\
  -d '{"model": "{model}", "prompt": "Soft rain on a tin roof"}' \\
  -o out.wav"""
DEFAULT_ENDPOINTS = {"t2i": "/v1/images/generations", "i2i": "/v1/chat/completions", "t2v": "/v1/videos/sync",
                     "i2v": "/v1/videos/sync", "ti2v": "/v1/videos/sync", "t2a": "/v1/audio/generate"}


def _select(catalog: Catalog, recipe: Recipe, vals: dict[str, str]) -> OmniSelection:
    return select_omni(catalog, recipe, vals.get("hardware"), vals.get("variant"), vals.get("task"),
                       vals.get("install"), strict=False)


def canonical_omni(catalog: Catalog, recipe: Recipe, osel: OmniSelection) -> dict[str, str]:
    q: dict[str, str] = {}
    variant = variant_or_default(recipe.data, osel.variant_key)
    if osel.hw_id != pick_default_hardware(catalog.hardware_profiles, variant, recipe.data):
        q["hardware"] = osel.hw_id
    if osel.variant_key != "default":
        q["variant"] = osel.variant_key
    tasks = resolve_omni_tasks(recipe.data)
    if osel.task is not None and tasks and osel.task.key != tasks[0].key:
        q["task"] = str(osel.task.key)
    if osel.install != osel.install_tabs[0]:
        q["install"] = osel.install
    return q


def _axis_specs(decl: Any, tasks: list[OmniTask]) -> list[tuple[str, Any]]:
    """``(axis key, its declaration)`` from ``omni.task_axes`` (a list of keys or ``{key, label, values}`` maps,
    or a map ``key -> label | {label, values}``), else the keys of the tasks' own ``axes`` maps."""
    specs: list[tuple[str, Any]] = []
    if is_map(decl):
        specs = [(str(k), v) for k, v in decl.items()]
    for a in as_list(decl):
        if isinstance(a, str):
            specs.append((a, None))
        elif is_map(a) and isinstance(a.get("key") or a.get("id"), str):
            specs.append((str(a.get("key") or a.get("id")), a))
    if specs:
        return specs
    seen = dict.fromkeys(str(k) for t in tasks for k in as_map(t.axes))
    return [(k, None) for k in seen]


def _axes_tell_tasks_apart(specs: list[tuple[str, Any]], tasks: list[OmniTask]) -> bool:
    """Every task has a scalar value on every axis and no two tasks share all of them."""
    combos = set()
    for t in tasks:
        combo = tuple(as_map(t.axes).get(k) for k, _ in specs)
        if any(not isinstance(v, str | int) or isinstance(v, bool) for v in combo) or combo in combos:
            return False
        combos.add(combo)
    return True


def _value_names(declared: Any) -> dict[str, str]:
    """An axis's declared ``values`` (a ``value -> label`` map or a list) as ``value -> label``."""
    if is_map(declared):
        return {str(v): str(lab) for v, lab in declared.items()}
    names: dict[str, str] = {}
    for v in as_list(declared):
        key = (v.get("value") or v.get("key") or v.get("id")) if is_map(v) else None
        if key is not None:
            names[str(key)] = str(v.get("label") or "")
        elif isinstance(v, str | int):
            names[str(v)] = ""
    return names


def _axis_rows(omni: Mapping[str, Any], tasks: list[OmniTask], current: OmniTask | None,
               href: Callable[..., str]) -> list[Row]:
    """ui.md "Task (or the recipe's task axes)": a row per axis of ``omni.task_axes``, or ``[]`` unless every
    task has a value on every axis and no two tasks share all values."""
    specs = _axis_specs(omni.get("task_axes"), tasks)
    if not specs or len(tasks) < 2 or current is None or not _axes_tell_tasks_apart(specs, tasks):
        return []
    cur = {k: str(as_map(current.axes).get(k)) for k, _ in specs}
    rows = []
    for k, spec in specs:
        names = _value_names(get(spec, "values"))
        used = list(dict.fromkeys(str(as_map(t.axes).get(k)) for t in tasks))
        pills = []
        for v in [v for v in names if v in used] + [v for v in used if v not in names]:
            cands = [t for t in tasks if str(as_map(t.axes).get(k)) == v]
            # the task keeping most of the other current axis values (ties: declaration order)
            best = max(cands, key=lambda t: (sum(str(as_map(t.axes).get(o)) == cur[o] for o, _ in specs if o != k),
                                             -t.index))
            title = str(best.label or best.key)
            if best.description:
                title += ": " + str(best.description)
            pills.append(Pill(names.get(v) or v.replace("_", " ").title(), href=href(task=str(best.key)),
                              active=cur[k] == v, key=v, title=title))
        label = spec if isinstance(spec, str) else str(get(spec, "label") or k.replace("_", " ").title())
        rows.append(Row(f"axis-{k}", label, pills))
    return rows


def build_omni_view(catalog: Catalog, recipe: Recipe, items: Iterable[tuple[str, str]],
                    extra: Mapping[str, str]) -> tuple[CommandAreaView, list[str]]:
    vals, notices = _read_params(items)
    osel = _select(catalog, recipe, vals)
    notices += osel.notices
    params = canonical_omni(catalog, recipe, osel)

    def href(**changes: str | None) -> str:
        sel = _select(catalog, recipe, {k: v for k, v in {**params, **changes}.items() if v is not None})
        return recipe_url(recipe.hf_id, {**canonical_omni(catalog, recipe, sel), **extra})

    omni = as_map(recipe.data.get("omni"))
    variant = variant_or_default(recipe.data, osel.variant_key)
    profile = as_map(catalog.hardware_profiles.get(osel.hw_id))
    status = as_map(get(recipe.meta, "hardware"))
    rows = [Row("install", "Install", install_pills(osel.install_tabs, osel.install, href)),
            brand_hardware_row(catalog, status, osel.hw_id,
                               lambda hw, p, _status: _hardware_link(catalog, recipe, variant, href, hw, p))]
    rows += _task_rows(omni, resolve_omni_tasks(recipe.data), osel.task, href)
    if len(recipe.variants) > 1:
        hint = omni.get("variant_hint")
        rows.append(Row("variant", str(omni.get("variant_label") or "Variant"),
                        variant_pills(catalog, recipe, osel.variant_key, osel.hw_id, href),
                        notes=[hint] if isinstance(hint, str) else []))

    plan = resolve_omni(catalog, recipe, osel.variant_key, osel.task, osel.hw_id)
    rendered = render_omni(catalog, recipe, osel, plan)
    shown = rendered.shown
    port = int(omni["port"]) if isinstance(omni.get("port"), int) else 8000
    hw_name = str(profile.get("display_name") or osel.hw_id)
    verified = status.get(osel.hw_id) == "verified"
    title = f"Verified on {hw_name}" if verified else " · ".join(
        x for x in (hw_name, str(osel.task.label or osel.task.key) if osel.task else "",
                    str(variant.get("precision") or "").upper()) if x)
    return CommandAreaView(
        hf_id=recipe.hf_id, url=recipe_url(recipe.hf_id, {**params, **extra}), rows=rows, card_title=title, verified=verified,
        hardware_note=hardware_note(recipe, osel.hw_id), blocks=[BlockView("serve", "vLLM", shown, "serve", "")],
        all_text=shown, snippets=[_curl_snippet(osel.task, plan.model_id, port)], host_var="VLLM_HOST",
        port_var="VLLM_PORT", default_port=port, env_names=env_names([shown], ["VLLM_HOST", "VLLM_PORT"]),
        explain=sections_json(explain_omni(catalog, plan)),
        install=install_core(catalog, recipe, osel.variant_key, osel.hw_id, profile, rendered.meta, osel.install,
                             [], None),
    ), notices


def _read_params(items: Iterable[tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """The omni parameters of a query (blank and overlong values dropped), and a notice per foreign one."""
    vals: dict[str, str] = {}
    notices: list[str] = []
    for k, v in items:
        if k not in OMNI_NAMES:
            notices.append(f"Parameter {k!r} does not apply to omni recipes.")
        elif len(v) <= MAX_VALUE and v.strip():
            vals[k] = v.strip()
    return vals, notices


def _hardware_link(catalog: Catalog, recipe: Recipe, variant: Mapping[str, Any], href: Callable[..., str],
                   hw: str, p: Mapping[str, Any]) -> HardwareLink:
    reason = hardware_block_reason(catalog, recipe, variant, hw)
    if reason or not variant_runs_on(p, variant, hw):
        return HardwareLink(None, upper_first(reason or "this variant does not fit") + ".")
    return HardwareLink(href(hardware=hw), "")


def _task_rows(omni: Mapping[str, Any], tasks: list[OmniTask], current: OmniTask | None,
               href: Callable[..., str]) -> list[Row]:
    """One row per task axis when the axes tell the tasks apart, else one Task row (none without tasks)."""
    hint = [str(omni["task_hint"])] if isinstance(omni.get("task_hint"), str) else []
    axis_rows = _axis_rows(omni, tasks, current, href)
    if axis_rows:
        axis_rows[-1].notes = hint
        return axis_rows
    if not tasks:
        return []
    return [Row("task", str(omni.get("task_label") or "Task"), [
        Pill(str(t.label or t.key), href=href(task=str(t.key)), active=current is not None and t.key == current.key,
             key=str(t.key), title=str(t.description or "")) for t in tasks], notes=hint)]


def _curl_snippet(task: OmniTask | None, model_id: str, port: int) -> Snippet:
    """The cURL call for the task's kind of output (image, image edit, video, audio)."""
    task_id = task.id if task else "t2i"
    endpoint = str(task.endpoint) if task and isinstance(task.endpoint, str) else \
        DEFAULT_ENDPOINTS.get(task_id, "/v1/images/generations")
    tpl = {"t2i": IMAGE_TEMPLATE, "i2i": EDIT_TEMPLATE, "t2a": AUDIO_TEMPLATE}.get(task_id, VIDEO_TEMPLATE)
    tpl = fill(tpl, model=model_id, endpoint=endpoint,
               image=" \\\n  -F image=@input.png" if task_id in ("i2v", "ti2v") else "")
    return Snippet.at("curl", "cURL", tpl, port)
