"""Extracting checkable facts (flags, env vars, images, numbers, versions, dates, PRs) from text.

Translators keep these tokens verbatim, so they can be compared across languages; each fact
records whether its sentence says it is *no longer* true. Patterns and cues: docs/decisions-i18n.md;
keep them conservative (a missed fact costs less than a false alarm on every CI run).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

#: kinds a recipe *emits* (argument lists, env maps, images) rather than only states
EMITTABLE = frozenset({"flag", "env", "image"})


@dataclass(frozen=True, slots=True)
class Fact:
    """One token found in a text."""

    kind: str
    #: comparison key (normalized: no thousands separators, canonical units, ``#N`` for PRs)
    key: str
    #: the token exactly as written
    text: str
    #: the sentence says the fact is no longer true (removed, not passed, not needed)
    negated: bool
    #: character offset in the (NFC-normalized) text
    offset: int


# --- patterns (ASCII look-arounds: CJK characters count as \w in Python) -----------------

_URL_PR = re.compile(
    r"https?://github\.com/([\w.-]{1,100})/([\w.-]{1,100})/(?:pull|issues)/(\d{1,20})[^\s)>\]]{0,2048}")
# a link target stops at brackets too, so a failed scan never runs into the next "](":
# every pattern stays linear on hostile input
_MD_LINK_DEST = re.compile(r"\]\(\s{0,8}<?[^()\[\]\s<>]{1,2048}>?(?:\s{1,8}\"[^\"\n]{0,512}\")?\s{0,8}\)")
_BARE_URL = re.compile(r"https?://[^\s)>\]`'\"]{1,2048}")
_IMAGE = re.compile(
    r"(?<![A-Za-z0-9_./:-])([a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)+):([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])"
)
_PR = re.compile(
    r"(?<![A-Za-z0-9_&/#])(?:([A-Za-z0-9][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}))?#(\d{3,20})"
    r"(?![A-Za-z0-9_])"
)
_DATE = re.compile(r"(?<![0-9])((?:19|20)\d\d-[01]\d-[0-3]\d)(?![0-9])")
_VERSION = re.compile(r"(?<![A-Za-z0-9_.])(v?)(\d+\.\d+\.\d+|(?<=v)\d+\.\d+)(?![0-9]|\.[0-9])")
_FLAG = re.compile(r"(?<![A-Za-z0-9_-])--[a-z0-9](?:[a-z0-9_.-]*[a-z0-9])?")
_ENV = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![A-Za-z0-9_])")
_NUM = r"(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?"
_SIZE = re.compile(
    r"(?<![A-Za-z0-9_.,])" + _NUM + r"\s?(?:-\s?)?(TiB|GiB|MiB|KiB|TB|GB|MB|KB|bytes|byte|字节)(?![A-Za-z0-9])"
)
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9_.,])" + _NUM + r"([KMB])?\s?(?:-\s?)?(?:个\s?)?tokens?(?![A-Za-z])"
)
_MAGNITUDE = re.compile(r"(?<![A-Za-z0-9_.,$#])" + _NUM + r"([KMB])(?![A-Za-z0-9_])")

#: sentence-level cues saying a fact no longer holds; matched case-insensitively
NEGATION_CUES: tuple[str, ...] = (
    r"\bno longer\b",
    r"\bnot (?:be )?(?:passed|needed|required)\b",
    r"\bno need\b",
    r"\b(?:removed|deprecated|superseded|obsolete)\b",
    "不再", "不需要", "无需", "已移除", "被移除", "移除了", "已删除", "删除了", "弃用", "废弃",
)
_NEGATION = re.compile("|".join(NEGATION_CUES), re.IGNORECASE)
# Sentence ends: . ! ? ; : before whitespace; CJK 。！？；：; blank lines, list items,
# table rows, fences and headings.
_BOUNDARY = re.compile(
    r"(?<=[.!?;:])\s+(?=\S)|[。！？；：]"
    r"|\n\s*\n|\n(?=\s*(?:[-*+•]|\d+[.)])\s)|\n(?=\s*(?:\||```|~~~|#))"
)
# full-width letters and digits -> ASCII (CJK punctuation is kept: it separates sentences
# and must not turn "，494 GiB" into ",494 GiB")
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF10, 0xFF5B) if chr(c - 0xFEE0).isalnum()}


def _blank(m: re.Match[str]) -> str:
    """A match masked: blanks for all but its newlines (so offsets and lines stay)."""
    return re.sub(r"[^\n]", " ", m.group(0))


def _sentences(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, negated)`` spans covering ``text``."""
    ends = [m.end() for m in _BOUNDARY.finditer(text)] + [len(text)]
    return [(a, b, bool(_NEGATION.search(text, a, b))) for a, b in pairwise([0, *ends])]


def _num_key(whole: str, frac: str | None) -> str:
    return whole.replace(",", "") + (frac or "")


_UNITS = {"bytes": "bytes", "byte": "bytes", "字节": "bytes"}


def extract_facts(text: str) -> list[Fact]:
    """Every fact in ``text`` (any language), in order of appearance."""
    text = unicodedata.normalize("NFC", text).translate(_FULLWIDTH)
    found: list[tuple[int, int, str, str, str]] = []  # start, end, kind, key, text

    def take(pattern: re.Pattern[str], kind: str, key_of: Callable[[re.Match[str]], str], src: str,
             text_of: Callable[[re.Match[str]], str] | None = None) -> str:
        def found_and_blank(m: re.Match[str]) -> str:
            found.append((m.start(), m.end(), kind, key_of(m), text_of(m) if text_of else m.group(0)))
            return _blank(m)

        return pattern.sub(found_and_blank, src)

    # PR links first (reported in their short ``org/repo#N`` form), then mask all link targets
    work = take(_URL_PR, "pr", lambda m: f"#{m.group(3)}", text,
                lambda m: f"{m.group(1)}/{m.group(2)}#{m.group(3)}")
    work = _BARE_URL.sub(_blank, _MD_LINK_DEST.sub(_blank, work))
    work = take(_IMAGE, "image", lambda m: m.group(0), work)
    work = take(_PR, "pr", lambda m: f"#{m.group(2)}", work)
    work = take(_DATE, "date", lambda m: m.group(1), work)
    work = take(_VERSION, "version", lambda m: m.group(2), work)
    work = take(_FLAG, "flag", lambda m: m.group(0), work)
    work = take(_ENV, "env", lambda m: m.group(0), work)
    work = take(_SIZE, "number",
                lambda m: f"{_num_key(m.group(1), m.group(2))} {_UNITS.get(m.group(3), m.group(3))}", work)
    work = take(_TOKENS, "number",
                lambda m: f"{_num_key(m.group(1), m.group(2))}{m.group(3) or ''} tokens", work)
    take(_MAGNITUDE, "number", lambda m: f"{_num_key(m.group(1), m.group(2))}{m.group(3)}", work)

    found.sort(key=lambda f: f[0])
    sentences = _sentences(text)
    out: list[Fact] = []
    si = 0
    for start, _end, kind, key, tok in found:
        while si + 1 < len(sentences) and sentences[si][1] <= start:
            si += 1
        out.append(Fact(kind, key, tok, sentences[si][2], start))
    return out

