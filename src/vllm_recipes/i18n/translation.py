"""Translation files: ``models/<org>/<repo>.<lang>.md`` beside the recipe they translate.

YAML front matter (source revision, source section hashes, header text), then the translated
guide, each heading after an ``{#<source slug>}`` line. Content problems become ``invalid``
findings, never exceptions, so one broken file cannot crash the site or hide the others.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.yamlsource import FrozenDict, YamlLoadError, normalize_date, parse_yaml

from .sections import heading_slug, normalize_markdown, split_at_headings, unique_slug

#: BCP 47-ish language tag as used in file names (``zh``, ``pt-BR``, ``zh-Hant``)
LANG_TAG = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")
SOURCE_LANG = "en"
MAX_TRANSLATION_BYTES = 2 * 1024 * 1024
#: front matter keys holding translated header text: each translates the recipe's ``meta.<key>``
HEADER_KEYS = ("title", "description", "performance_headline")
_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)?---[ \t]*(?:\n|\Z)", re.S)


@dataclass(frozen=True, slots=True)
class DriftFinding:
    """One reason a translation is stale, invalid or incomplete."""

    #: source section slug (``meta.description`` etc. for header text, ``-`` for the file)
    section: str
    #: ``source-changed``, ``source-unverified``, ``untranslated``, ``orphaned-section``,
    #: ``removed``, ``added``, ``invalid``, ``no-recipe``
    kind: str
    #: the exact token (flag, image, number...), or the section heading / file detail
    token: str
    explanation: str
    #: fact kind for ``removed``/``added`` (flag, env, image, number, version, date, pr)
    token_kind: str | None = None
    #: 1-based line in the translation file, when known
    line: int | None = None

    @property
    def label(self) -> str:
        """``removed-flag``, ``added-pr``, ``source-changed``... as printed by the CLI."""
        return f"{self.kind}-{self.token_kind}" if self.token_kind else self.kind

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("section", "kind", "token_kind", "token", "explanation", "line")}


@dataclass(frozen=True, slots=True)
class TranslatedSection:
    """One translated guide section, tied to a source section by slug."""

    slug: str
    #: translated heading (plain text); empty for the preamble
    title: str
    level: int
    #: translated Markdown, heading included, without the ``{#slug}`` line
    markdown: str
    #: 1-based line of the section in the translation file
    line: int


@dataclass(frozen=True)
class Translation:
    """A parsed translation file; the drift check (:func:`~.drift.check`) fills in ``findings``."""

    hf_id: str
    lang: str
    path: Path
    #: path relative to the recipes directory (``models/<org>/<repo>.<lang>.md``)
    rel_path: str
    #: ``meta.date_updated`` of the recipe revision the translation was made from
    source_date_updated: str | None
    #: source section slug (or ``meta.<key>``) -> hash of the source it was made from;
    #: ``None`` when that source text is not known
    source_hashes: Mapping[str, str | None]
    sections: tuple[TranslatedSection, ...]
    #: translated header text by key (``title``, ``description``, ``performance_headline``)
    header: Mapping[str, str] = field(default_factory=FrozenDict)
    #: problems found while parsing
    parse_problems: tuple[DriftFinding, ...] = ()
    #: the parse problems until checked (:func:`~.drift.check`), then every finding (parse problems first)
    findings: tuple[DriftFinding, ...] = ()

    @property
    def stale(self) -> bool:
        """True when the translation has any finding: the gate ``i18n check`` exits 1 on."""
        return bool(self.findings)

    @property
    def stale_sections(self) -> frozenset[str]:
        """Slugs (and ``meta.*`` keys) that carry at least one finding."""
        return frozenset(f.section for f in self.findings)

    def section(self, slug: str) -> TranslatedSection | None:
        return next((s for s in self.sections if s.slug == slug), None)

    def findings_for(self, slug: str) -> tuple[DriftFinding, ...]:
        return tuple(f for f in self.findings if f.section == slug)


def split_translation_name(filename: str) -> tuple[str, str] | None:
    """``DeepSeek-V4.1-Flash.zh.md`` -> ``("DeepSeek-V4.1-Flash", "zh")``; None if not a translation."""
    if not filename.endswith(".md"):
        return None
    stem = filename[:-3]
    repo, dot, lang = stem.rpartition(".")
    if not dot or not repo or not LANG_TAG.match(lang):
        return None
    return repo, lang


def _problem(msg: str, line: int | None = None, token: str = "-", section: str = "-") -> DriftFinding:
    return DriftFinding(section, "invalid", token, msg, None, line)


def parse_translation(text: str, *, hf_id: str, lang: str, path: Path, rel_path: str) -> Translation:
    """Parse translation file content; problems are collected, never raised."""
    problems: list[DriftFinding] = []
    front, body, body_offset = _front_matter(text.replace("\r\n", "\n").replace("\r", "\n"), rel_path, problems)
    declared = front.get("lang")
    if declared is not None and str(declared) != lang:
        problems.append(_problem(f"front matter says lang {declared!r} but the file name says {lang!r}",
                                 token=str(declared)))
    recipe_key = front.get("recipe")
    if recipe_key is not None and str(recipe_key).lower() != hf_id.lower():
        problems.append(_problem(f"front matter names recipe {recipe_key!r}, the file sits beside {hf_id}",
                                 token=str(recipe_key)))
    date = _source_date(front, problems)
    hashes = _source_hashes(front, problems)
    header: dict[str, str] = {}
    for key in HEADER_KEYS:
        val = front.get(key)
        if isinstance(val, str) and val.strip():
            header[key] = val.strip()
        elif val is not None:
            problems.append(_problem(f"front matter {key} must be a non-empty string", section=f"meta.{key}"))
    sections = _split_body(body, body_offset, problems)
    return Translation(
        hf_id=hf_id, lang=lang, path=path, rel_path=rel_path,
        source_date_updated=date, source_hashes=FrozenDict(hashes), sections=sections,
        header=FrozenDict(header), parse_problems=tuple(problems), findings=tuple(problems),
    )


def _front_matter(text: str, rel_path: str, problems: list[DriftFinding]) -> tuple[Mapping[str, Any], str, int]:
    """``(front matter, body, lines before the body)``; an unreadable front matter is empty (and a problem)."""
    m = _FRONT.match(text)
    if not m:
        problems.append(_problem("no YAML front matter (the file must start with a '---' line)", 1))
        return FrozenDict(), text, 0
    body, body_offset = text[m.end():], text.count("\n", 0, m.end())
    try:
        doc = parse_yaml(m.group(1) or "", rel_path)
    except YamlLoadError as exc:
        problems.append(_problem(f"front matter: {exc.message}", exc.position.line + 1))
        return FrozenDict(), body, body_offset
    if isinstance(doc.data, dict):
        return doc.data, body, body_offset
    if doc.data is not None:
        problems.append(_problem("front matter must be a mapping", 2))
    return FrozenDict(), body, body_offset


def _source_date(front: Mapping[str, Any], problems: list[DriftFinding]) -> str | None:
    date = normalize_date(front.get("source_date_updated"))
    if date is None:
        problems.append(_problem("front matter lacks source_date_updated (the recipe revision translated)"))
    elif not isinstance(date, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        problems.append(_problem("source_date_updated must be a YYYY-MM-DD date", token=str(date)))
        date = str(date)
    return date


def _source_hashes(front: Mapping[str, Any], problems: list[DriftFinding]) -> dict[str, str | None]:
    """Section slug -> the hash of the source it was translated from (a malformed hash counts as none)."""
    raw_hashes = front.get("source_hashes")
    if raw_hashes is None:
        problems.append(_problem("front matter lacks source_hashes (source section slug -> hash)"))
        return {}
    if not isinstance(raw_hashes, dict):
        problems.append(_problem("source_hashes must be a mapping of section slug to hash or null"))
        return {}
    hashes: dict[str, str | None] = {}
    for k, v in raw_hashes.items():
        if v is not None and not (isinstance(v, str) and re.fullmatch(r"sha256:[0-9a-f]{16}", v)):
            problems.append(_problem(f"source hash of {k} must be 'sha256:<16 hex digits>' or null",
                                     token=str(v), section=str(k)))
            v = None
        hashes[str(k)] = v
    return hashes


def _split_body(body: str, offset: int, problems: list[DriftFinding]) -> tuple[TranslatedSection, ...]:
    out: list[TranslatedSection] = []
    used: set[str] = set()
    for h, chunk in split_at_headings(body, attrs=True):
        line_no = offset + h.heading_line + 1
        if h.explicit_id:
            slug = h.explicit_id
            if slug in used:
                problems.append(_problem(f"two sections claim source section {slug!r}", line_no, slug, slug))
            used.add(slug)
        else:
            slug = unique_slug(heading_slug(h.title), used)
        out.append(TranslatedSection(slug, h.title, h.level, normalize_markdown(chunk), line_no))
    return tuple(out)


def read_translation(path: Path, *, hf_id: str, lang: str, rel_path: str) -> Translation:
    """Read and parse one translation file (unreadable files yield an empty, invalid translation)."""
    try:
        if path.stat().st_size > MAX_TRANSLATION_BYTES:
            raise ValueError(f"file is larger than {MAX_TRANSLATION_BYTES:,} bytes")
        text = path.read_bytes().decode("utf-8")
    except (OSError, ValueError) as exc:
        msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        problems = (_problem(f"cannot read translation: {msg}", 1),)
        return Translation(hf_id, lang, path, rel_path, None, FrozenDict(), (), parse_problems=problems,
                           findings=problems)
    return parse_translation(text, hf_id=hf_id, lang=lang, path=path, rel_path=rel_path)


def read_translations(catalog: Catalog) -> Iterator[tuple[Translation, Recipe | None]]:
    """Every translation file under ``<root>/models``, in path order, read, with the recipe beside it."""
    models = catalog.root / "models"
    by_path = {r.rel_path: r for r in catalog.recipes}
    for dirpath, dirnames, filenames in os.walk(models):
        dirnames.sort(key=os.fsencode)
        for name in sorted(filenames, key=os.fsencode):
            split = split_translation_name(name)
            if split is None:
                continue
            repo, lang = split
            path = Path(dirpath) / name
            rel = f"models/{path.relative_to(models).as_posix()}"
            stem = rel[: -len(f".{lang}.md")]
            recipe = by_path.get(f"{stem}.yaml") or by_path.get(f"{stem}.yml")
            org = rel.split("/")[1] if rel.count("/") >= 2 else ""
            hf_id = recipe.hf_id if recipe else f"{org}/{repo}"
            yield read_translation(path, hf_id=hf_id, lang=lang, rel_path=rel), recipe
