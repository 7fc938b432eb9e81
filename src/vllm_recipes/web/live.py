"""``serve --watch``: reload a recipe directory into the running app when its files change.

The reload hook is :func:`install_catalog` - replace the catalog and everything
derived from it (``app.state.web``: indexes, page caches, the lazily built JSON
API) plus the authoring state, in one assignment each, so a request sees either
the old or the new catalog, never a mix. Loading, validation and the
last-good merge run on the watcher thread; requests never wait for them.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.catalog.diagnostics import Finding, sort_findings

from .authoring import AuthoringState, SourceLinks, merge_last_good

log = logging.getLogger("vllm_recipes.web")


def install_catalog(app: Any, catalog: Catalog, authoring: AuthoringState | None = None) -> None:
    """Serve ``catalog`` from now on: a fresh ``Web`` (so every cache starts empty) and its authoring state."""
    from .app import Web

    old = getattr(app.state, "web", None)
    app.state.web = Web(catalog, api_jobs=old.api.jobs if old is not None else 1)
    app.state.authoring = authoring


def render_default_page(catalog: Catalog, recipe: Recipe) -> None:
    """Resolve and render what a recipe's page shows first; raises when that fails."""
    from vllm_recipes.render.deployment import deployment_blocks
    from vllm_recipes.select.page import PageRequest, build_state
    from vllm_recipes.synth.resolve import resolve

    if recipe.is_omni:
        from vllm_recipes.render.omni import render_omni
        from vllm_recipes.select.omni import select_omni
        from vllm_recipes.synth.omni import resolve_omni

        osel = select_omni(catalog, recipe, None, None, None, None)
        render_omni(catalog, recipe, osel, resolve_omni(catalog, recipe, osel.variant_key, osel.task, osel.hw_id))
        return
    st = build_state(catalog, recipe, PageRequest(), strict=False)
    ctx, plan = resolve(catalog, recipe, st.selection)
    deployment_blocks(ctx, plan, st.install)


def catalog_findings(catalog: Catalog) -> list[Finding]:
    """Everything ``validate`` reports (dead values included); never raises."""
    try:
        from vllm_recipes.catalog.validate import validate_catalog
        from vllm_recipes.lint.deadvalues import dead_value_checker

        return validate_catalog(catalog, extra_checks=[dead_value_checker])
    except Exception:  # validation trouble must not stop the preview
        log.exception("validating %s failed", catalog.root)
        return []


class LiveCatalog:
    """A recipe directory kept in sync with a running app."""

    def __init__(self, app: Any, recipes_dir: str | Path, source: SourceLinks | None = None) -> None:
        self.app = app
        self.root = Path(recipes_dir)
        self.source = source
        self.current: Catalog | None = None
        self.generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def reload(self) -> AuthoringState | None:
        """Load, validate, keep last good versions, install. Returns the new state (``None``: nothing loaded)."""
        with self._lock:
            try:
                fresh = load_catalog(self.root)
            except OSError as exc:  # the directory vanished mid-edit: keep serving what we have
                log.warning("reloading %s failed: %s", self.root, exc)
                return None
            findings = catalog_findings(fresh)
            merged, stale = merge_last_good(self.current, fresh, findings, render_default_page)
            by_file: dict[str, list[Finding]] = {}
            for f in sort_findings(findings):
                by_file.setdefault(f.file, []).append(f)
            self.generation += 1
            state = AuthoringState(self.source, True, {k: tuple(v) for k, v in by_file.items()}, stale,
                                   self.generation)
            install_catalog(self.app, merged, state)
            self.current = merged
            if stale:
                log.warning("serving last good versions of %s", ", ".join(sorted(stale)))
            return state

    def _run(self) -> None:
        import watchfiles

        for _changes in watchfiles.watch(self.root, stop_event=self._stop, debounce=150, step=50,
                                         raise_interrupt=False):
            try:
                self.reload()
            except Exception:  # keep watching whatever happens to one reload
                log.exception("reloading %s failed", self.root)

    def start(self) -> None:
        """Watch in a daemon thread (the server keeps serving the current catalog meanwhile)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="vllm-recipes-watch", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
