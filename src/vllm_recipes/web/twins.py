"""The JSON twin of every HTML page (``Accept: application/json`` or a ``.json`` path; docs/agents.md),
built from the very objects its page renders, so page and JSON cannot disagree."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.service.answers import selection_dict
from vllm_recipes.service.url import page_state

from .assets import LIVE_HEADERS
from .builder import build_view
from .omni import build_omni_view
from .site import BrowseResult, Card, Provider, SiteIndex

JSON_TYPE = "application/json"
TWIN_HEADERS = MappingProxyType({**LIVE_HEADERS, "Vary": "Accept"})


def wants_json(request: Request) -> bool:
    """Content negotiation: JSON when the client ranks ``application/json`` above ``text/html``."""
    accept = request.headers.get("accept", "")
    if "json" not in accept:
        return False
    best = {"json": -1.0, "html": -1.0}
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for p in params:
            if p.startswith("q="):
                try:
                    q = float(p[2:])
                except ValueError:
                    q = 0.0
        media = media.lower()
        if media in ("application/json", "application/*"):
            best["json"] = max(best["json"], q if media == JSON_TYPE else q - 0.001)
        elif media in ("text/html", "text/*", "*/*"):
            best["html"] = max(best["html"], q if media == "text/html" else q - 0.001)
    return best["json"] > 0 and best["json"] >= best["html"]


def wants_twin(request: Request) -> bool:
    """The JSON twin of a page: asked for by ``Accept`` or by a ``.json`` path."""
    return wants_json(request) or request.url.path.endswith(".json")


def json_response(obj: Any, status: int = 200) -> Response:
    body = json.dumps(obj, indent=2, ensure_ascii=False, default=_plain).encode("utf-8")
    return Response(body, status_code=status, media_type=JSON_TYPE, headers=TWIN_HEADERS)


def _plain(value: Any) -> Any:
    """What ``json`` cannot encode itself (markup, tuples and dicts it can): sets as lists, the rest as text."""
    return list(value) if isinstance(value, set | frozenset) else str(value)


def card_json(card: Card) -> dict[str, Any]:
    return {"hf_id": card.hf_id, "title": card.title, "provider": card.provider, "org": card.org,
            "description": card.description, "date_added": card.date_added, "date_updated": card.date_updated,
            "tasks": card.tasks, "architecture": card.arch, "parameters": card.params,
            "active_parameters": card.active, "precisions": card.precisions, "verified_hardware": card.verified,
            "url": card.url, "json": card.url + ".json", "page_json": card.url + "/page.json"}


def home_json(index: SiteIndex) -> dict[str, Any]:
    return {"page": "home", "url": "/", "recipes": len(index.cards),
            "latest": [card_json(c) for c in index.latest],
            "providers": [provider_summary(p) for p in index.provider_grid]}


def provider_summary(p: Provider) -> dict[str, Any]:
    return {"org": p.org, "name": p.name, "url": p.url, "json": p.url + ".json", "recipes": len(p.cards),
            "latest_update": p.latest_update}


def provider_json(index: SiteIndex, p: Provider) -> dict[str, Any]:
    groups = [{"task": task, "label": index.task_label(task) if task != "other" else "Other",
               "recipes": [card_json(c) for c in cards]} for task, cards in index.provider_groups(p)]
    return {"page": "provider", **provider_summary(p), "groups": groups}


def browse_json(result: BrowseResult, url: str) -> dict[str, Any]:
    return {"page": "browse", "url": url, "query": result.query, "count": len(result.cards),
            "recipes": [card_json(c) for c in result.cards],
            "filters": [{"row": row, "label": label, "chips": [dataclasses.asdict(c) for c in chips]}
                        for row, label, chips in result.rows],
            "sorts": [dataclasses.asdict(c) for c in result.sorts], "clear": result.clear_href,
            "filtered": result.active}


def recipe_page_json(catalog: Catalog, index: SiteIndex, recipe: Recipe, items: Sequence[tuple[str, str]],
                     lang: str | None) -> dict[str, Any]:
    """The recipe page at a URL selection, read leniently like the page (an unusable parameter is
    dropped with a notice), so every page URL has a twin; ``/api/resolve`` is the strict form."""
    card = index.by_id.get(recipe.hf_id)
    out: dict[str, Any] = {"page": "recipe", "recipe": card_json(card) if card else {"hf_id": recipe.hf_id},
                           "lang": lang}
    guide = recipe.data.get("guide")
    out["guide_markdown"] = guide if isinstance(guide, str) else None
    if recipe.is_omni:
        omni_view, omni_notices = build_omni_view(catalog, recipe, items, {})
        out.update({"url": omni_view.url, "notices": list(omni_notices), "builder": _view_json(omni_view)})
        return out
    agreed, notices = page_state(catalog, recipe, items)
    ctx, plan = agreed.resolved(catalog, recipe)
    view = build_view(catalog, recipe, agreed.state, ctx, plan, {})
    out.update({
        "url": view.url, "notices": list(notices),
        "selection": selection_dict(catalog, recipe, agreed.state, view.query),
        "commands": [b.as_json() for b in view.blocks],
        "rendering": rendering_object(ctx, plan), "explain": view.explain, "builder": _view_json(view),
    })
    return out


def _view_json(view: Any) -> dict[str, Any]:
    """The builder view as data (rows, pills with their links and disabled reasons, install, blocks)."""
    data = dataclasses.asdict(view)
    data.pop("explain", None)  # carried once, at the top level
    return data
