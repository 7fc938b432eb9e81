"""One quoting rule in every deploy target (issue #21 items 1 and 3): the rule of ``render/shell.py``.

A declared placeholder (``$IFACE_NAME`` or ``${IFACE_NAME}``) is a setting in every output, bound or
listed once; an inherited search path (``LD_PRELOAD=/x.so:$LD_PRELOAD``) extends the process's own
environment; any other ``$WORD`` in a recipe value (``$HOME``, ``$USER``) is data and arrives byte for
byte, as it does in ``vllm-recipes command``. Each target is read the way its runtime reads it:
Kubernetes' ``$(VAR)`` expansion and the container's shell, ``docker-compose config`` and the service's
shell, bash running the Slurm step, ``sh`` sourcing the vllm-config ``env.sh``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from deploy_helpers import container_argv, container_env, k8s_expand, run_shell_full, stub_dir, yaml_docs

from vllm_recipes.catalog import load_catalog
from vllm_recipes.render.artifacts import ExportOptions, stdout_text
from vllm_recipes.render.export import export_artifacts
from vllm_recipes.render.vllm_config import config_argv, config_mapping
from vllm_recipes.select.page import PageRequest, build_state

SHAPES = Path(__file__).resolve().parent / "fixtures" / "shapes"
BIN = Path(sys.executable).parent
HF = "acme/Dollar-Words"
#: what the user and the machine have: the setting, and variables a stray expansion would pick up
USER_ENV = {"IFACE_NAME": "eth7", "HOME": "/srv/u", "USER": "u", "LD_PRELOAD": "/pre.so"}
#: what the vLLM process must see
WANT_ENV = {"NCCL_SOCKET_IFNAME": "eth7", "GLOO_SOCKET_IFNAME": "eth7", "VLLM_X_DIR": "$HOME/x y",
            "VLLM_X_QUOTE": 'it\'s "quoted"', "VLLM_X_LINES": "a\nb", "VLLM_X_PLAIN": "/opt/x:1,2@v=3",
            "VLLM_X_EMPTY": "", "LD_PRELOAD": "/usr/lib/libjemalloc.so.2:/pre.so"}
WANT_ARGV = ["vllm", "serve", HF, "--served-model-name", "acme-$USER", "--tensor-parallel-size", "1"]


@pytest.fixture(scope="module")
def exported():
    cat = load_catalog(SHAPES)
    recipe = cat.recipe(HF)
    st = build_state(cat, recipe, PageRequest(), strict=True)
    return {t: export_artifacts(cat, recipe, st.selection, t, ExportOptions(install="docker"))
            for t in ("k8s", "compose", "slurm", "vllm-config")}


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    return stub_dir(tmp_path_factory.mktemp("stubs"))


def _run(argv: list[str], env: dict[str, str], stubs: Path) -> tuple[list[str], dict[str, str]]:
    """Run a container's argv (its ``/bin/sh -c`` prelude included) with the stub ``vllm``."""
    out = subprocess.run(argv, env={**env, "PATH": f"{stubs}:/usr/bin:/bin"}, capture_output=True, text=True,
                         timeout=20)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["argv"], got["env"]


def _settings(text: str) -> list[str]:
    """The placeholders an artifact's header asks the user to set."""
    return re.findall(r"^#   ([A-Za-z_0-9]+): used by", text, re.M)


@pytest.mark.parametrize("target", ["k8s", "compose", "slurm", "vllm-config"])
def test_only_declared_placeholders_are_settings(exported, target):
    text = stdout_text(exported[target])
    assert set(_settings(text)) == {"IFACE_NAME"}, _settings(text)


def test_k8s_passes_dollar_words_as_data(exported, stubs):
    docs = yaml_docs(stdout_text(exported["k8s"]))
    [settings] = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-settings")]
    assert set(settings["data"]) == {"IFACE_NAME"}
    [deploy] = [d for d in docs if d["kind"] == "Deployment"]
    [c] = deploy["spec"]["template"]["spec"]["containers"]
    cluster = {"HOME": "/root", "USER": "root", "LD_PRELOAD": "/pre.so", "POD_IP": "10.0.0.1"}
    env = container_env(c, {"IFACE_NAME": "eth7"}, cluster)
    assert container_argv(c, env, stubs) == WANT_ARGV
    argv, got = _run([k8s_expand(t, env) for t in [*c["command"], *c["args"]]], env, stubs)
    assert argv == WANT_ARGV
    assert {k: got[k] for k in WANT_ENV} == WANT_ENV


def test_compose_passes_dollar_words_as_data(exported, tmp_path, stubs):
    (tmp_path / "compose.yaml").write_text(stdout_text(exported["compose"]))
    out = subprocess.run([str(BIN / "docker-compose"), "-f", "compose.yaml", "config", "--format", "json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60,
                         env={"PATH": os.environ["PATH"], **USER_ENV})
    assert out.returncode == 0, out.stderr
    svc = json.loads(out.stdout)["services"]["vllm"]
    env = {k: (v or "").replace("$$", "$") for k, v in svc["environment"].items()}  # config keeps $$ escaped
    argv, got = _run([t.replace("$$", "$") for t in [*svc["entrypoint"], *svc["command"]]],
                     {**env, "LD_PRELOAD": "/pre.so"}, stubs)  # the image's own LD_PRELOAD
    assert argv == WANT_ARGV
    assert {k: got[k] for k in WANT_ENV} == WANT_ENV


def _step_word(script: str, var: str) -> str:
    """The value bash assigns to ``var`` (a single-quoted word, possibly spanning lines)."""
    start = script.index(f"\n{var}=") + 1
    lex = shlex.shlex(script[start:], posix=True)
    lex.whitespace_split = True
    return lex.get_token().split("=", 1)[1]


def test_slurm_step_passes_dollar_words_as_data(exported, stubs):
    [art] = exported["slurm"]
    step = _step_word(art.content, "VLLM_STEP")
    argv, env = run_shell_full(f"exec bash -c {shlex.quote(step)}", {"SLURM_PROCID": "0", **USER_ENV}, stubs)
    assert {k: env[k] for k in WANT_ENV} == WANT_ENV
    assert argv == WANT_ARGV


def test_vllm_config_env_sh_and_run_line(exported, tmp_path, stubs):
    files = {a.path: a.content for a in exported["vllm-config"]}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    run = re.search(r"^# Run: (.*)$", files["vllm.yaml"], re.M).group(1)
    out = subprocess.run(["sh", "-c", run], capture_output=True, text=True, cwd=tmp_path, timeout=20,
                         env={"PATH": f"{stubs}:/usr/bin:/bin", **USER_ENV})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert {k: got["env"][k] for k in WANT_ENV} == WANT_ENV
    i = got["argv"].index("--config")
    model, mapping, cli = config_mapping(tuple(WANT_ARGV), "vLLM")
    assert got["argv"][i + 1] == "vllm.yaml"
    assert config_argv(model, mapping, cli) == WANT_ARGV


def test_k8s_config_expander_fills_only_the_named_settings(tmp_path):
    """The container-start expander of a ConfigMap JSON file fills the settings it is given and leaves
    every other ``$WORD`` as data (``os.path.expandvars`` would take ``$HOME`` from the container)."""
    from vllm_recipes.render.k8s import EXPAND_JSON

    src = tmp_path / "in.json"
    src.write_text(json.dumps({"device_name": "$MOONCAKE_DEVICE_NAME", "b": ["${MOONCAKE_DEVICE_NAME}:1"],
                               "home": "$HOME/x", "n": 3, "unset": "$MOONCAKE_OTHER"}))
    out = subprocess.run([sys.executable, "-c", EXPAND_JSON, str(src), str(tmp_path / "out.json"),
                          "MOONCAKE_DEVICE_NAME", "MOONCAKE_OTHER"],
                         env={"MOONCAKE_DEVICE_NAME": "mlx5_0", "HOME": "/root"}, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "out.json").read_text()) == {
        "device_name": "mlx5_0", "b": ["mlx5_0:1"], "home": "$HOME/x", "n": 3, "unset": "$MOONCAKE_OTHER"}
