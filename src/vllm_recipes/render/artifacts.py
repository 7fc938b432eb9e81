"""What every deploy target shares: the artifact type, options, the provenance header, placeholders.

Each target binds the placeholders it can fill itself (the leader's address, a Service name, a mounted file
path); the header lists every other one once, as something to set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from vllm_recipes import __version__

from .shell import INHERITED, flag_pairs, is_placeholder, placeholders
from .workloads import SELF, Deployment, ExportError, RankTerm

MEDIA_YAML = "text/yaml"
MEDIA_SHELL = "text/x-shellscript"
#: a ``KEY=value`` environment file (Docker ``--env-file``, ``sh`` with ``set -a``)
MEDIA_ENV = "text/plain"
#: the data-parallel RPC port of each PD pool: a fixed number is safe (a pod, a Compose service and a
#: Slurm node each have their own ports; co-located pools on one machine get different ones)
RPC_PORTS = {"PREFILL_DP_RPC_PORT": 13345, "DECODE_DP_RPC_PORT": 13346}
#: where a container finds the export's config files
FILES_MOUNT = "/etc/vllm-recipes"


@dataclass(frozen=True)
class Artifact:
    """One file of an export: path relative to the output directory, text, media type."""

    path: str
    content: str
    media_type: str


@dataclass(frozen=True)
class ExportOptions:
    """Target knobs that are not part of the selection (CLI ``--namespace/--name/--pvc/--image``)."""

    namespace: str = "default"
    name: str | None = None
    pvc: str | None = None
    image: str | None = None
    #: extended resource of one RDMA NIC for processes that use RDMA (multi-node NCCL/NIXL, Mooncake over
    #: RDMA); ``none`` (or empty) requests none
    rdma: str = "rdma/ib"
    #: ``pip`` or ``docker`` (the page's install tab)
    install: str = "docker"
    #: site-relative URL of the recipe page for this selection
    page_url: str = ""
    #: one-line ``key=value`` summary of the selection
    selection_label: str = ""

    @property
    def rdma_resource(self) -> str | None:
        return None if self.rdma in ("", "none") else self.rdma


def default_name(model_id: str) -> str:
    """A DNS-1035 label from the model id: ``deepseek-ai/DeepSeek-V4.1-Flash`` -> ``deepseek-v4-1-flash``."""
    base = re.sub(r"[^a-z0-9]+", "-", model_id.rsplit("/", 1)[-1].lower()).strip("-")
    if not base or not base[0].isalpha():
        base = "m-" + base
    return base[:36].rstrip("-")  # room for "-mooncake-master" and the revision-hash suffix (63)


def check_name(name: str, what: str) -> str:
    if not re.fullmatch(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", name):
        raise ExportError(f"{what} {name!r} is not a DNS label (lowercase letters, digits and '-', "
                          "starting with a letter, at most 63 characters).")
    return name


def container_image(dep: Deployment, opts: ExportOptions) -> str:
    """``--image``, else the image the Docker tab runs."""
    if not (image := opts.image or dep.meta.image):
        raise ExportError(f"no container image is known for {dep.hw_id}; pass --image IMAGE.")
    return image


def used_placeholders(dep: Deployment) -> dict[str, list[str]]:
    """Every placeholder the user sets -> where it is used (env keys, flags, files), first-seen order
    (not a worker's own address, nor the search paths a shell extends where the process starts)."""
    where: dict[str, list[str]] = {}
    for p in dep.processes:
        places = [*((t, f"{p.title} {p.argv[i - 1] if i and p.argv[i - 1].startswith('-') else 'argument'}")
                    for i, t in enumerate(p.argv)),
                  *((v, f"{p.title} env {k}") for k, v in p.env),
                  *((w, f"{p.title} workers") for w in (*p.worker_argv, *(v for _k, v in p.worker_env))),
                  *((f.content, f.name) for f in p.files), (p.script or "", p.title)]
        for text, place in places:
            for name in placeholders(text) if isinstance(text, str) else ():
                if name != SELF and name not in INHERITED and place not in where.setdefault(name, []):
                    where[name].append(place)
    return where


def whole_json_values(dep: Deployment) -> frozenset[str]:
    """Placeholders that are a whole string value of a config file (``"device_name": "$X"``): their
    documented empty value (``""``: Mooncake picks the NICs) is valid, so they must be set but may be empty."""
    out: set[str] = set()
    for p in dep.processes:
        for f in p.files:
            names = re.findall(r'"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"', f.content)
            out.update(n for n in names if is_placeholder(n))
    return frozenset(out)


def header(dep: Deployment, target: str, opts: ExportOptions, to_set: Mapping[str, list[str]],
           extra: Iterable[str] = ()) -> str:
    """The provenance comment every artifact starts with, then the target's notes and the settings to set."""
    lines = [f"Generated by vllm-recipes {__version__} (export --to {target}) from the same plan as "
             "`vllm-recipes command`.",
             f"Recipe: {dep.hf_id}" + (f" (model {dep.model_id})" if dep.model_id != dep.hf_id else ""),
             f"Selection: {opts.selection_label}"]
    if opts.page_url:
        lines.append(f"Page: {opts.page_url}")
    lines += extra
    if to_set:
        lines.append("Set before deploying (placeholders the plan leaves to you):")
        lines += [f"  {name}: used by {', '.join(places)}" for name, places in to_set.items()]
    # every line a comment, also each line of a value that holds a line break (a recipe's flag name):
    # ``splitlines`` knows every break YAML, a shell or Docker's env-file reader may see
    return "".join(("# " + part).rstrip() + "\n" for ln in lines for part in ln.splitlines() or [""])


def fixed_value(dep: Deployment, name: str) -> str | None:
    """What every target fills in alike: the router's listen address and port, the PD pools' RPC ports."""
    if name == "ROUTER_HOST":
        return "0.0.0.0"
    router = next((p for p in dep.processes if p.kind == "router"), None)
    if name == "ROUTER_PORT" and router is not None:
        return str(router.port)
    return str(RPC_PORTS[name]) if name in RPC_PORTS else None


def checked_exports(dep: Deployment, names: Iterable[str], where: str) -> list[str]:
    """Shell lines that stop without each of the user's settings (``: "${X:?set X <where>}"``), then
    export them for the processes."""
    names, empty_ok = list(names), whole_json_values(dep)
    checks = [f': "{required(n, empty_ok, f"set {n} {where}")}"' for n in names]
    return [*checks, *(f"export {n}" for n in names)]


def required(name: str, empty_ok: Collection[str], message: str) -> str:
    """``${NAME:?message}``: a shell (or Compose) stops with ``message`` when ``NAME`` is unset or empty;
    ``${NAME?message}`` for a setting whose empty value is valid (:func:`whole_json_values`)."""
    return f"${{{name}{'?' if name in empty_ok else ':?'}{message}}}"


def shell_command(tokens: Iterable[str | RankTerm], word: Callable[[str], str], rank_var: str,
                  indent: str = "  ") -> str:
    """Shell words of an argv, a flag and its value per line; rank terms as arithmetic on ``rank_var``."""
    words = [(f'"$(({rank_var} * {t.step}))"', False) if isinstance(t, RankTerm) else (word(t), t.startswith("-"))
             for t in tokens]
    lines = [w if v is None else f"{w} {v[0]}" for (w, _flag), v in flag_pairs(words, lambda x: x[1])]
    while len(lines) > 1 and not lines[0].startswith("-") and not lines[1].startswith("-"):
        lines[0:2] = [f"{lines[0]} {lines[1]}"]
    return f" \\\n{indent}".join(lines)


def stdout_text(artifacts: list[Artifact]) -> str:
    """All artifacts as one text (CLI ``-o -``, the web tab, ``/api/export``): YAML joined as documents."""
    artifacts = [a for a in artifacts if a.path != "kustomization.yaml"]
    if len(artifacts) == 1:
        return artifacts[0].content
    if all(a.media_type == MEDIA_YAML for a in artifacts):
        return "---\n".join(a.content if a.content.endswith("\n") else a.content + "\n" for a in artifacts)
    return "\n".join(f"# ==> {a.path} <==\n{a.content}" for a in artifacts)


_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # PyYAML built without libyaml: pure Python


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Block style, multi-line strings as literal blocks, no anchors (libyaml's emitter: ~10x faster)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_presenter(dumper: Any, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def dump(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000)


def escape_dollars(text: str) -> str:
    """Escape ``$`` so Kubernetes (``$(VAR)``) and Compose (``${VAR}``) pass ``text`` through unchanged."""
    return text.replace("$", "$$")


def script_command(script: str, prelude: list[str]) -> list[str]:
    """A container command running ``script`` with ``sh`` (after the prelude, stopping at its first failure)."""
    body = "\n".join(["set -e", *prelude, script]) if prelude else script
    return ["/bin/sh", "-c", escape_dollars(body)]


def entrypoint(argv: tuple[str, ...], script: str | None, prelude: list[str],
               text: Callable[[str], str]) -> tuple[list[str], list[str] | None]:
    """``(command, args)`` of a container: ``script`` run by ``sh`` (args ``None``), else the exec form of
    ``argv`` (``vllm serve`` in the command, the rest ``args``); behind a shell prelude when something
    must run first (``text`` writes each argv token for the target)."""
    if script is not None:
        return script_command(script, prelude), None
    k = 2 if argv[:2] == ("vllm", "serve") else 1
    head = [text(t) for t in argv[:k]]
    if prelude:
        head = ["/bin/sh", "-c", escape_dollars(" && ".join([*prelude, 'exec "$0" "$@"'])), *head]
    return head, [text(t) for t in argv[k:]]
