"""The repository stands alone: every document the code, help texts and docs cite exists
in ``docs/``, every cited reference section exists there, and nothing points outside
the repository (no sibling checkout, no machine path)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
SELF = Path(__file__).resolve()


def _files(*globs: str) -> list[Path]:
    out: list[Path] = []
    for pattern in globs:
        out.extend(p for p in ROOT.glob(pattern) if p.is_file())
    return sorted(set(out))


#: where citations live: code (comments, docstrings, help texts, the OpenAPI description), tests, docs
CITING = [p for p in _files("src/**/*.py", "src/**/*.yaml", "src/**/*.html", "src/**/*.js", "tests/**/*.py",
                            "docs/**/*.md", "README.md", "benchmarks/**/*.py", "pyproject.toml")
          if p != SELF]
DOC_PATH = re.compile(r"\bdocs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b")
SECTION = re.compile(r"\b(synthesis|json-api|extensions)(?:\.md)?\s*§\s*(\d+(?:\.\d+)*)")
UI_SECTION = re.compile(r"\bui\.md[\"']?s?\s+\"([^\"]+)\"")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
OUTSIDE = re.compile("|".join([r"\.\./" + "shared", "shared/" + "spec", r"/" + "work/", r"/" + "home/",
                               r"/" + "Users/"]))


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _sections(doc: Path) -> set[str]:
    """Section numbers of a reference file: ``## 4. Defaults`` -> 4, ``### 4.8 ...`` -> 4.8."""
    out = set()
    for m in re.finditer(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", _text(doc), re.M):
        out.add(m.group(1))
    return out


def test_cited_docs_paths_exist() -> None:
    missing = [(_rel(p), m) for p in CITING for m in DOC_PATH.findall(_text(p)) if not (ROOT / m).is_file()]
    assert not missing, missing


def test_every_cited_reference_section_exists() -> None:
    sections = {name: _sections(REFERENCE / f"{name}.md") for name in ("synthesis", "json-api", "extensions")}
    assert all(sections.values())
    missing = sorted({(_rel(p), f"{name} §{num}") for p in CITING for name, num in SECTION.findall(_text(p))
                      if num not in sections[name]})
    assert not missing, missing


def test_cited_website_sections_exist() -> None:
    ui = _text(REFERENCE / "ui.md")
    missing = sorted({(_rel(p), q) for p in CITING for q in UI_SECTION.findall(_text(p)) if q not in ui})
    assert not missing, missing


def test_links_between_docs_resolve() -> None:
    broken = []
    for doc in _files("docs/**/*.md", "README.md"):
        for target in MD_LINK.findall(_text(doc)):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (doc.parent / target).exists():
                broken.append((_rel(doc), target))
    assert not broken, broken


def test_nothing_points_outside_the_repository() -> None:
    found = [(_rel(p), m.group(0)) for p in CITING for m in OUTSIDE.finditer(_text(p))]
    assert not found, found


@pytest.mark.parametrize("command", ["command", "explain", "validate", "build-api", "serve"])
def test_help_texts_point_at_the_reference(command: str) -> None:
    from click.testing import CliRunner

    from vllm_recipes.cli.main import cli

    out = CliRunner().invoke(cli, [command, "--help"]).output
    cited = DOC_PATH.findall(out.replace("\n", " ").replace("  ", " "))
    assert cited and all((ROOT / c).is_file() for c in cited), (command, cited)


def test_the_openapi_description_points_at_the_reference() -> None:
    from vllm_recipes.web.openapi import openapi_spec

    text = str(openapi_spec())
    cited = DOC_PATH.findall(text)
    assert "docs/reference/json-api.md" in cited and all((ROOT / c).is_file() for c in cited)


# --- the reference describes what the code does ------------------------------------------------


def test_recipe_format_names_every_key_the_models_accept() -> None:
    from pydantic import BaseModel

    from vllm_recipes.catalog import models

    doc = _text(REFERENCE / "recipe-format.md")
    missing = []
    for cls in vars(models).values():
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls.__module__ == models.__name__:
            for name, info in cls.model_fields.items():
                key = info.alias or name
                if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", doc):
                    missing.append(f"{cls.__name__}.{key}")
    assert not missing, missing


def test_synthesis_reference_lists_the_layers_and_advanced_presets() -> None:
    from vllm_recipes.select.advanced import ADVANCED_OPTIONS
    from vllm_recipes.select.aliases import public_ids
    from vllm_recipes.synth.layers import ARG_ORDER, ENV_ORDER

    doc = _text(REFERENCE / "synthesis.md")
    assert all(f"`{layer}`" in doc for layer in (*ARG_ORDER, *ENV_ORDER))
    for option in ADVANCED_OPTIONS:
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{option.id}`")), "")
        assert f"`{' '.join(option.args)}`" in row, option.id
        assert any(f"`{alias}`" in row for alias in public_ids(option.args)) or "(same)" in row, option.id
