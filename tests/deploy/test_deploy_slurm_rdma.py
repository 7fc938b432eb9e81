"""RDMA on Slurm steps (issue #23 item 6/10): where the k8s and Compose exports request an RDMA NIC and
``IPC_LOCK`` + unlimited memlock, the Slurm step of the same process mounts ``/dev/infiniband`` into its
pyxis container and lifts its locked-memory limit (the unprivileged equivalent of ``IPC_LOCK``)."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

import pytest
from deploy_helpers import OPTIONS, deployment, export

from vllm_recipes.catalog import load_catalog

MEMLOCK = "ulimit -S -l unlimited"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _steps(script: str) -> dict[str, tuple[str, str]]:
    """Step variable -> (its script, the srun command that runs it)."""
    out: dict[str, tuple[str, str]] = {}
    for m in re.finditer(r"^([A-Z0-9_]+_STEP)=", script, re.M):
        lex = shlex.shlex(script[m.start():], posix=True)
        lex.whitespace_split = True
        body = lex.get_token().split("=", 1)[1]
        srun = script[script.index("srun ", m.end()):script.index(f'bash -c "${m.group(1)}"', m.end())]
        out[m.group(1)] = (body, srun)
    return out


@pytest.mark.parametrize("seed", ["v41-h200-dep-2nodes", "v4-h200-mooncake", "v41-h200-pd-dep-pools",
                                  "v4-h200-dep-2nodes-pip", "v41-gb200-tp2"])
def test_slurm_steps_get_rdma_where_k8s_requests_it(catalog, seed):
    dep = deployment(catalog, seed)
    [art] = export(catalog, seed, "slurm")
    steps = _steps(art.content)
    docker = dep.install == "docker"
    for p in dep.processes:
        body, srun = steps[p.key.upper().replace("-", "_") + "_STEP"]
        assert (MEMLOCK in body) == p.rdma, (p.key, body[:200])
        assert ("/dev/infiniband:/dev/infiniband" in srun) == (p.rdma and docker), (p.key, srun)
    assert any(p.rdma for p in dep.processes) == (seed != "v41-gb200-tp2")


def test_rdma_none_mounts_no_device(catalog):
    [art] = export(catalog, "v41-h200-dep-2nodes", "slurm", replace(OPTIONS, rdma="none"))
    assert "/dev/infiniband" not in art.content
    assert MEMLOCK in art.content  # memory registration still needs the limit (as pods keep IPC_LOCK)
