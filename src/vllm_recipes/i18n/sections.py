"""Splitting a recipe ``guide`` into sections with stable anchors and content hashes.

The single definition every consumer shares (docs/decisions-i18n.md §2): a section starts at each
top-level heading (text before the first is ``_preamble``), its slug is mdit-py-plugins' anchor
and its hash is over normalized Markdown, so whitespace-only edits do not make a translation stale.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from mdit_py_plugins.anchors.index import slugify as heading_slug
from mdit_py_plugins.anchors.index import unique_slug
from mdit_py_plugins.attrs import attrs_block_plugin

PREAMBLE_SLUG = "_preamble"
#: An attribute block line (``{#slug}``) as mdit-py-plugins' ``attrs_block_plugin`` reads it.
ATTR_LINE = re.compile(r"^\s*\{[^{}\n]*\}\s*$")


@dataclass(frozen=True, slots=True)
class Section:
    """One heading-delimited part of a guide."""

    slug: str
    title: str
    #: heading level 1-6; 0 for the preamble
    level: int
    #: the section's Markdown, heading line included, surrounding blank lines trimmed
    markdown: str
    hash: str
    #: 1-based line of the heading (or first line) within the guide text
    line: int


def normalize_markdown(text: str) -> str:
    """The canonical form that section hashes are computed over."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(ln.rstrip() for ln in text.split("\n")).strip("\n")


def content_hash(text: str) -> str:
    """``sha256:<16 hex>`` of the normalized text (also used for description/headline)."""
    digest = hashlib.sha256(normalize_markdown(text).encode("utf-8")).hexdigest()
    return f"sha256:{digest[:16]}"


@lru_cache(maxsize=2)
def _parser(with_attrs: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark")
    if with_attrs:
        md.use(attrs_block_plugin)
    return md


@dataclass(frozen=True, slots=True)
class RawHeading:
    """A top-level heading found by the parser (0-based line numbers); the preamble is one of level 0."""

    start: int  # first line of the section (an attribute line, if any, else the heading)
    heading_line: int
    level: int
    title: str
    explicit_id: str | None


def split_at_headings(text: str, *, attrs: bool = False) -> list[tuple[RawHeading, str]]:
    """The top-level headings of ``text`` with their Markdown (without ``{#id}`` lines, which ``attrs``
    honours), after the text before the first one (unless blank) as heading :data:`PREAMBLE_SLUG`."""
    lines = text.split("\n")
    tokens = _parser(attrs).parse(text)
    found: list[RawHeading] = []
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or tok.level != 0 or tok.map is None:
            continue
        start = tok.map[0]
        explicit = tok.attrGet("id") if attrs else None
        if attrs:
            j = start - 1
            while j >= 0 and (not lines[j].strip() or ATTR_LINE.match(lines[j])):
                if ATTR_LINE.match(lines[j]):
                    start = j
                j -= 1
        # the heading's plain text the way the anchors plugin reads it
        title = "".join(c.content for c in tokens[i + 1].children or () if c.type in ("text", "code_inline"))
        found.append(RawHeading(start, tok.map[0], int(tok.tag[1]), title, str(explicit) if explicit else None))
    if "\n".join(lines[:found[0].start if found else len(lines)]).strip():
        found.insert(0, RawHeading(0, 0, 0, "", PREAMBLE_SLUG))
    ends = [h.start for h in found[1:]] + [len(lines)]
    return [(h, "\n".join(lines[h.heading_line:end])) for h, end in zip(found, ends, strict=False)]


def guide_sections(guide_markdown: str) -> list[Section]:
    """Split a recipe's ``guide`` into sections with slugs and hashes, in order."""
    out: list[Section] = []
    used: set[str] = set()
    for h, body in split_at_headings(guide_markdown.replace("\r\n", "\n").replace("\r", "\n")):
        slug = unique_slug(h.explicit_id or heading_slug(h.title), used)
        out.append(Section(slug, h.title, h.level, normalize_markdown(body), content_hash(body), h.start + 1))
    return out
