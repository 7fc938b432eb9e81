"""``docker run`` forms (synthesis.md §9): image resolution, GPU flags, text and argv."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from vllm_recipes.catalog.identifiers import BRAND_KEYS, CUDA_KEYS, RULE_IMAGE, is_image
from vllm_recipes.jsvalues import get, is_map, js_str, truthy
from vllm_recipes.select.lookups import gen

from .shell import assignment, env_key, quote
from .unsafe import UnsafeValue

DEFAULT_IMAGES = {
    "nvidia": "vllm/vllm-openai:latest",
    "amd": "vllm/vllm-openai-rocm:latest",
    "tpu": "vllm/vllm-tpu:latest",
    "intel": "vllm/vllm-openai-cpu:latest-x86_64",
}
NIGHTLY_IMAGES = {
    "nvidia": "vllm/vllm-openai:nightly",
    "amd": "vllm/vllm-openai-rocm:nightly",
    "tpu": "vllm/vllm-tpu:nightly",
}
XPU_IMAGE = "vllm/vllm-openai-xpu:latest"
#: where the images read the Hugging Face cache, and the host's cache mounted there
HF_CACHE = "/root/.cache/huggingface"
HF_CACHE_VOLUME = f"~/.cache/huggingface:{HF_CACHE}"

#: GPU flags per hardware kind, as the lines of the text form; the argv form is the same tokens (§9.2)
_GPU_FLAG_LINES: dict[str, tuple[tuple[str, ...], ...]] = {
    "tpu": (("--privileged", "--network", "host"), ("-v", "/dev/shm:/dev/shm")),
    "amd": (("--device=/dev/kfd", "--device=/dev/dri"), ("--security-opt", "seccomp=unconfined", "--group-add", "video")),
    "xpu": (("--device", "/dev/dri"), ("-v", "/dev/dri/by-path:/dev/dri/by-path", "--shm-size=16g")),
    "cpu": (("--shm-size=16g",),),
    "gpu": (("--gpus", "all"),),
}
_GPU_FLAGS = {k: (" \\\n  ".join(" ".join(line) for line in lines), tuple(t for line in lines for t in line))
              for k, lines in _GPU_FLAG_LINES.items()}


def is_cuda_map(v: Any) -> TypeGuard[dict[str, Any]]:
    return is_map(v) and any(k in v for k in CUDA_KEYS)


@dataclass(frozen=True)
class DockerMeta:
    image: str | None
    gpu_flags_text: str
    gpu_flags_argv: tuple[str, ...]
    brand_key: str
    pinned: str | None
    cuda_map: Mapping[str, Any] | None
    nightly: bool


def _hardware_kind(profile: Mapping[str, Any]) -> tuple[str, str]:
    """``(brand key, GPU-flags key)`` of a profile: the image map key and the ``docker run`` device flags."""
    g = gen(profile)
    if g == "tpu":
        return "tpu", "tpu"
    if profile.get("brand") == "AMD":
        return "amd", "amd"
    if g == "xpu":
        return "intel", "xpu"
    if g == "cpu" or profile.get("brand") == "Intel":
        return "intel", "cpu"
    return "nvidia", "gpu"


def _override_image(override: Any, brand_key: str) -> tuple[str | None, Mapping[str, Any] | None]:
    """``(pinned image, CUDA map)`` one ``docker_image`` value gives this brand (both ``None``: it gives none)."""
    if isinstance(override, str):
        return (override if brand_key == "nvidia" else None), None
    if isinstance(override, dict) and any(k in override for k in BRAND_KEYS):
        v = override.get(brand_key)
        if isinstance(v, str):
            return v, None
        return None, (v if brand_key == "nvidia" and is_cuda_map(v) else None)
    return None, (override if is_cuda_map(override) and brand_key == "nvidia" else None)


def docker_meta(recipe: Mapping[str, Any], variant: Mapping[str, Any], profile: Mapping[str, Any],
                hw_id: str | None) -> DockerMeta:
    """§9.1 ``computeDockerMeta``: the variant's per-hardware pin, else the variant's then the model's
    ``docker_image`` (first one that gives this brand an image), else the default image."""
    nightly = get(recipe.get("model"), "nightly_required") is True
    brand_key, flags_key = _hardware_kind(profile)
    p = get(get(variant.get("hardware_overrides"), hw_id), "docker_image") if hw_id else None
    pinned: str | None = p if isinstance(p, str) else None
    cuda_map: Mapping[str, Any] | None = None
    for override in (variant.get("docker_image"), get(recipe.get("model"), "docker_image")):
        if pinned is not None or cuda_map is not None:
            break
        if truthy(override):
            pinned, cuda_map = _override_image(override, brand_key)
    if flags_key == "xpu" and pinned is None:
        image: str | None = XPU_IMAGE
    elif pinned is not None:
        image = pinned
    elif cuda_map is not None:
        image = cuda_map.get("cu130") if truthy(cuda_map.get("cu130")) else cuda_map.get("cu129")
    else:
        # The nightly channel has no Intel CPU image; the reference then prints
        # ``undefined``. We fall back to the stable CPU image (docs/decisions.md).
        image = (NIGHTLY_IMAGES if nightly else DEFAULT_IMAGES).get(brand_key) or DEFAULT_IMAGES[brand_key]
    text, argv = _GPU_FLAGS[flags_key]
    return DockerMeta(image, text, argv, brand_key, pinned, cuda_map, nightly)


def cuda129_image(meta: DockerMeta) -> str | None:
    """The CUDA 12.9 image for the NVIDIA CUDA choice (synthesis.md §9.1): the page's CUDA toggle."""
    if meta.brand_key != "nvidia" or not meta.image or meta.pinned:
        return None
    if meta.cuda_map is not None:
        alt = meta.cuda_map.get("cu129")
        return alt if isinstance(alt, str) and alt and alt != meta.image else None
    if meta.image.endswith(":nightly"):
        return meta.image[: -len("nightly")] + "cu129-nightly"
    return meta.image + "-cu129"


def image_word(image: str) -> str:
    """A container image as a shell word; refuses what is not an image reference (OCI grammar)."""
    if not is_image(image):
        raise UnsafeValue(f"docker image {image!r} is not {RULE_IMAGE}")
    return image


def _mounts(model_id: str, env: Sequence[tuple[str, Any]]) -> list[str]:
    model = [f"{model_id}:{model_id}:ro"] if model_id.startswith("/") else []
    return model + [f"{js_str(v)}:{js_str(v)}:ro" for k, v in env if k.endswith("_CONFIG_PATH")]


def docker_run_text(command: str, env: Sequence[tuple[str, Any]], meta: DockerMeta, port: int = 8000) -> str:
    """§9.3 ``buildDockerRun``: the model id of a ``vllm serve`` command text (else ``MODEL``) after the
    image, then the command's flags."""
    m = re.match(r"vllm serve (\S+)", command)
    model_id, body = (m.group(1), re.sub(r"^vllm serve \S+\s*\\?\n?\s*", "", command, count=1)) if m \
        else ("MODEL", command)
    prefix = f"# {model_id} must already exist on the host — bind-mounted read-only below.\n" \
        if model_id.startswith("/") else ""
    join = " \\\n  "
    out = (f"{prefix}docker run {meta.gpu_flags_text} \\\n  --privileged --ipc=host -p {port}:{port} \\\n"
           f"  -v {HF_CACHE_VOLUME} \\")
    if mounts := _mounts(model_id, env):
        out += "\n  " + join.join(f"-v {quote(x)}" for x in mounts) + " \\"
    if env:
        out += "\n  " + join.join(f"-e {assignment(k, js_str(v))}" for k, v in env) + " \\"
    out += f"\n  {image_word(meta.image) if meta.image is not None else 'undefined'} {model_id}"
    return out + (join + body if body else "")


def docker_run_argv(argv: Sequence[str], env: Sequence[tuple[str, Any]], meta: DockerMeta,
                    port: int = 8000) -> list[str]:
    """§9.4 ``buildDockerArgv``: the command after ``vllm serve`` (the whole argv for another binary)."""
    cmd = list(argv[2:]) if len(argv) >= 2 and argv[0] == "vllm" and argv[1] == "serve" else list(argv)
    out = ["docker", "run", *meta.gpu_flags_argv, "--privileged", "--ipc=host", "-p", f"{port}:{port}",
           "-v", HF_CACHE_VOLUME]
    for mnt in _mounts(cmd[0] if cmd else "", env):
        out += ["-v", mnt]
    for k, v in env:
        out += ["-e", f"{env_key(k)}={js_str(v)}"]
    if meta.image is not None:
        out.append(image_word(meta.image))
    return [*out, *cmd]
