"""Deduplication, quoting and text layout (synthesis.md §7), keeping provenance: ``final_tokens`` gives
the kept tokens and what each kept flag shadowed; text and argv are formatting of the kept tokens.
Placeholders are the one expansion a value may hold: every target rewrites them here and quotes the rest.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from vllm_recipes.catalog.identifiers import RULE_MODEL_REF, is_model_ref
from vllm_recipes.synth.plan import Arg, Invocation

from .unsafe import UnsafeValue

_SAFE = re.compile(r"[A-Za-z0-9_./=:@,+%-]+")
_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
#: Search paths a value may extend (``LD_PRELOAD=/usr/lib/x.so:$LD_PRELOAD``): read from the environment
#: the command runs in, like the placeholders below (render/artifacts.py binds them per deploy target).
INHERITED = frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "PATH", "PYTHONPATH"})
#: The placeholders the user fills in (synthesis.md §5.2, plus ``IB_IF``, which the DGX Spark recipes'
#: guides ask for with ``HEAD_IP`` and ``IFACE_NAME``), a deploy worker's own address (``NODE_SELF_ADDRESS``,
#: render/workloads.py SELF) and :data:`INHERITED`: the only shell expansion a
#: rendered command may contain. Any other ``$NAME`` in a value (``$HF_TOKEN``) is data and is quoted.
PLACEHOLDER_NAME = re.compile(r"HEAD_IP|IFACE_NAME|IB_IF|ROUTER_HOST|ROUTER_PORT|(?:PREFILL|DECODE)_DP_RPC_PORT"
                              r"|(?:PREFILL|DECODE)_NODE_[1-9][0-9]*|VLLM_INSTANCE_[1-9][0-9]*|MOONCAKE_[A-Z0-9_]+"
                              r"|NODE_SELF_ADDRESS|"
                              + "|".join(sorted(INHERITED)))
ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CONT = " \\\n  "
T = TypeVar("T")


def is_placeholder(name: str) -> bool:
    """Whether ``$name`` is a declared placeholder (:data:`PLACEHOLDER_NAME`)."""
    return PLACEHOLDER_NAME.fullmatch(name) is not None


def _literal(s: str) -> str:
    return s if s == "" or _SAFE.fullmatch(s) else "'" + s.replace("'", "'\\''") + "'"


def quote(s: str) -> str:
    """The shell word that passes ``s`` through as one argv element (§7.4, docs/decisions-hardening.md H7):
    declared placeholders stay expandable, everything else unsafe is single-quoted (``$HF_TOKEN`` ->
    ``'$HF_TOKEN'``, ``$HEAD_IP:8001`` unchanged)."""
    if not isinstance(s, str) or s == "" or _SAFE.fullmatch(s):
        return s
    parts: list[str] = []  # :func:`rewrite` inlined: every command quotes its values
    pos = 0
    for start, end, _name in placeholder_refs(s):
        parts += (_literal(s[pos:start]), s[start:end])
        pos = end
    parts.append(_literal(s[pos:]))
    return "".join(parts)


def literal(s: str) -> str:
    """``s`` as one shell word in which nothing expands (generated code handed to ``bash -c``)."""
    return _literal(s) if s else "''"


def placeholder_refs(s: str) -> list[tuple[int, int, str]]:
    """``(start, end, name)`` of each declared placeholder in ``s`` (``$NAME`` or ``${NAME}``): the parts
    of a value that may expand, in every output (a command, a manifest, a script); the rest is data."""
    return [(m.start(), m.end(), name) for m in _REF.finditer(s) if is_placeholder(name := m.group(1) or m.group(2))]


def rewrite(text: str, each: Callable[[str, str], str], data: Callable[[str], str] = str) -> str:
    """``text`` with each placeholder as ``each(name, as_written)`` writes it and the data between
    as ``data`` escapes it for the target."""
    out: list[str] = []
    pos = 0
    for start, end, name in placeholder_refs(text):
        out += (data(text[pos:start]), each(name, text[start:end]))
        pos = end
    out.append(data(text[pos:]))
    return "".join(out)


def placeholders(text: str) -> list[str]:
    """The declared placeholders in ``text`` (:func:`placeholder_refs`); every other ``$WORD``
    is data in every target, as in ``vllm-recipes command``."""
    return [name for _start, _end, name in placeholder_refs(text)]


def shell_ref(name: str) -> str:
    """A placeholder as a shell word that expands it from the environment."""
    return f'"${{{name}}}"'


def inherits(value: str) -> bool:
    """Whether a value extends an inherited search path (``LD_PRELOAD=/x.so:$LD_PRELOAD``): only a shell
    where the process starts can expand it."""
    return any(n in INHERITED for n in placeholders(value))


def shell_join(words: Sequence[str]) -> str:
    """Shell words of plain data (an install command, a container image) by the one quoting rule."""
    return " ".join(quote(w) if w else "''" for w in words)


def substitute(text: str, bind: Callable[[str], str | None]) -> str:
    """Replace each placeholder that ``bind`` knows; leave the others (and all data) as they are."""
    return rewrite(text, lambda name, written: written if (v := bind(name)) is None else v)


def shell_word(text: str, bind: Callable[[str], str] = shell_ref) -> str:
    """A token as one shell word by the one quoting rule (:func:`quote`): the data quoted,
    each placeholder as ``bind`` writes it (``"${NAME}"``, a bound value)."""
    return rewrite(text, lambda name, _written: bind(name), quote) if text else "''"


@functools.lru_cache(maxsize=8192)
def _quoted(s: str) -> str:
    """:func:`quote`, remembered: a catalog's values repeat across thousands of commands (bounded,
    since advanced options from URLs are user-driven)."""
    return quote(s)


def env_key(key: object) -> str:
    """``key`` when it is an environment variable name, else :class:`UnsafeValue`."""
    if isinstance(key, str) and ENV_KEY.fullmatch(key):
        return key
    raise UnsafeValue(f"environment variable name {key!r} is not a name ([A-Za-z_][A-Za-z0-9_]*)")


def assignment(key: object, value: str) -> str:
    """``KEY=value`` as one shell word (``export``, ``docker run -e``): the key a checked name, the value quoted."""
    return f"{env_key(key)}={quote(value)}"


def binary_words(binary: str) -> list[str]:
    """The argv words of a serve binary (``vllm serve``, an omni ``serve_binary``); refuses shell syntax."""
    words = binary.split(" ")
    if not all(_SAFE.fullmatch(w) for w in words) or words[0].startswith("-"):
        raise UnsafeValue(f"serve binary {binary!r} is not a command name and subcommands "
                          "(words of A-Z a-z 0-9 _ . / = : @ , + % -)")
    return words


@dataclass(frozen=True, slots=True)
class Unit:
    """A flag (with optional value) or a positional token, as parsed by §7.2."""

    flag: Arg
    value: Arg | None = None


def dedupe(tokens: Sequence[Arg], drop_flags: Sequence[str] = ()) -> tuple[list[Arg], dict[str, tuple[Unit, ...]]]:
    """§7.1 pre-filter + §7.2 last-wins dedupe (then ``drop_flags`` removed), keeping provenance:
    the kept tokens and, per flag, the units it shadowed (oldest first). The rule is :func:`dedupe_positions`."""
    values = tuple(a.value for a in tokens)
    kept, shadowed = dedupe_positions(values, tuple(drop_flags))
    shadow: dict[str, list[Unit]] = {}
    units: list[Unit] = []
    for i in shadowed:
        v = values[i]
        if v.startswith("-"):
            units = shadow.setdefault(v, [])
            units.append(Unit(tokens[i]))
        else:  # the value of the flag just before it
            units[-1] = Unit(units[-1].flag, tokens[i])
    return [tokens[i] for i in kept], {f: tuple(us) for f, us in shadow.items()}


def flag_pairs(tokens: Sequence[T], is_flag: Callable[[T], bool]) -> list[tuple[T, T | None]]:
    """§7.3 on any tokens: each flag with its value (the next token, unless a flag); any other token alone."""
    out: list[tuple[T, T | None]] = []
    i = 0
    while i < len(tokens):
        value = tokens[i + 1] if is_flag(tokens[i]) and i + 1 < len(tokens) and not is_flag(tokens[i + 1]) else None
        out.append((tokens[i], value))
        i += 1 if value is None else 2
    return out


def pair_lines(values: Sequence[str]) -> list[str]:
    """§7.3 as :func:`flag_pairs`, inlined on the hot path: ``flag value`` pairs; anything else on its own
    line; every token a quoted word (§7.4)."""
    lines: list[str] = []
    i, n = 0, len(values)
    while i < n:
        t = values[i]
        if t.startswith("-") and i + 1 < n and not values[i + 1].startswith("-"):
            lines.append(f"{_quoted(t)} {_quoted(values[i + 1])}")
            i += 2
        else:
            lines.append(_quoted(t))
            i += 1
    return lines


@functools.lru_cache(maxsize=4096)
def dedupe_positions(values: tuple[str, ...], drop_flags: tuple[str, ...] = ()
                     ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The §7 dedupe rule, on token values: indices of the kept tokens (§7.1 empty tokens out, §7.2 the last
    occurrence of a flag wins, then ``drop_flags`` and their values out), and of the shadowed ones (per
    flag, oldest first: the flag, then its value). Remembered: ``validate`` meets the same lists often."""
    pos = [i for i, v in enumerate(values) if v != ""]
    vals = [values[i] for i in pos]
    kept_rev: list[int] = []
    won: set[str] = set()
    #: where each flag's shadowed units start, last first
    shadow: dict[str, list[int]] = {}
    j = len(vals) - 1
    while j >= 0:
        start = j if vals[j].startswith("-") else j - 1 if j and vals[j - 1].startswith("-") else None
        if start is None:  # a positional
            kept_rev.append(j)
            j -= 1
            continue
        if vals[start] in won:
            shadow.setdefault(vals[start], []).append(start)
        else:
            won.add(vals[start])
            kept_rev += [j] if start == j else [j, start]
        j = start - 1
    kept = [pos[k] for k in reversed(kept_rev)]
    # A dropped flag leaves with its value (the next token, unless a flag); that value is not itself checked.
    if drop_flags:
        after_drop: list[int] = []
        j, n = 0, len(kept)
        while j < n:
            if values[kept[j]] in drop_flags:
                j += 2 if j + 1 < n and not values[kept[j + 1]].startswith("-") else 1
            else:
                after_drop.append(kept[j])
                j += 1
        kept = after_drop
    shadowed: list[int] = []
    for starts in shadow.values():
        for start in reversed(starts):
            shadowed.append(pos[start])
            if start + 1 < len(vals) and not vals[start + 1].startswith("-"):
                shadowed.append(pos[start + 1])
    return tuple(kept), tuple(shadowed)


def final_tokens(inv: Invocation) -> tuple[list[Arg], dict[str, tuple[Unit, ...]]]:
    """The kept tokens of a process (dedupe, then dropped flags) and what each flag shadowed."""
    return dedupe(inv.args, inv.drop_flags)


def command_text(binary: str, model_id: str, lines: Sequence[str]) -> str:
    """§7.5 layout: ``vllm serve <model> \\`` then two-space continuation lines; refuses a model that is not
    a model id, name or absolute path."""
    if not is_model_ref(model_id):
        raise UnsafeValue(f"model id {model_id!r} is not a model id ({RULE_MODEL_REF})")
    return CONT.join([" ".join([*binary_words(binary), quote(model_id)]), *lines])


def kept_values(inv: Invocation) -> tuple[str, ...]:
    """The values of a process's kept tokens, in order (:func:`dedupe_positions`: no shadowing record)."""
    values = tuple(a.value for a in inv.args)
    return tuple(values[i] for i in dedupe_positions(values, inv.drop_flags)[0])


def render_invocation(inv: Invocation) -> tuple[str, list[str]]:
    """Text and argv of one ``vllm serve`` process (the kept tokens only: no shadowing record)."""
    values = kept_values(inv)
    text = command_text(inv.binary, inv.model_id, pair_lines(values))
    return text, [*binary_words(inv.binary), inv.model_id, *values]


def router_text(lines: Sequence[str]) -> str:
    """PD / Mooncake router layout: four-space continuation (§8.3, §8.4). Each word of the lines must
    already be its own shell word, else the router is refused rather than run as shell."""
    for line in lines:
        for word in line.split(" "):
            if quote(word) != word or word == "":
                raise UnsafeValue(f"router argument {word!r} is not a plain word (in {line!r})")
    return " \\\n    ".join(lines)
