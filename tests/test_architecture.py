"""The pipeline's one-way data flow, enforced: each package imports only packages to its left.

load (catalog) -> select -> synth -> render -> (fit, lint, review, i18n, api) -> service ->
front ends (cli, web, agents), which never import one another. The only exception: the
two commands that *start* a front end's server (``serve``, ``mcp``) import its entry point.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "src" / "vllm_recipes"
#: modules any package may import: they import nothing of this package (checked below);
#: ``__version__`` is the top-level package's version string; ``httplimits`` is the uvicorn settings
#: both launchers (``serve``, ``mcp --http``) start their server with
LEAVES = {"jsvalues", "parallel", "httplimits", "__version__"}
DOMAIN = {"catalog", "select", "synth", "render"}
ANALYSES = {"fit", "lint", "review", "i18n", "perf"}
FRONT_ENDS = {"cli", "web", "agents"}
#: package -> packages it may import (besides itself and the leaves)
ALLOWED: dict[str, set[str]] = {
    "catalog": set(),
    "select": {"catalog"},
    "synth": {"catalog", "select"},
    "render": {"catalog", "select", "synth"},
    "fit": DOMAIN,
    "lint": DOMAIN,
    "review": DOMAIN,
    "i18n": DOMAIN,
    "perf": DOMAIN | {"fit"},
    "api": DOMAIN | {"lint", "i18n"},
    "service": DOMAIN | ANALYSES | {"api"},
    "cli": DOMAIN | ANALYSES | {"api", "service"},
    "web": DOMAIN | ANALYSES | {"api", "service"},
    "agents": DOMAIN | ANALYSES | {"api", "service"},
}
#: the commands that start a front end's server: module -> the front end it starts
LAUNCHERS = {"cli/web_cmds.py": "web", "cli/mcp_cmds.py": "agents"}
WEB_FRAMEWORKS = ("starlette", "uvicorn", "jinja2", "fastapi")


def _imports(path: Path, *, modules: bool = False) -> set[str]:
    """The packages (or, with ``modules``, the ``package.module`` names) ``path`` imports,
    at any level of the file (function-level imports count: they are still dependencies;
    imports for type checkers only, under ``if TYPE_CHECKING:``, do not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = path.relative_to(PKG).with_suffix("").parts
    depth = 2 if modules else 1
    out: set[str] = set()
    for node in _runtime_nodes(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "vllm_recipes":
                names = [f"vllm_recipes.{a.name}" for a in node.names]
            elif node.module.startswith("vllm_recipes."):
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names] * modules
        elif isinstance(node, ast.ImportFrom) and node.level >= 1:
            base = list(own[: len(own) - node.level])
            module = [*base, *(node.module.split(".") if node.module else [])]
            names = [".".join(["vllm_recipes", *module])]
            if modules:
                names += [".".join(["vllm_recipes", *module, a.name]) for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("vllm_recipes.")]
        for name in names:
            parts = name.split(".")[1:]
            if parts:
                out.add(".".join(parts[:depth]))
    return out


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)
    return out


def _package_of(name: str) -> str:
    return name.split(".")[0]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_to_its_left(package: str) -> None:
    if not (PKG / package).is_dir():
        pytest.skip(f"no {package}/ package in this tree")
    for path in (PKG / package).rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        bad = {_package_of(n) for n in _imports(path)} - ALLOWED[package] - {package} - LEAVES
        bad -= {LAUNCHERS[rel]} if rel in LAUNCHERS else set()
        assert not bad, f"{rel} imports {sorted(bad)}"


def test_every_package_has_a_place_in_the_flow() -> None:
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(ALLOWED), f"add {sorted(packages - set(ALLOWED))} to ALLOWED"


@pytest.mark.parametrize("front_end", sorted(FRONT_ENDS))
def test_front_ends_never_import_one_another(front_end: str) -> None:
    for path in (PKG / front_end).rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        others = {_package_of(n) for n in _imports(path)} & (FRONT_ENDS - {front_end})
        assert others <= ({LAUNCHERS[rel]} if rel in LAUNCHERS else set()), f"{rel} imports {sorted(others)}"


@pytest.mark.parametrize("leaf", sorted(LEAVES - {"__version__"}))
def test_leaves_import_nothing_of_the_package(leaf: str) -> None:
    assert _imports(PKG / f"{leaf}.py") == set()


def _module_graph(package: str) -> dict[str, set[str]]:
    """``module -> modules of the same package it imports`` (``package.module`` names)."""
    graph: dict[str, set[str]] = {}
    for path in (PKG / package).rglob("*.py"):
        name = ".".join(path.relative_to(PKG).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = set()
    for path in (PKG / package).rglob("*.py"):
        name = ".".join(path.relative_to(PKG).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = {m for m in _imports(path, modules=True) if m in graph and m != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (as a path), or ``None``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


#: packages whose modules must not import each other in a circle (the package ``__init__``
#: re-exporting its modules is not a cycle: it is excluded)
ACYCLIC = ("cli", "service", "select", "agents", "web")


@pytest.mark.parametrize("package", ACYCLIC)
def test_no_import_cycle_between_modules(package: str) -> None:
    graph = _module_graph(package)
    graph = {m: {d for d in deps if d != package} for m, deps in graph.items() if m != package}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_loading_the_bundled_catalog_and_resolving_imports_no_web_framework() -> None:
    code = (
        "import sys\n"
        "from vllm_recipes.service import Query, answers\n"
        "from vllm_recipes.catalog import load_catalog\n"
        "c = load_catalog()\n"
        "r = answers.resolve(c, Query('deepseek-ai/DeepSeek-V4.1-Flash'))\n"
        "from vllm_recipes.render.deployment import deployment_blocks\n"
        "deployment_blocks(r.ctx, r.plan)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {WEB_FRAMEWORKS!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
