"""``vllm serve MODEL --config FILE`` YAML plus an ``env.sh`` for every vLLM process. Each flag is a key: a bare
flag ``true``, a JSON-object flag a mapping, an integer an integer, several values a list, anything else a
string; :func:`config_argv` reads it back."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .artifacts import (
    MEDIA_ENV,
    MEDIA_SHELL,
    MEDIA_YAML,
    RPC_PORTS,
    Artifact,
    ExportOptions,
    checked_exports,
    dump,
    header,
    used_placeholders,
)
from .shell import placeholders, quote, shell_join, shell_word, substitute
from .workloads import Deployment, ExportError, Process

_INT = re.compile(r"^(0|[1-9][0-9]*)$")
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


def _value(token: str) -> Any:
    if _INT.fullmatch(token):
        return int(token)
    if token[:1] == "{":
        try:
            parsed = json.loads(token)
        except ValueError:
            return token
        if isinstance(parsed, dict):
            return parsed
    return token


def _dotted_value(text: str) -> Any:
    """A dotted flag's value as vLLM reads it: JSON, else a human-readable int (``1k``, ``2G``), else text."""
    with contextlib.suppress(ValueError):
        return json.loads(text)
    if m := _HUMAN.fullmatch(text.strip()):
        number, suffix = m.groups()
        if suffix.islower():
            return int(float(number) * 1000 ** "kmgt".index(suffix) * 1000)
        if "." not in number:
            return int(number) * 1024 ** ("KMGT".index(suffix) + 1)
    return text


def config_mapping(argv: tuple[str, ...], title: str) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    """``(model, {key: value}, cli)`` of a ``vllm serve`` argv, read the way vLLM's parser reads it
    (``--flag=value``, ``--name.key value`` a nested key, ``_`` as ``-``). Flags whose value holds a
    placeholder, and short aliases (``-cc...``), stay on the command line (``cli``) as written."""
    if argv[:2] != ("vllm", "serve") or len(argv) < 3:
        raise ExportError(f"{title} is not a `vllm serve` process.")
    out: dict[str, Any] = {}
    cli: list[str] = []
    i, rest = 0, argv[3:]
    while i < len(rest):
        token = flag = rest[i]
        if not flag.startswith("-"):
            raise ExportError(f"{title}: positional argument {flag!r} cannot be written to a config file.")
        values: list[str] = []
        i += 1
        if "=" in flag:
            flag, _, inline = flag.partition("=")
            values.append(inline)
        else:
            while i < len(rest) and not rest[i].startswith("-"):
                values.append(rest[i])
                i += 1
        if not flag.startswith("--") or any(placeholders(v) for v in values):
            cli += [token, *values[1:]] if token != flag else [flag, *values]
            continue
        # ``--attention_config.x`` -> ``attention-config`` key ``x``: ``_`` is ``-`` up to the first ``.``
        head, dot, tail = flag[2:].partition(".")
        key = head.replace("_", "-")
        if dot:
            if len(values) != 1:
                raise ExportError(f"{title}: {flag} needs one value, got {len(values)}.")
            if key in out and not isinstance(out[key], dict):
                raise ExportError(f"{title}: {key} is given both whole and by key; a config file holds it once.")
            node = out.setdefault(key, {})
            *path, last = tail.split(".")
            for k in path:
                if not isinstance(node.get(k), dict):
                    node[k] = {}
                node = node[k]
            node[last] = _dotted_value(values[0])
            continue
        out.pop(key, None)  # a repeated flag: the last one wins, as in vLLM's argparse
        # no value: a switch; one: its scalar (or mapping); several (``nargs='+'``): a list, one token each
        out[key] = True if not values else _value(values[0]) if len(values) == 1 else values
    return argv[2], out, tuple(cli)


def config_argv(model: str, mapping: dict[str, Any], cli: tuple[str, ...] = ()) -> list[str]:
    """The argv vLLM builds from ``vllm serve MODEL --config FILE [cli]`` (``load_config_file``:
    ``true`` -> the switch, a list -> its items, a mapping -> ``json.dumps`` of it, else ``str``)."""
    out = ["vllm", "serve", model]
    for key, value in mapping.items():
        if isinstance(value, bool):
            out += [f"--{key}"] if value else []
        elif isinstance(value, list):
            out += [f"--{key}", *map(str, value)] if value else []
        else:
            out += [f"--{key}", json.dumps(value) if isinstance(value, dict) else str(value)]
    return [*out, *cli]


def env_file(env: Sequence[tuple[str, str]]) -> tuple[list[str], list[tuple[str, str]]]:
    """``KEY=value`` lines that ``sh`` (``set -a; . ./FILE``) and Docker's ``--env-file`` both read back
    exactly, and ``(key, reason)`` for each value that cannot be written so: Docker reads a value literally
    (no quotes, expansion or line breaks), so only values :func:`render.shell.quote` leaves bare, without
    placeholders, are in the file; the others go to ``env.sh`` only."""
    lines: list[str] = []
    omitted: list[tuple[str, str]] = []
    for k, v in env:
        if names := placeholders(v):
            omitted.append((k, "expands " + ", ".join(f"${n}" for n in dict.fromkeys(names))))
        elif quote(v) != v:
            omitted.append((k, "needs shell quoting"))
        else:
            lines.append(f"{k}={v}")
    return lines, omitted


def _files(dep: Deployment, used: Mapping[str, list[str]], p: Process, stem: str, argv: tuple[str, ...],
           env: tuple[tuple[str, str], ...], opts: ExportOptions) -> list[Artifact]:
    # a pool's data-parallel RPC port: a fixed number (each node has its own ports), not a setting
    argv = tuple(substitute(t, lambda n: str(RPC_PORTS[n]) if n in RPC_PORTS else None) for t in argv)
    model, mapping, cli = config_mapping(argv, p.title)
    names = {n for t in (*argv, *(v for _, v in env)) for n in placeholders(t)}
    where = {k: v for k, v in used.items() if k in names}
    launch = " ".join([shell_join(["vllm", "serve", model, "--config", f"{stem}.yaml"]), *map(shell_word, cli)])
    extra = [f"Process: {p.title}", f"Run: . ./{stem}.env.sh && {launch}"]
    if p.install:
        extra.append(f"Install first: {p.install}")
    head = header(dep, "vllm-config", opts, where, extra)
    literal, omitted = env_file(env)
    docker = [f"Environment of the process for `docker run --env-file {stem}.env` (also read the same by "
              f"`set -a; . ./{stem}.env; set +a`); {stem}.env.sh exports all of it for a shell."]
    if omitted:
        docker.append("Not in this file (Docker reads env-file values literally, with no quotes, expansion or "
                      f"line breaks): with docker run, `. ./{stem}.env.sh` first and pass "
                      + " ".join(f"-e {k}" for k, _ in omitted) + ".")
        docker += [f"  {k}: {why}" for k, why in omitted]
    env_text = header(dep, "vllm-config", opts, {}, docker) + "".join(f"{ln}\n" for ln in literal)
    # the settings the Run line and the env use: checked, then exported for the process
    env_lines = ["#!/bin/sh", head.rstrip("\n"), *checked_exports(dep, where, "(see the header)"),
                 *(f"export {k}={shell_word(v)}" for k, v in env)]
    return [Artifact(f"{stem}.yaml", head + dump(mapping), MEDIA_YAML),
            Artifact(f"{stem}.env", env_text, MEDIA_ENV),
            Artifact(f"{stem}.env.sh", "\n".join(env_lines) + "\n", MEDIA_SHELL)]


def render(dep: Deployment, opts: ExportOptions) -> list[Artifact]:
    out: list[Artifact] = []
    used = used_placeholders(dep)  # (the deployment's settings, walked once for every rank's files)
    for p in dep.processes:
        for rank in range(p.nodes if p.kind == "serve" else 0):
            out += _files(dep, used, p, p.key if p.nodes <= 1 else f"{p.key}-node-{rank}", *p.node(rank), opts)
    if others := [p.title for p in dep.processes if p.kind != "serve"]:
        note = ("# Not vLLM processes (start them as `vllm-recipes command` prints, or export --to k8s/slurm): "
                + ", ".join(others) + "\n")
        out = [Artifact(a.path, a.content.replace("\n", "\n" + note, 1) if a.media_type == MEDIA_YAML else a.content,
                        a.media_type) for a in out]
    if not out:
        raise ExportError("this selection has no `vllm serve` process to write a config for.")
    return out
