"""The website and live JSON API as one Starlette application. Nothing is read from disk at request time
(static assets are read once, at start): every URL segment is a catalog lookup key, never part of a file
path. Builder fragments, guides and live-API answers are kept in LRUs keyed by the request."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from functools import cached_property, lru_cache, partial, wraps
from html import escape
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from jinja2 import BytecodeCache, Environment, FileSystemBytecodeCache, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route

from vllm_recipes.api.llms import llms_files
from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.catalog.parsecache import cache_dir, private_dir
from vllm_recipes.catalog.usable import fails_validation, recipe_errors, usable_catalog
from vllm_recipes.jsvalues import as_list
from vllm_recipes.lint.vllm_plan import lint_plan
from vllm_recipes.render.unsafe import UnsafeValue
from vllm_recipes.select.request import SelectionError
from vllm_recipes.service.fit import fit_payload
from vllm_recipes.service.perf import perf_payload, recommend_payload
from vllm_recipes.service.url import (
    canonical_params,
    encode,
    page_state,
    page_url,
    query_string,
    recipe_url,
)

from . import markdown as md
from . import twins
from .assets import IMMUTABLE, LIVE_HEADERS, PUBLIC_HEADERS, REVALIDATE, AssetStore
from .builder import build_view
from .deploy import Reply, deploy_tabs, export_error, export_reply
from .fit import CTX_PARAM, fit_panel, page_extra
from .live_api import StaticApi, etag_matches, etag_of, resolve_payload
from .omni import build_omni_view
from .perf import PERF_PARAMS, perf_panel
from .perf import page_extra as perf_extra
from .security import SecurityMiddleware, answers_json, error_fields, error_html
from .site import SiteIndex, fmt_int

log = logging.getLogger("vllm_recipes.web")
PACKAGE_DIR = Path(__file__).resolve().parent
STATIC_DIR = PACKAGE_DIR / "static"
TEMPLATE_DIR = PACKAGE_DIR / "templates"
#: raw query items, hashable (the caches' keys)
Items = tuple[tuple[str, str], ...]
#: a builder's ``(notices, body HTML, canonical URL, status)``
Body = tuple[list[str], str, str, int]


def template_bytecode_cache() -> BytecodeCache | None:
    """Compiled templates kept between starts, beside the parse cache (off with it): compiling them is
    most of a fresh process's first request (~0.1-0.2 s)."""
    folder = cache_dir()
    if folder is None or not private_dir(folder) or not private_dir(folder / "templates"):
        return None  # (compiled templates are code: never from a directory others can write)
    return FileSystemBytecodeCache(str(folder / "templates"))


#: the live API's computed answers (``/api/<kind>``; ``export`` is :func:`export_reply`'s): payload, failure
ANSWERS: dict[str, tuple[Callable[[Catalog, list[tuple[str, str]]], Any], str]] = {
    "resolve": (resolve_payload, "The selection could not be synthesized"),
    "fit": (fit_payload, "The fit could not be computed"),
    "perf": (perf_payload, "The estimate could not be computed"),
    "recommend": (recommend_payload, "The recommendation could not be computed"),
}


class Web:
    """Per-app state: the catalog, its indexes, the template environment and caches."""

    def __init__(self, catalog: Catalog, *, api_jobs: int | None = 1) -> None:
        self.catalog = catalog
        self.index = SiteIndex(catalog)
        self.api = StaticApi(catalog, jobs=api_jobs)
        self.env = Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), trim_blocks=True, lstrip_blocks=True,
                               autoescape=select_autoescape(["html"]), bytecode_cache=template_bytecode_cache())
        self.assets = AssetStore(STATIC_DIR)
        self.env.globals.update(asset_url=self.assets.url, fmt_int=fmt_int, index=self.index, deploy_tabs=deploy_tabs)
        # answers by the request that asked for them (thread-safe LRUs): a page costs a lookup once warm
        self.builder = lru_cache(maxsize=1024)(self._builder)
        self.guide = lru_cache(maxsize=256)(self._guide)
        self.answer = lru_cache(maxsize=1024)(self._answer)
        self._translations: dict[str, dict[str, Any]] = {}
        self.search_json = json.dumps(self.index.search_index, ensure_ascii=False, separators=(",", ":")).encode()
        self.search_etag = etag_of(self.search_json)
        self.llms = lru_cache(maxsize=8)(partial(llms_files, catalog))  # per base URL: Host headers vary

    @cached_property
    def openapi_json(self) -> bytes:
        """The OpenAPI document (made when first asked for: nothing on the way to the first page needs it)."""
        from .openapi import openapi_spec

        return json.dumps(openapi_spec(), indent=2).encode()

    def render(self, name: str, **ctx: Any) -> str:
        return self.env.get_template(name).render(**ctx)

    def warm(self) -> None:
        """Build the static API and render every recipe's default page once, before serving (blocking)."""
        self.api.build()
        for recipe in self.catalog.recipes:
            try:
                self.translations_of(recipe)
                self.guide(recipe.hf_id, None)
                self.builder(recipe.hf_id, (), ())
            except Exception:  # a broken recipe shows its error on its page, not at startup
                log.exception("warming %s failed", recipe.hf_id)

    # --- translations ------------------------------------------------------------------------

    def translations_of(self, recipe: Recipe) -> dict[str, Any]:
        """The checked translations of one recipe, by language: only its own, as checking one renders
        every offered selection of its recipe (~1 s for a large one)."""
        got = self._translations.get(recipe.hf_id)
        if got is None:
            try:
                from vllm_recipes.i18n import translations_for

                got = translations_for(self.catalog, recipe)
            except Exception:  # translations are optional; the page works without them
                log.exception("loading the translations of %s failed", recipe.hf_id)
                got = {}
            self._translations[recipe.hf_id] = got
        return got

    # --- builder -------------------------------------------------------------------------------

    def _builder(self, hf_id: str, items: Items, extra: Items) -> tuple[str, str, int]:
        """``(builder HTML incl. wrapper, canonical URL, status)`` for a recipe and raw query items."""
        recipe = self.catalog.recipe(hf_id)
        assert recipe is not None
        render = self._omni_body if recipe.is_omni else self._body
        notices, body, url, status = render(recipe, items, dict(extra))
        notice_html = self.render("notices.html", notices=notices) if notices else ""
        wrapper = (f'<div id="builder" class="builder" data-url="{Markup.escape(url)}" '
                   f'data-recipe="{Markup.escape(recipe.hf_id)}">{notice_html}{body}</div>')
        return wrapper, url, status

    def _body(self, recipe: Recipe, items: Items, extra: dict[str, str]) -> Body:
        agreed, notices = page_state(self.catalog, recipe, items)
        st = agreed.state
        try:
            ctx, plan = agreed.resolved(self.catalog, recipe)
            view = build_view(self.catalog, recipe, st, ctx, plan, extra)
            body = self.render("builder.html", v=view, vllm_lint=lint_plan(ctx, plan),
                               fit=fit_panel(self.catalog, recipe, ctx, plan, view.url, extra),
                               perf=perf_panel(self.catalog, recipe, st, view.url, extra))
            return notices, body, view.url, 200
        except Exception as exc:  # an engine failure on some selection: say so, never 500
            canon = encode(canonical_params(self.catalog, recipe, st))
            log_failure(exc, self.catalog, recipe.hf_id, "builder failed for %s?%s", recipe.hf_id, canon)
            return notices, *self._failed(exc, page_url("/" + recipe.hf_id, canon))

    def _omni_body(self, recipe: Recipe, items: Items, extra: dict[str, str]) -> Body:
        try:
            view, notices = build_omni_view(self.catalog, recipe, items, extra)
            return notices, self.render("omni_builder.html", v=view), view.url, 200
        except Exception as exc:
            log_failure(exc, self.catalog, recipe.hf_id, "omni builder failed for %s", recipe.hf_id)
            return [], *self._failed(exc, recipe_url(recipe.hf_id))

    def _failed(self, exc: Exception, url: str) -> tuple[str, str, int]:
        return self.render("builder_error.html", message=f"{type(exc).__name__}: {exc}", url=url), url, 422

    # --- guide ---------------------------------------------------------------------------------

    def _guide(self, hf_id: str, lang: str | None) -> tuple[str, str | None]:
        """``(guide HTML, page-level stale notice)`` in the recipe's language or a translation."""
        recipe = self.catalog.recipe(hf_id)
        assert recipe is not None
        if not lang:
            guide = recipe.data.get("guide")
            return (md.render_markdown(guide) if isinstance(guide, str) else ""), None
        from vllm_recipes.i18n import compose_guide, page_notice

        t = self.translations_of(recipe)[lang]
        parts = []
        for block in compose_guide(recipe, t):
            parts.append(block.notice_html(lang))
            text = md.render_markdown(block.anchored_markdown, with_attrs=True)
            if block.lang != lang:
                text = f'<div lang="{block.lang}">{text}</div>'
            parts.append(text)
        return md.sanitize("\n".join(parts)), page_notice(recipe, t)

    # --- the live API ------------------------------------------------------------------------------

    def _answer(self, kind: str, items: Items) -> Reply:
        """``/api/<kind>``: 400 on a bad selection, 422 on an engine failure (never a 500)."""
        try:
            if kind == "export":
                return export_reply(self.catalog, list(items))
            payload, failure = ANSWERS[kind]
            status, body = 200, json.dumps(payload(self.catalog, list(items)), indent=2, ensure_ascii=False)
        except SelectionError as exc:
            status, body = 400, json.dumps(exc.to_dict(), ensure_ascii=False)
        except Exception as exc:  # an engine failure: a readable error, never a 500
            log_failure(exc, self.catalog, dict(items).get("model"), "%s failed for %s", kind, items)
            if kind == "export":
                return export_error(422, f"The deployment could not be exported: {type(exc).__name__}: {exc}")
            status, body = 422, json.dumps(error_fields(f"{failure}: {type(exc).__name__}: {exc}"))
        return Reply(status, body, "application/json", LIVE_HEADERS)


# --- helpers ------------------------------------------------------------------------------------


def _web(request: Request) -> Web:
    return request.app.state.web  # type: ignore[no-any-return]


def _query_items(request: Request, drop: tuple[str, ...] = ()) -> Items:
    return tuple((k, v) for k, v in request.query_params.multi_items() if k not in drop)


def json_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse(error_fields(message), status_code=status, headers=headers)


def error_page(request: Request, status: int, message: str) -> Response:
    """An error in the asker's format: JSON for the API, else the error page."""
    if answers_json(request.url.path):
        return json_error(status, message)
    return HTMLResponse(error_html(status, message), status_code=status)


def _moved(request: Request, path: str, items: Items | None = None) -> Response:
    """A permanent redirect to ``path``, with the request's query (or ``items``)."""
    query = query_string(_query_items(request) if items is None else items)
    return RedirectResponse(page_url(path, query), status_code=301)


def _tagged(request: Request, data: bytes, tag: str, media_type: str, headers: Mapping[str, str]) -> Response:
    """``data`` with its ETag, or 304 when the client has it (``If-None-Match``)."""
    headers = {"ETag": tag, **headers}
    if etag_matches(request.headers.get("if-none-match"), tag):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=media_type, headers=headers)


def not_found(request: Request, recipe_like: bool = False) -> Response:
    web = _web(request)
    if answers_json(request.url.path):
        return json_error(404, "Not found.")
    path = "/".join(s for s in request.url.path.split("/") if s)
    org_repo = recipe_like and path.count("/") == 1
    broken = web.catalog.load_error_for(path) if org_repo else None
    html = web.render("not_found.html", recipe_like=recipe_like, path=path, broken=str(broken) if broken else None,
                      suggestions=web.catalog.close_matches(path, n=3) if org_repo else [])
    return HTMLResponse(html, status_code=404)


def log_failure(exc: Exception, catalog: Catalog, model_id: str | None, what: str, *args: Any) -> None:
    """An engine failure on a validate-clean recipe is a bug: logged with its traceback. On a recipe that
    fails validation (only ``serve --watch`` serves those; the engine is promised only what validation
    passes), and for a value the rendering refuses (:class:`UnsafeValue`), it is the recipe's error: one line."""
    found = catalog.find(model_id) if model_id else None
    if isinstance(exc, UnsafeValue) or (found is not None and fails_validation(catalog, found[0])):
        log.warning(what + ": %s: %s (the recipe fails validation)", *args, type(exc).__name__, exc)
    else:
        log.error(what, *args, exc_info=exc)


# --- pages -------------------------------------------------------------------------------------


#: the longest a page or API answer may compute (issue #28.1); the event loop stays free meanwhile
REQUEST_TIME_LIMIT_S = 30.0


def off_loop(handler: Callable[[Request], Response]) -> Callable[[Request], Any]:
    """Run a CPU-bound handler in a worker thread with a time limit, so that one slow recipe never
    stalls ``/robots.txt`` or another recipe's page. Past the limit the visitor gets a 503 (the thread
    finishes its bounded work in the background; derived counts are bounded, see select/gates.py)."""

    @wraps(handler)
    async def endpoint(request: Request) -> Response:
        try:
            with anyio.fail_after(REQUEST_TIME_LIMIT_S):  # (anyio's worker threads: 40 per event loop)
                return await anyio.to_thread.run_sync(handler, request, abandon_on_cancel=True)
        except TimeoutError:
            log.warning("%s took over %.0f s; answered 503", request.url.path, REQUEST_TIME_LIMIT_S)
            return error_page(request, 503, f"This answer took longer than {REQUEST_TIME_LIMIT_S:.0f} s to "
                                            "compute; try again later.")

    return endpoint


def _negotiated(response: Response) -> Response:
    """An HTML page that has a JSON twin: caches must key on ``Accept`` too."""
    response.headers.append("Vary", "Accept")
    return response


async def home(request: Request) -> Response:
    web = _web(request)
    if twins.wants_twin(request):
        return twins.json_response(twins.home_json(web.index))
    return _negotiated(HTMLResponse(web.render("home.html", latest=web.index.latest,
                                               providers=web.index.provider_grid)))


async def browse(request: Request) -> Response:
    web = _web(request)
    result = web.index.browse(dict(request.query_params))
    if twins.wants_twin(request):
        url = "/browse" + ("?" + request.url.query if request.url.query else "")
        return twins.json_response(twins.browse_json(result, url))
    return _negotiated(HTMLResponse(web.render("browse.html", r=result)))


async def llms_file(request: Request) -> Response:
    web = _web(request)
    name = request.url.path.lstrip("/")
    base = str(request.base_url).rstrip("/")
    return Response(web.llms(base)[name], media_type="text/plain; charset=utf-8", headers=PUBLIC_HEADERS)


async def sitemap(request: Request) -> Response:
    web = _web(request)
    base = str(request.base_url).rstrip("/")
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for path, lastmod in web.index.sitemap_entries():
        # (the stdlib's xml.sax.saxutils.escape does the same, but imports urllib.request, http and email)
        lines.append(f"  <url><loc>{escape(base + page_url(path), quote=False)}</loc>"
                     + (f"<lastmod>{escape(lastmod, quote=False)}</lastmod>" if lastmod else "") + "</url>")
    lines.append("</urlset>")
    return Response("\n".join(lines) + "\n", media_type="application/xml")


async def robots(request: Request) -> Response:
    base = str(request.base_url).rstrip("/")
    return PlainTextResponse(f"User-agent: *\nAllow: /\nDisallow: /api/resolve\n\nSitemap: {base}/sitemap.xml\n")


async def search_index(request: Request) -> Response:
    web = _web(request)
    return _tagged(request, web.search_json, web.search_etag, "application/json",
                   {"Cache-Control": REVALIDATE})


async def openapi(request: Request) -> Response:
    return Response(_web(request).openapi_json, media_type="application/json", headers=PUBLIC_HEADERS)


async def health(request: Request) -> Response:
    """Liveness, and whether the static API is built."""
    web = _web(request)
    ready = web.api.ready
    return JSONResponse({"ok": True, "warm": ready, "recipes": len(web.catalog.recipes), "api": ready,
                         "warm_error": web.api.error}, headers={"Cache-Control": "no-store"})


async def static_asset(request: Request) -> Response:
    """Our CSS/JS: fingerprinted names are immutable, plain names revalidate."""
    found = _web(request).assets.find(request.path_params["name"])
    if found is None:
        return not_found(request)
    asset, immutable = found
    return _tagged(request, asset.data, asset.etag, asset.media_type,
                   {"Cache-Control": IMMUTABLE if immutable else REVALIDATE})


def api_answer(kind: str, request: Request) -> Response:
    """``/api/resolve``, ``/api/fit``, ``/api/perf``, ``/api/recommend`` and ``/api/export``."""
    reply = _web(request).answer(kind, _query_items(request))
    return Response(reply.body, status_code=reply.status, media_type=reply.media_type, headers=reply.headers)


def static_json(request: Request, path: str) -> Response:
    web = _web(request)
    got = web.api.get(path)
    if got is None:
        detail = f"No API file /{path}." + (f" ({web.api.error})" if web.api.error else "")
        return json_error(404, detail, {"Access-Control-Allow-Origin": "*"})
    data, tag = got
    return _tagged(request, data, tag, "application/json", PUBLIC_HEADERS)


def provider_page(request: Request, org: str, suffix: str = "") -> Response:
    web = _web(request)
    provider = web.index.provider(org)
    if provider is None:
        return not_found(request)
    if provider.org != org:
        return _moved(request, "/" + provider.org + suffix)
    if twins.wants_json(request) or suffix:
        return twins.json_response(twins.provider_json(web.index, provider))
    return _negotiated(HTMLResponse(web.render("provider.html", p=provider,
                                               groups=web.index.provider_groups(provider))))


def _lookup_recipe(request: Request, org: str, repo: str, suffix: str = "") -> Recipe | Response:
    web = _web(request)
    hf = f"{org}/{repo}"
    recipe = web.catalog.recipe(hf)
    if recipe is None:
        parent = web.catalog.variant_parent(hf)
        if parent is None:
            return not_found(request, recipe_like=True)
        rec, vk = parent
        chosen = () if vk == "default" else (("variant", vk),)
        return _moved(request, "/" + rec.hf_id + suffix, chosen + _query_items(request, drop=("variant",)))
    if recipe.hf_id != hf:
        return _moved(request, "/" + recipe.hf_id + suffix)
    return recipe


def _lang(request: Request, recipe: Recipe) -> tuple[str | None, dict[str, Any]]:
    web = _web(request)
    available = web.translations_of(recipe)
    if not available:
        return None, {}
    from vllm_recipes.i18n import negotiate_language

    lang = negotiate_language(request.query_params.get("lang"), request.headers.get("accept-language"), available)
    return lang, available


def recipe_page(request: Request, recipe: Recipe) -> Response:
    web = _web(request)
    if twins.wants_json(request):
        return recipe_twin(request, recipe)
    lang, available = _lang(request, recipe)
    builder_html, url, status = _builder(request, recipe)
    guide_html, page_notice = web.guide(recipe.hf_id, lang)
    header = None
    if lang:
        from vllm_recipes.i18n import translated_header

        header = translated_header(recipe, available[lang])
    related: list[tuple[str, str | None]] = []  # display-only: any type validates (with a warning)
    for rid in as_list(recipe.meta.get("related_recipes")):
        if isinstance(rid, str):
            other = web.catalog.recipe(rid)
            related.append((rid, "/" + other.hf_id if other else None))
    from .authoring import page_authoring

    authoring = page_authoring(request.app.state, str(request.base_url), web.catalog, recipe, url)
    description = (header["description"].text if header and "description" in header
                   else str(recipe.meta.get("description") or ""))
    html = web.render("recipe.html", recipe=recipe, url=url, builder=Markup(builder_html), authoring=authoring,
                      guide=Markup(guide_html), lang=lang, languages=sorted(available), header=header,
                      page_notice=page_notice, related=related, desc_html=Markup(md.render_inline(description)))
    headers = {"Vary": "Accept-Language"} if available else {}
    return _negotiated(HTMLResponse(html, status_code=status, headers=headers))


def recipe_twin(request: Request, recipe: Recipe) -> Response:
    """The recipe page's state at the URL's selection, as JSON (lenient, like the page)."""
    web = _web(request)
    items = _query_items(request, drop=("lang",))
    lang = _lang(request, recipe)[0]
    try:
        data = twins.recipe_page_json(web.catalog, web.index, recipe, items, lang)
    except Exception as exc:  # an engine failure on some selection: say so, never 500
        log_failure(exc, web.catalog, recipe.hf_id, "page twin failed for %s", recipe.hf_id)
        message = f"The selection could not be synthesized: {type(exc).__name__}: {exc}"
        return twins.json_response(error_fields(message), status=422)
    return twins.json_response(data)


def _builder(request: Request, recipe: Recipe) -> tuple[str, str, int]:
    """The builder at the request's selection; ``lang`` and the panels' parameters ride on its links."""
    lang = request.query_params.get("lang")
    extra = {"lang": lang} if lang and len(lang) <= 35 else {}
    extra.update(page_extra(request.query_params))
    extra.update(perf_extra(request.query_params))
    items = _query_items(request, drop=("lang", CTX_PARAM, *PERF_PARAMS))
    return _web(request).builder(recipe.hf_id, items, tuple(extra.items()))


def builder_fragment(request: Request, recipe: Recipe) -> Response:
    html, url, status = _builder(request, recipe)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-cache", "X-Canonical-URL": url})


# --- the catalog's own paths (after the fixed routes, in this order) --------------------------------


def _is_dot(*segments: str) -> bool:
    return any(seg in (".", "..") for seg in segments)


def top_json(request: Request) -> Response:
    """``/{name}.json``: a static API file of that name, else a provider page's JSON twin."""
    name = request.path_params["name"]
    static = static_json(request, f"{name}.json")
    if static.status_code != 404 or _web(request).index.provider(name) is None:
        return static
    return provider_page(request, name, ".json")


def api_file(request: Request) -> Response:
    """Any other ``*.json`` path: a file of the static JSON API."""
    return static_json(request, request.path_params["path"] + ".json")


def provider_route(request: Request) -> Response:
    org = request.path_params["org"]
    return not_found(request) if _is_dot(org) else provider_page(request, org)


def recipe_route(answer: Callable[[Request, Recipe], Response], suffix: str = "") -> Callable[[Request], Any]:
    """The endpoint of ``/{org}/{repo}{suffix}``: ``answer`` for the recipe there (else a redirect or a 404);
    a recipe that fails validation gets its refusal page, never a 500."""

    def endpoint(request: Request) -> Response:
        org, repo = request.path_params["org"], request.path_params["repo"]
        if _is_dot(org, repo):
            return not_found(request)
        try:
            recipe = _lookup_recipe(request, org, repo, suffix)
            return recipe if isinstance(recipe, Response) else answer(request, recipe)
        except Exception as exc:
            refused = invalid_recipe_page(request, f"{org}/{repo}", exc)
            if refused is None:
                raise  # a failure on a validate-clean recipe is a bug: the 500 handler logs its traceback
            return refused

    return off_loop(endpoint)


def invalid_recipe_page(request: Request, hf_id: str, exc: Exception) -> Response | None:
    """The page of a recipe that fails validation and could not be shown (``serve --watch`` serves those):
    422 with its first findings (JSON on a ``.json`` path), logged in one line; ``None`` for any other recipe."""
    web = _web(request)
    found = None if web.catalog.usable else web.catalog.find(hf_id)
    errors = recipe_errors(web.catalog, found[0]) if found else []
    if not errors:
        return None
    log_failure(exc, web.catalog, hf_id, "recipe page failed for %s", hf_id)
    lines = "; ".join(f.format() for f in errors[:5])
    return error_page(request, 422, f"{hf_id} fails validation, so its page cannot be shown: {lines}")


def elsewhere(request: Request) -> Response:
    """No route matched: a trailing slash redirects to the page without it (query kept), else 404."""
    segs = request.path_params["path"].split("/")
    if len(segs) > 1 and segs[-1] == "" and "" not in segs[:-1] and not _is_dot(*segs):
        return _moved(request, "/" + "/".join(segs[:-1]))
    return not_found(request)


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    if status == 404:
        return not_found(request)
    return error_page(request, status, str(getattr(exc, "detail", "Error")))


async def _server_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s", request.url.path, exc_info=exc)
    return error_page(request, 500, "Internal error.")


def create_app(catalog: Catalog | None = None, *, api_jobs: int | None = 1, build_api_now: bool = False,
               warm_in_background: bool = False, authoring: Any = None) -> Starlette:
    """The ASGI app (``catalog``: :func:`load_catalog`'s by default). ``build_api_now`` warms every cache first;
    ``warm_in_background`` (``serve``) builds the static JSON API in a background process once the server listens;
    ``authoring`` (an :class:`~.authoring.AuthoringState`) adds edit/report links and the findings panel to recipe
    pages."""
    if catalog is None:
        catalog = load_catalog()
    if not catalog.usable:
        # a recipe with validation errors never reaches the engine (decisions-hardening.md)
        catalog, skipped = usable_catalog(catalog)
        for finding in skipped:
            log.warning("skipping %s", finding.format())
    web = Web(catalog, api_jobs=api_jobs)
    if build_api_now:
        web.warm()

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        import asyncio

        from vllm_recipes.httplimits import quiet_accept_errors

        quiet_accept_errors(asyncio.get_running_loop())  # one line per failed accept(), not a traceback
        if warm_in_background:
            web.api.build_in_background()
        yield

    routes = [
        Route("/", home),
        Route("/browse", browse),
        Route("/browse.json", browse),
        Route("/index.json", home),
        Route("/llms.txt", llms_file),
        Route("/llms-full.txt", llms_file),
        Route("/sitemap.xml", sitemap),
        Route("/robots.txt", robots),
        Mount("/api", routes=[
            *(Route(f"/{kind}", off_loop(partial(api_answer, kind))) for kind in ("export", *ANSWERS)),
            Route("/health", health),
            Route("/openapi.json", openapi),
            Route("/search.json", search_index),
        ]),
        Route("/static/{name}", static_asset),
        Route("/{org}/{repo}/page.json", recipe_route(recipe_twin, "/page.json")),
        Route("/{org}/{repo}/builder", recipe_route(builder_fragment, "/builder")),  # swapped in by the page script
        Route("/{name}.json", off_loop(top_json)),
        Route("/{path:path}.json", off_loop(api_file)),
        Route("/{org}", off_loop(provider_route)),
        Route("/{org}/{repo}", recipe_route(recipe_page)),
        Route("/{path:path}", elsewhere),
    ]
    from starlette.exceptions import HTTPException

    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error, 500: _server_error},
                    lifespan=lifespan)
    app.state.web = web
    app.state.authoring = authoring
    app.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=6)  # (inside the security layer)
    app.add_middleware(SecurityMiddleware)
    return app


def create_served_app() -> Starlette:
    """Factory for ``uvicorn --factory`` (``serve --reload``/``--workers``): reads ``$VLLM_RECIPES_DIR``."""
    import os

    from .authoring import AuthoringState, SourceLinks

    source_url = os.environ.get("VLLM_RECIPES_SOURCE_URL")
    authoring = AuthoringState(SourceLinks.parse(source_url)) if source_url else None
    return create_app(api_jobs=1, warm_in_background=True, authoring=authoring)
