"""Values from recipes are data (issue #21): what a user pastes runs exactly the argv ``--json`` shows.

* every string survives :func:`~vllm_recipes.render.shell.quote` through a real ``bash`` as one argv
  element (hypothesis), declared placeholders being the only expansion;
* hostile values (hypothesis-generated, and a bounded slice of the ``tools/injection.py`` matrix) at
  every recipe site: the ``command`` text (pip and docker) run by ``bash`` with stub binaries records
  exactly the ``--json`` argv and env, and nothing else runs; the Slurm script (run the same way) and the
  k8s / compose / vllm-config files (PyYAML structure) for three payloads. The whole matrix is
  ``tools/inject_recipes.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_recipes.render.shell import is_placeholder, quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import injection

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

#: shell and YAML syntax, quotes, whitespace, placeholders (declared and not), non-ASCII
ALPHABET = st.sampled_from([*"$`'\"\\;&|<>(){}[]*?!#~=:,.-_ \t\nEOFabcXYZ019", "\u00e9", "\u2028", "\u0085"])
PIECES = st.sampled_from(["$HEAD_IP", "${IFACE_NAME}", "$HF_TOKEN", "$(touch PWNED)", "`id`", "\nEOF\n", "'", "$'\\n'",
                          "$PREFILL_NODE_2", "${HOME}", "--x", "{\"a\": 1}", "$((1+1))", "!!"])
VALUES = st.lists(st.one_of(ALPHABET, PIECES), min_size=1, max_size=12).map("".join)


def _bash_argv(words: list[str]) -> list[str]:
    script = "printf '%s\\0' " + " ".join(words)
    env = {"PATH": "/nonexistent", "HOME": "~", "HF_TOKEN": injection.SECRET, **injection.placeholder_env(script)}
    out = subprocess.run([BASH, "-c", script], capture_output=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode().split("\0")[:-1]


@settings(max_examples=60, deadline=None, database=None)
@given(values=st.lists(VALUES, min_size=1, max_size=20))
def test_every_quoted_value_is_one_argv_element(values: list[str]) -> None:
    values = [v for v in values if "\0" not in v]
    got = _bash_argv([quote(v) if v else "''" for v in values])
    assert got == injection._expected(values)


def test_only_declared_placeholders_expand() -> None:
    assert is_placeholder("HEAD_IP") and is_placeholder("PREFILL_NODE_3") and is_placeholder("MOONCAKE_MASTER_IP")
    assert not is_placeholder("HF_TOKEN") and not is_placeholder("HOME") and not is_placeholder("PREFILL_NODE_0")
    assert _bash_argv([quote("--served-model-name"), quote("$HF_TOKEN"), quote("$HEAD_IP:8000")]) == \
        ["--served-model-name", "$HF_TOKEN", "$HEAD_IP:8000"]


@pytest.fixture(scope="module")
def sandbox():
    sb = injection.Sandbox()
    yield sb
    sb.close()


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(site=st.sampled_from(sorted(injection.SITES)), value=VALUES)
def test_hostile_values_at_every_site_run_as_argv(sandbox: injection.Sandbox, site: str, value: str) -> None:
    out = injection.run_case(sandbox, sandbox.dir / "hyp", site, value, ("pip", "docker"))
    assert out.ok, (site, value, out.executions, out.mismatches, out.crashes)


BOUNDED = {k: injection.PAYLOADS[k] for k in ("subst", "heredoc", "squote", "undeclared-var", "yaml-map")}


@pytest.mark.parametrize("site", sorted(injection.SITES))
def test_injection_matrix_bounded(sandbox: injection.Sandbox, site: str) -> None:
    for payload in BOUNDED.values():
        out = injection.run_case(sandbox, sandbox.dir / "matrix", site, payload, ("pip", "docker"))
        assert out.ok, (site, payload, out.executions, out.mismatches, out.crashes)


DEPLOY = {k: injection.PAYLOADS[k] for k in ("heredoc", "yaml-doc", "undeclared-var")}


@pytest.mark.parametrize("site", sorted(s for s, (omni, _m) in injection.SITES.items() if not omni))
def test_injection_matrix_deploy_files(sandbox: injection.Sandbox, site: str) -> None:
    """The Slurm script run with stubs, and k8s / compose / vllm-config parsed by PyYAML: no execution, the
    --json argv, and the YAML structure of the same export with a benign value."""
    outputs = ("slurm", "k8s", "compose", "vllm-config")
    base = injection.baseline_shapes(sandbox, sandbox.dir / "deploy", site, outputs)
    for payload in DEPLOY.values():
        out = injection.run_case(sandbox, sandbox.dir / "deploy", site, payload, outputs, base)
        assert out.ok, (site, payload, out.executions, out.mismatches, out.structure, out.crashes)
