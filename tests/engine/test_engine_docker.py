"""Docker wrapping (synthesis.md §9): image resolution, GPU flags, ``docker run`` text and argv."""

from __future__ import annotations

import pytest
from engine_helpers import recipe, render, shell_words

from vllm_recipes.render.docker import docker_meta, docker_run_argv, docker_run_text


def meta(bundled, hw: str, variant=None, model=None, hw_id: str | None = "same"):
    r = {"model": model or {}}
    return docker_meta(r, variant or {}, bundled.hardware_profiles.get(hw, {}), hw if hw_id == "same" else hw_id)


class TestImage:
    """§9.1."""

    @pytest.mark.parametrize(("hw", "image", "brand_key"), [
        ("h200", "vllm/vllm-openai:latest", "nvidia"),
        ("rtx_4090_2x", "vllm/vllm-openai:latest", "nvidia"),
        ("mi355x", "vllm/vllm-openai-rocm:latest", "amd"),
        ("trillium", "vllm/vllm-tpu:latest", "tpu"),
        ("xeon6", "vllm/vllm-openai-cpu:latest-x86_64", "intel"),
        ("arc_pro_b60", "vllm/vllm-openai-xpu:latest", "intel"),
        ("ascend_910c", "vllm/vllm-openai:latest", "nvidia"),
        ("unknown", "vllm/vllm-openai:latest", "nvidia"),
    ])
    def test_defaults(self, bundled, hw, image, brand_key) -> None:
        m = meta(bundled, hw)
        assert (m.image, m.brand_key, m.nightly) == (image, brand_key, False)

    @pytest.mark.parametrize(("hw", "image"), [
        ("b200", "vllm/vllm-openai:nightly"),
        ("mi300x", "vllm/vllm-openai-rocm:nightly"),
        ("ironwood", "vllm/vllm-tpu:nightly"),
        ("xeon5", "vllm/vllm-openai-cpu:latest-x86_64"),  # deviation: no nightly CPU image
        ("arc_pro_b70", "vllm/vllm-openai-xpu:latest"),
        ("ascend_950pr_8x", "vllm/vllm-openai:nightly"),
    ])
    def test_nightly(self, bundled, hw, image) -> None:
        m = meta(bundled, hw, model={"nightly_required": True})
        assert m.image == image and m.nightly

    def test_nightly_must_be_literal_true(self, bundled) -> None:
        assert meta(bundled, "h200", model={"nightly_required": "yes"}).image == "vllm/vllm-openai:latest"

    def test_string_pins_nvidia_only(self, bundled) -> None:
        model = {"docker_image": "my/img:1"}
        assert meta(bundled, "h200", model=model).image == "my/img:1"
        assert meta(bundled, "ascend_910c", model=model).image == "my/img:1"  # Huawei uses the NVIDIA key
        assert meta(bundled, "mi300x", model=model).image == "vllm/vllm-openai-rocm:latest"
        assert meta(bundled, "xeon6", model=model).image == "vllm/vllm-openai-cpu:latest-x86_64"

    def test_variant_before_model_and_fall_through(self, bundled) -> None:
        model = {"docker_image": {"amd": "model/amd", "nvidia": "model/nv"}}
        variant = {"docker_image": "variant/nv"}
        assert meta(bundled, "h200", variant, model).image == "variant/nv"
        assert meta(bundled, "mi300x", variant, model).image == "model/amd"  # variant string skipped on AMD
        assert meta(bundled, "trillium", variant, model).image == "vllm/vllm-tpu:latest"  # no tpu entry

    def test_brand_map(self, bundled) -> None:
        model = {"docker_image": {"nvidia": "n", "amd": "a", "tpu": "t", "intel": "i"}}
        assert [meta(bundled, hw, model=model).image for hw in ("h200", "mi300x", "trillium", "xeon6")] == \
            ["n", "a", "t", "i"]
        assert meta(bundled, "arc_pro_b60", model=model).image == "i"  # a pin beats the XPU image

    def test_cuda_maps(self, bundled) -> None:
        both = {"cu129": "img:cu129", "cu130": "img:cu130"}
        assert meta(bundled, "b200", model={"docker_image": both}).image == "img:cu130"
        assert meta(bundled, "b200", model={"docker_image": {"cu129": "img:cu129"}}).image == "img:cu129"
        assert meta(bundled, "b200", model={"docker_image": {"nvidia": both, "amd": "a"}}).image == "img:cu130"
        m = meta(bundled, "b200", model={"docker_image": {"nvidia": both}})
        assert m.cuda_map == both and m.pinned is None
        assert meta(bundled, "mi300x", model={"docker_image": both}).image == "vllm/vllm-openai-rocm:latest"
        assert meta(bundled, "mi300x", model={"docker_image": {"amd": both}}).image == "vllm/vllm-openai-rocm:latest"

    def test_variant_cuda_map_stops_the_search(self, bundled) -> None:
        m = meta(bundled, "h200", {"docker_image": {"cu129": "v:cu129"}}, {"docker_image": "model/img"})
        assert m.image == "v:cu129"

    def test_exact_hardware_pin_any_brand(self, bundled) -> None:
        v = {"docker_image": "variant/nv", "hardware_overrides": {
            "mi300x": {"docker_image": "pin/amd"}, "arc_pro_b60": {"docker_image": "pin/xpu"},
            "ascend_910c": {"docker_image": "pin/npu"}, "h200": {"docker_image": {"cu130": "x"}}}}
        assert meta(bundled, "mi300x", v).image == "pin/amd"
        assert meta(bundled, "arc_pro_b60", v).image == "pin/xpu"
        assert meta(bundled, "ascend_910c", v).image == "pin/npu"
        assert meta(bundled, "h200", v).image == "variant/nv"  # a non-string pin is ignored
        assert meta(bundled, "mi300x", v, hw_id=None).image == "vllm/vllm-openai-rocm:latest"

    def test_unusable_values_skip(self, bundled) -> None:
        for value in ("", 0, ["a"], {"foo": "bar"}, {"nvidia": 3}):
            assert meta(bundled, "h200", model={"docker_image": value}).image == "vllm/vllm-openai:latest", value


class TestGpuFlags:
    """§9.2."""

    @pytest.mark.parametrize(("hw", "text", "argv"), [
        ("trillium", "--privileged --network host \\\n  -v /dev/shm:/dev/shm",
         ["--privileged", "--network", "host", "-v", "/dev/shm:/dev/shm"]),
        ("mi325x", "--device=/dev/kfd --device=/dev/dri \\\n  --security-opt seccomp=unconfined --group-add video",
         ["--device=/dev/kfd", "--device=/dev/dri", "--security-opt", "seccomp=unconfined", "--group-add", "video"]),
        ("arc_pro_b70", "--device /dev/dri \\\n  -v /dev/dri/by-path:/dev/dri/by-path --shm-size=16g",
         ["--device", "/dev/dri", "-v", "/dev/dri/by-path:/dev/dri/by-path", "--shm-size=16g"]),
        ("xeon5", "--shm-size=16g", ["--shm-size=16g"]),  # (text and argv: the same tokens, issue #21)
        ("gb300", "--gpus all", ["--gpus", "all"]),
        ("ascend_950pr", "--gpus all", ["--gpus", "all"]),
        ("nope", "--gpus all", ["--gpus", "all"]),
    ])
    def test_flags(self, bundled, hw, text, argv) -> None:
        m = meta(bundled, hw)
        assert m.gpu_flags_text == text and list(m.gpu_flags_argv) == argv


COMMAND = "vllm serve org/model \\\n  --a 1 \\\n  --b '{\"x\": 1}'"
ARGV = ["vllm", "serve", "org/model", "--a", "1", "--b", '{"x": 1}']


class TestRunText:
    """§9.3-§9.6."""

    def test_layout(self, bundled) -> None:
        out = docker_run_text(COMMAND, [("A", "1"), ("B", "$X Y"), ("N", 0), ("T", True)], meta(bundled, "mi300x"))
        assert out == (
            "docker run --device=/dev/kfd --device=/dev/dri \\\n"
            "  --security-opt seccomp=unconfined --group-add video \\\n"
            "  --privileged --ipc=host -p 8000:8000 \\\n"
            "  -v ~/.cache/huggingface:/root/.cache/huggingface \\\n"
            "  -e A=1 \\\n  -e B='$X Y' \\\n  -e N=0 \\\n  -e T=true \\\n"
            "  vllm/vllm-openai-rocm:latest org/model \\\n"
            "  --a 1 \\\n  --b '{\"x\": 1}'")

    def test_no_env_no_args_and_port(self, bundled) -> None:
        out = docker_run_text("vllm serve org/model", [], meta(bundled, "h200"), 8002)
        assert out == ("docker run --gpus all \\\n  --privileged --ipc=host -p 8002:8002 \\\n"
                       "  -v ~/.cache/huggingface:/root/.cache/huggingface \\\n"
                       "  vllm/vllm-openai:latest org/model")

    def test_local_model_and_config_mounts(self, bundled) -> None:
        cmd = "vllm serve /models/m \\\n  --x"
        env = [("MOONCAKE_CONFIG_PATH", "$MOONCAKE_CONFIG_PATH"), ("OTHER", "1"), ("MY_CONFIG_PATH", "/etc/c.json")]
        out = docker_run_text(cmd, env, meta(bundled, "h200"))
        assert out == (
            "# /models/m must already exist on the host — bind-mounted read-only below.\n"
            "docker run --gpus all \\\n  --privileged --ipc=host -p 8000:8000 \\\n"
            "  -v ~/.cache/huggingface:/root/.cache/huggingface \\\n"
            "  -v /models/m:/models/m:ro \\\n"
            "  -v $MOONCAKE_CONFIG_PATH:$MOONCAKE_CONFIG_PATH:ro \\\n  -v /etc/c.json:/etc/c.json:ro \\\n"
            "  -e MOONCAKE_CONFIG_PATH=$MOONCAKE_CONFIG_PATH \\\n  -e OTHER=1 \\\n  -e MY_CONFIG_PATH=/etc/c.json \\\n"
            "  vllm/vllm-openai:latest /models/m \\\n  --x")
        argv = docker_run_argv(["vllm", "serve", "/models/m", "--x"], env, meta(bundled, "h200"))
        assert argv == ["docker", "run", "--gpus", "all", "--privileged", "--ipc=host", "-p", "8000:8000",
                        "-v", "~/.cache/huggingface:/root/.cache/huggingface", "-v", "/models/m:/models/m:ro",
                        "-v", "$MOONCAKE_CONFIG_PATH:$MOONCAKE_CONFIG_PATH:ro", "-v", "/etc/c.json:/etc/c.json:ro",
                        "-e", "MOONCAKE_CONFIG_PATH=$MOONCAKE_CONFIG_PATH", "-e", "OTHER=1",
                        "-e", "MY_CONFIG_PATH=/etc/c.json", "vllm/vllm-openai:latest", "/models/m", "--x"]

    def test_non_vllm_command_uses_model_placeholder(self, bundled) -> None:
        out = docker_run_text("other serve m \\\n  --x", [], meta(bundled, "h200"))
        assert out.endswith("  vllm/vllm-openai:latest MODEL \\\n  other serve m \\\n  --x")

    def test_missing_image_prints_undefined(self, bundled) -> None:
        m = meta(bundled, "xeon6", model={"nightly_required": True})
        m = type(m)(None, m.gpu_flags_text, m.gpu_flags_argv, m.brand_key, m.pinned, m.cuda_map, m.nightly)
        assert "\n  undefined org/model \\\n" in docker_run_text(COMMAND, [], m)

    def test_argv(self, bundled) -> None:
        argv = docker_run_argv(ARGV, [("PYTHONHASHSEED", 0)], meta(bundled, "trillium"), 8001)
        assert argv == ["docker", "run", "--privileged", "--network", "host", "-v", "/dev/shm:/dev/shm",
                        "--privileged", "--ipc=host", "-p", "8001:8001", "-v",
                        "~/.cache/huggingface:/root/.cache/huggingface", "-e", "PYTHONHASHSEED=0",
                        "vllm/vllm-tpu:latest", "org/model", "--a", "1", "--b", '{"x": 1}']
        assert docker_run_argv(["x", "y"], [], meta(bundled, "xeon6"))[-3:] == \
            ["vllm/vllm-openai-cpu:latest-x86_64", "x", "y"]


class TestInRenderings:
    def test_local_path_variant(self, make_catalog) -> None:
        cat = make_catalog(recipe(variants={"default": {"model_id": "/srv/model"}}))
        obj = render(cat, hw_id="h200")
        assert obj["command"] == "vllm serve /srv/model \\\n  --tensor-parallel-size 8"
        assert obj["docker_command"].startswith("# /srv/model must already exist on the host — bind-mounted "
                                                "read-only below.\ndocker run --gpus all")
        assert obj["docker_argv"][10:12] == ["-v", "/srv/model:/srv/model:ro"]

    def test_nightly_intel_falls_back_to_the_stable_cpu_image(self, make_catalog) -> None:
        """Deviation (docs/decisions.md): the reference prints ``undefined`` here."""
        cat = make_catalog(recipe(model={"model_id": "org/model", "nightly_required": True}))
        obj = render(cat, hw_id="xeon6")
        assert obj["docker_image"] == "vllm/vllm-openai-cpu:latest-x86_64"
        assert "  vllm/vllm-openai-cpu:latest-x86_64 org/model" in obj["docker_command"]
        assert render(cat, hw_id="h200")["docker_image"] == "vllm/vllm-openai:nightly"

    def test_variant_fallback_to_default_data_for_image(self, make_catalog) -> None:
        cat = make_catalog(recipe(variants={"default": {"docker_image": "d/img"}}))
        assert render(cat, hw_id="h200", variant_key="missing")["docker_image"] == "d/img"

    def test_text_and_argv_agree(self, make_catalog) -> None:
        cat = make_catalog(recipe(model={"model_id": "org/model", "base_args": ["--j", '{"a": "it\'s"}'],
                                         "base_env": {"A": "x"}}))
        obj = render(cat, hw_id="mi300x")
        assert shell_words(obj["docker_command"]) == obj["docker_argv"]
