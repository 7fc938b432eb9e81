"""Static extraction of the ``vllm serve`` command line from a release's Python sources.

Dev-only (never imported by the package). vLLM is *read*, never imported: the
sources are parsed with :mod:`ast` and the few functions that build the parser
(``make_arg_parser``, ``FrontendArgs.add_cli_args``, ``EngineArgs.add_cli_args``,
``_customize_cli_kwargs``) are walked by a tiny abstract interpreter that knows
``get_kwargs(ConfigClass)`` and ``parser.add_argument(...)``. Field types of the
config dataclasses are mapped to argparse behaviour with the rules of vLLM's
``_compute_kwargs`` (dataclass -> JSON, ``bool`` -> switch with ``--no-x``,
``Literal`` -> choices unless ``str`` is also admitted, lists -> ``nargs='+'``).

Usage::

    python tools/vllm_cli_extract.py SRC_DIR            # one release -> JSON table on stdout
    python tools/build_vllm_tables.py VERSIONS_DIR OUT  # every release -> shipped tables

``SRC_DIR`` is the directory that contains the ``vllm/`` package.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------------------
# module index: lazy parsing and name resolution
# --------------------------------------------------------------------------------------


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    #: top-level name -> defining node (ClassDef, FunctionDef, Assign value, AnnAssign value)
    defs: dict[str, ast.AST] = field(default_factory=dict)
    #: imported name -> (module, attribute or None for ``import x``)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    #: modules of ``from x import *``
    star: list[str] = field(default_factory=list)


def _walk_top(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level statements including those under ``if``/``try`` (TYPE_CHECKING, fallbacks)."""
    out: list[ast.stmt] = []
    for st in body:
        out.append(st)
        if isinstance(st, ast.If):
            out.extend(_walk_top(st.body) + _walk_top(st.orelse))
        elif isinstance(st, ast.Try):
            out.extend(_walk_top(st.body))
            for h in st.handlers:
                out.extend(_walk_top(h.body))
    return out


class Index:
    """The ``vllm`` package of one release, parsed on demand."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._mods: dict[str, Module | None] = {}
        self._class_cache: dict[str, tuple[Module, ast.ClassDef] | None] = {}

    def path_of(self, modname: str) -> Path | None:
        base = self.root / Path(*modname.split("."))
        for p in (base.with_suffix(".py"), base / "__init__.py"):
            if p.is_file():
                return p
        return None

    def module(self, modname: str) -> Module | None:
        if modname in self._mods:
            return self._mods[modname]
        p = self.path_of(modname)
        mod = None
        if p is not None:
            tree = ast.parse(p.read_bytes())
            mod = Module(modname, p, tree)
            is_pkg = p.name == "__init__.py"
            for st in _walk_top(tree.body):
                if isinstance(st, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    mod.defs[st.name] = st
                elif isinstance(st, ast.Assign):
                    for t in st.targets:
                        if isinstance(t, ast.Name):
                            mod.defs[t.id] = st.value
                elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                    mod.defs[st.target.id] = st.value
                elif hasattr(ast, "TypeAlias") and isinstance(st, ast.TypeAlias):
                    mod.defs[st.name.id] = st.value
                elif isinstance(st, ast.ImportFrom):
                    src = _abs_module(modname, is_pkg, st.module, st.level)
                    for a in st.names:
                        if a.name == "*":
                            mod.star.append(src)
                        else:
                            mod.imports[a.asname or a.name] = (src, a.name)
                elif isinstance(st, ast.Import):
                    for a in st.names:
                        mod.imports[a.asname or a.name.split(".")[0]] = (a.name if a.asname else
                                                                         a.name.split(".")[0], None)
        self._mods[modname] = mod
        return mod

    def resolve(self, modname: str, name: str, depth: int = 0) -> tuple[Module, ast.AST] | tuple[str, str] | None:
        """``name`` as seen from ``modname``: (module, node) if defined in vllm, (module, name) if external."""
        if depth > 12:
            return None
        mod = self.module(modname)
        if mod is None:
            return (modname, name)
        if name in mod.defs:
            return (mod, mod.defs[name])
        if name in mod.imports:
            src, attr = mod.imports[name]
            if attr is None:
                return (src, name)
            if src.split(".")[0] != "vllm":
                return (src, attr)
            if self.path_of(f"{src}.{attr}") is not None and self.path_of(src) is None:
                return (f"{src}.{attr}", "")
            if self.path_of(src) is None:
                return None
            return self.resolve(src, attr, depth + 1)
        for src in mod.star:
            if src.split(".")[0] == "vllm" and self.path_of(src) is not None:
                got = self.resolve(src, name, depth + 1)
                if got is not None and isinstance(got[0], Module):
                    return got
        return None

    def find_class(self, name: str) -> tuple[Module, ast.ClassDef] | None:
        """Fallback: a class of that name anywhere in the package (first by path order)."""
        if name in self._class_cache:
            return self._class_cache[name]
        pat = re.compile(rf"^class {re.escape(name)}\b", re.M)
        found = None
        for p in sorted((self.root / "vllm").rglob("*.py")):
            try:
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if pat.search(text):
                modname = ".".join(p.relative_to(self.root).with_suffix("").parts)
                modname = modname.removesuffix(".__init__")
                mod = self.module(modname)
                if mod and isinstance(mod.defs.get(name), ast.ClassDef):
                    found = (mod, mod.defs[name])
                    break
        self._class_cache[name] = found
        return found


def _abs_module(current: str, is_pkg: bool, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    parts = current.split(".")
    if not is_pkg:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, module] if module else parts)


# --------------------------------------------------------------------------------------
# type hints -> atoms
# --------------------------------------------------------------------------------------

BUILTIN_ATOMS = {"bool", "int", "float", "str", "dict", "list", "tuple", "set", "bytes"}
TYPING_ALIASES = {"List": "list", "Dict": "dict", "Tuple": "tuple", "Set": "set", "FrozenSet": "set",
                  "frozenset": "set"}


@dataclass(frozen=True)
class Atom:
    """One member of a flattened type hint: ``kind`` in bool/int/float/str/none/dict/list/tuple/set/
    literal/dc/other; ``args`` the element atoms or literal values; ``ref`` a dataclass name."""

    kind: str
    args: tuple[Any, ...] = ()
    ref: str = ""
    ellipsis: bool = False


@dataclass
class ClassInfo:
    name: str
    module: Module
    node: ast.ClassDef
    is_dataclass: bool
    forbid: bool
    is_dict: bool
    is_enum: bool
    bases: list[ClassInfo]


class Types:
    """Turns annotations into :class:`Atom` sets and classes into field lists."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._classes: dict[tuple[str, str], ClassInfo] = {}

    # ---- classes
    def class_info(self, mod: Module, node: ast.ClassDef) -> ClassInfo:
        key = (mod.name, node.name)
        if key in self._classes:
            return self._classes[key]
        decos = [_deco_name(d) for d in node.decorator_list]
        is_dc = any(d in {"config", "dataclass", "pydantic_dataclass", "dataclasses.dataclass"} for d in decos)
        forbid = "config" in decos or any(_forbids(d) for d in node.decorator_list)
        bases: list[ClassInfo] = []
        is_dict = is_enum = False
        for b in node.bases:
            bname = _expr_name(b.value if isinstance(b, ast.Subscript) else b)
            if bname in {"dict", "Dict"}:
                is_dict = True
            if bname.split(".")[-1] in {"Enum", "IntEnum", "StrEnum", "enum.Enum"}:
                is_enum = True
            if bname.split(".")[-1] in {"TypedDict"}:
                is_dict = False
            got = self.lookup_class(mod, bname) if bname else None
            if got is not None:
                bases.append(got)
                is_dc = is_dc or (got.is_dataclass and bool(decos))
                is_dict = is_dict or got.is_dict
                is_enum = is_enum or got.is_enum
                forbid = forbid or (got.forbid and "config" in decos)
        info = ClassInfo(node.name, mod, node, is_dc, forbid, is_dict, is_enum, bases)
        self._classes[key] = info
        return info

    def lookup_class(self, mod: Module, dotted: str) -> ClassInfo | None:
        name = dotted.split(".")[-1]
        got = self.index.resolve(mod.name, dotted.split(".")[0]) if "." not in dotted else None
        if got is not None and isinstance(got[0], Module) and isinstance(got[1], ast.ClassDef):
            return self.class_info(got[0], got[1])
        if got is not None and isinstance(got[0], str) and got[0].split(".")[0] != "vllm":
            return None
        found = self.index.find_class(name)
        return self.class_info(*found) if found else None

    def fields(self, info: ClassInfo) -> dict[str, tuple[ast.AST, Module, ast.AST | None, str]]:
        """field name -> (annotation, module, default expr, docstring); bases first."""
        out: dict[str, tuple[ast.AST, Module, ast.AST | None, str]] = {}
        for b in info.bases:
            if b.is_dataclass:
                out.update(self.fields(b))
        body = info.node.body
        for i, st in enumerate(body):
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                ann_text = ast.unparse(st.annotation)
                if "ClassVar" in ann_text or "InitVar" in ann_text:
                    continue
                doc = ""
                if i + 1 < len(body) and isinstance(body[i + 1], ast.Expr) and isinstance(
                        getattr(body[i + 1], "value", None), ast.Constant) and isinstance(body[i + 1].value.value, str):
                    doc = body[i + 1].value.value
                out[st.target.id] = (st.annotation, info.module, st.value, doc)
        return out

    # ---- annotations
    def atoms(self, mod: Module, node: ast.AST | None, depth: int = 0) -> frozenset[Atom]:
        if node is None or depth > 20:
            return frozenset({Atom("other")})
        if isinstance(node, ast.Constant):
            if node.value is None:
                return frozenset({Atom("none")})
            if isinstance(node.value, str):
                try:
                    return self.atoms(mod, ast.parse(node.value, mode="eval").body, depth + 1)
                except SyntaxError:
                    return frozenset({Atom("other")})
            return frozenset({Atom("other")})
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.atoms(mod, node.left, depth + 1) | self.atoms(mod, node.right, depth + 1)
        if isinstance(node, ast.Subscript):
            base = _expr_name(node.value).split(".")[-1]
            elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if base == "Literal":
                vals = tuple(v for e in elts for v in self.literal_values(mod, e, depth + 1))
                return frozenset({Atom("literal", vals)})
            if base == "Optional":
                return self.atoms(mod, elts[0], depth + 1) | {Atom("none")}
            if base == "Union":
                out: frozenset[Atom] = frozenset()
                for e in elts:
                    out |= self.atoms(mod, e, depth + 1)
                return out
            if base == "Annotated":
                return self.atoms(mod, elts[0], depth + 1)
            kind = TYPING_ALIASES.get(base, base)
            if kind in {"list", "set", "tuple"}:
                ell = any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in elts)
                args = tuple(self.atoms(mod, e, depth + 1) for e in elts
                             if not (isinstance(e, ast.Constant) and e.value is Ellipsis))
                return frozenset({Atom(kind, args, ellipsis=ell)})
            if kind == "dict":
                return frozenset({Atom("dict")})
            resolved = self._resolve_name(mod, _expr_name(node.value), depth)
            if resolved is not None and resolved != frozenset({Atom("other")}):
                return resolved
            return frozenset({Atom("other", (base,))})
        if isinstance(node, ast.Name | ast.Attribute):
            dotted = _expr_name(node)
            name = dotted.split(".")[-1]
            if dotted in BUILTIN_ATOMS or (name in TYPING_ALIASES and "." not in dotted):
                return frozenset({Atom(TYPING_ALIASES.get(dotted, dotted))})
            if name == "None":
                return frozenset({Atom("none")})
            got = self._resolve_name(mod, dotted, depth)
            return got if got is not None else frozenset({Atom("other", (name,))})
        return frozenset({Atom("other")})

    def _resolve_name(self, mod: Module, dotted: str, depth: int) -> frozenset[Atom] | None:
        if "." in dotted:
            return None
        got = self.index.resolve(mod.name, dotted)
        if got is None:
            found = self.index.find_class(dotted) if dotted[:1].isupper() else None
            if found is None:
                return None
            got = found
        where, node = got
        if isinstance(where, str):
            if node in {"Any"}:
                return frozenset({Atom("other", ("Any",))})
            return frozenset({Atom("other", (node,))})
        if isinstance(node, ast.ClassDef):
            info = self.class_info(where, node)
            if info.is_dataclass:
                return frozenset({Atom("dc", ref=info.name)})
            if info.is_dict:
                return frozenset({Atom("dict")})
            return frozenset({Atom("other", (info.name,))})
        if isinstance(node, ast.Call) and _expr_name(node.func).split(".")[-1] == "TypeAliasType" and len(node.args) > 1:
            return self.atoms(where, node.args[1], depth + 1)
        if isinstance(node, ast.Subscript | ast.BinOp | ast.Name | ast.Attribute | ast.Constant):
            return self.atoms(where, node, depth + 1)
        return None

    def literal_values(self, mod: Module, node: ast.AST, depth: int = 0) -> list[Any]:
        if isinstance(node, ast.Constant):
            return [node.value]
        if isinstance(node, ast.Name) and depth < 10:
            got = self.index.resolve(mod.name, node.id)
            if got and isinstance(got[0], Module) and isinstance(got[1], ast.Constant):
                return [got[1].value]
            if got and isinstance(got[0], Module) and isinstance(got[1], ast.Subscript):
                at = self.atoms(got[0], got[1], depth + 1)
                return [v for a in at if a.kind == "literal" for v in a.args]
        if isinstance(node, ast.Subscript) and _expr_name(node.value).endswith("Literal"):
            at = self.atoms(mod, node, depth + 1)
            return [v for a in at if a.kind == "literal" for v in a.args]
        return []


def _deco_name(d: ast.AST) -> str:
    if isinstance(d, ast.Call):
        d = d.func
    n = _expr_name(d)
    if n in {"pydantic.dataclasses.dataclass"}:
        return "pydantic_dataclass"
    return n.split(".")[-1] if n.endswith(".config") or n.endswith(".dataclass") else n


def _forbids(d: ast.AST) -> bool:
    return "forbid" in ast.unparse(d)


def _expr_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _expr_name(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    return ""


# --------------------------------------------------------------------------------------
# _compute_kwargs: atoms -> symbolic argparse kwargs
# --------------------------------------------------------------------------------------

HUMAN_INT_DEFAULT = {"max_num_batched_tokens", "kv_cache_memory_bytes"}


def _has(atoms: frozenset[Atom], kind: str) -> bool:
    return any(a.kind == kind for a in atoms)


def _get(atoms: frozenset[Atom], kind: str) -> Atom | None:
    return next((a for a in atoms if a.kind == kind), None)


def _elem_type(elem: frozenset[Atom]) -> dict[str, Any]:
    if _has(elem, "literal") and not _has(elem, "str"):
        vals = _get(elem, "literal").args  # type: ignore[union-attr]
        return {"type": type(vals[0]).__name__ if vals else "str", "choices": sorted(vals, key=str)}
    for k in ("int", "float"):
        if _has(elem, k) and not _has(elem, "str"):
            return {"type": k}
    return {"type": "str"}


def field_kwargs(name: str, atoms: frozenset[Atom], human_ints: set[str]) -> dict[str, Any]:
    """The symbolic argparse kwargs ``_compute_kwargs`` gives a field with these type atoms."""
    kw: dict[str, Any] = {"action": "store", "type": "str"}
    dc = _get(atoms, "dc")
    non_none = {a.kind for a in atoms} - {"none"}
    if dc is not None:
        kw.update(type="json", config=dc.ref)
    elif non_none == {"bool", "str"}:
        kw.update(type="str", nargs="?", const=True)
    elif _has(atoms, "bool"):
        kw.update(action="boolopt", type=None)
    elif _has(atoms, "literal"):
        vals = list(_get(atoms, "literal").args)  # type: ignore[union-attr]
        kw["type"] = type(vals[0]).__name__ if vals else "str"
        if _has(atoms, "str"):
            kw["metavar"] = sorted(vals, key=str)
        else:
            kw["choices"] = sorted(vals, key=str)
    elif _has(atoms, "tuple") or _has(atoms, "list") or _has(atoms, "set"):
        coll = _get(atoms, "tuple") or _get(atoms, "list") or _get(atoms, "set")
        assert coll is not None
        elem = coll.args[0] if coll.args else frozenset({Atom("str")})
        kw.update(_elem_type(elem))
        kw["nargs"] = len(coll.args) if coll.kind == "tuple" and not coll.ellipsis else "+"
    elif _has(atoms, "int"):
        kw["type"] = "human_int_or_auto" if name == "max_model_len" else (
            "human_int" if name in human_ints else "int")
    elif _has(atoms, "float"):
        kw["type"] = "float"
    elif _has(atoms, "dict") and (_has(atoms, "str") or _has(atoms, "other") or _has(atoms, "dc")):
        kw["type"] = "json_or_str"
    elif _has(atoms, "dict"):
        kw["type"] = "json"
    else:
        kw["type"] = "str"
    if _has(atoms, "none") and not _has(atoms, "bool"):
        kw["optional"] = True
        if kw.get("choices"):
            kw["choices"] = [*kw["choices"], None]
    return kw


# --------------------------------------------------------------------------------------
# the abstract interpreter over add_cli_args / make_arg_parser
# --------------------------------------------------------------------------------------


class Unknown:
    pass


UNKNOWN = Unknown()


@dataclass
class KwargsOf:
    """``get_kwargs(cls)``: field name -> mutable symbolic kwargs."""

    cls: str
    fields: dict[str, dict[str, Any]]


@dataclass
class ClassRef:
    info: ClassInfo


@dataclass
class Recorded:
    options: list[str]
    kw: dict[str, Any]
    module: str


class Interp:
    def __init__(self, index: Index, types: Types, human_ints: set[str]) -> None:
        self.index = index
        self.types = types
        self.human_ints = human_ints
        self.flags: list[Recorded] = []
        self._kw_cache: dict[str, dict[str, dict[str, Any]]] = {}
        self.configs: dict[str, ClassInfo] = {}

    # ---- kwargs of a class
    def get_kwargs(self, info: ClassInfo) -> KwargsOf:
        if info.name not in self._kw_cache:
            out = {}
            for name, (ann, mod, _default, doc) in self.types.fields(info).items():
                atoms = self.types.atoms(mod, ann)
                kw = field_kwargs(name, atoms, self.human_ints)
                kw["help"] = doc
                if kw.get("config"):
                    found = self.types.lookup_class(mod, kw["config"])
                    if found is not None:
                        self.configs[found.name] = found
                out[name] = kw
            self._kw_cache[info.name] = out
        return KwargsOf(info.name, {k: dict(v) for k, v in self._kw_cache[info.name].items()})

    # ---- function calls
    def call_function(self, mod: Module, fn: ast.FunctionDef, args: list[Any], env_extra: dict[str, Any],
                      owner: ClassInfo | None = None, depth: int = 0) -> Any:
        if depth > 8:
            return UNKNOWN
        env: dict[str, Any] = dict(env_extra)
        params = [a.arg for a in fn.args.args]
        is_static = any(_expr_name(d) == "staticmethod" for d in fn.decorator_list)
        if owner is not None and not is_static and params:
            params = params[1:]
        for p, v in zip(params, args, strict=False):
            env[p] = v
        ctx = Ctx(self, mod, env, owner, depth)
        return ctx.run(fn.body)

    def method(self, info: ClassInfo, name: str) -> tuple[ClassInfo, ast.FunctionDef] | None:
        for st in info.node.body:
            if isinstance(st, ast.FunctionDef) and st.name == name:
                return info, st
        for b in info.bases:
            got = self.method(b, name)
            if got:
                return got
        return None


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class Ctx:
    def __init__(self, interp: Interp, mod: Module, env: dict[str, Any], owner: ClassInfo | None, depth: int):
        self.i = interp
        self.mod = mod
        self.env = env
        self.owner = owner
        self.depth = depth

    def run(self, body: list[ast.stmt]) -> Any:
        try:
            self.block(body)
        except _Return as r:
            return r.value
        return UNKNOWN

    def block(self, body: list[ast.stmt]) -> None:
        for st in body:
            self.stmt(st)

    def stmt(self, st: ast.stmt) -> None:
        if isinstance(st, ast.Expr):
            self.eval(st.value)
        elif isinstance(st, ast.Assign):
            val = self.eval(st.value)
            for t in st.targets:
                self.assign(t, val)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            self.assign(st.target, self.eval(st.value))
        elif isinstance(st, ast.If):
            self.block(st.body)
            self.block(st.orelse)
        elif isinstance(st, ast.With | ast.Try):
            self.block(st.body)
        elif isinstance(st, ast.Return):
            raise _Return(self.eval(st.value) if st.value is not None else None)
        elif isinstance(st, ast.Delete):
            for t in st.targets:
                if isinstance(t, ast.Subscript):
                    container = self.eval(t.value)
                    key = self.const(t.slice)
                    if isinstance(container, dict) and key in container:
                        del container[key]
        elif isinstance(st, ast.For):
            self.for_loop(st)

    def for_loop(self, st: ast.For) -> None:
        it = st.iter
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"
                and isinstance(st.target, ast.Tuple) and len(st.target.elts) == 2):
            src = self.eval(it.func.value)
            if isinstance(src, KwargsOf):
                kname, vname = (_expr_name(e) for e in st.target.elts)
                for k, v in list(src.fields.items()):
                    self.env[kname] = k
                    self.env[vname] = v
                    self.block(st.body)

    def assign(self, target: ast.AST, val: Any) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = val
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value)
            key = self.const(target.slice)
            if isinstance(container, dict) and isinstance(key, str):
                container[key] = self.symbolic_kwarg(key, target_value=val)

    def symbolic_kwarg(self, key: str, target_value: Any) -> Any:
        return target_value

    def const(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        v = self.eval(node)
        return v if isinstance(v, str | int | float) else UNKNOWN

    # ---- expressions
    def eval(self, node: ast.AST | None) -> Any:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            if node.id in {"int", "float", "str", "bool"}:
                return ("type", node.id)
            got = self.i.index.resolve(self.mod.name, node.id)
            if got and isinstance(got[0], Module):
                if isinstance(got[1], ast.ClassDef):
                    return ClassRef(self.i.types.class_info(got[0], got[1]))
                if isinstance(got[1], ast.Constant):
                    return got[1].value
                if isinstance(got[1], ast.BinOp | ast.JoinedStr):
                    return Ctx(self.i, got[0], {}, None, self.depth + 1).eval(got[1])
                if isinstance(got[1], ast.FunctionDef):
                    return ("func", node.id)
            if got and isinstance(got[0], str):
                return ("ext", got[0], got[1])
            return ("name", node.id)
        if isinstance(node, ast.Attribute):
            dotted = _expr_name(node)
            if dotted:
                tail = dotted.split(".")[-1]
                if tail in {"BooleanOptionalAction"}:
                    return ("action", "boolopt")
                if tail == "SUPPRESS":
                    return ("suppress",)
            base = self.eval(node.value)
            if isinstance(base, ClassRef):
                return ("attr", base, node.attr)
            return ("attrof", dotted)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    x = self.eval(v.value)
                    if not isinstance(x, str):
                        return UNKNOWN
                    parts.append(x)
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.eval(node.left), self.eval(node.right)
            if isinstance(a, str) and isinstance(b, str):
                return a + b
            if isinstance(a, list) and isinstance(b, list):
                return a + b
            if isinstance(a, list):
                return ("partial", a)
            return UNKNOWN
        if isinstance(node, ast.List | ast.Tuple):
            vals = [self.eval(e) for e in node.elts]
            return vals
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=False):
                if k is None:
                    src = self.eval(v)
                    if isinstance(src, dict):
                        out.update(src)
                else:
                    out[self.const(k)] = self.eval(v)
            return out
        if isinstance(node, ast.Subscript):
            container = self.eval(node.value)
            key = self.const(node.slice)
            if isinstance(container, KwargsOf):
                return container.fields.get(key, {})
            if isinstance(container, dict):
                return container.get(key, UNKNOWN)
            return UNKNOWN
        if isinstance(node, ast.Lambda):
            return ("type", "lambda")
        if isinstance(node, ast.Call):
            return self.call(node)
        return UNKNOWN

    def call(self, node: ast.Call) -> Any:
        func = node.func
        fname = _expr_name(func)
        tail = fname.split(".")[-1] if fname else (func.attr if isinstance(func, ast.Attribute) else "")
        if tail == "get_kwargs" and node.args:
            c = self.eval(node.args[0])
            if isinstance(c, ClassRef):
                return self.i.get_kwargs(c.info)
            return UNKNOWN
        if tail in {"optional_type", "parse_type"} and node.args:
            inner = self.eval(node.args[0])
            if isinstance(inner, tuple) and inner[:1] == ("type",):
                return ("type", inner[1])
            if isinstance(inner, tuple) and inner[:1] == ("ext",) and inner[2] == "loads":
                return ("type", "json")
            if isinstance(inner, tuple) and inner[:1] == ("attrof",) and inner[1].endswith("loads"):
                return ("type", "json")
            return ("type", "str")
        if isinstance(func, ast.Attribute) and func.attr in {"replace", "lower", "upper", "removeprefix"}:
            base = self.eval(func.value)
            args = [self.eval(a) for a in node.args]
            if isinstance(base, str) and all(isinstance(a, str) for a in args):
                return getattr(base, func.attr)(*args)
        if tail == "get_args" and node.args:
            vals = self.i.types.literal_values(self.mod, node.args[0])
            return list(vals) if vals else UNKNOWN
        if tail == "add_argument":
            self.record(node)
            return UNKNOWN
        if tail == "add_argument_group" or tail == "add_mutually_exclusive_group":
            return ("parser",)
        if tail == "remove" and isinstance(func, ast.Attribute):
            lst = self.eval(func.value)
            if isinstance(lst, list) and node.args:
                v = self.eval(node.args[0])
                if v in lst:
                    lst.remove(v)
            return None
        if tail == "pop" and isinstance(func, ast.Attribute):
            d = self.eval(func.value)
            if isinstance(d, dict) and node.args:
                k = self.const(node.args[0])
                default = self.eval(node.args[1]) if len(node.args) > 1 else None
                return d.pop(k, default)
            return UNKNOWN
        if tail == "copy" and isinstance(func, ast.Attribute):
            d = self.eval(func.value)
            return dict(d) if isinstance(d, dict) else UNKNOWN
        if tail == "deepcopy" and node.args:
            d = self.eval(node.args[0])
            if isinstance(d, KwargsOf):
                return KwargsOf(d.cls, {k: dict(v) for k, v in d.fields.items()})
            return dict(d) if isinstance(d, dict) else UNKNOWN
        if tail == "dict" and not node.args and node.keywords:
            return {k.arg: self.eval(k.value) for k in node.keywords if k.arg}
        # method call on a class: Cls.add_cli_args(parser) / cls._customize_cli_kwargs(kw) / super().x()
        if isinstance(func, ast.Attribute):
            owner_val: Any
            if isinstance(func.value, ast.Call) and _expr_name(func.value.func) == "super":
                if self.owner is None:
                    return UNKNOWN
                for b in self.owner.bases:
                    got = self.i.method(b, func.attr)
                    if got:
                        return self.invoke(got, node, self.env.get("cls", ClassRef(self.owner)))
                return UNKNOWN
            owner_val = self.eval(func.value)
            if isinstance(owner_val, ClassRef):
                got = self.i.method(owner_val.info, func.attr)
                if got:
                    return self.invoke(got, node, owner_val)
            return UNKNOWN
        if isinstance(func, ast.Name):
            got = self.i.index.resolve(self.mod.name, func.id)
            if got and isinstance(got[0], Module) and isinstance(got[1], ast.FunctionDef) and tail in {
                    "make_arg_parser"}:
                args = [self.eval(a) for a in node.args]
                return self.i.call_function(got[0], got[1], args, {}, None, self.depth + 1)
        return UNKNOWN

    def invoke(self, got: tuple[ClassInfo, ast.FunctionDef], node: ast.Call, cls_val: Any) -> Any:
        owner, fn = got
        args = [self.eval(a) for a in node.args]
        env = {"cls": cls_val}
        return self.i.call_function(owner.module, fn, args, env, owner, self.depth + 1)

    def record(self, node: ast.Call) -> None:
        options: list[str] = []
        kw: dict[str, Any] = {}
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.eval(a.value)
                if isinstance(v, list):
                    options.extend(x for x in v if isinstance(x, str))
                continue
            v = self.eval(a)
            if isinstance(v, str):
                options.append(v)
        for k in node.keywords:
            if k.arg is None:
                v = self.eval(k.value)
                if isinstance(v, dict):
                    kw.update(v)
            else:
                kw[k.arg] = self.eval(k.value)
        options = [o for o in options if o.startswith("-")]
        if options:
            self.i.flags.append(Recorded(options, kw, self.mod.name))


# --------------------------------------------------------------------------------------
# symbolic kwargs -> table entries
# --------------------------------------------------------------------------------------

DEPRECATED_RE = re.compile(r"(?i)\b(deprecated|will be removed)\b")


def _type_name(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, tuple) and v[:1] == ("type",):
        return {"lambda": "str"}.get(v[1], v[1])
    if isinstance(v, tuple) and v[:1] == ("ext",) and v[2] == "loads":
        return "json"
    if isinstance(v, tuple) and v[:1] == ("attrof",) and v[1].endswith("loads"):
        return "json"
    if isinstance(v, tuple) and v[:1] == ("func",):
        return {"human_readable_int": "human_int", "human_readable_int_or_auto": "human_int_or_auto"}.get(
            v[1], "str")
    if v is None:
        return None
    return "str"


def _json_safe(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return str(v)


def entry_of(rec: Recorded) -> dict[str, Any]:
    kw = rec.kw
    action = kw.get("action", "store")
    if isinstance(action, tuple) and action[:1] == ("action",):
        action = action[1]
    elif not isinstance(action, str):
        action = "custom"
    entry: dict[str, Any] = {}
    if action in {"store_true", "store_false", "store_const", "count"}:
        entry["kind"] = "switch"
    elif action == "boolopt":
        entry["kind"] = "switch"
        entry["negatable"] = True
    else:
        nargs = kw.get("nargs")
        t = _type_name(kw.get("type")) or "str"
        if (kw.get("config") and t in {"json", "json_or_str"}) or kw.get("config"):
            entry["kind"] = "json"
            entry["config"] = kw["config"]
        elif t == "json":
            entry["kind"] = "json"
        else:
            entry["kind"] = "value"
            entry["type"] = t
        if nargs is not None and not isinstance(nargs, Unknown):
            entry["nargs"] = nargs
        if action == "append":
            entry["repeat"] = True
        ch = kw.get("choices")
        if isinstance(ch, list) and ch and all(isinstance(c, str | int | float) or c is None for c in ch):
            entry["choices"] = [_json_safe(c) for c in ch]
        known = kw.get("metavar")
        if isinstance(known, list) and known and all(isinstance(c, str | int | float) for c in known):
            entry["known"] = [_json_safe(c) for c in known]
        elif isinstance(ch, tuple) and ch[:1] == ("partial",):
            entry["known"] = [_json_safe(c) for c in ch[1]]  # the rest depends on the platform
        elif ch is not None and not isinstance(ch, list):
            entry["choices_dynamic"] = True
    if kw.get("deprecated") is True:
        entry["deprecated"] = "deprecated"
    else:
        h = kw.get("help")
        if isinstance(h, str) and DEPRECATED_RE.search(h[:300]):
            entry["deprecated"] = " ".join(h.split())[:200]
    return entry


def option_names(rec: Recorded, entry: dict[str, Any], enable_disable: bool) -> list[str]:
    names = list(rec.options)
    if entry.get("negatable"):
        for o in rec.options:
            if o.startswith("--"):
                names.append("--no-" + o[2:])
                if enable_disable:
                    for a, b in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
                        if o.startswith(a):
                            names.append(b + o[len(a):])
    return names


# --------------------------------------------------------------------------------------
# config classes, registries, env vars
# --------------------------------------------------------------------------------------


def config_table(interp: Interp, roots: list[str]) -> dict[str, Any]:
    """Every config class reachable from a JSON flag: field -> type summary, nested classes too."""
    out: dict[str, Any] = {}
    todo = [interp.configs[r] for r in roots if r in interp.configs]
    while todo:
        info = todo.pop()
        if info.name in out:
            continue
        fields: dict[str, Any] = {}
        for name, (ann, mod, _d, _doc) in interp.types.fields(info).items():
            atoms = interp.types.atoms(mod, ann)
            kw = field_kwargs(name, atoms, set())
            f: dict[str, Any] = {}
            if kw.get("config"):
                f["config"] = kw["config"]
                nested = interp.types.lookup_class(mod, kw["config"])
                if nested is not None and nested.name not in out:
                    todo.append(nested)
            elif kw.get("action") == "boolopt":
                f["type"] = "bool"
            else:
                f["type"] = kw["type"] if not kw.get("nargs") else "list"
                if kw.get("choices"):
                    f["choices"] = [_json_safe(c) for c in kw["choices"]]
            fields[name] = f
        out[info.name] = {"forbid": info.forbid, "fields": fields}
    return out


def _dict_keys(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def _scan_dir_calls(root: Path, rel: str, method: str) -> list[str]:
    """First string argument (or list of strings) of every ``X.<method>(...)`` call or decorator under ``rel``."""
    names: list[str] = []
    base = root / rel
    files = [base] if base.is_file() else sorted(base.rglob("*.py")) if base.is_dir() else []
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        if method not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
                args = list(node.args) + [k.value for k in node.keywords if k.arg in {"name", "names"}]
                if not args:
                    continue
                a = args[0]
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    names.append(a.value)
                elif isinstance(a, ast.List | ast.Tuple):
                    names.extend(e.value for e in a.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return names


def _module_dict_keys(index: Index, modname: str, var: str) -> list[str]:
    mod = index.module(modname)
    return _dict_keys(mod.defs.get(var)) if mod else []


def registries(index: Index, types: Types) -> dict[str, list[str]]:
    root = index.root
    tool = _module_dict_keys(index, "vllm.tool_parsers", "_TOOL_PARSERS_TO_REGISTER")
    tool += _module_dict_keys(index, "vllm.entrypoints.openai.tool_parsers", "_TOOL_PARSERS_TO_REGISTER")
    for rel in ("vllm/tool_parsers", "vllm/entrypoints/openai/tool_parsers"):
        tool += _scan_dir_calls(root, rel, "register_module")
        tool += _scan_dir_calls(root, rel, "register_lazy_module")
    reasoning = _module_dict_keys(index, "vllm.reasoning", "_REASONING_PARSERS_TO_REGISTER")
    reasoning += _scan_dir_calls(root, "vllm/reasoning", "register_module")
    reasoning += _scan_dir_calls(root, "vllm/reasoning", "register_lazy_module")
    kv = _scan_dir_calls(root, "vllm/distributed/kv_transfer/kv_connector/factory.py", "register_connector")
    tok = _module_dict_keys(index, "vllm.tokenizers.registry", "_VLLM_TOKENIZERS")
    for modname in ("vllm.config.model", "vllm.config"):
        mod = index.module(modname)
        if mod and "TokenizerMode" in mod.defs:
            tok += [v for a in types.atoms(mod, mod.defs["TokenizerMode"]) if a.kind == "literal"
                    for v in a.args if isinstance(v, str)]
            break
    attn: list[str] = []
    for modname, cls in (("vllm.v1.attention.backends.registry", "AttentionBackendEnum"),
                         ("vllm.attention.backends.registry", "AttentionBackendEnum"),
                         ("vllm.attention.backends.registry", "_Backend"),
                         ("vllm.platforms.interface", "_Backend")):
        mod = index.module(modname)
        node = mod.defs.get(cls) if mod else None
        if isinstance(node, ast.ClassDef):
            for st in node.body:
                if isinstance(st, ast.Assign):
                    attn += [t.id for t in st.targets if isinstance(t, ast.Name) and t.id.isupper()]
            break
    return {k: sorted(set(v)) for k, v in (("tool_call_parsers", tool), ("reasoning_parsers", reasoning),
                                           ("kv_connectors", kv), ("tokenizer_modes", tok),
                                           ("attention_backends", attn)) if v}


def env_vars(index: Index) -> list[str]:
    mod = index.module("vllm.envs")
    return sorted(_dict_keys(mod.defs.get("environment_variables"))) if mod else []


def _human_ints(index: Index) -> set[str]:
    mod = index.module("vllm.engine.arg_utils")
    out = set(HUMAN_INT_DEFAULT)
    if mod is None:
        return out
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "human_readable_int_args"
                                                 for t in node.targets) and isinstance(node.value, ast.Set):
            out |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return out


def _version_of(index: Index) -> str:
    p = index.root / "vllm" / "_version.py"
    if p.is_file():
        m = re.search(r"(?:__version__|version)\s*(?::\s*str)?\s*=\s*['\"]([^'\"]+)", p.read_text())
        if m:
            return m.group(1)
    return ""


# --------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------


def extract(src: Path) -> dict[str, Any]:
    """The table of one release: flags, config classes (JSON keys), registries, env vars."""
    index = Index(Path(src))
    types = Types(index)
    interp = Interp(index, types, _human_ints(index))
    serve = index.module("vllm.entrypoints.cli.serve")
    target: tuple[Module, ast.FunctionDef] | None = None
    if serve is not None:
        got = index.resolve(serve.name, "make_arg_parser")
        if got and isinstance(got[0], Module) and isinstance(got[1], ast.FunctionDef):
            target = (got[0], got[1])
    if target is None:
        for modname in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.openai.cli_args"):
            mod = index.module(modname)
            if mod and isinstance(mod.defs.get("make_arg_parser"), ast.FunctionDef):
                target = (mod, mod.defs["make_arg_parser"])  # type: ignore[assignment]
                break
    if target is None:
        raise SystemExit(f"{src}: no make_arg_parser found")
    interp.call_function(target[0], target[1], [("parser",)], {})
    ad = index.module("vllm.utils.argparse_utils")
    enable_disable = bool(ad and "EnableDisableAction" in ad.defs)
    flags: dict[str, Any] = {}
    for rec in interp.flags:
        entry = entry_of(rec)
        names = option_names(rec, entry, enable_disable)
        primary = next((o for o in rec.options if o.startswith("--")), rec.options[0])
        entry["names"] = [n for n in names if n != primary]
        if not entry["names"]:
            del entry["names"]
        flags[primary] = entry
    roots = sorted({e["config"] for e in flags.values() if e.get("config")})
    return {
        "version": _version_of(index),
        "flags": dict(sorted(flags.items())),
        "configs": dict(sorted(config_table(interp, roots).items())),
        "registries": registries(index, types),
        "env": env_vars(index),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(extract(Path(argv[0])), indent=1, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
