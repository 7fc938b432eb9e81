"""Properties over the whole selection space of the bundled recipes (bounded hypothesis runs, pure Python).

For any valid selection: every target either renders or refuses with an
ExportError; each placeholder it leaves to the user is listed once in the
header; the vLLM config reads back to the plan argv of every node; and the
exec-form containers of the manifests run the plan argv.
"""

from __future__ import annotations

import re
from functools import cache

import yaml
from deploy_helpers import vllm_view
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_recipes.catalog import load_catalog
from vllm_recipes.render.artifacts import Artifact, stdout_text
from vllm_recipes.render.export import TARGETS, ExportError, ExportOptions, deployment_for, export_artifacts
from vllm_recipes.render.vllm_config import config_argv
from vllm_recipes.render.workloads import instantiate
from vllm_recipes.select.defaults import listed_hardware
from vllm_recipes.select.gates import offered_strategies
from vllm_recipes.select.page import PageRequest, SelectionError, build_state


@cache
def catalog():
    return load_catalog()


@cache
def selections() -> list[tuple[str, str, str, int]]:
    """(recipe, hardware, strategy, nodes) for every listed hardware and offered strategy that builds."""
    cat = catalog()
    out = []
    for recipe in cat.recipes:
        if recipe.is_omni:
            continue
        for hw in listed_hardware(cat.hardware_profiles, recipe.variants.get("default") or {}, recipe.data):
            for strategy in offered_strategies(recipe.data):
                for nodes in (None, 3):
                    try:
                        s = build_state(cat, recipe, PageRequest(hardware=hw, strategy=strategy, nodes=nodes))
                    except SelectionError:
                        continue
                    out.append((recipe.hf_id, hw, strategy, s.selection.node_count))
    return sorted(set(out))


def _export(hf: str, hw: str, strategy: str, nodes: int, target: str) -> list[Artifact] | None:
    cat = catalog()
    recipe = cat.recipe(hf)
    s = build_state(cat, recipe, PageRequest(hardware=hw, strategy=strategy, nodes=nodes))
    try:
        return export_artifacts(cat, recipe, s.selection, target, ExportOptions(install=s.install),
                                co_located=s.pd_co_located)
    except ExportError as exc:
        assert str(exc)
        return None


def test_the_selection_space_is_large():
    assert len(selections()) > 60


PROPS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(st.data())
def test_each_user_placeholder_is_listed_once_in_the_header(data):
    hf, hw, strategy, nodes = data.draw(st.sampled_from(selections()))
    target = data.draw(st.sampled_from(list(TARGETS)))
    arts = _export(hf, hw, strategy, nodes, target)
    if arts is None:
        return
    text = stdout_text(arts)
    listed = re.findall(r"^#   ([A-Z_][A-Z0-9_]*): used by", arts[0].content, re.M)
    assert len(listed) == len(set(listed))
    if target == "slurm":
        # every variable the script leaves to the user is checked before anything starts
        for name in listed:
            assert f': "${{{name}:?set {name}' in text


@PROPS
@given(st.sampled_from(range(10_000)))
def test_vllm_config_reads_back_to_every_nodes_argv(i):
    hf, hw, strategy, nodes = selections()[i % len(selections())]
    cat = catalog()
    recipe = cat.recipe(hf)
    s = build_state(cat, recipe, PageRequest(hardware=hw, strategy=strategy, nodes=nodes))
    dep = deployment_for(cat, recipe, s.selection, s.install, s.pd_co_located)[2]
    arts = {a.path: a for a in export_artifacts(cat, recipe, s.selection, "vllm-config",
                                                ExportOptions(install=s.install), co_located=s.pd_co_located)}
    for p in dep.processes:
        if p.kind != "serve":
            continue
        for rank in range(p.nodes):
            stem = p.key if p.nodes == 1 else f"{p.key}-node-{rank}"
            argv = list(p.argv) if rank == 0 else list(p.worker_argvs[rank - 1])
            if rank:
                assert list(instantiate(p.worker_argv, rank, p.pool)) == argv
            # flags whose value holds a placeholder stay on the command line after --config
            cli = tuple(x for j in range(4, len(argv)) if "$" in argv[j] for x in (argv[j - 1], argv[j]))
            got = config_argv(p.argv[2], yaml.safe_load(arts[f"{stem}.yaml"].content), cli)
            assert vllm_view(got) == vllm_view(argv)


@PROPS
@given(st.sampled_from(range(10_000)))
def test_exec_form_containers_are_the_plan_argv_with_bindings(i):
    hf, hw, strategy, nodes = selections()[i % len(selections())]
    arts = _export(hf, hw, strategy, nodes, "k8s")
    if arts is None:
        return
    cat = catalog()
    recipe = cat.recipe(hf)
    s = build_state(cat, recipe, PageRequest(hardware=hw, strategy=strategy, nodes=nodes))
    dep = deployment_for(cat, recipe, s.selection, s.install, s.pd_co_located)[2]
    docs = [d for d in yaml.safe_load_all(stdout_text(arts)) if d]
    pods = []
    for d in docs:
        if d["kind"] == "Deployment":
            pods.append(d["spec"]["template"]["spec"])
        elif d["kind"] == "LeaderWorkerSet":
            pods.append(d["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"])
    heads = {tuple(p.argv) for p in dep.processes if p.kind != "companion"}
    for pod in pods:
        for c in pod["containers"]:
            cmd = c.get("command", [])
            argv = [*cmd[3:], *c["args"]] if cmd[:2] == ["/bin/sh", "-c"] else [*cmd, *c.get("args", [])]
            if not argv:
                continue
            # every token is the plan's token with its placeholders filled in by the manifest
            assert any(len(h) == len(argv) and all(_same_token(a, b) for a, b in zip(h, argv, strict=True))
                       for h in heads), argv


def _same_token(plan: str, manifest: str) -> bool:
    """``manifest`` is ``plan`` with each ``$NAME`` replaced by something and ``$`` escaped as ``$$``."""
    parts = re.split(r"\$[A-Z_][A-Z0-9_]*", plan)
    rx = ".+".join(re.escape(p.replace("$", "$$")) for p in parts)
    return re.fullmatch(rx, manifest, re.S) is not None
