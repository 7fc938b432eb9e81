"""``vllm-recipes export``: the selection's deployment as Kubernetes, Compose, Slurm or vLLM config files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vllm_recipes.catalog.parsecache import write_atomic
from vllm_recipes.render.artifacts import Artifact
from vllm_recipes.render.export import TARGETS, ExportOptions, stdout_text
from vllm_recipes.service import Query
from vllm_recipes.service.answers import EXPORT_ARGUMENTS, export

from .main import cli, failing, load_or_exit, refusals
from .options import find_recipe, request_from_options, selection_options


def write_files(directory: Path, artifacts: list[Artifact]) -> list[Path]:
    """Each file replaced whole (never half-written), scripts executable."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for a in artifacts:
        target = directory / a.path
        write_atomic(target, a.content.encode(), mode=0o755 if a.path.endswith((".sh", ".sbatch")) else 0o644)
        written.append(target)
    return written


@cli.command("export")
@selection_options
@click.option("--to", "target", required=True, type=click.Choice(list(TARGETS)), help="Deploy target.")
@click.option("-o", "--output", default="-", show_default=True, help="Directory to write the files into, or - for stdout.")
@click.option("--namespace", default="default", help=EXPORT_ARGUMENTS["namespace"])
@click.option("--name", help=EXPORT_ARGUMENTS["name"])
@click.option("--pvc", help=EXPORT_ARGUMENTS["pvc"])
@click.option("--image", help=EXPORT_ARGUMENTS["image"])
@click.option("--rdma", default="rdma/ib", show_default=True,
              help="Kubernetes resource of one RDMA NIC for multi-node / PD / Mooncake-RDMA pods, or 'none'.")
def export_cmd(hf_id: str, recipes_dir: tuple[str, ...], target: str, output: str, namespace: str, name: str | None,
               pvc: str | None, image: str | None, rdma: str, **kw: Any) -> None:
    """Write the deployment of HF_ID at the chosen selection for a scheduler (same plan as `command`)."""
    catalog = load_or_exit(recipes_dir)
    find_recipe(catalog, hf_id, kw)  # (the publishing rule: a recipe with errors is not rendered)
    options = ExportOptions(namespace=namespace, name=name, pvc=pvc, image=image, rdma=rdma)
    with refusals():
        artifacts = export(catalog, Query(hf_id, request_from_options(kw)), target, options).artifacts
    if output == "-":
        click.echo(stdout_text(artifacts), nl=False)
        return
    with failing(OSError, say=lambda exc: f"cannot write to {output}: {exc.strerror or exc}"):
        paths = write_files(Path(output), artifacts)
    for p in paths:
        click.echo(str(p), err=True)
