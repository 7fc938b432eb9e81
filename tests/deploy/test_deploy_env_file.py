"""The vllm-config ``<proc>.env`` file: ``sh`` and Docker's ``--env-file`` read back exactly the same values.

Docker's reader is written out below from its documented rules (docs: "docker run --env-file"; the CLI's
``opts/envfile``): one variable per line, a BOM at the start dropped, leading whitespace trimmed, lines
starting with ``#`` and empty lines skipped, ``KEY=VALUE`` split at the first ``=`` with the value taken
literally to the end of the line (no quotes, no expansion; a trailing ``\\r`` is part of the line break), a
key with whitespace is an error, a line without ``=`` passes that variable through from the environment.
``sh`` is the real ``/bin/sh`` with ``set -a``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_recipes.render.artifacts import ExportOptions
from vllm_recipes.render.vllm_config import env_file

SHAPES = Path(__file__).resolve().parent / "fixtures" / "shapes"
DUMP_ENV = f"{sys.executable} -c 'import json, os; print(json.dumps(dict(os.environ)))'"


class EnvFileError(ValueError):
    pass


def docker_env_file(text: str, environ: dict[str, str]) -> dict[str, str]:
    """What ``docker run --env-file`` sets from ``text`` (rules in the module docstring)."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.encode("utf-8").split(b"\n")):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if n == 0:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        line = raw.decode("utf-8").lstrip()  # unicode.IsSpace, as TrimLeftFunc does
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        key = key.lstrip(" \t")
        if any(c in key for c in " \t"):
            raise EnvFileError(f"variable {key!r} contains whitespaces")
        if not key:
            raise EnvFileError(f"no variable name on line {line!r}")
        if eq:
            out[key] = value
        elif key in environ:
            out[key] = environ[key]
    return out


def sh_env_file(path: Path) -> dict[str, str]:
    """The environment ``sh`` exports after ``set -a; . FILE``."""
    out = subprocess.run(["sh", "-c", f'set -a; . "$0"; exec {DUMP_ENV}', str(path)], capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin"}, timeout=20)
    assert out.returncode == 0, out.stderr
    env = json.loads(out.stdout)
    for k in ("PATH", "PWD", "SHLVL", "_", "OLDPWD", "LC_CTYPE"):  # the shell's and Python's own
        env.pop(k, None)
    return env


def _export(target: str = "vllm-config"):
    from vllm_recipes.catalog import load_catalog
    from vllm_recipes.render.export import export_artifacts
    from vllm_recipes.select.page import PageRequest, build_state

    cat = load_catalog(SHAPES)
    recipe = cat.recipe("acme/Dollar-Words")
    st_ = build_state(cat, recipe, PageRequest(), strict=True)
    return export_artifacts(cat, recipe, st_.selection, target, ExportOptions(install="docker"))


def test_the_exported_env_file_reads_the_same_in_sh_and_docker(tmp_path):
    arts = {a.path: a.content for a in _export()}
    text = arts["vllm.env"]
    (tmp_path / "vllm.env").write_text(text)
    literal = {"VLLM_X_PLAIN": "/opt/x:1,2@v=3", "VLLM_X_EMPTY": ""}
    assert docker_env_file(text, {}) == literal
    assert sh_env_file(tmp_path / "vllm.env") == literal
    # what the file cannot hold is named with the reason, and the env.sh exports it
    for key, why in (("NCCL_SOCKET_IFNAME", "expands $IFACE_NAME"), ("VLLM_X_DIR", "needs shell quoting"),
                     ("VLLM_X_LINES", "needs shell quoting"), ("LD_PRELOAD", "expands $LD_PRELOAD")):
        assert f"#   {key}: {why}\n" in text
        assert f"\nexport {key}=" in arts["vllm.env.sh"]
    assert "-e NCCL_SOCKET_IFNAME -e GLOO_SOCKET_IFNAME -e VLLM_X_DIR" in text


def test_header_values_with_line_breaks_stay_comments():
    """A value in a header (here the selection label) that holds a line break cannot add a line."""
    from vllm_recipes.catalog import load_catalog
    from vllm_recipes.render.export import export_artifacts
    from vllm_recipes.select.page import PageRequest, build_state

    cat = load_catalog(SHAPES)
    recipe = cat.recipe("acme/Dollar-Words")
    st_ = build_state(cat, recipe, PageRequest(), strict=True)
    opts = ExportOptions(install="docker", selection_label="x\nEVIL=1\r\nkind: Secret\u2028y")
    for a in export_artifacts(cat, recipe, st_.selection, "vllm-config", opts):
        if a.path.endswith(".env"):
            assert "EVIL" not in docker_env_file(a.content, {})
    for target in ("k8s", "compose", "slurm"):
        for a in export_artifacts(cat, recipe, st_.selection, target, opts):
            assert all(ln.startswith("#") for ln in a.content.splitlines() if "EVIL" in ln or "Secret" in ln)


#: names of our own (a generated ``PATH`` or ``IFS`` would change the shell reading the file)
KEYS = st.from_regex(r"K[A-Za-z0-9_]{0,12}", fullmatch=True)
VALUES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30) | st.sampled_from(
    ["", "a b", "'", '"', "$HOME", "${IFACE_NAME}", "$IFACE_NAME:x", "a\nb", "a\r", "~/x", "x=y", "#c", "\\"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(KEYS, VALUES, min_size=1, max_size=6))
def test_every_value_is_in_the_file_exactly_or_named_with_a_reason(tmp_path, env):
    lines, omitted = env_file(list(env.items()))
    text = "# header\n" + "".join(f"{ln}\n" for ln in lines)
    path = tmp_path / "p.env"
    path.write_text(text, encoding="utf-8")
    written = {k: v for k, v in env.items() if k not in dict(omitted)}
    assert docker_env_file(text, {}) == written
    assert sh_env_file(path) == written
    assert {k for k, _ in omitted} | set(written) == set(env)
    assert all(why for _, why in omitted)
