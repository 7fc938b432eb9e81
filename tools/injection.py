"""Values are data: the injection harness of issue #21 (shared by ``tools/inject_recipes.py`` and the CI test).

A hostile value (:data:`PAYLOADS`) is put at one recipe site (:data:`SITES`) of a small recipe directory,
then every output is used the way a user uses it:

* ``pip`` / ``docker``: the text ``vllm-recipes command`` prints is run by ``bash`` in a sandbox whose
  ``PATH`` holds only stub binaries (``vllm``, ``docker``, ``uv``, ``pip``, ``srun``, ``curl``, ...) that
  record their argv and environment; the recorded argv must equal the ``--json`` argv and the recorded
  env the ``--json`` env, and nothing else may run (bash's ``command_not_found_handle`` records any other
  command, and a canary file must not appear);
* ``slurm``: the ``export --to slurm`` script run the same way (``srun`` runs its step);
* ``k8s`` / ``compose`` / ``vllm-config``: the exported YAML parsed with PyYAML; its structure (documents,
  key paths) must equal the structure of the same export with a benign value at the same site.

A case passes when the recipe is refused (``validate`` error and the render exits 2 without output) or when
every output passes. Declared placeholders are set to their own text (``HEAD_IP='$HEAD_IP'``) so expansion
is visible as equality; undeclared variables (``HF_TOKEN``) hold a secret that must not show up.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

CANARY = "PWNED"
SECRET = "leaked-secret-value"
#: written by the authors of the harness
PAYLOADS: dict[str, str] = {
    "subst": f"x$(touch {CANARY})",
    "backticks": f"`touch {CANARY}`",
    "semicolon": f"a; touch {CANARY}",
    "and": f"a && touch {CANARY}",
    "pipe": f"a | touch {CANARY}",
    "newline": f"a\ntouch {CANARY}",
    "heredoc": f"a\nEOF\ntouch {CANARY}\nEOF",
    "squote": f"a' ; touch {CANARY} ; echo '",
    "dquote": f'a" ; touch {CANARY} ; echo "',
    "yaml-doc": "a\n---\nkind: Pod\nmetadata: {name: evil}",
    "yaml-map": "a\nhostPath: {path: /}\nevil: true",
    "yaml-flow": "{evil: [1, 2]}",
    "undeclared-var": "$HF_TOKEN",
    "braced-var": "${HF_TOKEN}",
    "glob": "*",
    "tilde": "~root",
    "backslash": "a\\",
    "dollar-squote": f"$'\\x3btouch {CANARY}'",
}
#: a held-out set (not used to write the code): other syntax a shell or YAML parser reads
HELD_OUT: dict[str, str] = {
    "proc-subst": f"<(touch {CANARY})",
    "arith": f"$((1+$(touch {CANARY})))",
    "brace-exp": f"{{a,b}}$(touch {CANARY})",
    "redirect": f"> {CANARY}",
    "cr": f"a\rtouch {CANARY}",
    "nul-ish": "a\u0085b\u2028c",
    "history": f"!!; touch {CANARY}",
    "yaml-anchor": "&a [*a]",
    "yaml-tag": "!!python/object:os.system",
    "yaml-comment": "a # b\nc: d",
    "comment": f"# x\ntouch {CANARY}",
    "ifs": f"a${{IFS}}$(touch {CANARY})",
    "ansi-c-var": f"$'a'$(touch {CANARY})",
    "declared-mix": f"$HEAD_IP$(touch {CANARY})",
    "unicode-quote": f"a\u2019; touch {CANARY}",
}
BENIGN = "benign-value"

#: Declared placeholders the sandbox sets to their own text (render/shell.py PLACEHOLDER_NAME).
PLACEHOLDERS = ["HEAD_IP", "IFACE_NAME", "IB_IF", "ROUTER_HOST", "ROUTER_PORT", "PREFILL_DP_RPC_PORT",
                "DECODE_DP_RPC_PORT", "MOONCAKE_MASTER_IP", "MOONCAKE_CONFIG_PATH", "MOONCAKE_DEVICE_NAME",
                "MOONCAKE_STORE_CONFIG_PATH", "MOONCAKE_STORE_DEVICE_NAME",
                *(f"{p}_{i}" for p in ("PREFILL_NODE", "DECODE_NODE", "VLLM_INSTANCE") for i in range(1, 9))]


def declared(name: str) -> bool:
    """Whether ``$name`` is a declared placeholder (the engine's rule; the fixed list on older engines)."""
    try:
        from vllm_recipes.render.shell import is_placeholder
    except ImportError:
        return name in PLACEHOLDERS
    return is_placeholder(name)


def placeholder_env(text: str) -> dict[str, str]:
    """Every declared placeholder ``text`` mentions (and :data:`PLACEHOLDERS`), set to its own text."""
    names = set(PLACEHOLDERS) | {n for n in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", text) if declared(n)}
    return {n: f"${n}" for n in names - {"PATH"}}  # (the sandbox's PATH holds the stubs)


STUBS = ["vllm", "docker", "uv", "pip", "srun", "curl", "scontrol", "python3", "vllm-router", "smg", "sleep"]
OUTPUTS = ("pip", "docker", "slurm", "k8s", "compose", "vllm-config")


def base_recipe() -> dict[str, Any]:
    """A small recipe every site is reachable from (single node on h200)."""
    return {
        "meta": {"title": "X", "hardware": {"h200": "verified"}},
        "model": {"model_id": "acme/X", "base_args": ["--trust-remote-code"], "base_env": {"A": "1"}},
        "features": {"tools": {"description": "t", "args": ["--enable-auto-tool-choice"]}},
        "opt_in_features": ["tools"],
        "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 10, "extra_args": [], "extra_env": {}}},
        "compatible_strategies": ["single_node_tp", "multi_node_tp"],
        "hardware_overrides": {"nvidia": {"extra_args": [], "extra_env": {}}},
        "strategy_overrides": {"single_node_tp": {"env": {}}},
    }


def omni_recipe() -> dict[str, Any]:
    return {
        "meta": {"title": "O", "tasks": ["omni"], "hardware": {"h200": "verified"}},
        "model": {"model_id": "acme/X", "base_args": [], "base_env": {}},
        "omni": {"serve_binary": "vllm serve", "tasks": [{"id": "t2i", "label": "T", "model_id": "acme/X"}]},
        "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 10}},
        "compatible_strategies": ["single_node_tp"],
    }


Mutator = Callable[[dict[str, Any], str], None]


def _set(path: tuple[Any, ...]) -> Mutator:
    def put(d: dict[str, Any], v: str) -> None:
        for p in path[:-1]:
            d = d[p]
        d[path[-1]] = v
    return put


def _append(path: tuple[Any, ...], *before: str) -> Mutator:
    def put(d: dict[str, Any], v: str) -> None:
        for p in path:
            d = d[p]
        d.extend([*before, v])  # type: ignore[attr-defined]
    return put


def _env_key(path: tuple[Any, ...]) -> Mutator:
    def put(d: dict[str, Any], v: str) -> None:
        for p in path:
            d = d[p]
        d[v] = "1"
    return put


def _env_value(path: tuple[Any, ...]) -> Mutator:
    def put(d: dict[str, Any], v: str) -> None:
        for p in path:
            d = d[p]
        d["HOSTILE_VALUE"] = v
    return put


#: site -> (omni recipe?, mutation); frontend env is a taxonomy site (see :func:`write_case`)
SITES: dict[str, tuple[bool, Mutator]] = {
    "model.model_id": (False, _set(("model", "model_id"))),
    "variant.model_id": (False, _set(("variants", "default", "model_id"))),
    "model.base_env key": (False, _env_key(("model", "base_env"))),
    "model.base_env value": (False, _env_value(("model", "base_env"))),
    "variant.extra_env key": (False, _env_key(("variants", "default", "extra_env"))),
    "variant.extra_env value": (False, _env_value(("variants", "default", "extra_env"))),
    "hardware_overrides.extra_env value": (False, _env_value(("hardware_overrides", "nvidia", "extra_env"))),
    "hardware_overrides.extra_env key": (False, _env_key(("hardware_overrides", "nvidia", "extra_env"))),
    "strategy_overrides.env value": (False, _env_value(("strategy_overrides", "single_node_tp", "env"))),
    "model.base_args value": (False, _append(("model", "base_args"), "--served-model-name")),
    "model.base_args positional": (False, _append(("model", "base_args"))),
    "variant.extra_args value": (False, _append(("variants", "default", "extra_args"), "--max-model-len")),
    "hardware_overrides.extra_args flag": (False, _append(("hardware_overrides", "nvidia", "extra_args"))),
    "feature args": (False, _append(("features", "tools", "args"), "--tool-call-parser")),
    "model.docker_image": (False, _set(("model", "docker_image"))),
    "variant.docker_image": (False, _set(("variants", "default", "docker_image"))),
    "omni.serve_binary": (True, _set(("omni", "serve_binary"))),
    "omni task model_id": (True, lambda d, v: d["omni"]["tasks"][0].__setitem__("model_id", v)),
    "frontend env value": (False, lambda d, v: None),
}


def write_case(root: Path, site: str, payload: str) -> Path:
    """A recipe directory with ``payload`` at ``site``."""
    if root.exists():
        shutil.rmtree(root)
    (root / "models" / "acme").mkdir(parents=True)
    omni, mutate = SITES[site]
    data = omni_recipe() if omni else base_recipe()
    mutate(data, payload)
    if site == "frontend env value":
        from vllm_recipes.catalog.loader import BUNDLED_DIR  # the bundled taxonomy, one frontend env changed

        tax = yaml.safe_load((Path(BUNDLED_DIR) / "taxonomy.yaml").read_text())
        tax["frontends"]["python"]["env"] = {"HOSTILE_VALUE": payload}
        (root / "taxonomy.yaml").write_text(yaml.safe_dump(tax, allow_unicode=True, sort_keys=False))
    (root / "models" / "acme" / "X.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return root


@dataclass
class Outcome:
    site: str
    payload: str
    validate_errors: int = 0
    refused: dict[str, str] = field(default_factory=dict)
    executions: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    structure: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.executions or self.mismatches or self.structure or self.crashes)


def _cli(args: list[str]) -> tuple[int, str]:
    from vllm_recipes.cli.main import cli

    res = CliRunner().invoke(cli, args, catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise RuntimeError(f"{type(res.exception).__name__}: {res.exception}")
    return res.exit_code, res.stdout


#: bash only (PATH holds nothing else): one file per call (named by time, so concurrent steps cannot
#: interleave) = argv, \1, the environment, \2, NUL-separated
RECORD = """{ printf '%s\\0' "$@"; printf '\\1\\0'; for _v in $(compgen -e); do printf '%s=%s\\0' "$_v" "${!_v}"; done;
  printf '\\2\\0'; } > "$STUB_LOG/${EPOCHREALTIME/./}-$$-$RANDOM"
"""
STUB = f"""#!/bin/bash
_n="${{0##*/}}"
set -- "$_n" "$@"
{RECORD}
shift
case "$_n" in
  srun) while [ $# -gt 0 ] && [ "${{1#-}}" != "$1" ]; do shift; done; exec "$@" ;;
  scontrol) echo node1; echo node2 ;;
esac
exit 0
"""
#: the real tools a generated script may use besides the stubs (never a payload's ``touch``)
TOOLS = ["cat", "mkdir", "bash"]


@dataclass
class Call:
    argv: list[str]
    env: dict[str, str]


class Sandbox:
    """A scratch directory with stub binaries; :meth:`run` executes a script and returns the calls."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="inject-"))
        self.bin = self.dir / "bin"
        self.bin.mkdir()
        for name in STUBS:
            p = self.bin / name
            p.write_text(STUB)
            p.chmod(0o755)
        for name in TOOLS:
            real = shutil.which(name)
            if real:
                (self.bin / name).symlink_to(real)
        self.bash = shutil.which("bash") or "/bin/bash"

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def run(self, script: str, timeout: float = 20) -> tuple[list[Call], bool]:
        """Calls recorded (stubs, and any command not found: its name first) and whether the canary appeared."""
        work = self.dir / "work"
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        log = self.dir / "calls"
        shutil.rmtree(log, ignore_errors=True)
        log.mkdir()
        env = {"PATH": str(self.bin), "HOME": "~", "STUB_LOG": str(log), "HF_TOKEN": SECRET,
               "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_JOB_ID": "1", "SLURM_SUBMIT_DIR": str(work),
               **placeholder_env(script)}
        prelude = f"command_not_found_handle() {{\n{RECORD}\nreturn 127\n}}\n"
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run([self.bash, "-c", prelude + script], cwd=work, env=env, timeout=timeout,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        calls = [c for p in sorted(log.iterdir(), key=lambda p: int(p.name.split("-")[0]))
                 for c in _parse_calls(p.read_bytes())]
        canary = any(CANARY in p.name for p in work.rglob("*")) or (self.dir / CANARY).exists()
        return calls, canary


def _sh(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def _parse_calls(raw: bytes) -> list[Call]:
    out: list[Call] = []
    parts = raw.split(b"\0")
    i = 0
    while i < len(parts) - 1:
        argv: list[str] = []
        while parts[i] != b"\1":
            argv.append(parts[i].decode(errors="replace"))
            i += 1
        i += 1
        env: dict[str, str] = {}
        while parts[i] != b"\2":
            k, _, v = parts[i].decode(errors="replace").partition("=")
            env[k] = v
            i += 1
        i += 1
        out.append(Call(argv, env))
    return out


_BRACED = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")


def _expected(argv: list[str]) -> list[str]:
    """The argv the sandbox should record: declared ``${NAME}`` expands to ``$NAME`` (its own text)."""
    return [_BRACED.sub(lambda m: f"${m.group(1)}" if declared(m.group(1)) else m.group(0), a) for a in argv]


_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def benign_for(payload: str) -> str:
    """The benign value to compare a payload's YAML structure with: the same declared placeholders (a
    placeholder legitimately adds a setting, e.g. a k8s ConfigMap entry), nothing else."""
    return BENIGN + "".join(m.group(0) for m in _REF.finditer(payload) if declared(m.group(1)))


def _same_argv(got: list[list[str]], want: list[list[str]]) -> bool:
    """Equal, except that a declared placeholder may be filled by the target (Slurm binds ``$HEAD_IP``)."""
    if len(got) != len(want) or any(len(g) != len(w) for g, w in zip(got, want, strict=True)):
        return False
    for g, w in zip((t for a in got for t in a), (t for a in want for t in a), strict=True):
        if g == w:
            continue
        parts = _REF.split(w)  # literal, name, literal, name, ...
        pattern = "".join(re.escape(x) if i % 2 == 0 else (".*" if declared(x) else re.escape("$" + x))
                          for i, x in enumerate(parts))
        if not re.fullmatch(pattern, g, re.S):
            return False
    return True


def _json_processes(obj: dict[str, Any], docker: bool) -> list[tuple[list[str], dict[str, Any]]]:
    """(argv, env) of every process a ``command --json`` object shows, in text order."""
    if "argv" in obj and "hardware" in obj and "command" in obj and "env" in obj and "task" in obj:  # omni
        return [] if docker else [(obj["argv"], obj["env"])]
    key = "docker_argv" if docker else "argv"
    if key in obj:
        return [(obj[key], obj["env"])]
    if "head_argv" in obj:
        pre = "head_docker_argv" if docker else "head_argv"
        post = "worker_docker_argvs" if docker else "worker_argvs"
        return [(obj[pre], obj["env"]), *((a, obj["env"]) for a in obj[post])]
    return []


INFRA = {"srun", "curl", "scontrol", "sleep"}


def check_text(sb: Sandbox, text: str, obj: dict[str, Any], docker: bool, where: str, out: Outcome) -> None:
    """Run ``text``; every call must be one of the JSON processes, in order, with its env."""
    calls, canary = sb.run(text)
    want = _json_processes(obj, docker)
    got = [c for c in calls if c.argv[:1] != ["srun"]]
    if canary:
        out.executions.append(f"{where}: the canary file appeared")
    stray = [c.argv for c in got if c.argv[0] not in {a[0] for a, _ in want}]
    if stray:
        out.executions.append(f"{where}: ran {stray!r}")
    if [c.argv for c in got] != [_expected(a) for a, _ in want]:
        out.mismatches.append(f"{where}: ran {[c.argv for c in got]!r} but --json says {[a for a, _ in want]!r}")
        return
    if not docker:
        from vllm_recipes.jsvalues import js_str

        for call, (_a, env) in zip(got, want, strict=True):
            for k, v in env.items():
                if call.env.get(k) != _expected([js_str(v)])[0]:
                    out.mismatches.append(f"{where}: env {k}={call.env.get(k)!r} but --json says {v!r}")


def _shape(docs: list[Any]) -> list[Any]:
    def walk(v: Any, path: str) -> Iterator[str]:
        if isinstance(v, dict):
            for k, x in v.items():
                yield f"{path}.{k}" if not str(k).startswith("HOSTILE") else f"{path}.<key>"
                yield from walk(x, f"{path}.{k}")
        elif isinstance(v, list):
            yield f"{path}[{len(v)}]"
            for i, x in enumerate(v):
                yield from walk(x, f"{path}[{i}]")
    return [sorted(walk(d, "")) for d in docs]


def yaml_shapes(text: str) -> list[Any]:
    return _shape([d for d in yaml.safe_load_all(text)])


def export_shapes(rd: list[str], target: str, where: Path) -> dict[str, Any] | None:
    """The YAML structure of every ``.yaml`` file ``export --to target`` writes (None when refused)."""
    if where.exists():
        shutil.rmtree(where)
    code, _text = _cli(["export", "acme/X", *rd, "--to", target, "-o", str(where)])
    if code != 0:
        return None
    return {p.name: yaml_shapes(p.read_text()) for p in sorted(where.rglob("*.y*ml"))}


def run_case(sb: Sandbox, root: Path, site: str, payload: str, outputs: tuple[str, ...] = OUTPUTS,
             baseline: dict[str, Any] | None = None) -> Outcome:
    """One payload at one site through every output."""
    out = Outcome(site, payload)
    d = write_case(root, site, payload)
    rd = ["--recipes-dir", str(d)]
    code, text = _cli(["validate", *rd])
    out.validate_errors = len(re.findall(r": error: ", text))
    omni = SITES[site][0]
    for o in outputs:
        try:
            if o in ("pip", "docker"):
                args = ["command", "acme/X", *rd, "-q", "--install", o]
                code, text = _cli(args)
                jcode, jtext = _cli([*args, "--json"])
                if code != 0 or jcode != 0:
                    out.refused[o] = f"exit {code}/{jcode}"
                    if text.strip():
                        out.executions.append(f"{o}: printed a command although it refused")
                    continue
                check_text(sb, text, json.loads(jtext), o == "docker", f"{site}/{o}", out)
            elif omni:
                continue
            else:
                if o == "slurm":
                    code, text = _cli(["export", "acme/X", *rd, "--to", o, "-o", "-"])
                    if code != 0:
                        out.refused[o] = f"exit {code}"
                        continue
                    calls, canary = sb.run(text)
                    stray = [c.argv for c in calls if c.argv[0] not in INFRA and c.argv[0] != "vllm"]
                    if canary or stray:
                        out.executions.append(f"{site}/slurm: ran {stray or ['canary file']!r}")
                    jcode, jtext = _cli(["command", "acme/X", *rd, "-q", "--json"])
                    want = [_expected(a) for a, _ in _json_processes(json.loads(jtext), False)] if jcode == 0 else []
                    got = [c.argv for c in calls if c.argv[0] == "vllm"]
                    if jcode == 0 and not _same_argv(got, want):
                        out.mismatches.append(f"{site}/slurm: ran {got!r} but --json says {want!r}")
                else:
                    shape = export_shapes(rd, o, sb.dir / "out")
                    if shape is None:
                        out.refused[o] = "exit 2"
                        continue
                    if baseline is not None and baseline.get(o) is not None and shape != baseline[o]:
                        out.structure.append(f"{site}/{o}: YAML structure differs from the benign value's")
        except Exception as exc:
            out.crashes.append(f"{site}/{o}: {type(exc).__name__}: {exc}"[:300])
    return out


def baseline_shapes(sb: Sandbox, root: Path, site: str, outputs: tuple[str, ...] = OUTPUTS,
                    value: str = BENIGN) -> dict[str, Any]:
    """The YAML structure of each export with a benign ``value`` at ``site``."""
    d = write_case(root, site, value)
    shapes: dict[str, Any] = {}
    if SITES[site][0]:
        return shapes
    for o in ("k8s", "compose", "vllm-config"):
        if o in outputs:
            shapes[o] = export_shapes(["--recipes-dir", str(d)], o, sb.dir / "out")
    return shapes


def run_matrix(payloads: dict[str, str], sites: list[str] | None = None, outputs: tuple[str, ...] = OUTPUTS,
               progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every payload at every site through ``outputs``."""
    sb = Sandbox()
    results: list[Outcome] = []
    try:
        root = sb.dir / "recipes"
        for site in sites or list(SITES):
            bases: dict[str, dict[str, Any]] = {}
            for payload in payloads.values():
                value = benign_for(payload)
                if value not in bases:
                    bases[value] = baseline_shapes(sb, root, site, outputs, value)
                res = run_case(sb, root, site, payload, outputs, bases[value])
                results.append(res)
                if progress:
                    progress(res)
    finally:
        sb.close()
    return results

