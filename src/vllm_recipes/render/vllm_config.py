"""``vllm serve MODEL --config FILE`` YAML plus an ``env.sh`` for every vLLM process.

Each flag of the argv is a key (without the leading ``--``): a bare flag is
``true``, a JSON-object flag a nested mapping (when compact JSON of it gives the
token back byte for byte), an integer an integer, a flag with several values
(``nargs='+'``) a list, anything else a string.
:func:`config_argv` reads a file back into the argv; the tests hold every seed
selection to ``config_argv(yaml) == plan argv``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from .artifacts import MEDIA_SHELL, MEDIA_YAML, Artifact, ExportOptions, header, used_placeholders
from .k8s import dump, shell_word
from .workloads import Deployment, ExportError, Process, instantiate

_INT = re.compile(r"^(0|[1-9][0-9]*)$")


def _value(token: str) -> Any:
    if _INT.fullmatch(token):
        return int(token)
    if token[:1] == "{":
        try:
            parsed = json.loads(token)
        except ValueError:
            return token
        if json.dumps(parsed, separators=(",", ":"), ensure_ascii=False) == token:
            return parsed
    return token


def config_mapping(argv: tuple[str, ...], title: str) -> tuple[str, dict[str, Any]]:
    """``(model, {flag: value})`` of a ``vllm serve`` argv."""
    if argv[:2] != ("vllm", "serve") or len(argv) < 3:
        raise ExportError(f"{title} is not a `vllm serve` process.")
    out: dict[str, Any] = {}
    i, rest = 0, argv[3:]
    while i < len(rest):
        flag = rest[i]
        if not flag.startswith("--"):
            raise ExportError(f"{title}: positional argument {flag!r} cannot be written to a config file.")
        key = flag[2:]
        if key in out:
            raise ExportError(f"{title}: flag {flag} repeats; a config file holds each key once.")
        values = []
        i += 1
        while i < len(rest) and not rest[i].startswith("-"):
            values.append(rest[i])
            i += 1
        # no value: a switch; one: its scalar (or mapping); several (``nargs='+'``): a list, one token each
        out[key] = True if not values else _value(values[0]) if len(values) == 1 else values
    return argv[2], out


def config_argv(model: str, mapping: dict[str, Any]) -> list[str]:
    """The argv a config mapping stands for (the inverse of :func:`config_mapping`)."""
    out = ["vllm", "serve", model]
    for key, value in mapping.items():
        out.append(f"--{key}")
        if value is True:
            continue
        if isinstance(value, dict):
            out.append(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
        elif isinstance(value, list):
            out += [str(v) for v in value]
        else:
            out.append(str(value))
    return out


def _files(dep: Deployment, p: Process, stem: str, argv: tuple[str, ...], env: tuple[tuple[str, str], ...],
           opts: ExportOptions) -> list[Artifact]:
    model, mapping = config_mapping(argv, p.title)
    names = {n for t in (*argv, *(v for _, v in env)) for n in re.findall(r"\$([A-Z_][A-Z0-9_]*)", t)}
    where = {k: v for k, v in used_placeholders(dep).items() if k in names}
    launch = f"vllm serve {model} --config {stem}.yaml"
    if any(n in where for n in re.findall(r"\$([A-Z_][A-Z0-9_]*)", "\n".join(map(str, argv)))):
        launch = f"vllm serve {model} --config <(envsubst < {stem}.yaml)"
    extra = [f"Process: {p.title}", f"Run: . ./{stem}.env.sh && {launch}"]
    if p.install:
        extra.append(f"Install first: {p.install}")
    yaml_text = header(dep, "vllm-config", opts, where, extra) + dump(mapping)
    env_lines = ["#!/bin/sh", header(dep, "vllm-config", opts, where, extra).rstrip("\n")]
    env_lines += [f': "${{{n}:?set {n} (see the header)}}"' for n in where]
    env_lines += [f"export {k}={shell_word(v, lambda n: chr(34) + '${' + n + '}' + chr(34))}" for k, v in env]
    return [Artifact(f"{stem}.yaml", yaml_text, MEDIA_YAML),
            Artifact(f"{stem}.env.sh", "\n".join(env_lines) + "\n", MEDIA_SHELL)]


def render(dep: Deployment, opts: ExportOptions) -> list[Artifact]:
    out: list[Artifact] = []
    for p in dep.processes:
        if p.kind != "serve":
            continue
        if p.nodes <= 1:
            out += _files(dep, p, p.key, p.argv, p.env, opts)
            continue
        out += _files(dep, p, f"{p.key}-node-0", p.argv, p.env, opts)
        for rank in range(1, p.nodes):
            argv = instantiate(p.worker_argv, rank, p.pool)
            env = tuple((k, instantiate((v,), rank, p.pool)[0]) for k, v in p.worker_env)
            out += _files(dep, p, f"{p.key}-node-{rank}", argv, env, opts)
    others = [p.title for p in dep.processes if p.kind != "serve"]
    if others:
        note = ("# Not vLLM processes (start them as `vllm-recipes command` prints, or export --to k8s/slurm): "
                + ", ".join(others) + "\n")
        out = [Artifact(a.path, a.content.replace("\n", "\n" + note, 1) if a.media_type == MEDIA_YAML else a.content,
                        a.media_type) for a in out]
    if not out:
        raise ExportError("this selection has no `vllm serve` process to write a config for.")
    return out


def load(text: str) -> dict[str, Any]:
    data = yaml.safe_load(text)
    return data if isinstance(data, dict) else {}
