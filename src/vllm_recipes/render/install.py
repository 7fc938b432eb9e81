"""The synthesized install block (json-api.md §5.3, extensions.md §2.5, decisions.md D-nightly-pull)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vllm_recipes.jsvalues import EMPTY, as_list, first_truthy, get, is_map, js_str, truthy
from vllm_recipes.select.defaults import effective_install_config

from .docker import DEFAULT_IMAGES, NIGHTLY_IMAGES, docker_meta, image_word

PIP_DEFAULT = "uv venv\nsource .venv/bin/activate\nuv pip install -U vllm --torch-backend auto"
PIP_NIGHTLY = ("uv venv\nsource .venv/bin/activate\nuv pip install -U vllm --pre \\\n"
               "  --extra-index-url https://wheels.vllm.ai/nightly/cu130 \\\n"
               "  --extra-index-url https://download.pytorch.org/whl/cu130 \\\n"
               "  --index-strategy unsafe-best-match")


def install_pull_image(recipe: Mapping[str, Any]) -> str:
    """§5.3 docker pull image: the model's NVIDIA image, with our fix: nightly recipes pull the nightly
    default. The reference prints ``:latest`` here although its renderings use ``:nightly``
    (docs/decisions.md, "nightly docker pull")."""
    meta = docker_meta(recipe, EMPTY, {"brand": "NVIDIA"}, None)
    return meta.image or (NIGHTLY_IMAGES if meta.nightly else DEFAULT_IMAGES)["nvidia"]


def install_block(recipe: Mapping[str, Any], cfg: Any = None,
                  pull_image: str | None = None) -> dict[str, Any] | None:
    """§5.3: ``{pip?, docker?, extras?}`` or ``None`` when empty (``cfg``: default ``model.install``)."""
    cfg = get(recipe.get("model"), "install") if cfg is None else cfg
    cfg = cfg if truthy(cfg) and is_map(cfg) else {}
    pip_cfg, docker_cfg = cfg.get("pip"), cfg.get("docker")
    model = recipe.get("model")
    v = get(model, "min_vllm_version")
    v = js_str(v) if truthy(v) else ""
    nightly = get(model, "nightly_required") is True
    out: dict[str, Any] = {}
    if pip_cfg is not False:
        command = first_truthy(get(pip_cfg, "command"), PIP_NIGHTLY if nightly else PIP_DEFAULT)
        nightly_note = f"vLLM {v} isn't released yet — nightly required." if nightly else None
        note = first_truthy(get(pip_cfg, "note"), nightly_note)
        out["pip"] = {"command": command, "note": note} if truthy(note) else {"command": command}
    if docker_cfg is not False:
        command = get(docker_cfg, "command") if truthy(get(docker_cfg, "command")) else \
            "docker pull " + image_word(pull_image or install_pull_image(recipe))
        note = get(docker_cfg, "note")
        out["docker"] = {"command": command, "note": note} if truthy(note) else {"command": command}
    deps = recipe.get("dependencies")
    if as_list(deps):
        out["extras"] = deps
    return out or None


def hardware_install_block(recipe: Mapping[str, Any], variant: Mapping[str, Any] | None,
                           hw_id: str | None, image: str | None = None) -> dict[str, Any] | None:
    """The install block on one hardware profile (ext §2.5); the default ``docker pull`` pulls ``image``,
    the image the rendering runs there (a per-hardware pin, docs/decisions.md)."""
    return install_block(recipe, effective_install_config(recipe, variant, hw_id), image)


def has_hardware_install(variant: Mapping[str, Any] | None, hw_id: str | None) -> bool:
    return variant is not None and bool(hw_id) and is_map(
        get(get(variant.get("hardware_overrides"), hw_id), "install"))
