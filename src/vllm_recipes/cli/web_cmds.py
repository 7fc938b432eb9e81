"""``vllm-recipes serve``: the website and live JSON API on one port."""

from __future__ import annotations

import errno
import gc
import os
import socket
from typing import TYPE_CHECKING

import click

from vllm_recipes.catalog.diagnostics import plural
from vllm_recipes.catalog.remote import is_remote

from .main import cli, fail, failing, follow_symlinks_option, load_or_exit, recipes_dir_option

if TYPE_CHECKING:
    from vllm_recipes.catalog import Catalog
    from vllm_recipes.web.authoring import SourceLinks


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``OSError`` when the address is busy or invalid), bound by us
    rather than by uvicorn so the address is printed only once connections are accepted (they queue in the
    backlog until the server loop takes them), and a busy port is one readable line."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart quickly after TIME_WAIT
        sock.bind(addr)
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def bind_error(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is already in use; pick another with --port (e.g. --port {port + 1})"
    if exc.errno == errno.EACCES:
        return f"not allowed to listen on {host}:{port}; use a port above 1023 with --port"
    reason = exc.strerror or str(exc)
    return f"cannot listen on {host}:{port}: {reason}; check --host and --port"


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
# (10.0 is httplimits.HEADER_TIMEOUT_S, written out: that module imports uvicorn, ~130 ms of --help)
@click.option("--header-timeout", default=10.0, show_default=True, type=click.FloatRange(0.1, 600),
              metavar="SECONDS", help="Close a connection that has not sent a whole request head within "
              "this time (slow clients cannot hold connections).")
@recipes_dir_option
@follow_symlinks_option
def serve_cmd(host: str, port: int, reload: bool, workers: int, log_level: str, watch: bool,
              source_url: str | None, header_timeout: float, recipes_dir: tuple[str, ...]) -> None:
    """Serve the recipe website and the JSON API (static files plus /api/resolve).

    The server answers as soon as it listens; the static JSON API is built in the
    background meanwhile (progress: /api/health).
    Pages and URL parameters: docs/reference/ui.md; API paths and shapes:
    docs/reference/json-api.md.
    """
    source: SourceLinks | None = None
    if source_url:  # (imported only here: the web layer's imports wait until a child parses meanwhile)
        from vllm_recipes.web.authoring import SourceLinks

        with failing(ValueError):
            source = SourceLinks.parse(source_url)
    if watch and not recipes_dir:
        fail("--watch needs --recipes-dir (or VLLM_RECIPES_DIR): the bundled catalog does not change.")
    if watch and (reload or workers > 1):
        fail("--watch reloads recipes inside one process; it cannot be combined with --reload or --workers.")
    if watch and (len(recipes_dir) > 1 or is_remote(recipes_dir[0])):
        fail("--watch follows one local recipes directory; give a single --recipes-dir DIR.")
    catalog = load_or_exit(recipes_dir)
    if not watch:  # (--watch previews every recipe with its findings, for authors)
        from vllm_recipes.catalog.usable import usable_catalog

        catalog, skipped = usable_catalog(catalog)
        for finding in skipped:
            click.echo(f"vllm-recipes: skipping {finding.format()}", err=True)
    if recipes_dir:  # (what a reloaded or worker process loads: the same sources, from the cache if fetched)
        os.environ["VLLM_RECIPES_DIR"] = " ".join(d if is_remote(d) else os.path.abspath(d) for d in recipes_dir)
    if source_url:
        os.environ["VLLM_RECIPES_SOURCE_URL"] = source_url
    try:
        sock = listen_socket(host, port)
    except (OSError, UnicodeError) as exc:  # a busy port or a bad host is a usage error: exit 2
        fail(bind_error(host, port, exc) if isinstance(exc, OSError) else str(exc))
    bound = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    what = f"vllm-recipes: {plural(len(catalog.recipes), 'recipe')} from {catalog.root}"
    if reload or workers > 1:
        # uvicorn binds and imports the app factory itself in each (re)started process: our probe only
        # checked that the port is free, so we do not claim to be serving yet (uvicorn logs when it listens)
        sock.close()
        mode = "reloading on changes" if reload else f"{workers} workers"
        click.echo(f"{what}; starting ({mode}) on http://{shown_host}:{bound}/", err=True)
        _run_processes(host, bound, reload, workers, log_level, header_timeout)
        return
    _serve_here(catalog, sock, source, recipes_dir[0] if watch else None, header_timeout, log_level,
                f"{what}; serving on http://{shown_host}:{bound}/" + (" (watching for changes)" if watch else ""))


def _run_processes(host: str, port: int, reload: bool, workers: int, log_level: str, header_timeout: float) -> None:
    """uvicorn's reloader or worker processes, each building the app from the environment, with the limits
    :func:`_serve_here` serves with."""
    import uvicorn

    from vllm_recipes.httplimits import server_settings

    uvicorn.run("vllm_recipes.web.app:create_served_app", factory=True, host=host, port=port, reload=reload,
                workers=None if reload else workers, log_level=log_level,
                reload_dirs=[os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] if reload else None,
                **server_settings(header_timeout=header_timeout))


def _serve_here(catalog: Catalog, sock: socket.socket, source: SourceLinks | None, watch_dir: str | None,
                header_timeout: float, log_level: str, banner: str) -> None:
    """Serve on the listening socket in this process (``watch_dir``: reload the catalog on changes)."""
    gc.disable()  # until the server runs: start-up allocates for good, collecting would only scan (~50 ms)
    try:
        import uvicorn

        from vllm_recipes.httplimits import server_config
        from vllm_recipes.web import create_app

        authoring = None
        if source is not None:
            from vllm_recipes.web.authoring import AuthoringState

            authoring = AuthoringState(source)
        live = None
        if watch_dir is not None:
            from vllm_recipes.web.live import LiveCatalog

            app = create_app(catalog, api_jobs=1, authoring=authoring)
            live = LiveCatalog(app, watch_dir, source)
            live.reload()
            live.start()
        else:
            app = create_app(catalog, api_jobs=None, warm_in_background=True, authoring=authoring)
        server = uvicorn.Server(server_config(app, header_timeout=header_timeout, log_level=log_level))
        # the socket listens: a client connecting now is answered as soon as the loop runs
        click.echo(banner, err=True)
        if live is None:  # the catalog, modules and templates live as long as the server: no collection scans them
            gc.freeze()
    finally:
        gc.enable()
    try:
        server.run(sockets=[sock])
    finally:
        if live is not None:
            live.stop()

