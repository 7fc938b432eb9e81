"""Shared helpers for the translation tests: the bundled catalog with the seed (stale) zh
translation, a tmp recipes dir, and a zh translation rebuilt from the *current* recipe
revision (the clean counterpart of the seed one).

The package ships an up-to-date translation (``i18n check`` is clean on a fresh
install); the seed translation as the user gave it, stale against today's recipe,
is kept here as the fixture the drift tests need (``fixtures/zh_seed_translation.md``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
try:  # the package is normally installed editable; fall back to the source tree
    import vllm_recipes  # noqa: F401
except ImportError:  # pragma: no cover - depends on the environment
    sys.path.insert(0, str(ROOT / "src"))

from vllm_recipes.catalog import Catalog, Recipe, load_catalog  # noqa: E402
from vllm_recipes.i18n import guide_sections  # noqa: E402
from vllm_recipes.i18n.translation import parse_translation  # noqa: E402

HF_ID = "deepseek-ai/DeepSeek-V4.1-Flash"
BUNDLED_MODELS = ROOT / "src" / "vllm_recipes" / "data" / "models"
#: the seed translation (2026-09-20), stale against today's recipe
SHIPPED_ZH = Path(__file__).with_name("fixtures") / "zh_seed_translation.md"
#: what the package ships: up to date
PACKAGED_ZH = BUNDLED_MODELS / "deepseek-ai" / "DeepSeek-V4.1-Flash.zh.md"
CURRENT_SECTIONS = Path(__file__).with_name("zh_current_sections.md")


@pytest.fixture(scope="session")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """The bundled catalog with the seed translation in place of the shipped one."""
    root = tmp_path_factory.mktemp("seeded") / "recipes"
    shutil.copytree(BUNDLED_MODELS.parent, root)
    shutil.copy(SHIPPED_ZH, root / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.zh.md")
    return load_catalog(root)


@pytest.fixture(scope="session")
def recipe(catalog: Catalog) -> Recipe:
    r = catalog.recipe(HF_ID)
    assert r is not None
    return r


def _sections(path: Path, text: str | None = None):
    body = text if text is not None else path.read_text(encoding="utf-8")
    if not body.startswith("---"):
        body = "---\n---\n" + body
    return parse_translation(body, hf_id=HF_ID, lang="zh", path=path, rel_path=path.name)


def current_zh_text(recipe: Recipe) -> str:
    """A zh translation of today's revision: the shipped sections that did not change,
    the fixture's translations of those that did, hashes of the current source."""
    shipped = _sections(SHIPPED_ZH)
    updated = _sections(CURRENT_SECTIONS)
    parts, hashes = [], []
    for src in guide_sections(recipe.data["guide"]):
        sec = updated.section(src.slug) or shipped.section(src.slug)
        assert sec is not None, f"no zh text for {src.slug}"
        parts.append(f"{{#{sec.slug}}}\n{sec.markdown}" if sec.level else sec.markdown)
        hashes.append(f"  {src.slug}: {src.hash}")
    front = "\n".join([
        "---", "lang: zh", f"recipe: {HF_ID}",
        f"source_date_updated: \"{recipe.meta['date_updated']}\"",
        "source_hashes:", *hashes, "---", "",
    ])
    return front + "\n\n".join(parts) + "\n"


@pytest.fixture()
def recipes_dir(tmp_path: Path) -> Path:
    """A user recipes dir holding a copy of the V4.1 recipe (catalog files come bundled)."""
    d = tmp_path / "recipes" / "models" / "deepseek-ai"
    d.mkdir(parents=True)
    shutil.copy(BUNDLED_MODELS / "deepseek-ai" / "DeepSeek-V4.1-Flash.yaml", d)
    return tmp_path / "recipes"


@pytest.fixture()
def current_dir(recipes_dir: Path, recipe: Recipe) -> Path:
    """``recipes_dir`` plus a zh translation made from the current revision."""
    (recipes_dir / "models" / "deepseek-ai" / "DeepSeek-V4.1-Flash.zh.md").write_text(
        current_zh_text(recipe), encoding="utf-8")
    return recipes_dir
