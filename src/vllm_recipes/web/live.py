"""``serve --watch``: reload a recipe directory into the running app when its files change. A reload
swaps the catalog (in a fresh ``Web``, so with every cache derived from it) and the authoring state, one
assignment each: a request sees the old or the new catalog, never a mix, and never waits for a reload."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
from pathlib import Path
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.catalog.diagnostics import Finding, sort_findings
from vllm_recipes.render.deployment import deployment_blocks
from vllm_recipes.render.omni import render_omni
from vllm_recipes.select.omni import select_omni
from vllm_recipes.select.request import PageRequest
from vllm_recipes.select.state import build_state
from vllm_recipes.synth.omni import resolve_omni
from vllm_recipes.synth.resolve import resolve

from .app import Web
from .authoring import AuthoringState, SourceLinks, merge_last_good

log = logging.getLogger("vllm_recipes.web")


def render_default_page(catalog: Catalog, recipe: Recipe) -> None:
    """Resolve and render what a recipe's page shows first; raises when that fails."""
    if recipe.is_omni:
        osel = select_omni(catalog, recipe, None, None, None, None)
        render_omni(catalog, recipe, osel, resolve_omni(catalog, recipe, osel.variant_key, osel.task, osel.hw_id))
        return
    st = build_state(catalog, recipe, PageRequest(), strict=False)
    ctx, plan = resolve(catalog, recipe, st.selection)
    deployment_blocks(ctx, plan, st.install)


def catalog_findings(catalog: Catalog, *, lint: bool = False) -> list[Finding]:
    """What ``validate`` reports (``lint``: the slow dead-value lint too); never raises."""
    try:
        from vllm_recipes.catalog.validate import validate_catalog

        if not lint:
            return validate_catalog(catalog)
        from vllm_recipes.lint.deadvalues import dead_value_checker

        return validate_catalog(catalog, extra_checks=[dead_value_checker])
    except Exception:  # validation trouble must not stop the preview
        log.exception("validating %s failed", catalog.root)
        return []


def findings_by_file(findings: list[Finding]) -> dict[str, tuple[Finding, ...]]:
    return {file: tuple(group) for file, group in itertools.groupby(sort_findings(findings), lambda f: f.file)}


class LiveCatalog:
    """A recipe directory kept in sync with a running app: a reload installs the new catalog after the
    fast checks; the slow dead-value lint follows on its own thread, for the latest catalog only."""

    def __init__(self, app: Any, recipes_dir: str | Path, source: SourceLinks | None = None, *,
                 lint: bool = True) -> None:
        self.app = app
        self.root = Path(recipes_dir)
        self.source = source
        self.lint = lint
        self.current: Catalog | None = None
        self.generation = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._lint_wanted = threading.Event()

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
            self.generation += 1
            state = AuthoringState(self.source, True, findings_by_file(findings), stale, self.generation)
            old = getattr(self.app.state, "web", None)
            self.app.state.web = Web(merged, api_jobs=old.api.jobs if old is not None else 1)
            self.app.state.authoring = state
            self.current = merged
            if stale:
                log.warning("serving last good versions of %s", ", ".join(sorted(stale)))
        if self.lint:
            self._lint_wanted.set()
        return state

    def lint_now(self) -> None:
        """Add the dead-value lint's findings of the current catalog to the panel (if still current)."""
        with self._lock:
            catalog, generation = self.current, self.generation
        if catalog is None:
            return
        findings = catalog_findings(catalog, lint=True)
        with self._lock:
            state = getattr(self.app.state, "authoring", None)
            if generation == self.generation and isinstance(state, AuthoringState):
                self.app.state.authoring = dataclasses.replace(state, findings=findings_by_file(findings))

    def _lint_loop(self) -> None:
        while not self._stop.is_set():
            if self._lint_wanted.wait(0.2):
                self._lint_wanted.clear()
                try:
                    self.lint_now()
                except Exception:
                    log.exception("linting %s failed", self.root)

    def _run(self) -> None:
        import watchfiles

        for _changes in watchfiles.watch(self.root, stop_event=self._stop, debounce=150, step=50,
                                         raise_interrupt=False):
            try:
                self.reload()
            except Exception:  # keep watching whatever happens to one reload
                log.exception("reloading %s failed", self.root)

    def start(self) -> None:
        """Watch (and lint) in daemon threads; the server keeps serving the current catalog meanwhile."""
        if not self._threads:
            self._threads = [threading.Thread(target=self._run, name="vllm-recipes-watch", daemon=True)]
            if self.lint:
                self._threads.append(threading.Thread(target=self._lint_loop, name="vllm-recipes-lint", daemon=True))
            for t in self._threads:
                t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)
        self._threads = []
