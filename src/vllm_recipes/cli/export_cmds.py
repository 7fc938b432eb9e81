"""``vllm-recipes export``: the selection's deployment as Kubernetes, Compose, Slurm or vLLM config files."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click

from vllm_recipes.render.artifacts import Artifact
from vllm_recipes.render.export import TARGETS, ExportError, ExportOptions, stdout_text

from .engine_cmds import find_recipe, resolve_request, selection_options
from .main import cli, fail, load_or_exit


def write_atomically(directory: Path, artifacts: list[Artifact]) -> list[Path]:
    """Each file written to a temporary name in ``directory``, then renamed over the target."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for a in artifacts:
        target = directory / a.path
        fd, tmp = tempfile.mkstemp(prefix=f".{a.path}.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(a.content)
            if a.path.endswith((".sh", ".sbatch")):
                os.chmod(tmp, 0o755)
            else:
                os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(target)
    return written


@cli.command("export")
@selection_options
@click.option("--to", "target", required=True, type=click.Choice(list(TARGETS)), help="Deploy target.")
@click.option("-o", "--output", default="-", show_default=True, help="Directory to write the files into, or - for stdout.")
@click.option("--namespace", default="default", show_default=True, help="Kubernetes namespace.")
@click.option("--name", help="Object / job name (default: from the model id).")
@click.option("--pvc", help="Kubernetes PersistentVolumeClaim for the Hugging Face cache (default: emptyDir).")
@click.option("--image", help="Container image (default: the image the Docker tab uses).")
@click.option("--rdma", default="rdma/ib", show_default=True,
              help="Kubernetes resource of one RDMA NIC for multi-node / PD / Mooncake-RDMA pods, or 'none'.")
def export_cmd(hf_id: str, recipes_dir: tuple[str, ...], target: str, output: str, namespace: str, name: str | None,
               pvc: str | None, image: str | None, rdma: str, **kw: Any) -> None:
    """Write the deployment of HF_ID at the chosen selection for a scheduler (same plan as `command`)."""
    catalog = load_or_exit(recipes_dir)
    recipe = find_recipe(catalog, hf_id, kw)
    if recipe.is_omni:
        fail(f"{recipe.hf_id} is an omni recipe; export supports `vllm serve` recipes only. "
             "Use `vllm-recipes command` for it.")
    from vllm_recipes.web.deploy import export_state

    state = resolve_request(catalog, recipe, kw)
    options = ExportOptions(namespace=namespace, name=name, pvc=pvc, image=image, rdma=rdma)
    try:
        artifacts = export_state(catalog, recipe, state, target, options)
    except ExportError as exc:
        fail(f"cannot export to {target}: {exc}")
    if output == "-":
        click.echo(stdout_text(artifacts), nl=False)
        return
    try:
        paths = write_atomically(Path(output), artifacts)
    except OSError as exc:
        fail(f"cannot write to {output}: {exc.strerror or exc}")
    for p in paths:
        click.echo(str(p), err=True)
