"""Drift check: is a translation still true of the recipe it translates?

Two signals per source section: the recorded **source hashes** (``source-changed``,
``source-unverified``, ``untranslated``, ``orphaned-section``) and the **facts** of :mod:`.facts`
(``removed``: the translation states what the recipe no longer holds; ``added``: a current fact
the translation lacks). The rules and their limits: docs/decisions-i18n.md §4.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.jsvalues import as_map
from vllm_recipes.render.docker import cuda129_image, docker_meta
from vllm_recipes.render.install import PIP_DEFAULT, PIP_NIGHTLY, install_pull_image
from vllm_recipes.select.advanced import advanced_options_for
from vllm_recipes.select.gates import names_hardware, offered_strategies

from .facts import EMITTABLE, Fact, extract_facts
from .sections import Section, content_hash, guide_sections
from .translation import HEADER_KEYS, SOURCE_LANG, DriftFinding, Translation

#: recipe/catalog keys whose strings are prose shown to readers, never emitted
PROSE_KEYS = frozenset({
    "description", "performance_headline", "title", "display_name", "label", "note", "notes",
    "body", "tooltip", "docs_url", "sub_row_label", "guide", "link", "url",
})

#: flags the command engine writes itself (synthesis.md §5, §8, §9; ui.md "Advanced")
ENGINE_FLAGS = frozenset({
    "--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size",
    "--data-parallel-size-local", "--data-parallel-address", "--data-parallel-start-rank",
    "--data-parallel-rpc-port", "--data-parallel-hybrid-lb", "--enable-expert-parallel",
    "--nnodes", "--node-rank", "--master-addr", "--headless",
    "--vllm-pd-disaggregation", "--policy", "--prefill", "--decode", "--host", "--port",
    # docker run wrapper
    "--gpus", "--privileged", "--ipc", "--device", "--security-opt", "--group-add", "--network",
    "--shm-size",
})

Key = tuple[str, str]


def _walk_strings(data: Any, *, with_prose: bool = False, _in_prose: bool = False) -> Iterator[str]:
    """Strings (values and mapping keys) of frozen data; values under :data:`PROSE_KEYS` only ``with_prose``."""
    if isinstance(data, Mapping):
        for k, v in data.items():
            yield k
            yield from _walk_strings(v, with_prose=with_prose, _in_prose=_in_prose or k in PROSE_KEYS)
    elif isinstance(data, list | tuple):
        for v in data:
            yield from _walk_strings(v, with_prose=with_prose, _in_prose=_in_prose)
    elif isinstance(data, str) and (with_prose or not _in_prose):
        yield data


def _without_guide(recipe: Recipe) -> dict[str, Any]:
    return {k: v for k, v in recipe.data.items() if k != "guide"}


def _keys(texts: Iterable[str], *, emittable: bool = False) -> set[Key]:
    """``(kind, key)`` of the facts of ``texts`` (only flags, env vars and images when ``emittable``)."""
    pieces = _distinct_lines(texts) if emittable else texts
    return {(f.kind, f.key) for t in pieces for f in extract_facts(t) if not emittable or f.kind in EMITTABLE}


def _distinct_lines(texts: Iterable[str]) -> Iterator[str]:
    """The distinct lines of ``texts`` (a recipe's hundreds of renderings share most lines), which give the
    same flags, env vars and images: only a Markdown link target (``](``) spans lines, so such a text
    stays whole. Number facts may span lines (``8\nGB``), hence for these kinds only.
    """
    seen: set[str] = set()
    for text in texts:
        for piece in (text,) if "](" in text else text.split("\n"):
            if piece not in seen:
                seen.add(piece)
                yield piece


def _recipe_hardware(catalog: Catalog, recipe: Recipe) -> dict[str, Mapping[str, Any]]:
    """Profiles the recipe names (meta.hardware, default_hardware, supported_hardware, overrides)."""
    entries: list[Any] = [*as_map(recipe.meta.get("hardware")), recipe.meta.get("default_hardware")]
    for v in recipe.variants.values():
        if isinstance(v, Mapping):
            entries += [*(v.get("supported_hardware") or ()), *as_map(v.get("hardware_overrides"))]
    return {hw: p for hw, p in catalog.hardware_profiles.items()
            if isinstance(p, Mapping) and names_hardware(entries, hw, p)}


def docker_images(catalog: Catalog, recipe: Recipe) -> set[str]:
    """Every image a rendering of ``recipe`` can name (synthesis.md §9.1, §9.7, UI CUDA toggle)."""
    images: set[str] = set()
    variants = [v for v in recipe.variants.values() if isinstance(v, Mapping)] or [{}]
    for hw, profile in _recipe_hardware(catalog, recipe).items():
        for variant in variants:
            meta = docker_meta(recipe.data, variant, profile, hw)
            # its image, and the CUDA 12.9 one the page's CUDA toggle can show instead
            images |= {image for image in (meta.image, cuda129_image(meta)) if image}
    install = recipe.model.get("install")
    if not (isinstance(install, Mapping) and install.get("docker") is False):
        images.add(install_pull_image(recipe.data))  # the install block's ``docker pull``
    return images


def rendered_texts(catalog: Catalog, recipe: Recipe) -> list[str]:
    """The text of every deployment (pip and docker) of every offered selection of ``recipe``, each
    selection that reads its hardware alike rendered once; a selection the engine cannot resolve is skipped
    (the data walk still covers its arguments)."""
    # imported here: 'i18n sections' imports this module and renders nothing
    from vllm_recipes.render.deployment import deployment_blocks
    from vllm_recipes.synth.resolved import resolved_selections

    texts: set[str] = set()
    try:
        for _sel, ctx, plan in resolved_selections(catalog, recipe):
            try:
                for install in ("pip", "docker"):
                    texts.update(b.text for b in deployment_blocks(ctx, plan, install))
            except Exception:
                continue
    except Exception:  # a recipe the engine cannot enumerate falls back to the data walk
        return []
    return sorted(texts)


def emittable_facts(catalog: Catalog, recipe: Recipe) -> set[Key]:
    """``(kind, key)`` of every flag, env var and image a rendering of ``recipe`` can contain: from its
    non-prose data, the catalog's shared entries, the engine's own flags, images and install commands,
    and every offered rendering (:func:`rendered_texts`)."""
    texts = list(_walk_strings(_without_guide(recipe)))
    texts.extend(rendered_texts(catalog, recipe))
    for shared in (*catalog.serving_strategies.values(), *catalog.kv_stores.values(), catalog.kv_offload_options,
                   catalog.frontends):
        texts.extend(_walk_strings(shared))
    texts.append(PIP_NIGHTLY if recipe.model.get("nightly_required") is True else PIP_DEFAULT)
    keys = _keys(texts, emittable=True)
    keys.update(("flag", f) for f in ENGINE_FLAGS)
    keys.update(("flag", f) for f in advanced_flags(recipe))
    if recipe.is_omni:
        keys.add(("flag", "--omni"))
    keys.update(("image", i) for i in docker_images(catalog, recipe))
    return keys


def advanced_flags(recipe: Recipe) -> set[str]:
    """The flags of the builder's Advanced presets that this recipe offers on any of its strategies."""
    flags: set[str] = set()
    strategies = [s for s in offered_strategies(recipe.data) if isinstance(s, str)]
    for strategy in ("", *strategies):  # ("": the presets every strategy has)
        for option in advanced_options_for(recipe.data, strategy):
            flags.update(arg for arg in option.args if arg.startswith("--"))
    return flags


@dataclass(frozen=True)
class SourceView:
    """What the current recipe says, pre-computed once per recipe."""

    sections: tuple[Section, ...]
    #: facts of each section (and of ``meta.<key>`` header fields), by slug
    facts: Mapping[str, tuple[Fact, ...]]
    #: flags/env/images the recipe can emit
    emittable: frozenset[Key]
    #: facts the current guide states without saying they are gone
    guide_affirmed: frozenset[Key]
    #: every fact anywhere in the current guide or recipe fields (any polarity)
    mentioned: frozenset[Key]


def header_sources(recipe: Recipe) -> dict[str, str]:
    """The recipe's translatable header text, keyed ``meta.<key>`` like translation sections."""
    return {f"meta.{key}": val for key in HEADER_KEYS if isinstance(val := recipe.meta.get(key), str)}


def source_view(catalog: Catalog, recipe: Recipe) -> SourceView:
    """The current recipe's sections, facts and emittable set (renders every offered selection:
    build it once per recipe and pass it to :func:`check_translation` for each of its languages)."""
    guide = recipe.data.get("guide")
    sections = tuple(guide_sections(guide)) if isinstance(guide, str) else ()
    facts = {s.slug: tuple(extract_facts(s.markdown)) for s in sections}
    facts.update((key, tuple(extract_facts(text))) for key, text in header_sources(recipe).items())
    guide_facts = [f for s in sections for f in facts[s.slug]]
    affirmed = {(f.kind, f.key) for f in guide_facts if not f.negated}
    mentioned = {(f.kind, f.key) for f in guide_facts} | _keys(_walk_strings(_without_guide(recipe), with_prose=True))
    emittable = emittable_facts(catalog, recipe)
    return SourceView(sections, facts, frozenset(emittable), frozenset(affirmed), frozenset(mentioned | emittable))


def _where(view: SourceView, key: Key) -> str:
    """Sections of the current guide that mention ``key`` (for explanations)."""
    return ", ".join(s.slug for s in view.sections if any((f.kind, f.key) == key for f in view.facts[s.slug]))


def check_translation(catalog: Catalog, recipe: Recipe, translation: Translation,
                      view: SourceView | None = None) -> list[DriftFinding]:
    """Every finding for ``translation`` against the current ``recipe`` (its ``view``), in source order."""
    view = view or source_view(catalog, recipe)
    findings: list[DriftFinding] = list(translation.parse_problems)
    if translation.lang.lower() == SOURCE_LANG:
        findings.append(DriftFinding("-", "invalid", translation.lang,
                                     f"{SOURCE_LANG!r} is the language of the recipe itself"))
    translated: dict[str, Any] = {}
    t_facts: dict[str, list[Fact]] = {}
    for s in translation.sections:
        translated.setdefault(s.slug, s)
        t_facts.setdefault(s.slug, []).extend(extract_facts(s.markdown))
    for key, text in translation.header.items():
        t_facts[f"meta.{key}"] = extract_facts(text)
    # "added" looks for a source fact anywhere in the translated guide (translators move
    # things between sentences); a header field is compared with its own translation only
    t_guide = {(f.kind, f.key) for slug, fs in t_facts.items() if not slug.startswith("meta.") for f in fs}
    # units in source order: guide sections, then header fields
    units = [(sec.slug, sec.title or "(preamble)", sec.hash) for sec in view.sections]
    units += [(key, key, content_hash(text)) for key, text in header_sources(recipe).items()]
    for slug, title, current in units:
        is_header = slug.startswith("meta.")
        present = (slug[5:] in translation.header) if is_header else slug in translated
        if not present:
            # header translations are optional (the page falls back to English); a section whose
            # recorded hash is current was deliberately left untranslated at this revision
            if not is_header and translation.source_hashes.get(slug) != current:
                findings.append(DriftFinding(slug, "untranslated", title, "this section of the recipe has no "
                                             "translation; the page shows the original"))
            continue
        line = None if is_header else translated[slug].line
        findings += _hash_findings(translation.source_hashes, slug, title, current, line)
        scope = {(f.kind, f.key) for f in t_facts.get(slug, [])} if is_header else t_guide
        findings.extend(_fact_findings(view, slug, t_facts.get(slug, []), scope, line))
    return findings + _orphan_findings(view, translation, translated, t_facts, t_guide)


def _orphan_findings(view: SourceView, translation: Translation, translated: Mapping[str, Any],
                     t_facts: Mapping[str, list[Fact]], t_guide: set[Key]) -> list[DriftFinding]:
    """Translated sections whose source anchor is gone (each once), with the facts they state."""
    source_slugs = {s.slug for s in view.sections}
    findings: list[DriftFinding] = []
    for s in translation.sections:
        if s.slug not in source_slugs and translated[s.slug] is s:
            findings.append(DriftFinding(
                s.slug, "orphaned-section", s.slug,
                "the recipe's guide no longer has a section with this anchor", None, s.line))
            findings.extend(_fact_findings(view, s.slug, t_facts[s.slug], t_guide, s.line, source=False))
    return findings


def _hash_findings(hashes: Mapping[str, str | None], slug: str, title: str, current: str,
                   line: int | None) -> list[DriftFinding]:
    """Whether the translated unit was made from the current source (by the hash its front matter records)."""
    recorded = hashes.get(slug)
    if recorded is None:
        return [DriftFinding(slug, "source-unverified", title,
                             "no hash of the source this section was translated from is recorded, so it cannot "
                             f"be shown current; the source section is now {current}", None, line)]
    if recorded != current:
        return [DriftFinding(slug, "source-changed", title,
                             f"translated from {recorded}, the source section is now {current}", None, line)]
    return []


def _fact_findings(view: SourceView, slug: str, t_facts: list[Fact], t_all: set[Key], line: int | None,
                   *, source: bool = True) -> list[DriftFinding]:
    out: list[DriftFinding] = []
    seen: set[tuple[str, Key]] = set()
    for f in t_facts:
        key = (f.kind, f.key)
        if ("removed", key) in seen:
            continue
        if f.kind in EMITTABLE:
            if f.negated or key in view.emittable or key in view.guide_affirmed:
                continue
            where = _where(view, key)
            why = (f"the recipe no longer emits this {f.kind}"
                   + (f"; the current guide mentions it only as no longer applying ({where})" if where
                      else " and the current guide does not mention it"))
        else:
            if key in view.mentioned:
                continue
            why = f"the current recipe no longer contains this {f.kind} (guide or any recipe field)"
        seen.add(("removed", key))
        out.append(DriftFinding(slug, "removed", f.text, why, f.kind, line))
    if source:
        for f in view.facts.get(slug, ()):
            key = (f.kind, f.key)
            if ("added", key) in seen or key in t_all:
                continue
            seen.add(("added", key))
            note = " (as no longer applying)" if f.negated and f.kind in EMITTABLE else ""
            out.append(DriftFinding(slug, "added", f.text,
                                    f"the current source section states this {f.kind}{note}; "
                                    "the translation does not", f.kind, line))
    return out


def check(catalog: Catalog, recipe: Recipe, translation: Translation, view: SourceView | None = None) -> Translation:
    """``translation`` with its findings filled in."""
    return replace(translation, findings=tuple(check_translation(catalog, recipe, translation, view)))
