"""The builder for omni recipes (ui.md "Omni recipes"): install, hardware, task, variant.

Omni recipes have tasks instead of strategies; the command is ``vllm serve
<model> ... --omni`` from ``synth.omni.resolve_omni``, printed exactly as the
CLI prints it. Snippets are per task type (images, image edit, video, audio).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_map, get, truthy
from vllm_recipes.render.deployment import export_lines
from vllm_recipes.render.docker import docker_meta, docker_run_text
from vllm_recipes.render.explain import explain_env, explain_invocation
from vllm_recipes.render.shell import render_invocation
from vllm_recipes.select.defaults import pick_default_hardware, variant_or_default
from vllm_recipes.select.gates import variant_runs_on
from vllm_recipes.select.omni import OmniSelection, resolve_omni_tasks, select_omni
from vllm_recipes.select.page import SelectionError, hardware_block_reason
from vllm_recipes.synth.omni import resolve_omni

from .builder import NVIDIA_ORDER, BlockView, Pill, Row, Snippet, _num, env_names, fill, per_gpu
from .urlstate import MAX_VALUE

OMNI_PARAMS = ("hardware", "variant", "task", "install")

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


@dataclass
class OmniView:
    hf_id: str
    url: str
    rows: list[Row]
    card_title: str
    verified: bool
    hardware_note: dict[str, Any] | None
    blocks: list[BlockView]
    all_text: str
    snippets: list[Snippet]
    host_var: str
    port_var: str
    default_port: int
    env_names: list[str]
    explain: list[dict[str, Any]]
    install_note: str


def _select(catalog: Catalog, recipe: Recipe, vals: dict[str, str]) -> tuple[OmniSelection, list[str]]:
    notices: list[str] = []
    for _ in range(len(OMNI_PARAMS) + 1):
        try:
            osel = select_omni(catalog, recipe, vals.get("hardware"), vals.get("variant"), vals.get("task"),
                               vals.get("install"))
            return osel, notices
        except SelectionError as exc:
            notices.append(exc.message)
            if exc.param not in vals:
                vals = {}
            else:
                vals.pop(exc.param)
    return select_omni(catalog, recipe, None, None, None, None), notices


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
    if osel.install != "pip":
        q["install"] = osel.install
    return q


def _url(recipe: Recipe, params: Mapping[str, str], extra: Mapping[str, str]) -> str:
    from urllib.parse import quote, urlencode

    items = [(k, params[k]) for k in OMNI_PARAMS if k in params] + list(extra.items())
    q = urlencode(items, quote_via=quote, safe=",:")
    return "/" + quote(recipe.hf_id, safe="/-._~") + ("?" + q if q else "")


def build_omni_view(catalog: Catalog, recipe: Recipe, items: Iterable[tuple[str, str]],
                    extra: Mapping[str, str]) -> tuple[OmniView, list[str]]:
    vals: dict[str, str] = {}
    notices: list[str] = []
    for k, v in items:
        if k in OMNI_PARAMS and len(v) <= MAX_VALUE and v.strip():
            vals[k] = v.strip()
        elif k not in OMNI_PARAMS:
            notices.append(f"Parameter {k!r} does not apply to omni recipes.")
    osel, more = _select(catalog, recipe, vals)
    notices += more
    params = canonical_omni(catalog, recipe, osel)

    def href(**changes: str | None) -> str:
        new = dict(params)
        for k, v in changes.items():
            if v is None:
                new.pop(k, None)
            else:
                new[k] = v
        sel, _ = _select(catalog, recipe, dict(new))
        return _url(recipe, canonical_omni(catalog, recipe, sel), extra)

    r = recipe.data
    omni = as_map(r.get("omni"))
    rows: list[Row] = []
    rows.append(Row("install", "Install", [Pill("pip / uv" if t == "pip" else "Docker", href=href(install=t),
                                                active=osel.install == t, key=t) for t in ("pip", "docker")]))
    # hardware
    variant = variant_or_default(r, osel.variant_key)
    status = as_map(get(recipe.meta, "hardware"))
    groups: dict[str, list[Pill]] = {}
    for hw, prof in catalog.hardware_profiles.items():
        p = as_map(prof)
        if truthy(p.get("restricted")) and hw not in status:
            continue
        reason = hardware_block_reason(catalog, recipe, variant, hw)
        pill = Pill(str(p.get("display_name") or hw), sub=per_gpu(p), key=hw, dot=status.get(hw) == "verified",
                    active=hw == osel.hw_id, title=str(p.get("description") or ""))
        if reason or not variant_runs_on(p, variant, hw):
            pill.disabled, pill.title = True, (reason or "this variant does not fit").capitalize() + "."
        else:
            pill.href = href(hardware=hw)
        groups.setdefault(str(p.get("brand") or "Other"), []).append(pill)
    if "NVIDIA" in groups:
        groups["NVIDIA"].sort(key=lambda pl: NVIDIA_ORDER.index(pl.key) if pl.key in NVIDIA_ORDER else 99)
    brands = sorted(groups, key=lambda b: (0 if b == "NVIDIA" else 1 if b == "AMD" else 2, b.lower()))
    rows.append(Row("hardware", "Hardware", [p for b in brands for p in groups[b]],
                    groups=[(b, groups[b]) for b in brands]))
    tasks = resolve_omni_tasks(r)
    if tasks:
        label = str(omni.get("task_label") or "Task")
        rows.append(Row("task", label, [
            Pill(str(t.label or t.key), href=href(task=str(t.key)), active=osel.task is not None and t.key == osel.task.key,
                 key=str(t.key), title=str(t.description or "")) for t in tasks],
            notes=[str(omni["task_hint"])] if isinstance(omni.get("task_hint"), str) else []))
    if len(recipe.variants) > 1:
        rows.append(Row("variant", str(omni.get("variant_label") or "Variant"), [
            Pill(str(as_map(v).get("label") or as_map(v).get("precision") or vk).upper(),
                 href=href(variant=None if vk == "default" else vk, hardware=None), active=vk == osel.variant_key,
                 key=vk, sub=f"{_num(as_map(v).get('vram_minimum_gb'))} GB" if as_map(v).get("vram_minimum_gb") else "",
                 title=str(as_map(v).get("description") or "")) for vk, v in recipe.variants.items()]))

    plan = resolve_omni(catalog, recipe, osel.variant_key, osel.task, osel.hw_id)
    text, _argv, _ = render_invocation(plan.serve)
    meta = docker_meta(r, variant, catalog.hardware_profiles.get(osel.hw_id) or {}, osel.hw_id)
    env = [(e.key, e.value) for e in plan.env]
    shown = docker_run_text(text, env, meta) if osel.install == "docker" else "\n".join(
        [*export_lines(plan.env), text])
    port = int(omni["port"]) if isinstance(omni.get("port"), int) else 8000
    snippets = []
    task_id = osel.task.id if osel.task else "t2i"
    endpoint = str(osel.task.endpoint) if osel.task and isinstance(osel.task.endpoint, str) else \
        DEFAULT_ENDPOINTS.get(task_id, "/v1/images/generations")
    tpl = {"t2i": IMAGE_TEMPLATE, "i2i": EDIT_TEMPLATE, "t2a": AUDIO_TEMPLATE}.get(task_id, VIDEO_TEMPLATE)
    tpl = fill(tpl, model=plan.model_id, endpoint=endpoint,
               image=" \\\n  -F image=@input.png" if task_id in ("i2v", "ti2v") else "")
    snippets.append(Snippet("curl", "cURL", tpl, fill(tpl, host="localhost", port=str(port))))
    hw_name = str(as_map(catalog.hardware_profiles.get(osel.hw_id)).get("display_name") or osel.hw_id)
    verified = status.get(osel.hw_id) == "verified"
    title = f"Verified on {hw_name}" if verified else " · ".join(
        x for x in (hw_name, str(osel.task.label or osel.task.key) if osel.task else "",
                    str(variant.get("precision") or "").upper()) if x)
    rows_explain = explain_invocation(catalog, plan.serve) + explain_env(catalog, plan.env)
    explain = [{"process": "vLLM (omni)", "entries": [
        {"kind": x.kind, "name": x.name, "value": x.value, **x.source, "shadowed": x.shadowed} for x in rows_explain]}]
    note = get(r.get("hardware_notes"), osel.hw_id)
    hw_note = {"body": note} if isinstance(note, str) else (
        {"title": note.get("title") or "", "body": note.get("body") or "", "href": None, "label": None}
        if isinstance(note, Mapping) else None)
    view = OmniView(
        hf_id=recipe.hf_id, url=_url(recipe, params, extra), rows=rows, card_title=title, verified=verified,
        hardware_note=hw_note, blocks=[BlockView("serve", "vLLM", shown, "serve", "")], all_text=shown,
        snippets=snippets, host_var="VLLM_HOST", port_var="VLLM_PORT", default_port=port,
        env_names=env_names([shown], ["VLLM_HOST", "VLLM_PORT"]), explain=explain,
        install_note="Docker image: " + str(meta.image) if osel.install == "docker" else "",
    )
    return view, notices
