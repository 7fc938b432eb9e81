"""YAML reading with positions: every value can be traced back to ``file:line:col``.

Alias bombs are refused before any object is built; only plain data (strings, integers, finite
floats, booleans, null, lists, mappings with string keys, dates as ``YYYY-MM-DD``) is accepted,
anything else is a load error at its position. Data is deep-frozen so a catalog can be shared
between requests and threads.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

#: the C loader is ~10x faster; the pure-Python one where PyYAML was built without libyaml
_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Files larger than this are refused without being parsed.
MAX_FILE_BYTES = 8 * 1024 * 1024
#: Maximum number of nodes a document may expand to once aliases are followed (the largest
#: real recipe has a few thousand; 2,000,000 let a hostile file keep a build busy for minutes).
MAX_EXPANDED_NODES = 250_000
#: Maximum nesting depth of a document.
MAX_DEPTH = 200

KeyPath = tuple[str | int, ...]


class FrozenDict(dict):
    """A ``dict`` that refuses mutation; JSON encoders still see a plain dict."""

    __slots__ = ()

    def _refuse(self, *_a: Any, **_k: Any) -> None:
        raise TypeError("catalog data is immutable")

    __setitem__ = __delitem__ = _refuse  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return id(self)

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple:
        return (FrozenDict, (dict(self),))


@dataclass(frozen=True, slots=True)
class Position:
    """A 1-based location in a source file."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class YamlLoadError(Exception):
    """A file could not be read as YAML; carries the parser's position."""

    def __init__(self, file: str, line: int, col: int, message: str) -> None:
        super().__init__(f"{file}:{line}:{col}: {message}")
        self.position = Position(file, line, col)
        self.message = message


class YamlDocument:
    """One parsed YAML file: frozen data plus the position of every key path.

    Positions are only needed when something is reported, so they are indexed on first use from
    the text the document keeps (a cached document never composes its nodes unless asked).
    """

    __slots__ = ("_duplicates", "_positions", "data", "file", "text")

    file: str
    data: Any
    _positions: Mapping[KeyPath, Position] | None
    _duplicates: tuple[tuple[KeyPath, Position], ...] | None
    #: the YAML text it was parsed from (``None`` for a document built from data)
    text: str | None

    def __init__(self, file: str, data: Any, positions: Mapping[KeyPath, Position] | None = None,
                 duplicate_keys: tuple[tuple[KeyPath, Position], ...] | None = None,
                 source: str | None = None) -> None:
        object.__setattr__(self, "file", file)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "_positions", positions)
        if duplicate_keys is None and (positions is not None or source is None):
            duplicate_keys = ()  # given positions (or no text): nothing more to find
        object.__setattr__(self, "_duplicates", duplicate_keys)
        object.__setattr__(self, "text", source)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("YamlDocument is immutable")

    def __repr__(self) -> str:
        return f"YamlDocument({self.file!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # (``serve`` pickles its catalog for the builder process; attributes cannot be set one by one)
        return (YamlDocument, (self.file, self.data, self._positions, self._duplicates, self.text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, YamlDocument) and (self.file, self.data) == (other.file, other.data)

    def __hash__(self) -> int:
        return hash(self.file)

    def _index(self) -> None:
        source = self.text
        positions: Mapping[KeyPath, Position] = {(): Position(self.file, 1, 1)}
        duplicates: list[tuple[KeyPath, Position]] = []
        if source is not None:
            root = yaml.compose(source, Loader=_BaseLoader)  # parsed once already: cannot fail
            if root is not None:
                positions = _index_positions(root, self.file, duplicates)
        # (two threads may both index: same result, the last assignment wins)
        if self._duplicates is None:
            object.__setattr__(self, "_duplicates", tuple(duplicates))
        object.__setattr__(self, "_positions", positions)

    @property
    def positions(self) -> Mapping[KeyPath, Position]:
        """Position of every key path: of the key (mappings) or the item (sequences)."""
        if self._positions is None:
            self._index()
        assert self._positions is not None
        return self._positions

    @property
    def duplicate_keys(self) -> tuple[tuple[KeyPath, Position], ...]:
        """``(key path, position of the repeated key)`` for every key a mapping repeats."""
        if self._duplicates is None:
            self._index()
        assert self._duplicates is not None
        return self._duplicates

    def position(self, path: KeyPath) -> Position:
        """Position of ``path``, or of its nearest existing ancestor."""
        positions = self.positions
        for n in range(len(path), 0, -1):
            pos = positions.get(tuple(path[:n]))
            if pos is not None:
                return pos
        return positions.get((), Position(self.file, 1, 1))


def normalize_date(value: Any) -> Any:
    """Timestamps become ``YYYY-MM-DD`` of their UTC calendar date (json-api.md §1.3)."""
    if isinstance(value, _dt.datetime) and value.tzinfo is not None:
        value = value.astimezone(_dt.UTC)
    return value.strftime("%Y-%m-%d") if isinstance(value, _dt.date) else value


def freeze(value: Any) -> Any:
    """Deep-freeze constructed YAML data, normalizing dates on the way (frozen data is kept as it is)."""
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, dict):  # (date keys are stringified, never normalized)
        return FrozenDict((str(k) if isinstance(k, _dt.date) else k, freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return normalize_date(value)


def thaw(value: Any) -> Any:
    """Mutable deep copy (plain dicts and lists) of frozen data."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def _repeats_a_key(pairs: list[tuple[yaml.Node, yaml.Node]]) -> bool:
    """Whether a mapping node repeats a scalar key, told by the key's text (merge keys aside)."""
    if len(pairs) < 2:
        return False
    keys = [k.value for k, _v in pairs if isinstance(k, yaml.ScalarNode) and k.value != "<<"]
    return len(set(keys)) != len(keys)


def _refusal(file: str, node: yaml.Node, message: str) -> YamlLoadError:
    return YamlLoadError(file, node.start_mark.line + 1, node.start_mark.column + 1, message)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _check_expansion(root: yaml.Node, file: str) -> bool:
    """Refuse alias bombs and cycles by sizing the node graph with memoization; returns whether some
    mapping repeats a key (only then are positions indexed at once, to name them)."""
    repeats = False
    sizes: dict[int, int] = {}  # (scalars are not walked: each counts 1)
    visiting: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        nid = id(node)
        if done:
            visiting.discard(nid)
            total = 1 + sum(sizes.get(id(child), 1) for child in _children(node))
            if not repeats and isinstance(node, yaml.MappingNode):
                repeats = _repeats_a_key(node.value)
            if total > MAX_EXPANDED_NODES:
                raise _refusal(file, node, f"document expands to more than {MAX_EXPANDED_NODES:,} nodes "
                                           "through aliases; refused")
            sizes[nid] = total
            continue
        if nid in sizes:
            continue
        if nid in visiting:
            raise _refusal(file, node, "recursive alias: a node contains itself")
        if depth > MAX_DEPTH:
            raise _refusal(file, node, f"nesting deeper than {MAX_DEPTH} levels")
        visiting.add(nid)
        stack.append((node, depth, True))
        # (a scalar too deep is refused at its own position)
        stack.extend((child, depth + 1, False) for child in _children(node)
                     if depth >= MAX_DEPTH or child.__class__ is not yaml.ScalarNode)
    return repeats


def _index_positions(root: yaml.Node, file: str,
                     duplicates: list[tuple[KeyPath, Position]]) -> dict[KeyPath, Position]:
    """Map every key path to the position of its key (mappings) or item (sequences); repeated keys of
    one mapping are appended to ``duplicates``."""
    out: dict[KeyPath, Position] = {(): Position(file, root.start_mark.line + 1, root.start_mark.column + 1)}
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            # the constructed data keeps the *last* value of a repeated key: index that one
            last: dict[Any, tuple[yaml.Node, yaml.Node]] = {}
            for k, v in node.value:
                key: Any = k.value if isinstance(k, yaml.ScalarNode) else None
                if key is None or key == "<<":
                    continue
                if key in last:
                    duplicates.append(((*path, key), Position(file, k.start_mark.line + 1, k.start_mark.column + 1)))
                last[key] = (k, v)
            for key, (k, v) in last.items():
                child = (*path, key)
                if child not in out:
                    out[child] = Position(file, k.start_mark.line + 1, k.start_mark.column + 1)
                    stack.append((v, child))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                child = (*path, i)
                if child not in out:
                    out[child] = Position(file, v.start_mark.line + 1, v.start_mark.column + 1)
                    stack.append((v, child))
    return out


_FLOAT_TAG = "tag:yaml.org,2002:float"
_STR_TAG = "tag:yaml.org,2002:str"
#: what each kind of node may be tagged as to be plain data
_PLAIN_TAGS = {
    yaml.ScalarNode: frozenset(f"tag:yaml.org,2002:{t}"
                               for t in ("str", "int", "float", "bool", "null", "timestamp")),
    yaml.MappingNode: frozenset({"tag:yaml.org,2002:map"}),
    yaml.SequenceNode: frozenset({"tag:yaml.org,2002:seq"}),
}
#: tags a mapping key may carry: strings (dates are stringified), and ``<<`` merge keys
_SAFE_KEY_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "timestamp", "merge"))
_KIND_OF_TAG = {"tag:yaml.org,2002:int": "an integer", _FLOAT_TAG: "a number", "tag:yaml.org,2002:bool": "a boolean",
                "tag:yaml.org,2002:null": "null"}


def _check_safe(root: yaml.Node, file: str, loader: Any) -> None:
    """Refuse what is not plain data (see the module docstring), at the node's position."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        scalar = isinstance(node, yaml.ScalarNode)
        if node.tag not in _PLAIN_TAGS[type(node)]:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            what = "strings, numbers, booleans, null, lists and mappings only" if scalar else "a mapping or a list is"
            raise _refusal(file, node, f"YAML tag {tag} is not plain data ({what})")
        if scalar and node.tag == _FLOAT_TAG and not math.isfinite(loader.construct_yaml_float(node)):
            raise _refusal(file, node, f"{node.value!r} is not a finite number")
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise _refusal(file, k, "mapping keys must be strings, not a list or mapping")
                if k.tag not in _SAFE_KEY_TAGS:
                    kind = f"{k.value or '~'} is {_KIND_OF_TAG.get(k.tag, 'not a string')}"
                    raise _refusal(file, k, f"mapping keys must be strings; {kind} (quote it)")
                stack.append(v)
        elif not scalar:
            stack.extend(node.value)


def _construct(node: yaml.Node, loader: Any) -> Any:
    """The frozen data of a checked node: what PyYAML's ``construct_document`` and :func:`freeze` give, in
    one walk (merge keys by PyYAML's own ``flatten_mapping``; a node reached again by an alias is built again)."""
    if isinstance(node, yaml.ScalarNode):
        return node.value if node.tag == _STR_TAG else normalize_date(loader.yaml_constructors[node.tag](loader, node))
    if isinstance(node, yaml.SequenceNode):
        return tuple(_construct(item, loader) for item in node.value)
    loader.flatten_mapping(node)
    return FrozenDict((_construct_key(k, loader), _construct(v, loader)) for k, v in node.value)


def _construct_key(node: yaml.Node, loader: Any) -> str:
    """A mapping key (a string, or a date stringified whole)."""
    return node.value if node.tag == _STR_TAG else str(loader.yaml_constructors[node.tag](loader, node))


def parse_yaml(text: str | bytes, file: str) -> YamlDocument:
    """Parse one YAML document; every failure is a :class:`YamlLoadError`."""
    if isinstance(text, bytes):
        text = check_raw(text, file)
    loader = _BaseLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            msg = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
            raise YamlLoadError(file, line, col, f"YAML syntax error: {msg}") from None
        except yaml.YAMLError as exc:
            raise YamlLoadError(file, 1, 1, f"YAML error: {exc}") from None
        if root is None:
            return YamlDocument(file, None, {(): Position(file, 1, 1)})
        repeats = _check_expansion(root, file)
        _check_safe(root, file, loader)
        try:
            data = _construct(root, loader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            raise YamlLoadError(file, line, col, f"YAML error: {exc.problem or exc}") from None
        except Exception as exc:  # PyYAML's constructors can fail in other ways (``!!timestamp nope``)
            raise _refusal(file, root, f"YAML error: {exc}") from None
    finally:
        loader.dispose()
    if repeats:  # name them now: validation reports every repeated key
        duplicates: list[tuple[KeyPath, Position]] = []
        positions = _index_positions(root, file, duplicates)
        return YamlDocument(file, data, positions, tuple(duplicates), source=text)
    return YamlDocument(file, data, duplicate_keys=(), source=text)


def check_raw(raw: bytes, file: str) -> str:
    """The text of a file's bytes, refusing what is no YAML text file (too big, NUL bytes, not UTF-8)."""
    if len(raw) > MAX_FILE_BYTES:
        raise YamlLoadError(file, 1, 1, f"file is {len(raw):,} bytes; the limit is {MAX_FILE_BYTES:,}")
    if b"\x00" in raw:
        raise YamlLoadError(file, 1, 1, "file contains NUL bytes; not a YAML text file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlLoadError(file, 1, exc.start + 1, "file is not valid UTF-8") from None


#: ``1``: read recipe files that are symbolic links out of the recipes directory (``--follow-symlinks``)
ENV_FOLLOW_SYMLINKS = "VLLM_RECIPES_FOLLOW_SYMLINKS"


def follow_symlinks_default() -> bool:
    """Whether links out of the recipes directory are read (``--follow-symlinks`` sets this)."""
    return os.environ.get(ENV_FOLLOW_SYMLINKS, "") == "1"


def is_within(real: str, root: Path) -> bool:
    """Whether the real path ``real`` is ``root`` or lies under it (``root`` resolved)."""
    top = os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def refusal(file: str) -> YamlLoadError:
    """The finding for a file refused because it links out of the recipes directory."""
    return YamlLoadError(file, 1, 1, "symbolic link to a file outside the recipes directory; refused "
                                     "(--follow-symlinks reads it)")


def _root_of(path: Path, name: str) -> Path | None:
    """The recipes directory ``path`` was found in, when ``name`` is its path relative to it."""
    parts = Path(name).parts
    if (not parts or name.startswith("<") or Path(name).is_absolute() or ".." in parts
            or len(path.parts) <= len(parts) or path.parts[-len(parts):] != parts):
        return None
    return Path(*path.parts[:-len(parts)])


def read_raw(path: Path, name: str, root: Path | None = None) -> bytes:
    """The bytes of the regular file ``path``; a file over the size limit is refused without being read.

    Unless links out are allowed, the *opened* file must lie inside ``root`` (default: the directory
    ``name`` is relative to), checked on the descriptor so a file swapped for a link is refused.
    """
    root = root if root is not None else _root_of(path, name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise YamlLoadError(name, 1, 1, f"cannot read file: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise YamlLoadError(name, 1, 1, "not a regular file; refused")
        if root is not None and not follow_symlinks_default() and not is_within(_fd_path(fd, path), root):
            raise refusal(name)
        if st.st_size > MAX_FILE_BYTES:
            raise YamlLoadError(name, 1, 1, f"file is {st.st_size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise YamlLoadError(name, 1, 1, f"cannot read file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _fd_path(fd: int, path: Path) -> str:
    """The real path of the file open as ``fd`` (Linux: ``/proc/self/fd``; elsewhere the path's, re-resolved)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def load_yaml_file(path: Path, display: str | None = None) -> YamlDocument:
    """Read and parse ``path``; ``display`` is the name used in positions."""
    name = display or str(path)
    return parse_yaml(read_raw(path, name), name)


def iter_paths(data: Any, prefix: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """Yield ``(key_path, value)`` for every node of frozen data, depth first."""
    yield prefix, data
    if isinstance(data, dict):
        for k, v in data.items():
            yield from iter_paths(v, (*prefix, k))
    elif isinstance(data, tuple | list):
        for i, v in enumerate(data):
            yield from iter_paths(v, (*prefix, i))


def format_key_path(path: KeyPath) -> str:
    """``("variants", "default", "extra_args", 2)`` -> ``variants.default.extra_args[2]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<root>"
