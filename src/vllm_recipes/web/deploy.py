"""The "Deploy" tabs of the recipe page and ``/api/export``: scheduler artifacts of a page state.

Framework-free (like ``urlstate`` and ``api``): the CLI and the MCP server import it too.

Both call :func:`export_state`, which the CLI's ``export`` calls too, so the
page, the API and ``vllm-recipes export -o -`` give the same bytes for the
same selection (the header's page URL is the canonical, site-relative one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import parse_qsl, quote, urlencode

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.render.artifacts import MEDIA_SHELL, MEDIA_YAML, Artifact, default_name
from vllm_recipes.render.export import TARGETS, ExportError, ExportOptions, export_artifacts, stdout_text
from vllm_recipes.select.page import PageState, SelectionError, build_state

from .api import error_body, find_model
from .urlstate import canonical_params, encode, parse_params
from .wording import deploy_refusal

#: options of ``/api/export`` that are not builder state
EXPORT_OPTIONS = ("to", "namespace", "name", "pvc", "image", "download")


def page_url(catalog: Catalog, recipe: Recipe, state: PageState) -> str:
    """Site-relative URL of the recipe page showing this selection."""
    query = encode(canonical_params(catalog, recipe, state))
    return f"/{recipe.hf_id}" + (f"?{query}" if query else "")


def export_state(catalog: Catalog, recipe: Recipe, state: PageState, target: str,
                 options: ExportOptions | None = None) -> list[Artifact]:
    """The artifacts of one page state (the CLI, the page and ``/api/export`` all call this)."""
    opts = options or ExportOptions()
    opts = replace(opts, install=state.install, page_url=opts.page_url or page_url(catalog, recipe, state))
    return export_artifacts(catalog, recipe, state.selection, target, opts, co_located=state.pd_co_located)


def media_type(artifacts: list[Artifact]) -> str:
    kinds = {a.media_type for a in artifacts if a.path != "kustomization.yaml"}
    return kinds.pop() if len(kinds) == 1 else "text/plain"


def download_name(recipe: Recipe, target: str, artifacts: list[Artifact]) -> str:
    shown = [a for a in artifacts if a.path != "kustomization.yaml"]
    if len(shown) == 1 and target != "k8s":
        return shown[0].path
    base = default_name(recipe.hf_id)
    ext = {MEDIA_YAML: "yaml", MEDIA_SHELL: "sh"}.get(media_type(artifacts), "txt")
    return f"{base}-{target}.{ext}"


@dataclass(frozen=True)
class DeployTab:
    key: str
    label: str
    #: ``/api/export`` URL of the artifact (shown inline by the page script, opened directly without it)
    href: str


def deploy_tabs(hf_id: str, query: str, is_omni: bool = False) -> list[DeployTab]:
    """One tab per target for the builder's canonical ``query``.

    The page links the artifacts instead of rendering them: the builder stays as fast as
    before, and the text the page shows is fetched from ``/api/export`` (the CLI's bytes).
    """
    if is_omni:
        return []
    params = [("model", hf_id), *parse_qsl(query, keep_blank_values=True)]
    return [DeployTab(key, label, "/api/export?" + urlencode([*params, ("to", key)], quote_via=quote, safe=",:/"))
            for key, (_render, label) in TARGETS.items()]


@dataclass(frozen=True)
class ExportReply:
    """An ``/api/export`` answer: the artifact text, or a JSON error body (4xx)."""

    status: int
    body: str
    media_type: str
    headers: dict[str, str]


def _error(status: int, message: str, param: str | None = None, choices: list[str] | None = None,
           page: str | None = None) -> ExportReply:
    """A JSON error; ``page`` is the same reason in the recipe page's words (its Deploy tab shows it)."""
    fields: dict[str, object] = {"error": message, "param": param, "choices": choices or []}
    if page:
        fields["page"] = page
    body = json.dumps(fields, ensure_ascii=False)
    return ExportReply(status, body, "application/json", {"Access-Control-Allow-Origin": "*"})


def export_reply(catalog: Catalog, items: list[tuple[str, str]]) -> ExportReply:
    """``/api/export?model=...&<builder parameters>&to=k8s``."""
    return export_query(catalog, items)[0]


def export_query(catalog: Catalog, items: list[tuple[str, str]]) -> tuple[ExportReply, list[Artifact]]:
    """The answer to an export query and, when it succeeds, the files behind it (the MCP tool's view)."""
    opts: Mapping[str, str] = {k: v.strip() for k, v in items if k in EXPORT_OPTIONS}
    rest = [(k, v) for k, v in items if k not in EXPORT_OPTIONS and k != "model"]
    target = opts.get("to", "")
    if target not in TARGETS:
        return _error(400, f"Parameter 'to' must be one of: {', '.join(TARGETS)}.", "to", list(TARGETS)), []
    try:
        recipe, vk = find_model(catalog, next((v.strip() for k, v in items if k == "model"), None))
        if recipe.is_omni:
            return _error(400, f"{recipe.hf_id} is an omni recipe; export supports `vllm serve` recipes only.",
                          "model"), []
        if vk is not None and not any(k == "variant" for k, _ in rest):
            rest.append(("variant", vk))
        state = build_state(catalog, recipe, parse_params(rest, strict=True).request, strict=True)
    except SelectionError as exc:
        body = error_body(exc)
        return _error(400, body["error"], body["param"], body["choices"]), []
    options = ExportOptions(namespace=opts.get("namespace") or "default", name=opts.get("name") or None,
                            pvc=opts.get("pvc") or None, image=opts.get("image") or None)
    try:
        arts = export_state(catalog, recipe, state, target, options)
    except ExportError as exc:
        return _error(422, f"Cannot export to {target}: {exc}", "to", page=deploy_refusal(target, str(exc))), []
    headers = {"Access-Control-Allow-Origin": "*", "Cache-Control": "no-cache"}
    if opts.get("download"):
        headers["Content-Disposition"] = f'attachment; filename="{download_name(recipe, target, arts)}"'
    return ExportReply(200, stdout_text(arts), media_type(arts), headers), arts
