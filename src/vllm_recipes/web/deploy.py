"""The recipe page's "Deploy" tabs and ``/api/export``: both ask :func:`vllm_recipes.service.answers.export`
like ``vllm-recipes export -o -`` and the MCP tool, so all give the same bytes for a selection."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

from vllm_recipes.catalog import Catalog
from vllm_recipes.render.artifacts import MEDIA_SHELL, MEDIA_YAML, default_name
from vllm_recipes.render.export import TARGETS, ExportOptions, stdout_text
from vllm_recipes.render.unsafe import UnsafeValue
from vllm_recipes.service import CannotExport, QueryError
from vllm_recipes.service.answers import Export, export
from vllm_recipes.service.url import query_from_items, query_string

from .assets import LIVE_HEADERS
from .security import error_fields
from .wording import deploy_refusal

#: options of ``/api/export`` that are not builder state
EXPORT_OPTIONS = ("to", "namespace", "name", "pvc", "image", "download")


def download_name(done: Export) -> str:
    shown = [a for a in done.artifacts if a.path != "kustomization.yaml"]
    if len(shown) == 1 and done.target != "k8s":
        return shown[0].path
    ext = {MEDIA_YAML: "yaml", MEDIA_SHELL: "sh"}.get(done.media_type, "txt")
    return f"{default_name(done.recipe.hf_id)}-{done.target}.{ext}"


@dataclass(frozen=True)
class DeployTab:
    key: str
    label: str
    #: ``/api/export`` URL of the artifact (shown inline by the page script, opened directly without it)
    href: str


def deploy_tabs(hf_id: str, query: str) -> list[DeployTab]:
    """One tab per target for the builder's canonical ``query``: a link, not the rendered artifact
    (the builder stays fast; the page fetches the CLI's bytes from ``/api/export``)."""
    params = [("model", hf_id), *parse_qsl(query, keep_blank_values=True)]
    return [DeployTab(key, label, "/api/export?" + query_string([*params, ("to", key)]))
            for key, (_render, label) in TARGETS.items()]


@dataclass(frozen=True)
class Reply:
    """A live-API answer, kept as is: ``/api/export``'s artifact text or the others' JSON, or a JSON error."""

    status: int
    body: str
    media_type: str
    headers: Mapping[str, str]


def export_error(status: int, message: str, param: str | None = None, choices: list[str] | None = None,
           page: str | None = None) -> Reply:
    """A JSON error; ``page`` is the same reason in the recipe page's words (its Deploy tab shows it)."""
    fields = error_fields(message, param, choices or ())
    if page:
        fields["page"] = page
    body = json.dumps(fields, ensure_ascii=False)
    return Reply(status, body, "application/json", {"Access-Control-Allow-Origin": "*"})


def export_reply(catalog: Catalog, items: list[tuple[str, str]]) -> Reply:
    """``/api/export?model=...&<builder parameters>&to=k8s``: the artifact text, or a JSON error."""
    opts: Mapping[str, str] = {k: v.strip() for k, v in items if k in EXPORT_OPTIONS}
    target = opts.get("to", "")
    if target not in TARGETS:
        return export_error(400, f"Parameter 'to' must be one of: {', '.join(TARGETS)}.", "to", list(TARGETS))
    options = ExportOptions(namespace=opts.get("namespace") or "default", name=opts.get("name") or None,
                            pvc=opts.get("pvc") or None, image=opts.get("image") or None)
    try:
        query, _extra = query_from_items([(k, v) for k, v in items if k not in EXPORT_OPTIONS])
        done = export(catalog, query, target, options)
    except CannotExport as exc:
        return export_error(422, str(exc), exc.param, exc.choices, page=deploy_refusal(target, exc.reason))
    except QueryError as exc:
        return export_error(400, str(exc), exc.param, exc.choices)
    except UnsafeValue as exc:  # a value the rendering refuses (a recipe failing validation, serve --watch)
        return export_error(422, f"refusing to render: {exc}", None, None, page=f"Cannot export: {exc}")
    headers = dict(LIVE_HEADERS)
    if opts.get("download"):
        headers["Content-Disposition"] = f'attachment; filename="{download_name(done)}"'
    return Reply(200, stdout_text(done.artifacts), done.media_type, headers)
