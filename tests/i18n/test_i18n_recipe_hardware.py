"""The images a translation may name follow the hardware the recipe lists, by the allowlist rule of
``select.gates`` (an exact profile id or ``arch:<arch>``) wherever the recipe names hardware."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_recipes.catalog import load_catalog
from vllm_recipes.i18n.drift import docker_images

ROCM = "vllm/vllm-openai-rocm:"


def _images(tmp_path: Path, recipe_writer, meta_hardware: dict, supported: list | None,
            overrides: dict | None = None) -> set[str]:
    variant: dict = {"precision": "fp8", "vram_minimum_gb": 60}
    if supported is not None:
        variant["supported_hardware"] = supported
    if overrides is not None:
        variant["hardware_overrides"] = overrides
    recipe_writer(tmp_path, "acme/Small", {
        "meta": {"title": "Small", "hardware": meta_hardware, "default_hardware": "h100"},
        "model": {"model_id": "acme/Small", "nightly_required": True},
        "variants": {"default": variant},
        "compatible_strategies": ["single_node_tp"],
    })
    catalog = load_catalog(tmp_path)
    recipe = catalog.recipe("acme/Small")
    assert recipe is not None
    return docker_images(catalog, recipe)


@pytest.mark.parametrize(("supported", "overrides", "rocm"), [
    (None, None, False),
    (["arch:gfx942"], None, True),    # mi300x and mi325x by architecture
    (["mi325x"], None, True),         # by profile id
    (["arch:sm90", 7, None], None, False),  # not a string: names nothing
    (None, {"mi355x": {"vram_minimum_gb": 80}}, True),  # a hardware override names its profile
])
def test_images_follow_every_place_the_recipe_names_hardware(tmp_path, recipe_writer, supported, overrides,
                                                             rocm) -> None:
    images = _images(tmp_path, recipe_writer, {"h100": "verified"}, supported, overrides)
    assert "vllm/vllm-openai:nightly" in images
    assert any(i.startswith(ROCM) for i in images) is rocm


def test_meta_hardware_names_profiles_by_id(tmp_path, recipe_writer) -> None:
    images = _images(tmp_path, recipe_writer, {"h100": "verified", "mi300x": "verified"}, None)
    assert any(i.startswith(ROCM) for i in images)


def test_the_cuda_12_9_image_is_the_one_the_page_offers(tmp_path, recipe_writer) -> None:
    """The CUDA toggle's rule (``render.docker.cuda129_image``): the default image has a CUDA 12.9 build,
    a pinned image has none (the page shows no toggle), so a translation naming one has drifted."""
    assert "vllm/vllm-openai:cu129-nightly" in _images(tmp_path / "a", recipe_writer, {"h100": "verified"}, None)
    recipe_writer(tmp_path / "b", "acme/Small", {
        "meta": {"title": "Small", "hardware": {"h100": "verified"}, "default_hardware": "h100"},
        "model": {"model_id": "acme/Small", "nightly_required": True},
        "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 60, "docker_image": "acme/vllm:v1"}},
        "compatible_strategies": ["single_node_tp"],
    })
    catalog = load_catalog(tmp_path / "b")
    images = docker_images(catalog, catalog.recipe("acme/Small"))
    assert "acme/vllm:v1" in images
    assert not any("cu129" in i for i in images)
