"""How a refusal names the option the user typed: messages mark an option with :func:`flag`, and
:func:`spell` writes it as the reader types it (``--prefill-rank`` on the command line,
``prefill_rank`` in URLs and ``/api/resolve``).
"""

from __future__ import annotations

import re
from typing import Literal

from .params import cli_option

Style = Literal["url", "cli"]

#: the URL has one ``features`` list where the command line has ``--feature`` / ``--no-feature``
_URL_SPELLING = {"feature": "features", "no-feature": "features"}

_MARK = "\x00"
_MARKED = re.compile(f"{_MARK}([a-z_-]+){_MARK}")


def flag(param: str) -> str:
    """A marked option name for a message; :func:`spell` turns it into ``--x-y`` or ``x_y``."""
    return f"{_MARK}{param}{_MARK}"


def spell(text: str, style: Style) -> str:
    """``text`` with every :func:`flag` marker written in ``style``."""
    if _MARK not in text:
        return text
    def name(m: re.Match[str]) -> str:
        return cli_option(m[1]) if style == "cli" else _URL_SPELLING.get(m[1], m[1])

    return _MARKED.sub(name, text).replace(_MARK, "")
