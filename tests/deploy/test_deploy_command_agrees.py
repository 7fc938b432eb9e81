"""`command` and the exports run the same argv (issue #23 item 8, #21): a recipe item holding a flag and
its value (``"--max-model-len auto"``, a public-catalog shape) is two argv items in the plan itself, so
the printed command, its ``--json`` argv and every export agree, and the dedupe sees the flag."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from deploy_helpers import yaml_docs

from vllm_recipes.catalog import load_catalog
from vllm_recipes.render.artifacts import ExportOptions, stdout_text
from vllm_recipes.render.export import ExportError, export_artifacts
from vllm_recipes.render.workloads import exec_form
from vllm_recipes.select.state import PageRequest, build_state

SHAPES = Path(__file__).resolve().parent / "fixtures" / "shapes"


def _cli(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "vllm_recipes", *args, "--recipes-dir", str(SHAPES)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_joined_flag_is_two_items_in_command_text_json_and_exports():
    argv = json.loads(_cli("command", "acme/Joined-MoE", "--json"))["argv"]
    i = argv.index("--max-model-len")
    assert argv[i + 1] == "auto" and "--max-model-len auto" not in argv
    text = _cli("command", "acme/Joined-MoE").split("\n# checked")[0]
    body = "\n".join(ln for ln in text.splitlines() if not ln.startswith("#"))
    assert shlex.split(body.replace("\\\n", " ")) == argv  # what the shell runs is the --json argv
    cat = load_catalog(SHAPES)
    recipe = cat.recipe("acme/Joined-MoE")
    st = build_state(cat, recipe, PageRequest(), strict=True)
    [deploy] = [d for d in yaml_docs(stdout_text(export_artifacts(cat, recipe, st.selection, "k8s", ExportOptions())))
                if d["kind"] == "Deployment"]
    c = deploy["spec"]["template"]["spec"]["containers"][0]
    assert [*c["command"], *c["args"]] == argv


def test_a_later_value_shadows_a_joined_one():
    """The dedupe keeps the last ``--max-model-len`` (one flag token now), as vLLM's argparse would."""
    from vllm_recipes.render.shell import render_invocation
    from vllm_recipes.synth.layers import Contribution
    from vllm_recipes.synth.plan import Invocation, Source

    c = Contribution()
    c.add_args(["--max-model-len auto", "--trust-remote-code", "--max-model-len", "4096", "--x a b"],
               Source("base", "m.yaml", ("model", "base_args")))
    assert [(a.value, a.position) for a in c.args] == [("--max-model-len", 0), ("auto", 0), ("--trust-remote-code", 1),
                                                   ("--max-model-len", 2), ("4096", 3), ("--x a b", 4)]
    argv = render_invocation(Invocation("m/x", tuple(c.args)))[1]
    assert argv[3:] == ["--trust-remote-code", "--max-model-len", "4096", "--x a b"]


def test_other_flag_items_with_spaces_are_refused_by_exec_form_targets():
    with pytest.raises(ExportError, match="flag with spaces"):
        exec_form(["--a b c"], "t")
