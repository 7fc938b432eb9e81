"""The command builder as a view model: rows of pills and the command area. Every pill links to the
canonical URL of the selection it leads to (computed by the lenient state builder the target page runs, so
the page works without JavaScript); the commands are ``render.deployment``'s, as the CLI prints them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.diagnostics import plural
from vllm_recipes.jsvalues import as_list, as_map, get, is_map, is_number, truthy
from vllm_recipes.render.deployment import Block, deployment_blocks, deployment_text
from vllm_recipes.render.docker import DockerMeta, cuda129_image
from vllm_recipes.render.explain import explain_json
from vllm_recipes.render.frontend import FrontendInEffect, frontend_in_effect
from vllm_recipes.render.install import hardware_install_block
from vllm_recipes.render.rendering import meta_for
from vllm_recipes.select.advanced import advanced_options_for
from vllm_recipes.select.defaults import effective_install_config, recommend_strategy
from vllm_recipes.select.gates import (
    MAX_NODES,
    allowed_modes,
    effective_vram_min,
    feature_conflicts,
    is_feature_allowed_for_strategy,
    is_scalable,
    is_strategy_supported_on_hardware,
    node_gpus,
    offered_strategies,
    pd_pool_modes,
    variant_runs_on,
)
from vllm_recipes.select.lookups import gen
from vllm_recipes.select.nodes import node_count_issue, strategy_split
from vllm_recipes.select.state import (
    MAX_KV_INSTANCES,
    PD_OPTIONS,
    PageState,
    candidate_strategies,
    hardware_block_reason,
    kv_option_reasons,
    pd_router_choices,
    single_node_tp_hint,
)
from vllm_recipes.service.url import canonical_params, encode, lenient_state, recipe_url
from vllm_recipes.synth.context import Ctx, recipe_frontend
from vllm_recipes.synth.plan import KvStorePlan, MultiNodePlan, PdPlan, Plan

from .security import safe_link
from .wording import upper_first

NVIDIA_ORDER = ("h100", "h200", "b200", "gb200", "b300", "gb300")
_ENV_NAME = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")  # $NAME or ${NAME}

CURL_TEMPLATE = """curl http://{host}:{port}/v1/chat/completions \\
  -H "Content-Type: application/json" \\
  -d '{
    "model": "{model}",
    "messages": [{"role": "user", "content": "Hello"}],
    "max_tokens": 32
  }'"""
BENCH_TEMPLATE = """vllm bench serve \\
  --model {model} \\
  --host {host} \\
  --port {port} \\
  --dataset-name random \\
  --random-input-len 1024 \\
  --random-output-len 1024 \\
  --num-prompts 100 \\
  --max-concurrency 32"""
PYTHON_TEMPLATE = """from openai import OpenAI

client = OpenAI(base_url="http://{host}:{port}/v1", api_key="EMPTY")
response = client.chat.completions.create(
    model="{model}",
    messages=[{"role": "user", "content": "Hello"}],
    max_tokens=32,
)
print(response.choices[0].message.content)"""
#: a text model's "Try it" tabs: ``(key, title, template)``
SNIPPETS = (("curl", "cURL", CURL_TEMPLATE), ("python", "Python", PYTHON_TEMPLATE), ("bench", "Bench", BENCH_TEMPLATE))


def fill(template: str, **values: str) -> str:
    """``{name}`` placeholders only (the templates contain literal JSON braces)."""
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


@dataclass
class Pill:
    """One choice: a link when selectable, a struck-through span with a reason when not."""

    label: str
    href: str | None = None
    active: bool = False
    disabled: bool = False
    title: str = ""
    sub: str = ""
    #: ``True`` verified, ``False`` not verified, ``None`` no dot
    dot: bool | None = None
    mark: str = ""
    #: ``radio`` (one of a row) or ``check`` (toggles)
    kind: str = "radio"
    key: str = ""


@dataclass
class Row:
    key: str
    label: str
    pills: list[Pill]
    #: brand groups of the hardware row: ``(brand, pills)``
    groups: list[tuple[str, list[Pill]]] = field(default_factory=list)
    hint: str = ""
    #: short text lines under the pills
    notes: list[str] = field(default_factory=list)
    link: tuple[str, str] | None = None
    subrows: list[Row] = field(default_factory=list)
    kind: str = "radio"
    #: a row of small numbered pills (node counts, node ranks): one line at laptop width
    compact: bool = False


@dataclass
class InstallExtra:
    label: str
    command: str
    note: str
    optional: bool


@dataclass
class InstallView:
    version: str | None
    nightly: bool
    tabs: list[Pill]
    method: str
    command: str | None
    cuda_alt: str | None
    note: str
    extras: list[InstallExtra]
    kv_line: str | None
    copy_all: str
    copy_all_alt: str | None
    #: ``(image, CUDA 12.9 image)`` the docker run commands switch between with the CUDA choice
    image_swap: tuple[str, str] | None = None


@dataclass(frozen=True)
class BlockView(Block):
    """A command block with its node or instance pickers."""

    pickers: list[Row] = field(default_factory=list)


@dataclass
class Snippet:
    key: str
    title: str
    #: ``{host}`` and ``{port}`` left for the page's env panel to fill
    template: str
    text: str

    @classmethod
    def at(cls, key: str, title: str, template: str, port: int) -> Snippet:
        return cls(key, title, template, fill(template, host="localhost", port=str(port)))


@dataclass
class CommandAreaView:
    """What the command area renders: shared by the regular and the omni builder."""

    hf_id: str
    url: str
    rows: list[Row]
    card_title: str
    verified: bool
    hardware_note: dict[str, Any] | None
    install: InstallView | None
    blocks: list[BlockView]
    all_text: str
    snippets: list[Snippet]
    host_var: str
    port_var: str
    default_port: int
    env_names: list[str]
    explain: list[dict[str, Any]]


@dataclass
class BuilderView(CommandAreaView):
    """Everything the builder template renders."""

    query: str = ""
    notices: list[str] = field(default_factory=list)
    error: str | None = None


def _num(v: Any) -> str:
    if is_number(v):
        f = float(v)
        return str(int(f)) if f.is_integer() else f"{f:.1f}".rstrip("0").rstrip(".")
    return str(v)


def gpus(n: Any) -> str:
    """``1 GPU`` / ``8 GPUs``."""
    return f"{_num(n)} GPU" + ("" if n == 1 else "s")


def per_gpu(profile: Mapping[str, Any]) -> str:
    vram, n = profile.get("vram_gb"), profile.get("gpu_count")
    if is_number(vram) and is_number(n) and n:
        return f"{_num(vram / n)}G/GPU"
    return ""


def _label(key: str, spec: Any) -> str:
    lab = get(spec, "label") or get(spec, "display_name")
    return lab if isinstance(lab, str) and lab else key.replace("_", " ").replace("-", " ").title()


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.\-+]", v))


@dataclass(frozen=True)
class Nav:
    """Links to neighbouring selections: apply a change, rebuild leniently, canonicalize."""

    catalog: Catalog
    recipe: Recipe
    params: Mapping[str, str]
    extra: Mapping[str, str]

    def url_for(self, params: Mapping[str, str]) -> str:
        return recipe_url(self.recipe.hf_id, {**params, **self.extra})

    def target(self, **changes: str | None) -> tuple[str, PageState | None, tuple[str, ...]]:
        """``(canonical URL, state, notices)`` of the page a change leads to (state ``None`` on failure)."""
        new = {k: v for k, v in {**self.params, **changes}.items() if v is not None}
        try:
            st, notices = lenient_state(self.catalog, self.recipe, new.items())
        except Exception:  # a link must never break the page; fall back to the raw parameters
            return self.url_for(new), None, ()
        return self.url_for(canonical_params(self.catalog, self.recipe, st, fresh=True)), st, tuple(notices)

    def href(self, **changes: str | None) -> str:
        return self.target(**changes)[0]


class HardwareLink(NamedTuple):
    """Where a hardware pill leads, with ``note`` added to its description; no ``href``: disabled, ``note`` why."""
    href: str | None
    note: str


def brand_hardware_row(catalog: Catalog, status: Mapping[str, Any], current: str,
                       link: Callable[[str, Mapping[str, Any], Any], HardwareLink], hint: str = "") -> Row:
    """The hardware a recipe page lists (restricted profiles only when the recipe declares them), by
    brand: NVIDIA first in generation order, then AMD, then the others by name. ``link(hw, profile,
    recipe status)`` gives each pill its link, or the reason it is disabled."""
    order: dict[str, list[str]] = {}
    for hw, prof in catalog.hardware_profiles.items():
        p = as_map(prof)
        if not (truthy(p.get("restricted")) and hw not in status):
            order.setdefault(str(p.get("brand") or "Other"), []).append(hw)
    if "NVIDIA" in order:
        order["NVIDIA"].sort(key=lambda h: (NVIDIA_ORDER.index(h) if h in NVIDIA_ORDER else len(NVIDIA_ORDER)))
    brands = sorted(order, key=lambda b: (0 if b == "NVIDIA" else 1 if b == "AMD" else 2, b.lower()))

    def pill(hw: str) -> Pill:
        p = as_map(catalog.hardware_profiles[hw])
        href, note = link(hw, p, status.get(hw))
        title = (str(p.get("description") or "") + note) if href is not None else note
        return Pill(str(p.get("display_name") or hw), href=href, sub=per_gpu(p), key=hw,
                    dot=status.get(hw) == "verified", active=hw == current, disabled=href is None, title=title)

    groups = [(b, [pill(hw) for hw in order[b]]) for b in brands]
    return Row("hardware", "Hardware", [p for _, ps in groups for p in ps], groups=groups, hint=hint)


def hardware_row(catalog: Catalog, recipe: Recipe, st: PageState, nav: Nav) -> Row:
    return brand_hardware_row(catalog, as_map(get(recipe.meta, "hardware")), st.selection.hw_id,
                              lambda hw, p, status: _hardware_link(catalog, recipe, st, nav, hw, p, status),
                              single_node_tp_hint(catalog, recipe, st) or "")


def _hardware_link(catalog: Catalog, recipe: Recipe, st: PageState, nav: Nav, hw: str, p: Mapping[str, Any],
                   status: Any) -> HardwareLink:
    """A hardware pill keeps the variant when it runs there, else switches to the first that does."""
    sel = st.selection
    if status == "unsupported":
        return HardwareLink(None, "This recipe marks this hardware unsupported.")
    own: str | None = None  # why the current variant cannot run here
    for vk in dict.fromkeys((sel.variant_key, *recipe.variants)):  # the current variant first
        v = as_map(recipe.variants.get(vk))
        reason = hardware_block_reason(catalog, recipe, v, hw)
        if vk == sel.variant_key:
            own = reason
        if reason is None and variant_runs_on(p, v, hw):
            break
    else:
        return HardwareLink(None, upper_first(own) + "." if own
                            else "No variant of this model fits on this hardware.")
    changes: dict[str, str | None] = {"hardware": hw}
    note = " Verified by the recipe authors." if status == "verified" else ""
    if vk != sel.variant_key:
        changes["variant"] = None if vk == "default" else vk
        note += f" Switches to the {vk} variant."
    return HardwareLink(nav.href(**changes), note)


def variant_row(catalog: Catalog, recipe: Recipe, st: PageState, nav: Nav) -> Row:
    sel = st.selection
    pills = variant_pills(catalog, recipe, sel.variant_key, sel.hw_id, nav.href)
    cur = as_map(recipe.variants.get(sel.variant_key))
    model_id = cur.get("model_id") or recipe.model_repo
    notes = [str(cur["description"])] if isinstance(cur.get("description"), str) else []
    return Row("variant", "Variant", pills, notes=notes,
               link=(f"https://huggingface.co/{model_id}", f"{model_id} on Hugging Face"))


def variant_pills(catalog: Catalog, recipe: Recipe, variant_key: str, hw_id: str,
                  href: Callable[..., str]) -> list[Pill]:
    """A pill per variant; one that cannot run on ``hw_id`` switches to its default hardware (ui.md)."""
    profile = as_map(catalog.hardware_profiles.get(hw_id))
    pills = []
    for vk, raw_variant in recipe.variants.items():
        v = as_map(raw_variant)
        vram = effective_vram_min(v, hw_id)
        changes: dict[str, str | None] = {"variant": None if vk == "default" else vk}
        title = str(v.get("description") or "")
        if hardware_block_reason(catalog, recipe, v, hw_id) is not None or not variant_runs_on(profile, v, hw_id):
            changes["hardware"] = None
            title += f" Not runnable on {profile.get('display_name') or hw_id}: switches to its default hardware."
        pills.append(Pill(str(v.get("label") or v.get("precision") or vk).upper(), href=href(**changes),
                          active=vk == variant_key, sub=f"{_num(vram)} GB" if is_number(vram) else "",
                          title=title.strip(), key=vk))
    return pills


def strategy_row(catalog: Catalog, recipe: Recipe, st: PageState, nav: Nav) -> Row:
    sel = st.selection
    r = recipe.data
    profile = as_map(catalog.hardware_profiles.get(sel.hw_id))
    hw_name = profile.get("display_name") or sel.hw_id
    cands = list(st.candidates)
    if sel.strategy not in cands:
        cands.append(sel.strategy)
    pills = []
    for s in cands:
        spec = as_map(catalog.strategies.get(s))
        pill = Pill(_label(s, spec), active=s == sel.strategy, key=s,
                    mark="Recommended" if s == st.recommended_strategy else "")
        if not is_strategy_supported_on_hardware(r, s, profile, sel.hw_id):
            pill.disabled, pill.title = True, f"Not supported on {hw_name} for this recipe."
        else:
            changes: dict[str, str | None] = {"strategy": s}
            if s == "pd_cluster" or sel.strategy == "pd_cluster":
                changes["nodes"] = None
            if s != "pd_cluster":
                changes.update(dict.fromkeys((*PD_OPTIONS, "router")))
            url, target, notices = nav.target(**changes)
            if target is not None and target.selection.strategy != s:
                # the page would refuse it (e.g. pd_cluster on hardware that cannot scale out)
                pill.disabled, pill.title = True, notices[-1] if notices else f"Not available on {hw_name} here."
            else:
                pill.href = url
                pill.title = str(spec.get("description") or "")
        pills.append(pill)
    spec = as_map(catalog.strategies.get(sel.strategy))
    desc, orientation = spec.get("description"), spec.get("orientation")
    notes = [desc.strip().split("\n")[0]] if isinstance(desc, str) and desc else []
    return Row("strategy", "Strategy", pills, notes=notes,
               hint=f"Orientation: {orientation}" if isinstance(orientation, str) else "")


def kv_row(catalog: Catalog, recipe: Recipe, st: PageState, ctx: Ctx, plan: Plan, nav: Nav) -> Row:
    """Off, each KV offload option or group, Mooncake; the active group's members and instances below."""
    sel = st.selection
    reasons = dict(kv_option_reasons(catalog, recipe, sel.hw_id, sel.strategy))
    pills = [Pill("Off", href=nav.href(kv_offload=None, kv_instances=None, kv_instance=None),
                  active=sel.kv_offload is None, key="off")]
    subrows: list[Row] = []
    for entry in _kv_entries(catalog):
        pills.append(_kv_pill(entry.label, entry.members, entry.title, entry.key, reasons, sel.kv_offload, nav))
        if sel.kv_offload in entry.members and (len(entry.members) > 1 or entry.key == "mooncake"):
            subrows.append(_kv_members_row(catalog, entry, reasons, sel.kv_offload, nav))
            if entry.key == "mooncake" and isinstance(plan, KvStorePlan):
                subrows.append(_kv_instances_row(catalog, sel.kv_offload, ctx, plan, nav))
    cur = _kv_spec(catalog, sel.kv_offload or "")
    notes = [str(get(cur, "description"))] if sel.kv_offload and isinstance(get(cur, "description"), str) else []
    return Row("kv", "KV offload", pills, subrows=subrows, notes=notes)


@dataclass
class _KvEntry:
    """A top-level KV offload pill: one option, a taxonomy group of options, or the Mooncake stores."""

    order: float
    label: str
    members: list[str]
    title: str
    key: str
    #: the label of the members' row
    sub_label: str = "Options"


def _kv_spec(catalog: Catalog, kv: str) -> Any:
    """A KV offload option, else the KV store strategy of that name."""
    return catalog.kv_offload_options[kv] if kv in catalog.kv_offload_options else catalog.strategies.get(kv)


def _kv_entries(catalog: Catalog) -> list[_KvEntry]:
    """Ungrouped options and taxonomy groups (``kv_offload_groups``) by their ``order``; Mooncake third."""
    options = catalog.kv_offload_options
    groups_meta = as_map(catalog.taxonomy.get("kv_offload_groups"))
    entries: list[_KvEntry] = []
    grouped: dict[str, list[str]] = {}
    for k, opt in options.items():
        g = get(opt, "group")
        if isinstance(g, str):
            grouped.setdefault(g, []).append(k)
        else:
            entries.append(_KvEntry(get(opt, "order") or 99, _label(k, opt), [k], str(get(opt, "description") or ""),
                                    k))
    for g, members in grouped.items():
        gm = as_map(groups_meta.get(g))
        members.sort(key=lambda k: get(options[k], "order") or 99)
        entries.append(_KvEntry(gm.get("order") or 99, _label(g, gm), members, str(gm.get("description") or ""),
                                g, str(gm.get("sub_row_label") or "Options")))
    stores = sorted((k for k, s in catalog.strategies.items() if get(s, "deploy_type") == "kv_store_lb"),
                    key=lambda k: get(catalog.strategies[k], "order") or 99)
    if stores:
        entries.append(_KvEntry(3, "Mooncake", stores, "Mooncake shared KV store across several vLLM instances.",
                                "mooncake", "Store topology"))
    return sorted(entries, key=lambda e: e.order)


def _kv_pill(label: str, members: list[str], title: str, key: str, reasons: Mapping[str, str | None],
             kv_offload: str | None, nav: Nav) -> Pill:
    """Links to the first available of ``members`` (``reasons`` has them all); else disabled with the
    first one's reason."""
    available = [m for m in members if reasons[m] is None]
    pill = Pill(label, active=kv_offload in members, key=key, title=title)
    if available:
        pill.href = nav.href(kv_offload=available[0], kv_instances=None, kv_instance=None)
    else:
        pill.disabled, pill.title = True, f"Unavailable: {reasons[members[0]]}."
    return pill


def _kv_members_row(catalog: Catalog, entry: _KvEntry, reasons: Mapping[str, str | None], kv_offload: str | None,
                    nav: Nav) -> Row:
    specs = {m: _kv_spec(catalog, m) for m in entry.members}
    return Row(f"kv-{entry.key}", entry.sub_label, [
        _kv_pill(_label(m, spec), [m], str(get(spec, "description") or ""), m, reasons, kv_offload, nav)
        for m, spec in specs.items()])


def _kv_instances_row(catalog: Catalog, kv_offload: str | None, ctx: Ctx, plan: KvStorePlan, nav: Nav) -> Row:
    """Mooncake's instance count, each pill with its GPU total."""
    per = plan.node_count * (ctx.gpu_count or 1)
    default_count = get(catalog.strategies.get(kv_offload or ""), "default_instances") or 2
    inst = []
    for n in range(1, MAX_KV_INSTANCES + 1):
        inst.append(Pill(str(n), href=nav.href(kv_instances=None if n == default_count else str(n),
                                               kv_instance=None),
                         active=n == plan.instances, key=f"inst-{n}",
                         title=f"{plural(n, 'instance')} x {gpus(per)} = {gpus(n * per)}"))
    return Row("kv-instances", "Instances", inst, compact=True,
               hint=f"{plan.instances} x {gpus(per)} = {gpus(plan.instances * per)} total")


def nodes_row(catalog: Catalog, recipe: Recipe, st: PageState, nav: Nav) -> Row | None:
    """Single node / Multi-node (N) with GPU totals (ui.md row 5); a node-count sub-row when multi."""
    sel = st.selection
    r = recipe.data
    profile = as_map(catalog.hardware_profiles.get(sel.hw_id))
    if not any(get(catalog.strategies.get(s), "deploy_type") == "multi_node" for s in offered_strategies(r)):
        return None
    hw_name = str(profile.get("display_name") or sel.hw_id)
    gpn = node_gpus(profile.get("gpu_count"))
    cur_dt = get(catalog.strategies.get(sel.strategy), "deploy_type")

    def pick(n: int) -> str | None:
        """The strategy a page at ``n`` nodes runs: the current one when it fits, else the
        recommendation, else the first supported candidate of the right deploy type."""
        dt = "single_node" if n == 1 else "multi_node"
        if cur_dt == dt:
            return sel.strategy
        ok = [s for s in candidate_strategies(catalog, recipe, sel.hw_id, n)
              if get(catalog.strategies.get(s), "deploy_type") == dt
              and is_strategy_supported_on_hardware(r, s, profile, sel.hw_id)]
        rec = recommend_strategy(r, n)
        return rec if rec in ok else (ok[0] if ok else None)

    def link(pill: Pill, n: int) -> None:
        s = pick(n)
        issue = node_count_issue(r, strategy_split(as_map(catalog.strategies.get(s))), gpn, n) if s else None
        if s is None:
            pill.disabled = True
            pill.title = (f"No single-node strategy of this recipe runs on {hw_name}." if n == 1 else
                          f"No multi-node strategy of this recipe runs on {n} {hw_name} nodes.")
        elif issue is not None and issue.severity == "error":
            pill.disabled, pill.title = True, upper_first(issue.text()) + "."
        elif s == sel.strategy:
            pill.href = nav.href(nodes=str(n))
        else:
            pill.href = nav.href(nodes=str(n), strategy=s)

    single = Pill("Single node", sub=gpus(gpn), active=sel.node_count <= 1, key="single")
    if sel.node_count > 1 or cur_dt != "single_node":
        link(single, 1)
    else:
        single.href = nav.href()
    multi_n = sel.node_count if sel.node_count > 1 else 2
    multi = Pill(f"Multi-node ({multi_n})", sub=gpus(multi_n * gpn), active=sel.node_count > 1, key="multi")
    if not is_scalable(profile):
        multi.label, multi.sub = "Multi-node", ""
        multi.disabled, multi.title = True, f"{hw_name} cannot scale beyond one node."
        return Row("nodes", "Nodes", [single, multi], hint=f"{gpus(gpn)} in total")
    if sel.node_count > 1:
        multi.href = nav.href()
    elif (multi_n := next((n for n in range(2, MAX_NODES + 1) if pick(n) is not None), 0)) > 0:
        multi.label, multi.sub = f"Multi-node ({multi_n})", gpus(multi_n * gpn)
        link(multi, multi_n)
    else:
        multi.label, multi.sub = "Multi-node", ""
        multi.disabled, multi.title = True, f"No multi-node strategy of this recipe runs on {hw_name}."
    row = Row("nodes", "Nodes", [single, multi], hint=f"{gpus(sel.node_count * gpn)} in total")
    if sel.node_count > 1:
        counts = []
        for n in range(2, MAX_NODES + 1):
            p = Pill(str(n), active=n == sel.node_count, key=f"n-{n}", title=f"{n} nodes, {gpus(n * gpn)}")
            if n == sel.node_count:
                p.href = nav.href()
            else:
                link(p, n)
            uneven = node_count_issue(r, strategy_split(as_map(catalog.strategies.get(sel.strategy))), gpn, n)
            if not p.disabled and uneven is not None:
                p.title += f" (splits unevenly: {uneven.reason})"
                if n == sel.node_count:
                    row.notes.append(upper_first(uneven.text()) + ".")
            counts.append(p)
        row.subrows.append(Row("node-count", "Node count", counts, compact=True))
    return row


def pd_rows(catalog: Catalog, recipe: Recipe, st: PageState, plan: Plan, nav: Nav) -> list[Row]:
    sel = st.selection
    if sel.strategy != "pd_cluster" or not isinstance(plan, PdPlan):
        return []
    profile = as_map(catalog.hardware_profiles.get(sel.hw_id))
    gpn = node_gpus(profile.get("gpu_count"))
    modes = pd_pool_modes(recipe.data)
    rows = []
    totals = []
    for role, rp in (("prefill", plan.prefill), ("decode", plan.decode)):
        nodes = int(rp.meta.get("nodes") or 1)
        counts = [Pill(str(n), href=nav.href(**{f"{role}_nodes": str(n), f"{role}_rank": None}),
                       active=n == nodes and not st.pd_co_located, key=f"{role}-n{n}", title=f"{n} x {gpus(gpn)}")
                  for n in range(1, MAX_NODES + 1)]
        row = Row(f"pd-{role}", f"{role.capitalize()} nodes", counts, compact=True)
        if len(modes) > 1:
            row.subrows.append(Row(f"pd-{role}-mode", f"{role.capitalize()} mode", [
                Pill(m.upper(), href=nav.href(**{f"{role}_mode": m, f"{role}_nodes": None, f"{role}_rank": None}),
                     active=m == rp.meta.get("parallelism"), key=f"{role}-{m}") for m in modes]))
        pool = rp.meta.get("poolGpus")
        totals.append((role, nodes, pool if is_number(pool) else nodes * gpn))
        rows.append(row)
    rows[-1].hint = " + ".join(f"{role} {plural(n, 'node')} ({gpus(g)})" for role, n, g in totals) + \
        f" = {sum(t[1] for t in totals)} nodes, {gpus(sum(t[2] for t in totals))}"
    routers = pd_router_choices(catalog, recipe)
    if len(routers) > 1:
        specs = as_map(get(catalog.strategies.get("pd_cluster"), "routers"))
        cur = sel.pd_router or "vllm-router"
        rows.append(Row("router", "Router", [
            Pill(_label(rid, specs.get(rid)), href=nav.href(router=None if rid == "vllm-router" else rid),
                 active=rid == cur, key=rid, title=str(get(specs.get(rid), "description") or ""))
            for rid in routers]))
    return rows


def frontend_row(catalog: Catalog, recipe: Recipe, st: PageState, nav: Nav, runs: FrontendInEffect) -> Row | None:
    """The frontend pills; when the recipe's env decides the frontend (``runs.note``), the one it
    runs is shown active and the others are disabled with that reason."""
    fronts = catalog.frontends
    if not fronts:
        return None
    default = recipe_frontend(recipe.data)
    shown = _label(runs.name, fronts.get(runs.name))
    pinned = f"{upper_first(runs.note)}, so the command runs the {shown} frontend." if runs.note else ""

    def pill(f: str, spec: Any) -> Pill:
        blocked = bool(pinned) and f != runs.name
        return Pill(_label(f, spec), href=None if blocked else nav.href(frontend=None if f == default else f),
                    active=f == runs.name, disabled=blocked, key=f,
                    title=pinned if blocked else str(get(spec, "description") or ""),
                    mark="Recipe default" if f == default else "")

    return Row("frontend", "Frontend", [pill(f, spec) for f, spec in fronts.items()])


def features_row(catalog: Catalog, recipe: Recipe, st: PageState, nav: Nav) -> Row | None:
    """Feature toggles (turning one on turns its conflicts off); a mode sub-row under each active one."""
    sel = st.selection
    feats = as_map(recipe.data.get("features"))
    if not feats:
        return None
    profile = as_map(catalog.hardware_profiles.get(sel.hw_id))
    strategy_name = as_map(catalog.strategies.get(sel.strategy)).get("display_name") or sel.strategy
    pills = []
    subrows = []
    for f, raw_feat in feats.items():
        feat = as_map(raw_feat)
        pills.append(_feature_pill(recipe, st, nav, f, feat, strategy_name))
        if f in sel.features and truthy(feat.get("modes")):
            modes = allowed_modes(feat, sel.variant_key, profile, sel.hw_id)
            if len(modes) >= 2:
                subrows.append(_feature_modes_row(st, nav, f, feat, modes))
    return Row("features", "Features", pills, subrows=subrows, kind="check")


def _feature_pill(recipe: Recipe, st: PageState, nav: Nav, f: str, feat: Mapping[str, Any],
                  strategy_name: str) -> Pill:
    sel = st.selection
    enabled = list(sel.features)
    on = f in enabled
    pill = Pill(_label(f, feat), active=on, kind="check", key=f, title=str(feat.get("description") or ""))
    if not is_feature_allowed_for_strategy(feat, sel.strategy):
        pill.disabled, pill.title = True, f"Not available with {strategy_name}."
        return pill
    if on:
        new = [x for x in enabled if x != f]
    else:
        conflicts = set(feature_conflicts(recipe.data, f))
        new = [x for x in enabled if x not in conflicts] + [f]
        if conflicts & set(enabled):
            pill.title += " Turns off " + ", ".join(sorted(conflicts & set(enabled))) + "."
    pill.href = nav.href(features=",".join(new))
    return pill


def _feature_modes_row(st: PageState, nav: Nav, f: str, feat: Mapping[str, Any], modes: list[str]) -> Row:
    """One pill per allowed mode; the link keeps only the modes that differ from their defaults."""
    sel = st.selection
    cur = sel.mode_for(f) or st.default_modes.get(f)
    sub = []
    for m in modes:
        new_fm = {**dict(sel.feature_modes), f: m}
        kept = [(k, v) for k, v in new_fm.items() if st.default_modes.get(k) != v]
        spec = as_map(get(feat.get("modes"), m))
        sub.append(Pill(_label(m, spec), href=nav.href(fmode=",".join(f"{k}:{v}" for k, v in kept) or None),
                        active=m == cur, key=f"{f}-{m}", title=str(spec.get("description") or "")))
    return Row(f"mode-{f}", f"{_label(f, feat)} mode", sub)


def advanced_row(catalog: Catalog, recipe: Recipe, st: PageState, nav: Nav) -> Row | None:
    sel = st.selection
    opts = advanced_options_for(recipe.data, sel.strategy)
    cur = [a for a, _ in sel.advanced if a != "arg"]
    pills = []
    for o in opts:
        on = o.id in cur
        new = [a for a in cur if a != o.id] if on else [*cur, o.id]
        pills.append(Pill(" ".join(o.args), href=nav.href(advanced=",".join(new) or None), active=on, kind="check",
                          key=o.id, title=o.label))
    return Row("advanced", "Advanced", pills, kind="check",
               notes=["Appended after the strategy and hardware layers."]) if pills else None


def platform_names(profile: Mapping[str, Any], meta: DockerMeta) -> set[str]:
    """Names a dependency's ``brand``/``brands`` may use for this hardware: the brand, the docker
    brand key and the install platform (ui.md: CUDA, ROCm, TPU, XPU, CPU; else the generation)."""
    brand = str(profile.get("brand") or "")
    g = str(gen(profile) or "").lower()
    platform = ("cuda" if brand == "NVIDIA" else "rocm" if brand == "AMD" else "tpu" if g == "tpu" else
                "xpu" if g == "xpu" else "cpu" if meta.brand_key == "intel" else g)
    return {n for n in (brand.lower(), meta.brand_key, platform, g) if n}


def install_pills(tabs: Sequence[str], current: str, href: Callable[..., str]) -> list[Pill]:
    return [Pill("pip / uv" if t == "pip" else "Docker", href=href(install=t), active=t == current, key=t)
            for t in tabs]


def install_core(catalog: Catalog, recipe: Recipe, variant_key: str, hw_id: str, profile: Mapping[str, Any],
                 meta: DockerMeta, method: str, tabs: list[Pill], kv_offload: str | None) -> InstallView | None:
    """The install block (ui.md "Command area"; json-api.md §5.3 by brand) for one hardware and method."""
    r = recipe.data
    variant = as_map(recipe.variants.get(variant_key))
    block = hardware_install_block(r, variant, hw_id) or {}
    cfg = as_map(effective_install_config(r, variant, hw_id))
    versions = [v for v in (recipe.model.get("min_vllm_version"), variant.get("min_vllm_version")) if v]
    kv_version, kv_line = _kv_install(catalog, kv_offload, meta) if kv_offload else (None, None)
    if kv_version:
        versions.append(kv_version)
    version = max((str(v) for v in versions), key=version_key) if versions else None
    nightly = recipe.model.get("nightly_required") is True
    command, cuda_alt, image_swap, note = _install_command(as_map(block.get(method)), cfg, method, meta)
    note = _with_override_note(note, r, profile)
    extras = _install_extras(block, platform_names(profile, meta), method)
    if command is None and not extras and not kv_line and not note and not tabs:
        return None
    parts = [command] if command else []
    parts += [e.command for e in extras if not e.optional]
    if kv_line:
        parts.append(str(kv_line))
    copy_alt = "\n".join([cuda_alt, *parts[1:]]) if cuda_alt else None
    return InstallView(version, nightly, tabs, method, command, cuda_alt, note, extras,
                       str(kv_line) if kv_line else None, "\n".join(parts), copy_alt, image_swap)


def _kv_install(catalog: Catalog, kv_offload: str, meta: DockerMeta) -> tuple[Any, Any]:
    """The KV store's ``(min_vllm_version, install line)``: a Mooncake-style strategy's per-brand
    ``vllm.install``, else the KV offload option's ``install``."""
    spec = catalog.strategies.get(kv_offload)
    if get(spec, "deploy_type") != "kv_store_lb":
        return None, get(catalog.kv_offload_options.get(kv_offload), "install")
    inst = get(get(spec, "vllm"), "install")
    return get(spec, "min_vllm_version"), get(inst, meta.brand_key) if is_map(inst) else inst


def _install_command(tab: Mapping[str, Any], cfg: Mapping[str, Any], method: str,
                     meta: DockerMeta) -> tuple[str | None, str | None, tuple[str, str] | None, str]:
    """``(command, CUDA 12.9 alternative, (image, alternative image), note)`` of one install tab; pip's
    default command is published for NVIDIA only."""
    if not tab or method not in ("docker", "pip"):
        return None, None, None, ""
    custom = truthy(get(cfg.get(method), "command"))
    note = str(tab.get("note") or "")
    if custom:
        return str(tab.get("command")), None, None, note
    if method == "docker":
        alt = cuda129_image(meta)
        return (f"docker pull {meta.image}", f"docker pull {alt}" if alt else None,
                (str(meta.image), alt) if alt else None, note)
    if meta.brand_key != "nvidia":
        return None, None, None, note or ("No default pip command is published for this platform: use the Docker "
                                          "tab, or follow vLLM's installation guide for your accelerator.")
    command = str(tab.get("command"))
    return command, command.replace("cu130", "cu129") if "cu130" in command else None, None, note


def _with_override_note(note: str, r: Mapping[str, Any], profile: Mapping[str, Any]) -> str:
    """``note`` followed by the first ``hardware_overrides`` install note (by generation, then brand)."""
    for ho_key in (gen(profile), str(profile.get("brand") or "").lower()):
        inote = get(get(r.get("hardware_overrides"), ho_key), "install_note") if ho_key else None
        if isinstance(inote, str) and inote:
            return (note + " " + inote).strip()
    return note


def _install_extras(block: Mapping[str, Any], names: set[str], method: str) -> list[InstallExtra]:
    """The install block's extra dependencies that apply to this platform (``brand``/``brands``) and method
    (``install``/``tab``/``method``), each a name or a list."""
    def norm(v: Any) -> Sequence[Any]:
        """A key's values: a list or tuple as is, any other truthy value alone."""
        if isinstance(v, list | tuple):
            return v
        return [v] if v else []

    def listed(dep: Mapping[str, Any], *keys: str) -> set[str]:
        return {str(x).lower() for k in keys for x in norm(dep.get(k))}

    extras = []
    for dep in as_list(block.get("extras")):
        if isinstance(dep, str):
            extras.append(InstallExtra("", dep, "", False))
        elif is_map(dep):
            cmd = dep.get("command")
            brands, methods = listed(dep, "brands", "brand"), listed(dep, "install", "tab", "method")
            applies = (not brands or names & brands) and (not methods or method in methods)
            if isinstance(cmd, str) and cmd and applies:
                extras.append(InstallExtra(str(dep.get("label") or ""), cmd, str(dep.get("note") or ""),
                                           dep.get("optional") is True))
    return extras


def card_summary(catalog: Catalog, recipe: Recipe, st: PageState, ctx: Ctx, plan: Plan) -> tuple[str, bool]:
    sel = st.selection
    hw_name = str(ctx.profile.get("display_name") or sel.hw_id)
    status = get(get(recipe.meta, "hardware"), sel.hw_id)
    if status == "verified" and not sel.kv_offload:
        return f"Verified on {hw_name}", True
    # nodes per serving instance: multi-node strategies, also as a Mooncake instance (PD pools have their own rows)
    nodes = plan.node_count if isinstance(plan, MultiNodePlan | KvStorePlan) else 1
    prefix = f"{nodes} x " if nodes > 1 else ""
    if isinstance(plan, PdPlan):
        mid = "PD cluster"
    elif sel.strategy == "single_node_tp" and is_number(ctx.single_node_tp):
        mid = f"TP={ctx.single_node_tp}"
    else:
        mid = _label(sel.strategy, catalog.strategies.get(sel.strategy))
    precision = str(ctx.variant.get("precision") or "").upper()
    parts = [prefix + hw_name, mid, precision]
    if sel.kv_offload:
        parts.append(_label(sel.kv_offload, _kv_spec(catalog, sel.kv_offload)))
    return " · ".join(p for p in parts if p), False


def hardware_note(recipe: Recipe, hw_id: str) -> dict[str, Any] | None:
    """``hardware_notes[hw]``: a string, or ``{title, body, link}`` (``link``: a URL or ``{href, label}``;
    only ``http(s)://``, site paths and in-page anchors are kept)."""
    note = get(recipe.data.get("hardware_notes"), hw_id)
    if isinstance(note, str) and note:
        return {"title": "", "body": note, "href": None, "label": None}
    if not is_map(note):
        return None
    link = note.get("link")
    href, label = (link, link) if isinstance(link, str) else (get(link, "href"), get(link, "label"))
    ok = safe_link(href)
    return {"title": str(note.get("title") or ""), "body": str(note.get("body") or ""),
            "href": href if ok else None, "label": str(label or href) if ok else None}


def target_vars(plan: Plan) -> tuple[str, str, int]:
    """Env-panel host/port variable names and the snippets' default port (ui.md)."""
    if isinstance(plan, PdPlan):
        return "ROUTER_HOST", "ROUTER_PORT", 30000
    if isinstance(plan, KvStorePlan) and plan.router is not None:
        return "ROUTER_HOST", "ROUTER_PORT", 30080
    if isinstance(plan, MultiNodePlan):
        return "HEAD_IP", "VLLM_PORT", 8000
    return "VLLM_HOST", "VLLM_PORT", 8000


def env_names(texts: list[str], first: list[str]) -> list[str]:
    """The target variables, then every other ``$NAME`` in the commands, in order of appearance."""
    seen = dict.fromkeys(first)
    for t in texts:
        for m in _ENV_NAME.finditer(t):
            seen.setdefault(m.group(1))
    return list(seen)


def block_views(plan: Plan, blocks: list[Block], nav: Nav) -> list[BlockView]:
    out = [BlockView(b.key, b.title, b.text, b.kind, b.description) for b in blocks]
    if isinstance(plan, PdPlan):
        for bv in out:
            rp = plan.prefill if bv.key == "prefill" else plan.decode if bv.key == "decode" else None
            if rp is None:
                continue
            nodes = int(rp.meta.get("nodes") or 1)
            cur = int(rp.meta.get("currentNode") or 0)
            if nodes > 1:
                bv.pickers.append(Row(f"{bv.key}-rank", f"{bv.title} node", [
                    Pill(str(i), href=nav.href(**{f"{bv.key}_rank": None if i == 0 else str(i)}), active=i == cur,
                         key=f"{bv.key}-rank-{i}", title=f"{bv.title} node {i} of {nodes}") for i in range(nodes)],
                    compact=True))
    if isinstance(plan, KvStorePlan) and plan.instances > 1:
        for bv in out:
            if bv.kind == "serve":
                bv.pickers.append(Row("kv-instance", "Instance", [
                    Pill(str(i + 1), href=nav.href(kv_instance=None if i == 0 else str(i)), title=f"Instance {i + 1}",
                         active=i == plan.current_instance, key=f"inst-{i}") for i in range(plan.instances)],
                    compact=True))
    return out


def build_view(catalog: Catalog, recipe: Recipe, st: PageState, ctx: Ctx, plan: Plan,
               extra: Mapping[str, str]) -> BuilderView:
    """The complete builder for one resolved state."""
    params = canonical_params(catalog, recipe, st)
    nav = Nav(catalog, recipe, params, extra)
    rows = [hardware_row(catalog, recipe, st, nav), variant_row(catalog, recipe, st, nav),
            strategy_row(catalog, recipe, st, nav), kv_row(catalog, recipe, st, ctx, plan, nav),
            nodes_row(catalog, recipe, st, nav) if st.selection.strategy != "pd_cluster" else None,
            *pd_rows(catalog, recipe, st, plan, nav),
            frontend_row(catalog, recipe, st, nav, frontend_in_effect(ctx, plan)),
            features_row(catalog, recipe, st, nav), advanced_row(catalog, recipe, st, nav)]

    blocks = deployment_blocks(ctx, plan, st.install)
    host_var, port_var, port = target_vars(plan)
    title, verified = card_summary(catalog, recipe, st, ctx, plan)
    return BuilderView(
        hf_id=recipe.hf_id, url=nav.url_for(params), query=encode(params), rows=[r for r in rows if r],
        card_title=title, verified=verified, hardware_note=hardware_note(recipe, st.selection.hw_id),
        install=install_core(catalog, recipe, st.selection.variant_key, st.selection.hw_id, ctx.profile,
                             meta_for(ctx), st.install, install_pills(st.install_tabs, st.install, nav.href),
                             st.selection.kv_offload),
        blocks=block_views(plan, blocks, nav), all_text=deployment_text(blocks),
        snippets=[Snippet.at(key, title, fill(tpl, model=ctx.model_id), port) for key, title, tpl in SNIPPETS],
        host_var=host_var, port_var=port_var, default_port=port,
        env_names=env_names([b.text for b in blocks], [host_var, port_var]), explain=explain_json(catalog, plan),
    )
