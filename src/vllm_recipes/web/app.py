"""The website and live JSON API as one Starlette application.

``create_app(catalog)`` loads nothing from disk at request time except our own
static assets (through ``StaticFiles`` on a fixed in-package directory): every
URL segment is a catalog lookup key, never part of a file path. Rendered
builder fragments, guides and resolves are cached in small LRUs keyed by the
canonical selection, so a page costs a dictionary lookup once warm.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Mapping
from functools import cached_property, lru_cache, partial
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape as xml_escape

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
from vllm_recipes.synth.resolve import resolve

from . import markdown as md
from . import twins
from .assets import IMMUTABLE, REVALIDATE, AssetStore
from .builder import build_view
from .deploy import ExportReply, deploy_tabs, export_reply
from .fit import CTX_PARAM, fit_panel, page_extra
from .live_api import CACHE_CONTROL, StaticApi, error_body, etag_matches, openapi_spec, resolve_payload
from .omni import build_omni_view
from .perf import PERF_PARAMS, perf_panel
from .perf import page_extra as perf_extra
from .security import SecurityMiddleware, error_html
from .site import SiteIndex, fmt_int

log = logging.getLogger("vllm_recipes.web")
PACKAGE_DIR = Path(__file__).resolve().parent
STATIC_DIR = PACKAGE_DIR / "static"
TEMPLATE_DIR = PACKAGE_DIR / "templates"


class LRU:
    """A tiny thread-safe LRU (requests may run on several threads under uvicorn workers)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            v = self._d.get(key)
            if v is not None:
                self._d.move_to_end(key)
            return v

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)


def template_bytecode_cache() -> BytecodeCache | None:
    """Compiled templates kept between starts (Jinja's own cache, keyed by each template's source).

    Compiling the page templates is most of the first request's cost on a fresh
    process (~0.1-0.2 s); it lives beside the parse cache and is off with it.
    """
    folder = cache_dir()
    if folder is None or not private_dir(folder) or not private_dir(folder / "templates"):
        return None  # (compiled templates are code: never from a directory others can write)
    return FileSystemBytecodeCache(str(folder / "templates"))


def template_env(bytecode_cache: BytecodeCache | None) -> Environment:
    """The page templates' environment (globals are added per app)."""
    return Environment(loader=FileSystemLoader(str(TEMPLATE_DIR)), autoescape=select_autoescape(["html"]),
                       trim_blocks=True, lstrip_blocks=True, bytecode_cache=bytecode_cache)


class Web:
    """Per-app state: the catalog, its indexes, the template environment and caches."""

    def __init__(self, catalog: Catalog, *, api_jobs: int | None = 1) -> None:
        self.catalog = catalog
        self.index = SiteIndex(catalog)
        self.api = StaticApi(catalog, jobs=api_jobs)
        self.env = template_env(template_bytecode_cache())
        self.assets = AssetStore(STATIC_DIR)
        self.env.globals.update(asset_url=self.assets.url, fmt_int=fmt_int, index=self.index,
                                profiles=catalog.hardware_profiles)
        self.env.globals["deploy_tabs"] = deploy_tabs
        self.state_cache = LRU(4096)
        self.builder_cache = LRU(1024)
        self.guide_cache = LRU(256)
        self.resolve_cache = LRU(1024)
        self._translations: dict[str, dict[str, Any]] | None = None
        self._recipe_translations: dict[str, dict[str, Any]] = {}
        self._tlock = threading.Lock()
        self.search_json = json.dumps(self.index.search_index, ensure_ascii=False, separators=(",", ":")).encode()
        self.search_etag = '"' + hashlib.sha256(self.search_json).hexdigest()[:32] + '"'
        self.llms = lru_cache(maxsize=8)(partial(llms_files, catalog))  # per base URL: Host headers vary

    @cached_property
    def openapi_json(self) -> bytes:
        """The OpenAPI document (made when first asked for: nothing on the way to the first page needs it)."""
        spec = openapi_spec()
        spec["paths"].update(twins.openapi_paths())
        spec["paths"]["/api/health"] = {"get": {
            "summary": "Liveness and whether the static JSON API is built",
            "responses": {"200": {"description": "`ok`, `warm`, `recipes`, `api`, `warm_error`.",
                                  "content": {"application/json": {"schema": {"type": "object"}}}}}}}
        return json.dumps(spec, indent=2).encode()

    def render(self, name: str, **ctx: Any) -> str:
        return self.env.get_template(name).render(**ctx)

    def health(self) -> dict[str, Any]:
        """Liveness, and whether the static API is built (``/api/health``)."""
        return {"ok": True, "warm": self.api.ready, "recipes": len(self.catalog.recipes), "api": self.api.ready,
                "warm_error": self.api.error}

    def warm(self) -> None:
        """Build the static API and render every recipe's default page once, before serving (blocking)."""
        self.api.build()
        self.translations()
        for recipe in self.catalog.recipes:
            try:
                self.guide(recipe, None)
                (self.omni_builder if recipe.is_omni else self.builder)(recipe, [], {})
            except Exception:  # a broken recipe shows its error on its page, not at startup
                log.exception("warming %s failed", recipe.hf_id)

    # --- translations ------------------------------------------------------------------------

    def translations_of(self, recipe: Recipe) -> dict[str, Any]:
        """The checked translations of one recipe, by language (what its page needs).

        Only its own: checking a translation renders every offered selection of its
        recipe (~1 s for a large one), so the first page of any recipe used to pay
        for every translated recipe of the catalog.
        """
        if self._translations is not None:
            return self._translations.get(recipe.hf_id, {})
        got = self._recipe_translations.get(recipe.hf_id)
        if got is None:
            try:
                from vllm_recipes.i18n import translations_for

                got = translations_for(self.catalog, recipe)
            except Exception:  # translations are optional; the page works without them
                log.exception("loading the translations of %s failed", recipe.hf_id)
                got = {}
            self._recipe_translations[recipe.hf_id] = got
        return got

    def translations(self) -> dict[str, dict[str, Any]]:
        if self._translations is None:
            with self._tlock:
                if self._translations is None:
                    try:
                        from vllm_recipes.i18n import load_translations

                        self._translations = load_translations(self.catalog)
                    except Exception:  # translations are optional; the site works without them
                        log.exception("loading translations failed")
                        self._translations = {}
        return self._translations

    # --- builder -------------------------------------------------------------------------------

    def builder(self, recipe: Recipe, items: list[tuple[str, str]], extra: Mapping[str, str]) -> tuple[str, str, int]:
        """``(builder HTML incl. wrapper, canonical URL, status)`` for a recipe and raw query items."""
        key = (recipe.hf_id, tuple(items), tuple(extra.items()))
        hit = self.state_cache.get(key)
        resolution = None  # the frontend check's resolution of this request's state, if it made one
        if hit is None:
            agreed, notices = page_state(self.catalog, recipe, items)
            st, resolution = agreed.state, agreed.resolution
            canon = encode(canonical_params(self.catalog, recipe, st))
            hit = (st, tuple(notices), canon)
            self.state_cache.put(key, hit)
        st, notices, canon = hit
        bkey = (recipe.hf_id, canon, tuple(extra.items()))
        cached = self.builder_cache.get(bkey)
        status = 200
        if cached is None:
            try:
                ctx, plan = resolution or resolve(self.catalog, recipe, st.selection)
                view = build_view(self.catalog, recipe, st, ctx, plan, [], extra)
                body = self.render("builder.html", v=view, vllm_lint=lint_plan(ctx, plan),
                                   fit=fit_panel(self.catalog, recipe, ctx, plan, view.url, extra),
                                   perf=perf_panel(self.catalog, recipe, st, view.url, extra))
                cached = (body, view.url, 200)
            except Exception as exc:  # an engine failure on some selection: say so, never 500
                log_failure(exc, self.catalog, recipe.hf_id, "builder failed for %s?%s", recipe.hf_id, canon)
                url = page_url("/" + recipe.hf_id, canon)
                body = self.render("builder_error.html", message=f"{type(exc).__name__}: {exc}", url=url)
                cached = (body, url, 422)
            self.builder_cache.put(bkey, cached)
        body, url, status = cached
        notice_html = self.render("notices.html", notices=notices) if notices else ""
        wrapper = (f'<div id="builder" class="builder" data-url="{Markup.escape(url)}" '
                   f'data-recipe="{Markup.escape(recipe.hf_id)}">{notice_html}{body}</div>')
        return wrapper, url, status

    def omni_builder(self, recipe: Recipe, items: list[tuple[str, str]], extra: Mapping[str, str]) -> tuple[str, str, int]:
        key = ("omni", recipe.hf_id, tuple(items), tuple(extra.items()))
        hit = self.builder_cache.get(key)
        if hit is None:
            try:
                view, notices = build_omni_view(self.catalog, recipe, items, extra)
                body = self.render("notices.html", notices=notices) if notices else ""
                body += self.render("omni_builder.html", v=view)
                hit = (body, view.url, 200)
            except Exception as exc:
                log_failure(exc, self.catalog, recipe.hf_id, "omni builder failed for %s", recipe.hf_id)
                url = recipe_url(recipe.hf_id)
                hit = (self.render("builder_error.html", message=f"{type(exc).__name__}: {exc}", url=url), url, 422)
            self.builder_cache.put(key, hit)
        body, url, status = hit
        wrapper = (f'<div id="builder" class="builder" data-url="{Markup.escape(url)}" '
                   f'data-recipe="{Markup.escape(recipe.hf_id)}">{body}</div>')
        return wrapper, url, status

    # --- guide ---------------------------------------------------------------------------------

    def guide(self, recipe: Recipe, lang: str | None) -> tuple[str, str | None]:
        """``(guide HTML, page-level stale notice)`` in the recipe's language or a translation."""
        key = (recipe.hf_id, lang)
        hit = self.guide_cache.get(key)
        if hit is not None:
            return hit
        guide = recipe.data.get("guide")
        notice = None
        if lang:
            from vllm_recipes.i18n import compose_guide, page_notice

            t = self.translations_of(recipe)[lang]
            parts = []
            for block in compose_guide(recipe, t):
                parts.append(block.notice_html(lang))
                text = md.render_markdown(block.anchored_markdown, with_attrs=True)
                if block.lang != lang:
                    text = f'<div lang="{block.lang}">{text}</div>'
                parts.append(text)
            html = md.sanitize("\n".join(parts))
            notice = page_notice(recipe, t)
        else:
            html = md.render_markdown(guide) if isinstance(guide, str) else ""
        hit = (html, notice)
        self.guide_cache.put(key, hit)
        return hit


# --- helpers ------------------------------------------------------------------------------------


def _web(request: Request) -> Web:
    return request.app.state.web  # type: ignore[no-any-return]


def _query_items(request: Request, drop: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(k, v) for k, v in request.query_params.multi_items() if k not in drop]


def not_found(request: Request, recipe_like: bool = False, *, message: str = "") -> Response:
    web = _web(request)
    if request.url.path.startswith("/api/") or request.url.path.endswith(".json"):
        return JSONResponse({"error": message or "Not found.", "param": None, "choices": []}, status_code=404)
    segs = [s for s in request.url.path.split("/") if s]
    suggestions = []
    broken = None
    if recipe_like and len(segs) == 2:
        suggestions = web.catalog.close_matches("/".join(segs), n=3)
        broken = web.catalog.load_error_for("/".join(segs))
    html = web.render("not_found.html", recipe_like=recipe_like, path="/".join(segs), suggestions=suggestions,
                      broken=str(broken) if broken else None)
    return HTMLResponse(html, status_code=404)


# --- pages -------------------------------------------------------------------------------------


#: the longest a page or API answer may compute (issue #28.1); the event loop stays free meanwhile
REQUEST_TIME_LIMIT_S = 30.0


def off_loop(handler: Callable[[Request], Response]) -> Callable[[Request], Any]:
    """Run a CPU-bound handler in a worker thread with a time limit, so that one slow recipe never
    stalls ``/robots.txt`` or another recipe's page. Past the limit the visitor gets a 503 (the thread
    finishes its bounded work in the background; derived counts are bounded, see select/gates.py)."""

    async def endpoint(request: Request) -> Response:
        try:
            with anyio.fail_after(REQUEST_TIME_LIMIT_S):  # (anyio's worker threads: 40 per event loop)
                return await anyio.to_thread.run_sync(handler, request, abandon_on_cancel=True)
        except TimeoutError:
            log.warning("%s took over %.0f s; answered 503", request.url.path, REQUEST_TIME_LIMIT_S)
            message = f"This answer took longer than {REQUEST_TIME_LIMIT_S:.0f} s to compute; try again later."
            if request.url.path.startswith("/api/") or request.url.path.endswith(".json"):
                return JSONResponse({"error": message, "param": None, "choices": []}, status_code=503)
            return HTMLResponse(error_html(503, message), status_code=503)

    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint


def _negotiated(response: Response) -> Response:
    """An HTML page that has a JSON twin: caches must key on ``Accept`` too."""
    response.headers.append("Vary", "Accept")
    return response


async def home(request: Request) -> Response:
    web = _web(request)
    if twins.wants_json(request):
        return twins.json_response(twins.home_json(web.index, web.index.latest))
    return _negotiated(HTMLResponse(web.render("home.html", latest=web.index.latest,
                                               providers=web.index.provider_grid)))


def log_failure(exc: Exception, catalog: Catalog, model_id: str | None, what: str, *args: Any) -> None:
    """An engine failure on a validate-clean recipe is a bug: logged with its traceback. On a recipe that
    fails validation (only ``serve --watch`` serves those; the engine is promised only what validation
    passes), and for a value the rendering refuses (:class:`UnsafeValue`), it is the recipe's error: one line."""
    found = catalog.find(model_id) if model_id else None
    if isinstance(exc, UnsafeValue) or (found is not None and fails_validation(catalog, found[0])):
        log.warning(what + ": %s: %s (the recipe fails validation)", *args, type(exc).__name__, exc)
    else:
        log.error(what, *args, exc_info=exc)


async def home_twin(request: Request) -> Response:
    web = _web(request)
    return twins.json_response(twins.home_json(web.index, web.index.latest))


async def browse(request: Request) -> Response:
    web = _web(request)
    params = {k: v for k, v in request.query_params.items()}
    result = web.index.browse(params)
    if twins.wants_json(request) or request.url.path.endswith(".json"):
        url = "/browse" + ("?" + request.url.query if request.url.query else "")
        return twins.json_response(twins.browse_json(result, url))
    return _negotiated(HTMLResponse(web.render("browse.html", r=result)))


async def llms_file(request: Request) -> Response:
    web = _web(request)
    name = request.url.path.lstrip("/")
    base = str(request.base_url).rstrip("/")
    return Response(web.llms(base)[name], media_type="text/plain; charset=utf-8",
                    headers={"Access-Control-Allow-Origin": "*", "Cache-Control": CACHE_CONTROL})


async def sitemap(request: Request) -> Response:
    web = _web(request)
    base = str(request.base_url).rstrip("/")
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for path, lastmod in web.index.sitemap_entries():
        lines.append(f"  <url><loc>{xml_escape(base + page_url(path))}</loc>"
                     + (f"<lastmod>{xml_escape(lastmod)}</lastmod>" if lastmod else "") + "</url>")
    lines.append("</urlset>")
    return Response("\n".join(lines) + "\n", media_type="application/xml")


async def robots(request: Request) -> Response:
    base = str(request.base_url).rstrip("/")
    return PlainTextResponse(f"User-agent: *\nAllow: /\nDisallow: /api/resolve\n\nSitemap: {base}/sitemap.xml\n")


async def search_index(request: Request) -> Response:
    web = _web(request)
    if etag_matches(request.headers.get("if-none-match"), web.search_etag):
        return Response(status_code=304, headers={"ETag": web.search_etag, "Cache-Control": CACHE_CONTROL})
    return Response(web.search_json, media_type="application/json",
                    headers={"ETag": web.search_etag, "Cache-Control": CACHE_CONTROL})


async def openapi(request: Request) -> Response:
    return Response(_web(request).openapi_json, media_type="application/json",
                    headers={"Access-Control-Allow-Origin": "*", "Cache-Control": CACHE_CONTROL})


async def health(request: Request) -> Response:
    return JSONResponse(_web(request).health(), headers={"Cache-Control": "no-store"})


@off_loop
def api_export(request: Request) -> Response:
    web = _web(request)
    key = ("export", *_query_items(request))
    hit = web.resolve_cache.get(key)
    if hit is None:
        items = _query_items(request)
        try:
            hit = export_reply(web.catalog, items)
        except Exception as exc:  # an engine failure: a readable error, never a 500
            log_failure(exc, web.catalog, dict(items).get("model"), "export failed for %s", items)
            body = json.dumps({"error": f"The deployment could not be exported: {type(exc).__name__}: {exc}",
                               "param": None, "choices": []}, ensure_ascii=False)
            hit = ExportReply(422, body, "application/json", {"Access-Control-Allow-Origin": "*"})
        web.resolve_cache.put(key, hit)
    return Response(hit.body, status_code=hit.status, media_type=hit.media_type, headers=hit.headers)


def _json_answer(request: Request, kind: str, payload: Any, failure: str) -> Response:
    """A cached live-API answer: ``payload(catalog, items)`` as JSON, 400 on a bad selection, 422 on an
    engine failure (never a 500)."""
    web = _web(request)
    items = _query_items(request)
    key = tuple(items) if kind == "resolve" else (kind, tuple(items))
    hit = web.resolve_cache.get(key)
    if hit is None:
        try:
            body = json.dumps(payload(web.catalog, items), indent=2, ensure_ascii=False).encode()
            hit = (200, body)
        except SelectionError as exc:
            hit = (400, json.dumps(error_body(exc), ensure_ascii=False).encode())
        except Exception as exc:  # an engine failure: a readable error, never a 500
            log_failure(exc, web.catalog, dict(items).get("model"), "%s failed for %s", kind, items)
            hit = (422, json.dumps({"error": f"{failure}: {type(exc).__name__}: {exc}",
                                    "param": None, "choices": []}).encode())
        web.resolve_cache.put(key, hit)
    status, body = hit
    return Response(body, status_code=status, media_type="application/json",
                    headers={"Access-Control-Allow-Origin": "*", "Cache-Control": "no-cache"})


async def static_asset(request: Request) -> Response:
    """Our CSS/JS: fingerprinted names are immutable, plain names revalidate."""
    found = _web(request).assets.find(request.path_params["name"])
    if found is None:
        return not_found(request)
    asset, immutable = found
    headers = {"ETag": asset.etag, "Cache-Control": IMMUTABLE if immutable else REVALIDATE}
    if etag_matches(request.headers.get("if-none-match"), asset.etag):
        return Response(status_code=304, headers=headers)
    return Response(asset.data, media_type=asset.media_type, headers=headers)


@off_loop
def api_fit(request: Request) -> Response:
    return _json_answer(request, "fit", fit_payload, "The fit could not be computed")


@off_loop
def api_perf(request: Request) -> Response:
    return _json_answer(request, "perf", perf_payload, "The estimate could not be computed")


@off_loop
def api_recommend(request: Request) -> Response:
    return _json_answer(request, "recommend", recommend_payload, "The recommendation could not be computed")


@off_loop
def api_resolve(request: Request) -> Response:
    return _json_answer(request, "resolve", resolve_payload, "The selection could not be synthesized")


def static_json(request: Request, path: str) -> Response:
    web = _web(request)
    got = web.api.get(path)
    if got is None:
        detail = f"No API file /{path}." + (f" ({web.api.error})" if web.api.error else "")
        return JSONResponse({"error": detail, "param": None, "choices": []}, status_code=404,
                            headers={"Access-Control-Allow-Origin": "*"})
    data, tag = got
    headers = {"ETag": tag, "Cache-Control": CACHE_CONTROL, "Access-Control-Allow-Origin": "*"}
    if etag_matches(request.headers.get("if-none-match"), tag):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type="application/json", headers=headers)


def provider_page(request: Request, org: str, suffix: str = "") -> Response:
    web = _web(request)
    provider = web.index.provider(org)
    if provider is None:
        return not_found(request)
    if provider.org != org:
        return RedirectResponse(page_url("/" + provider.org + suffix, query_string(_query_items(request))), status_code=301)
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
        items = [(k, v) for k, v in _query_items(request) if k != "variant"]
        if vk != "default":
            items.insert(0, ("variant", vk))
        return RedirectResponse(page_url("/" + rec.hf_id + suffix, query_string(items)), status_code=301)
    if recipe.hf_id != hf:
        return RedirectResponse(page_url("/" + recipe.hf_id + suffix, query_string(_query_items(request))), status_code=301)
    return recipe


def _lang(request: Request, recipe: Recipe) -> tuple[str | None, dict[str, Any]]:
    web = _web(request)
    available = web.translations_of(recipe)
    if not available:
        return None, {}
    from vllm_recipes.i18n import negotiate_language

    lang = negotiate_language(request.query_params.get("lang"), request.headers.get("accept-language"), available)
    return lang, available


def recipe_page(request: Request, org: str, repo: str) -> Response:
    web = _web(request)
    found = _lookup_recipe(request, org, repo)
    if isinstance(found, Response):
        return found
    recipe = found
    lang, available = _lang(request, recipe)
    if twins.wants_json(request):
        return recipe_twin(request, recipe, lang)
    explicit_lang = request.query_params.get("lang")
    extra = {"lang": explicit_lang} if explicit_lang and len(explicit_lang) <= 35 else {}
    extra.update(page_extra(request.query_params))
    extra.update(perf_extra(request.query_params))
    items = _query_items(request, drop=("lang", CTX_PARAM, *PERF_PARAMS))
    if recipe.is_omni:
        builder_html, url, status = web.omni_builder(recipe, items, extra)
    else:
        builder_html, url, status = web.builder(recipe, items, extra)
    guide_html, page_notice = web.guide(recipe, lang)
    header = None
    if lang:
        from vllm_recipes.i18n import translated_header

        header = translated_header(recipe, available[lang])
    card = web.index.by_id.get(recipe.hf_id)
    related = []
    listed = recipe.meta.get("related_recipes")  # display-only: any type validates (with a warning)
    for rid in listed if isinstance(listed, list | tuple) else ():
        if isinstance(rid, str):
            other = web.catalog.recipe(rid)
            related.append((rid, "/" + other.hf_id if other else None))
    from .authoring import page_authoring

    authoring = page_authoring(request.app.state, str(request.base_url), web.catalog, recipe, url)
    html = web.render("recipe.html", recipe=recipe, card=card, builder=Markup(builder_html), url=url,
                      authoring=authoring,
                      guide=Markup(guide_html), lang=lang, languages=sorted(available), header=header,
                      page_notice=page_notice, related=related, desc_html=Markup(md.render_inline(
                          header["description"].text if header and "description" in header
                          else str(recipe.meta.get("description") or ""))))
    headers = {"Vary": "Accept-Language"} if available else {}
    return _negotiated(HTMLResponse(html, status_code=status, headers=headers))


def recipe_twin(request: Request, recipe: Recipe, lang: str | None) -> Response:
    """The recipe page's state at the URL's selection, as JSON (lenient, like the page)."""
    web = _web(request)
    items = _query_items(request, drop=("lang",))
    try:
        data = twins.recipe_page_json(web.catalog, web.index, recipe, items, lang)
    except Exception as exc:  # an engine failure on some selection: say so, never 500
        log_failure(exc, web.catalog, recipe.hf_id, "page twin failed for %s", recipe.hf_id)
        return twins.json_response({"error": f"The selection could not be synthesized: {type(exc).__name__}: "
                                             f"{exc}", "param": None, "choices": []}, status=422)
    return twins.json_response(data)


def builder_fragment(request: Request, org: str, repo: str) -> Response:
    web = _web(request)
    found = _lookup_recipe(request, org, repo, suffix="/builder")
    if isinstance(found, Response):
        return found
    explicit_lang = request.query_params.get("lang")
    extra = {"lang": explicit_lang} if explicit_lang and len(explicit_lang) <= 35 else {}
    extra.update(page_extra(request.query_params))
    extra.update(perf_extra(request.query_params))
    items = _query_items(request, drop=("lang", CTX_PARAM, *PERF_PARAMS))
    fn = web.omni_builder if found.is_omni else web.builder
    html, url, status = fn(found, items, extra)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-cache", "X-Canonical-URL": url})


# --- the catalog's own paths (after the fixed routes, in this order) --------------------------------


def _is_dot(*segments: str) -> bool:
    return any(seg in (".", "..") for seg in segments)


@off_loop
def page_twin(request: Request) -> Response:
    """``/{org}/{repo}/page.json``: a recipe page's JSON twin."""
    org, repo = request.path_params["org"], request.path_params["repo"]
    if _is_dot(org, repo):
        return not_found(request)
    found = _lookup_recipe(request, org, repo, suffix="/page.json")
    if isinstance(found, Response):
        return found
    return recipe_twin(request, found, _lang(request, found)[0])


@off_loop
def builder_route(request: Request) -> Response:
    """``/{org}/{repo}/builder``: the builder fragment the page script swaps in."""
    return _recipe_answer(request, builder_fragment)


@off_loop
def top_json(request: Request) -> Response:
    """``/{name}.json``: a static API file of that name, else a provider page's JSON twin."""
    name = request.path_params["name"]
    static = static_json(request, f"{name}.json")
    if static.status_code != 404 or _web(request).index.provider(name) is None:
        return static
    return provider_page(request, name, ".json")


@off_loop
def api_file(request: Request) -> Response:
    """Any other ``*.json`` path: a file of the static JSON API."""
    return static_json(request, request.path_params["path"] + ".json")


@off_loop
def provider_route(request: Request) -> Response:
    org = request.path_params["org"]
    return not_found(request) if _is_dot(org) else provider_page(request, org)


@off_loop
def recipe_route(request: Request) -> Response:
    return _recipe_answer(request, recipe_page)


def _recipe_answer(request: Request, answer: Callable[[Request, str, str], Response]) -> Response:
    """``answer`` for ``/{org}/{repo}...``; a recipe that fails validation gets its refusal page, never a 500."""
    org, repo = request.path_params["org"], request.path_params["repo"]
    if _is_dot(org, repo):
        return not_found(request)
    try:
        return answer(request, org, repo)
    except Exception as exc:
        refused = invalid_recipe_page(request, f"{org}/{repo}", exc)
        if refused is None:
            raise  # a failure on a validate-clean recipe is a bug: the 500 handler logs its traceback
        return refused


def invalid_recipe_page(request: Request, hf_id: str, exc: Exception) -> Response | None:
    """The page of a recipe that fails validation and could not be shown (``serve --watch`` serves those):
    422 with its first findings, logged in one line; ``None`` for any other recipe."""
    web = _web(request)
    found = None if web.catalog.usable else web.catalog.find(hf_id)
    errors = recipe_errors(web.catalog, found[0]) if found else []
    if not errors:
        return None
    log_failure(exc, web.catalog, hf_id, "recipe page failed for %s", hf_id)
    lines = "; ".join(f.format() for f in errors[:5])
    return HTMLResponse(error_html(422, f"{hf_id} fails validation, so its page cannot be shown: {lines}"),
                        status_code=422)


def elsewhere(request: Request) -> Response:
    """No route matched: a trailing slash redirects to the page without it (query kept), else 404."""
    segs = request.path_params["path"].split("/")
    if len(segs) > 1 and segs[-1] == "" and "" not in segs[:-1] and not _is_dot(*segs):
        return RedirectResponse(page_url("/" + "/".join(segs[:-1]), query_string(_query_items(request))), status_code=301)
    return not_found(request)


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    if status == 404:
        return not_found(request)
    detail = getattr(exc, "detail", "Error")
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": str(detail), "param": None, "choices": []}, status_code=status)
    return HTMLResponse(error_html(status, str(detail)), status_code=status)


async def _server_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s", request.url.path, exc_info=exc)
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": "Internal error.", "param": None, "choices": []}, status_code=500)
    return HTMLResponse(error_html(500, "Internal error."), status_code=500)


def create_app(catalog: Catalog | None = None, *, recipes_dir: str | None = None, api_jobs: int | None = 1,
               build_api_now: bool = False, warm_in_background: bool = False, authoring: Any = None) -> Starlette:
    """The ASGI app.

    ``build_api_now`` warms every cache before returning (blocking); ``warm_in_background``
    (``serve``) builds the static JSON API in a background process once the server listens (a request
    for one of its files meanwhile waits for it).
    ``authoring`` (a :class:`~vllm_recipes.web.authoring.AuthoringState`) adds edit/report
    links and the findings panel to recipe pages; ``app.state`` holds it next to ``web``.
    """
    if catalog is None:
        catalog = load_catalog(recipes_dir)
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

        from .limits import quiet_accept_errors

        quiet_accept_errors(asyncio.get_running_loop())  # one line per failed accept(), not a traceback
        if warm_in_background:
            web.api.build_in_background()
        yield

    get = ["GET", "HEAD"]
    routes = [
        Route("/", home, methods=get),
        Route("/browse", browse, methods=get),
        Route("/browse.json", browse, methods=get),
        Route("/index.json", home_twin, methods=get),
        Route("/llms.txt", llms_file, methods=get),
        Route("/llms-full.txt", llms_file, methods=get),
        Route("/sitemap.xml", sitemap, methods=get),
        Route("/robots.txt", robots, methods=get),
        Mount("/api", routes=[
            Route("/resolve", api_resolve, methods=get),
            Route("/health", health, methods=get),
            Route("/export", api_export, methods=get),
            Route("/fit", api_fit, methods=get),
            Route("/perf", api_perf, methods=get),
            Route("/recommend", api_recommend, methods=get),
            Route("/openapi.json", openapi, methods=get),
            Route("/search.json", search_index, methods=get),
        ]),
        Route("/static/{name}", static_asset, methods=get),
        Route("/{org}/{repo}/page.json", page_twin, methods=get),
        Route("/{org}/{repo}/builder", builder_route, methods=get),
        Route("/{name}.json", top_json, methods=get),
        Route("/{path:path}.json", api_file, methods=get),
        Route("/{org}", provider_route, methods=get),
        Route("/{org}/{repo}", recipe_route, methods=get),
        Route("/{path:path}", elsewhere, methods=get),
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
