"""How a refusal names the option the user typed.

The same selection code answers the command line (``--prefill-rank``) and URLs /
``/api/resolve`` (``prefill_rank``). Messages mark an option with :func:`flag`;
:func:`spell` writes every marked name in the reader's spelling, so a message
never shows an internal field name.
"""

from __future__ import annotations

import re
from typing import Literal

Style = Literal["url", "cli"]

#: selection parameter (URL spelling) -> command-line option
CLI_OPTIONS: dict[str, str] = {
    "hardware": "--hardware",
    "variant": "--variant",
    "strategy": "--strategy",
    "nodes": "--nodes",
    "features": "--feature",
    "feature": "--feature",
    "no-feature": "--no-feature",
    "fmode": "--mode",
    "advanced": "--advanced",
    "kv_offload": "--kv-offload",
    "kv_instances": "--kv-instances",
    "kv_instance": "--kv-instance",
    "prefill_nodes": "--prefill-nodes",
    "decode_nodes": "--decode-nodes",
    "prefill_mode": "--prefill-mode",
    "decode_mode": "--decode-mode",
    "prefill_rank": "--prefill-rank",
    "decode_rank": "--decode-rank",
    "frontend": "--frontend",
    "router": "--router",
    "install": "--install",
    "task": "--task",
}

#: the URL has one ``features`` list where the command line has ``--feature`` / ``--no-feature``
_URL_SPELLING = {"feature": "features", "no-feature": "features"}

_MARK = "\x00"
_MARKED = re.compile(f"{_MARK}([a-z_-]+){_MARK}")


def flag(param: str) -> str:
    """A marked option name for a message; :func:`spell` turns it into ``--x-y`` or ``x_y``."""
    return f"{_MARK}{param}{_MARK}"


def option_name(param: str, style: Style) -> str:
    if style == "cli":
        return CLI_OPTIONS.get(param, "--" + param.replace("_", "-"))
    return _URL_SPELLING.get(param, param)


def spell(text: str, style: Style) -> str:
    """``text`` with every :func:`flag` marker written in ``style``."""
    if _MARK not in text:
        return text
    return _MARKED.sub(lambda m: option_name(m.group(1), style), text).replace(_MARK, "")
