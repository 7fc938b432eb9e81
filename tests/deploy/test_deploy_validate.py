"""The artifacts pass the real validators: Kubernetes API schemas, the LWS schema, Docker Compose, bash and ShellCheck."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
from deploy_helpers import SEEDS, export, yaml_docs

from vllm_recipes.render.export import ExportError, stdout_text
from vllm_recipes.render.k8s import KUBERNETES_VERSION

HERE = Path(__file__).resolve().parent
LWS_SCHEMA = json.loads((HERE / "lws_v1_schema.json").read_text())
BIN = Path(sys.executable).parent
K8S_VERSION = f"{KUBERNETES_VERSION}.0"
SINGLE_NODE = ("v41-gb200-tp2", "v41-h200-pd-colocated")


def _k8s_docs(catalog, seed):
    return yaml_docs(stdout_text(export(catalog, seed, "k8s")))


@pytest.mark.parametrize("seed", [s for s in SEEDS if s != "v41-h200-pd-colocated"])
def test_every_kubernetes_object_validates(catalog, seed):
    docs = _k8s_docs(catalog, seed)
    assert docs
    for doc in docs:
        if doc["kind"] == "LeaderWorkerSet":
            jsonschema.validate(doc, LWS_SCHEMA)
            tmpl = doc["spec"]["leaderWorkerTemplate"]
            for key in ("leaderTemplate", "workerTemplate"):
                pod = {"apiVersion": "v1", "kind": "PodTemplate",
                       "metadata": {"name": f"{doc['metadata']['name']}-{key.lower()}"}, "template": tmpl[key]}
                kubernetes_validate.validate(pod, K8S_VERSION, strict=True)
        else:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_a_schema_violation_is_caught(catalog):
    """The validators are live: a wrong type in a Deployment and in an LWS fail."""
    docs = _k8s_docs(catalog, "v41-mi355x-pd")
    dep = next(d for d in docs if d["kind"] == "Deployment")
    dep["spec"]["replicas"] = "one"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSION, strict=True)
    lws = next(d for d in _k8s_docs(catalog, "v41-h200-dep-2nodes") if d["kind"] == "LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "Always"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(lws, LWS_SCHEMA)


def test_kustomization_lists_every_object_file(catalog):
    arts = export(catalog, "v41-h200-dep-2nodes", "k8s")
    kust = next(a for a in arts if a.path == "kustomization.yaml")
    listed = yaml_docs(kust.content)[0]["resources"]
    assert listed == [a.path for a in arts if a.path != "kustomization.yaml"]
    assert sorted(d["kind"] for a in arts if a.path != "kustomization.yaml" for d in yaml_docs(a.content)) == \
        ["ConfigMap", "LeaderWorkerSet", "Service"]


def _compose_config(tmp_path: Path, text: str, env: dict[str, str]) -> dict:
    (tmp_path / "compose.yaml").write_text(text)
    out = subprocess.run([str(BIN / "docker-compose"), "-f", str(tmp_path / "compose.yaml"), "config",
                          "--format", "json"], capture_output=True, text=True, env={**os.environ, **env},
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("seed", SINGLE_NODE)
def test_compose_file_loads_with_docker_compose(catalog, seed, tmp_path):
    text = stdout_text(export(catalog, seed, "compose"))
    cfg = _compose_config(tmp_path, text, {})
    assert set(cfg["services"]) >= {"vllm"} or set(cfg["services"]) >= {"prefill", "decode", "router"}


def test_compose_refuses_multi_node(catalog):
    with pytest.raises(ExportError, match="one machine"):
        export(catalog, "v41-h200-dep-2nodes", "compose")


@pytest.mark.parametrize("seed", list(SEEDS))
def test_slurm_script_passes_bash_and_shellcheck(catalog, seed, tmp_path):
    [art] = export(catalog, seed, "slurm")
    path = tmp_path / art.path
    path.write_text(art.content)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    out = subprocess.run([str(BIN / "shellcheck"), "-s", "bash", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def test_vllm_config_env_scripts_pass_shellcheck(catalog, tmp_path):
    for seed in ("v41-h200-dep-2nodes", "v41-mi355x-pd"):
        for art in export(catalog, seed, "vllm-config"):
            if art.path.endswith(".sh"):
                path = tmp_path / art.path
                path.write_text(art.content)
                out = subprocess.run([str(BIN / "shellcheck"), str(path)], capture_output=True, text=True)
                assert out.returncode == 0, out.stdout
