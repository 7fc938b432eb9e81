"""For recipe authors: edit/report links, the validation-findings panel and last-good reloads (a recipe
whose new version does not load, has validation errors or cannot render its default page keeps its last
good version; the page then shows why)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.diagnostics import Finding, finding_from_load_error
from vllm_recipes.catalog.fileset import path_key
from vllm_recipes.render.deployment import deployment_blocks, deployment_text
from vllm_recipes.service.url import page_state

log = logging.getLogger("vllm_recipes.web")

#: issue bodies go into a URL; keep them well under what browsers and forges accept
MAX_ISSUE_COMMAND = 3000


@dataclass(frozen=True)
class SourceLinks:
    """Links into the repository the recipes come from: ``https://github.com/ORG/REPO`` (branch
    ``main``) or ``.../tree/BRANCH/SUBDIR`` (``blob`` too; GitLab: ``/-/tree/``)."""

    repo: str
    ref: str
    subdir: str
    gitlab: bool

    @classmethod
    def parse(cls, url: str) -> SourceLinks:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ValueError(f"--source-url must be an http(s) repository URL such as "
                             f"https://github.com/ORG/REPO/tree/main/recipes, got {url!r}")
        segs = [s for s in parts.path.split("/") if s]
        gitlab = "-" in segs
        marker = next((i for i, s in enumerate(segs) if s in ("tree", "blob")), None)
        if marker is None:
            if len(segs) < 2:
                raise ValueError(f"--source-url needs the repository path (ORG/REPO), got {url!r}")
            repo_segs, ref, sub = segs, "main", []
        else:
            if marker + 1 >= len(segs):
                raise ValueError(f"--source-url names no branch after /{segs[marker]}/: {url!r}")
            repo_segs = segs[:marker - 1] if gitlab and segs[marker - 1] == "-" else segs[:marker]
            ref, sub = segs[marker + 1], segs[marker + 2:]
        repo = f"{parts.scheme}://{parts.netloc}/" + "/".join(repo_segs)
        return cls(repo, ref, "/".join(sub), gitlab)

    def edit_url(self, rel_path: str) -> str:
        middle = "/-/edit/" if self.gitlab else "/edit/"
        path = quote("/".join(p for p in (self.subdir, rel_path) if p), safe="/")
        return f"{self.repo}{middle}{quote(self.ref, safe='')}/{path}"

    def issue_params(self) -> tuple[str, str, str]:
        """``(new-issue URL, title parameter, body parameter)``."""
        if self.gitlab:
            return f"{self.repo}/-/issues/new", "issue[title]", "issue[description]"
        return f"{self.repo}/issues/new", "title", "body"


def issue_body(recipe: Recipe, page_url: str, command: str) -> str:
    if len(command) > MAX_ISSUE_COMMAND:
        command = command[:MAX_ISSUE_COMMAND] + "\n# … (cut; see the page)"
    block = f"\n\nCommand:\n\n```sh\n{command}\n```" if command else ""
    return f"Recipe: {recipe.hf_id} ({recipe.rel_path})\nSelection: {page_url}{block}\n\nWhat went wrong:\n"


@dataclass(frozen=True)
class StaleRecipe:
    """A recipe served at its last good version, and why the new one was refused."""

    hf_id: str
    rel_path: str
    errors: tuple[Finding, ...]


@dataclass(frozen=True)
class AuthoringState:
    """Per-catalog author aids; ``watching`` turns the findings panel on."""

    source: SourceLinks | None = None
    watching: bool = False
    findings: Mapping[str, tuple[Finding, ...]] = field(default_factory=dict)
    stale: Mapping[str, StaleRecipe] = field(default_factory=dict)
    generation: int = 0

    def panel(self, recipe: Recipe, page_url: str, command: str) -> dict[str, Any] | None:
        """Template context of the authoring partial, or ``None`` when there is nothing to show."""
        links = None
        if self.source is not None:
            issue_base, title_param, body_param = self.source.issue_params()
            title = f"{recipe.hf_id}: "
            body = issue_body(recipe, page_url, command)
            links = {
                "edit": self.source.edit_url(recipe.rel_path),
                "issue": f"{issue_base}?{urlencode({title_param: title, body_param: body})}",
                "issue_base": issue_base, "title_param": title_param, "body_param": body_param, "title": title,
            }
        stale = self.stale.get(recipe.hf_id)
        findings = self.findings.get(recipe.rel_path, ()) if self.watching else ()
        if links is None and stale is None and not findings and not self.watching:
            return None
        return {"links": links, "stale": stale, "findings": findings, "watching": self.watching,
                "generation": self.generation}


def _errors_by_file(fresh: Catalog, findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    """The error findings by file, with a ``yaml`` finding for each file that did not load."""
    out: dict[str, list[Finding]] = {}
    for f in findings:
        if f.is_error:
            out.setdefault(f.file, []).append(f)
    for exc in fresh.load_errors:
        errors = out.setdefault(exc.position.file, [])
        if not any(f.code == "yaml" and f.line == exc.position.line for f in errors):
            errors.append(finding_from_load_error(exc))
    return out


#: findings whose recipe is never rendered, even as a preview: the engine's cost on it has no bound
UNBOUNDED = frozenset({"too-many-args", "too-many-nodes"})


def merge_last_good(previous: Catalog | None, fresh: Catalog, findings: Iterable[Finding],
                    renders: Callable[[Catalog, Recipe], object] | None = None
                    ) -> tuple[Catalog, dict[str, StaleRecipe]]:
    """``fresh`` with every refused recipe (its file does not load, has error findings, or ``renders(catalog,
    recipe)`` raises) replaced by its ``previous`` version. Without one a loadable recipe is served as is,
    unless an :data:`UNBOUNDED` finding leaves it out (its page then says why)."""
    by_file = _errors_by_file(fresh, findings)
    old = {r.rel_path: r for r in previous.recipes} if previous is not None else {}
    stale: dict[str, StaleRecipe] = {}
    recipes: list[Recipe] = []
    left_out: list[Finding] = []
    for r in fresh.recipes:
        errors = by_file.get(r.rel_path) or []
        unbounded = [f for f in errors if f.code in UNBOUNDED]
        if unbounded and r.rel_path not in old:
            left_out.append(unbounded[0])
            continue
        if not errors and renders is not None:
            try:
                renders(fresh, r)
            except Exception as exc:  # the page would fail: keep the last good one
                errors = [Finding("error", r.rel_path, 1, 1, "<root>", f"the page cannot be rendered: "
                                  f"{type(exc).__name__}: {exc}", "render")]
        prior = old.get(r.rel_path)
        if errors and prior is not None:
            recipes.append(prior)
            stale[prior.hf_id] = StaleRecipe(prior.hf_id, r.rel_path, tuple(errors))
        else:
            recipes.append(r)
    seen = {r.rel_path for r in fresh.recipes}
    for rel, errors in by_file.items():
        prior = old.get(rel)
        if rel not in seen and prior is not None and any(f.code == "yaml" for f in errors):
            recipes.append(prior)  # unparsable now: the last good version stays up
            stale[prior.hf_id] = StaleRecipe(prior.hf_id, rel, tuple(errors))
    if not stale and not left_out:
        return fresh, stale
    recipes.sort(key=lambda r: path_key(r.rel_path))
    merged = dataclasses.replace(fresh, recipes=tuple(recipes), all_ids=fresh.all_ids | {r.hf_id for r in recipes},
                                 skipped=(*fresh.skipped, *left_out))
    return merged, stale


def selection_command(catalog: Catalog, recipe: Recipe, url: str) -> str:
    """The commands of the page's canonical selection (for the issue body); ``""`` when there are none."""
    if recipe.is_omni:
        return ""
    try:
        agreed, _notices = page_state(catalog, recipe, parse_qsl(urlsplit(url).query))
        ctx, plan = agreed.resolved(catalog, recipe)
        return deployment_text(deployment_blocks(ctx, plan, agreed.state.install))
    except Exception:  # the builder shows the failure; the link just carries no command
        log.debug("no command for the issue link of %s", url, exc_info=True)
        return ""


def page_authoring(app_state: Any, base_url: str, catalog: Catalog, recipe: Recipe, url: str) -> dict[str, Any] | None:
    """The authoring partial's context for a recipe page (``None``: render nothing)."""
    state: AuthoringState | None = getattr(app_state, "authoring", None)
    if state is None:
        return None
    command = selection_command(catalog, recipe, url) if state.source is not None else ""
    return state.panel(recipe, base_url.rstrip("/") + url, command)
