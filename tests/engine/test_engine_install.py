"""The synthesized install block (json-api.md §5.3), per-hardware install (extensions §2.5)
and our nightly docker pull fix."""

from __future__ import annotations

import pytest

from vllm_recipes.render.install import (
    PIP_DEFAULT,
    PIP_NIGHTLY,
    effective_install_config,
    hardware_install_block,
    has_hardware_install,
    install_block,
    install_pull_image,
)

PIP_3_LINES = "uv venv\nsource .venv/bin/activate\nuv pip install -U vllm --torch-backend auto"
PIP_NIGHTLY_TEXT = ("uv venv\nsource .venv/bin/activate\nuv pip install -U vllm --pre \\\n"
                    "  --extra-index-url https://wheels.vllm.ai/nightly/cu130 \\\n"
                    "  --extra-index-url https://download.pytorch.org/whl/cu130 \\\n"
                    "  --index-strategy unsafe-best-match")


def r(**model) -> dict:
    return {"model": model}


class TestPip:
    def test_default(self) -> None:
        assert PIP_DEFAULT == PIP_3_LINES and PIP_NIGHTLY == PIP_NIGHTLY_TEXT
        assert install_block(r()) == {"pip": {"command": PIP_3_LINES},
                                      "docker": {"command": "docker pull vllm/vllm-openai:latest"}}

    def test_nightly(self) -> None:
        out = install_block(r(nightly_required=True, min_vllm_version="0.30.0"))
        assert out["pip"] == {"command": PIP_NIGHTLY_TEXT,
                              "note": "vLLM 0.30.0 isn't released yet — nightly required."}
        assert install_block(r(nightly_required=True))["pip"]["note"] == "vLLM  isn't released yet — nightly required."

    def test_recipe_values(self) -> None:
        out = install_block(r(install={"pip": {"command": "pip install x", "note": "N"}}, nightly_required=True))
        assert out["pip"] == {"command": "pip install x", "note": "N"}
        out = install_block(r(install={"pip": {"note": ""}}))
        assert out["pip"] == {"command": PIP_3_LINES}

    @pytest.mark.parametrize(("pip", "present"), [(False, False), (None, True), (True, True), ({}, True), (0, True)])
    def test_only_literal_false_hides(self, pip, present) -> None:
        assert ("pip" in install_block(r(install={"pip": pip}))) is present


class TestDocker:
    @pytest.mark.parametrize(("image", "pull"), [
        (None, "vllm/vllm-openai:latest"),
        ("my/img:1", "my/img:1"),
        (["x"], "vllm/vllm-openai:latest"),
        ({"nvidia": "nv/img", "amd": "amd/img"}, "nv/img"),
        ({"amd": "amd/img"}, "vllm/vllm-openai:latest"),
        ({"tpu": None}, "vllm/vllm-openai:latest"),
        ({"nvidia": {"cu129": "a", "cu130": "b"}}, "b"),
        ({"nvidia": {"cu129": "a"}}, "a"),
        ({"nvidia": {"cu130": ""}}, "vllm/vllm-openai:latest"),
        ({"cu129": "a", "cu130": "b"}, "b"),
        ({"cu129": "a"}, "a"),
        ({"other": "x"}, "vllm/vllm-openai:latest"),
    ])
    def test_image(self, image, pull) -> None:
        data = r(docker_image=image) if image is not None else r()
        assert install_pull_image(data) == pull
        assert install_block(data)["docker"] == {"command": f"docker pull {pull}"}

    @pytest.mark.parametrize(("image", "pull"), [
        (None, "vllm/vllm-openai:nightly"),
        ({"amd": "vllm/vllm-openai-rocm:nightly-rocm100"}, "vllm/vllm-openai:nightly"),
        ({"nvidia": {"cu129": None}}, "vllm/vllm-openai:nightly"),
        ("pinned/img:tag", "pinned/img:tag"),
    ])
    def test_nightly_recipes_pull_nightly(self, image, pull) -> None:
        """Our fix (the reference prints ``:latest`` here although its renderings use ``:nightly``)."""
        data = r(nightly_required=True, **({"docker_image": image} if image is not None else {}))
        assert install_pull_image(data) == pull

    def test_variant_images_ignored(self) -> None:
        data = {"model": {}, "variants": {"default": {"docker_image": "v/img"}}}
        assert install_pull_image(data) == "vllm/vllm-openai:latest"

    def test_recipe_command_and_note(self) -> None:
        out = install_block(r(install={"docker": {"command": "docker pull x", "note": "Use x."}}))
        assert out["docker"] == {"command": "docker pull x", "note": "Use x."}
        assert "docker" not in install_block(r(install={"docker": False}))


class TestBlock:
    def test_extras(self) -> None:
        deps = [{"name": "x", "command": "pip install x"}]
        out = install_block({"model": {}, "dependencies": deps})
        assert list(out) == ["pip", "docker", "extras"] and out["extras"] == deps
        assert "extras" not in install_block({"model": {}, "dependencies": []})

    def test_nothing(self) -> None:
        assert install_block(r(install={"pip": False, "docker": False})) is None
        assert install_block({"model": {"install": {"pip": False, "docker": False}}, "dependencies": ["d"]}) \
            == {"extras": ["d"]}


INSTALL_RECIPE = {"model": {"install": {"pip": {"note": "P"}, "docker": {"note": "D"}}}}


class TestPerHardware:
    """extensions §2.5: ``variants.<v>.hardware_overrides.<hw>.install`` merged key by key."""

    def test_merge(self) -> None:
        v = {"hardware_overrides": {"npu": {"install": {"pip": False}},
                                    "b200": {"install": {"docker": {"command": "docker pull b"}}},
                                    "h200": {"extra_args": []}}}
        assert hardware_install_block(INSTALL_RECIPE, v, "npu") == {"docker": {"command": "docker pull "
                                                                           "vllm/vllm-openai:latest", "note": "D"}}
        # the docker key is replaced as a whole: the model-level note does not survive
        assert hardware_install_block(INSTALL_RECIPE, v, "b200") == {
            "pip": {"command": PIP_3_LINES, "note": "P"}, "docker": {"command": "docker pull b"}}
        assert hardware_install_block(INSTALL_RECIPE, v, "h200") == install_block(INSTALL_RECIPE)
        assert hardware_install_block(INSTALL_RECIPE, None, "npu") == install_block(INSTALL_RECIPE)
        assert has_hardware_install(v, "npu") and not has_hardware_install(v, "h200")
        assert not has_hardware_install(v, None)

    def test_without_model_install(self) -> None:
        v = {"hardware_overrides": {"x": {"install": {"pip": False}}}}
        assert effective_install_config({"model": {}}, v, "x") == {"pip": False}
        assert hardware_install_block({"model": {}}, v, "x") == {
            "docker": {"command": "docker pull vllm/vllm-openai:latest"}}
