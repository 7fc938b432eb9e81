"""``vllm-recipes serve``: the website and live JSON API on one port."""

from __future__ import annotations

import click

from .main import cli, fail, load_or_exit, recipes_dir_option


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option("--reload", is_flag=True, help="Restart when source files change (development).")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Worker processes (ignored with --reload).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--watch", is_flag=True, help="Reload recipes when files under --recipes-dir change; recipe pages "
              "show their validation findings (live preview for recipe authors).")
@click.option("--source-url", envvar="VLLM_RECIPES_SOURCE_URL", default=None, metavar="URL",
              help="Recipe directory in the source repository (e.g. https://github.com/ORG/REPO/tree/main); "
                   "adds 'Edit this recipe' and 'Report an issue' links. Env: VLLM_RECIPES_SOURCE_URL.")
@recipes_dir_option
def serve_cmd(host: str, port: int, reload: bool, workers: int, log_level: str, watch: bool,
              source_url: str | None, recipes_dir: str | None) -> None:
    """Serve the recipe website and the JSON API (static files plus /api/resolve).

    Pages and URL parameters: docs/reference/ui.md; API paths and shapes:
    docs/reference/json-api.md.
    """
    import os

    import uvicorn

    from vllm_recipes.web.authoring import AuthoringState, SourceLinks

    source = None
    if source_url:
        try:
            source = SourceLinks.parse(source_url)
        except ValueError as exc:
            fail(str(exc))
    if watch and not recipes_dir:
        fail("--watch needs --recipes-dir (or VLLM_RECIPES_DIR): the bundled catalog does not change.")
    if watch and (reload or workers > 1):
        fail("--watch reloads recipes inside one process; it cannot be combined with --reload or --workers.")
    catalog = load_or_exit(recipes_dir)
    if recipes_dir:
        os.environ["VLLM_RECIPES_DIR"] = os.path.abspath(recipes_dir)
    if source_url:
        os.environ["VLLM_RECIPES_SOURCE_URL"] = source_url
    n = len(catalog.recipes)
    click.echo(f"vllm-recipes: {n} recipe{'s' if n != 1 else ''} from {catalog.root}; "
               f"serving on http://{host}:{port}/" + (" (watching for changes)" if watch else ""), err=True)
    if reload or workers > 1:
        # uvicorn imports the app factory itself in each (re)started process
        uvicorn.run("vllm_recipes.web.app:create_served_app", factory=True, host=host, port=port, reload=reload,
                    workers=None if reload else workers, log_level=log_level,
                    reload_dirs=[os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] if reload else None)
        return
    from vllm_recipes.web import create_app

    authoring = AuthoringState(source) if source is not None else None
    if not watch:
        app = create_app(catalog, api_jobs=None, build_api_now=True, authoring=authoring)
        uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=False)
        return
    from vllm_recipes.web.live import LiveCatalog

    app = create_app(catalog, api_jobs=1, authoring=authoring)
    live = LiveCatalog(app, recipes_dir or ".", source)
    live.reload()
    live.start()
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=False)
    finally:
        live.stop()
