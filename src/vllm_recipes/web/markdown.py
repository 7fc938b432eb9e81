"""Recipe guides: GitHub-flavoured Markdown -> sanitized HTML. Guides come from authors we do not control,
so markdown-it-py's output always goes through nh3 with a fixed allowlist: no script, event handler, style
attribute or ``javascript:`` link. Heading ids are ``i18n.sections``' GitHub-style slugs (stale
translations link to them)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.attrs import attrs_block_plugin
from pygments import highlight as _pyg_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span",
    "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
}
_ATTRS = {
    "a": {"href", "title", "class", "hreflang"},
    "img": {"src", "alt", "title", "width", "height"},
    "code": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "div": {"class", "role", "lang"},
    "th": {"class"},
    "td": {"class"},
    "ol": {"start"},
    "h1": {"id"}, "h2": {"id"}, "h3": {"id"}, "h4": {"id"}, "h5": {"id"}, "h6": {"id"},
}
_SCHEMES = {"http", "https", "mailto"}
_FORMATTER = HtmlFormatter(nowrap=True)
#: the token classes our stylesheet colours (``.hl .k`` ...); read from it, so the CSS is the one list
_STYLED = frozenset(re.findall(r"\.hl \.([\w-]+)", (Path(__file__).parent / "static" / "site.css")
                               .read_text(encoding="utf-8")))
#: a token the stylesheet does not colour (whitespace, names, punctuation) needs no markup:
#: it would only weigh the page (a long bash guide is half spans)
_TOKEN_SPAN = re.compile(r'<span class="([\w-]+)">([^<]*)</span>')
MAX_GUIDE_CHARS = 1_000_000


def _highlight(code: str, lang: str, _attrs: Any) -> str:
    """Pygments classes (styled by our CSS); unknown languages fall back to plain code."""
    name = (lang or "").strip().split()[0] if lang else ""
    if not name:
        return ""
    try:
        lexer = get_lexer_by_name(name)
    except ClassNotFound:
        return ""
    body = _TOKEN_SPAN.sub(lambda m: m.group(0) if m.group(1) in _STYLED else m.group(2),
                           _pyg_highlight(code, lexer, _FORMATTER))
    safe = "".join(c for c in name if c.isalnum() or c in "-_+")
    return f'<pre class="hl"><code class="language-{safe}">{body}</code></pre>\n'


def _cell_open(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    """Table alignment as a class: inline ``style`` attributes are refused by our CSP."""
    tok = tokens[idx]
    style = tok.attrGet("style")
    if isinstance(style, str) and "text-align:" in style:
        tok.attrs.pop("style", None)
        tok.attrSet("class", "al-" + style.split(":", 1)[1].strip())
    return self.renderToken(tokens, idx, options, env)


@lru_cache(maxsize=2)
def _parser(with_attrs: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True, "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    if with_attrs:
        md.use(attrs_block_plugin)
    md.use(anchors_plugin, min_level=1, max_level=6)  # ids only: app.js adds the "#" links
    md.add_render_rule("th_open", _cell_open)
    md.add_render_rule("td_open", _cell_open)
    return md


def sanitize(html_text: str) -> str:
    """The allowlist every piece of recipe-authored HTML goes through."""
    return nh3.clean(html_text, tags=_TAGS, attributes=_ATTRS, url_schemes=_SCHEMES, link_rel=None,
                     strip_comments=True)


def render_markdown(text: str, *, with_attrs: bool = False) -> str:
    """Markdown -> sanitized HTML. ``with_attrs`` honours ``{#slug}`` lines (translations)."""
    if not isinstance(text, str) or not text.strip():
        return ""
    return sanitize(_parser(with_attrs).render(text[:MAX_GUIDE_CHARS]))


def render_inline(text: str) -> str:
    """A one-line field (description, note body) with inline Markdown, sanitized."""
    if not isinstance(text, str) or not text:
        return ""
    return sanitize(_parser(False).renderInline(text[:20_000]))
