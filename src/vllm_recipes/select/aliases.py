"""Other spellings of the same choice: ids in any letter case (``--hardware H200``), and the public
site's advanced-option ids (``?advanced=max_num_seqs_256``). What cannot be mapped is returned
unchanged, so the refusal names what the user typed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .advanced import ADVANCED_OPTIONS


def canonical(value: str, choices: Collection[str]) -> str:
    """``value`` itself when it is a choice, else the one choice equal to it ignoring case."""
    if value in choices:
        return value
    folded = value.casefold()
    hits = [c for c in choices if isinstance(c, str) and c.casefold() == folded]
    return hits[0] if len(hits) == 1 else value


def _value_spellings(value: str) -> list[str]:
    """``0.95`` -> ``0.95``, ``095``; ``8192`` -> ``8192``, ``8k``."""
    out = [value, value.replace(".", ""), value.replace(".", "_")]
    if value.isdigit() and int(value) % 1024 == 0:
        out.append(f"{int(value) // 1024}k")
    return list(dict.fromkeys(out))


def public_ids(args: Sequence[str]) -> list[str]:
    """Ids the public site forms for a preset of ``--flag [value]``: the flag name in
    snake case, then the value (``--max-num-seqs 256`` -> ``max_num_seqs_256``)."""
    base = args[0].lstrip("-").replace("-", "_")
    if len(args) == 1:
        return [base]
    return [f"{base}_{v}" for v in _value_spellings(args[1])]


def _key(option_id: str) -> str:
    return option_id.casefold().replace("-", "_")


def _advanced_aliases() -> dict[str, str]:
    """Folded public-site or our advanced-option id -> our id (our own ids win a clash)."""
    table: dict[str, str] = {}
    for o in ADVANCED_OPTIONS:
        for alias in public_ids(o.args):
            table.setdefault(_key(alias), o.id)
    return table | {_key(o.id): o.id for o in ADVANCED_OPTIONS}


_ADVANCED = _advanced_aliases()


def advanced_id(value: str) -> str:
    """Our id for an advanced option spelled ``value`` (unchanged when unknown)."""
    return _ADVANCED.get(_key(value), value)
