"""What every deploy target shares: the artifact type, options, the provenance header, placeholders.

A placeholder is a ``$NAME`` the plan leaves for the user (``$HEAD_IP``,
``$IFACE_NAME``, ``$PREFILL_NODE_1`` ...). Each target *binds* the names it
can fill itself (the leader's address, a Service name, a mounted file path);
every other name is listed once in the artifact's header as something to set,
with where it is used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from vllm_recipes import __version__

from .shell import INHERITED, is_placeholder
from .workloads import SELF, Deployment, ExportError, RankTerm, placeholders

MEDIA_YAML = "text/yaml"
MEDIA_SHELL = "text/x-shellscript"
#: a ``KEY=value`` environment file (Docker ``--env-file``, ``sh`` with ``set -a``)
MEDIA_ENV = "text/plain"
DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
#: the data-parallel RPC port of each PD pool: a fixed number is safe (a pod, a Compose service and a
#: Slurm node each have their own ports; co-located pools on one machine get different ones)
RPC_PORTS = {"PREFILL_DP_RPC_PORT": 13345, "DECODE_DP_RPC_PORT": 13346}


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


def default_name(model_id: str) -> str:
    """A DNS-1035 label from the model id: ``deepseek-ai/DeepSeek-V4.1-Flash`` -> ``deepseek-v4-1-flash``."""
    base = re.sub(r"[^a-z0-9]+", "-", model_id.rsplit("/", 1)[-1].lower()).strip("-")
    if not base or not base[0].isalpha():
        base = "m-" + base
    return base[:36].rstrip("-")  # room for "-mooncake-master" and the revision-hash suffix (63)


def check_name(name: str, what: str) -> str:
    if not DNS_LABEL.fullmatch(name):
        raise ExportError(f"{what} {name!r} is not a DNS label (lowercase letters, digits and '-', "
                          "starting with a letter, at most 63 characters).")
    return name


def container_image(dep: Deployment, opts: ExportOptions) -> str:
    """``--image``, else the image the Docker tab runs."""
    image = opts.image or dep.meta.image
    if not image:
        raise ExportError(f"no container image is known for {dep.hw_id}; pass --image IMAGE.")
    return image


def used_placeholders(dep: Deployment) -> dict[str, list[str]]:
    """Every placeholder of the deployment -> where it is used (env keys, flags, files), first-seen order."""
    where: dict[str, list[str]] = {}

    def note(text: str, place: str) -> None:
        for name in placeholders(text):
            places = where.setdefault(name, [])
            if place not in places:
                places.append(place)

    for p in dep.processes:
        for i, t in enumerate(p.argv):
            note(t, f"{p.title} {p.argv[i - 1] if i and p.argv[i - 1].startswith('-') else 'argument'}")
        for k, v in p.env:
            note(v, f"{p.title} env {k}")
        for w in p.worker_argv:
            if isinstance(w, str):
                note(w, f"{p.title} workers")
        for _k, wv in p.worker_env:
            if isinstance(wv, str):
                note(wv, f"{p.title} workers")
        for f in p.files:
            note(f.content, f.name)
        if p.script:
            note(p.script, p.title)
    where.pop(SELF, None)
    for name in INHERITED:  # the process's own search paths, extended by a shell where it starts
        where.pop(name, None)
    return where


def whole_json_values(dep: Deployment) -> frozenset[str]:
    """Placeholders that are a whole string value of a config file (``"device_name": "$X"``): their
    documented empty value (``""``: Mooncake picks the NICs) is valid, so they must be set but may be empty."""
    out: set[str] = set()
    for p in dep.processes:
        for f in p.files:
            out.update(n for n in re.findall(r'"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"', f.content) if is_placeholder(n))
    return frozenset(out)


def header(dep: Deployment, target: str, opts: ExportOptions, to_set: Mapping[str, list[str]],
           extra: Iterable[str] = (), short: bool = False) -> str:
    """The provenance comment every artifact starts with (``short``: without the notes and settings)."""
    lines = [f"Generated by vllm-recipes {__version__} (export --to {target}) from the same plan as "
             "`vllm-recipes command`.",
             f"Recipe: {dep.hf_id}" + (f" (model {dep.model_id})" if dep.model_id != dep.hf_id else ""),
             f"Selection: {opts.selection_label}"]
    if opts.page_url:
        lines.append(f"Page: {opts.page_url}")
    if not short:
        lines += list(extra)
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


def required(name: str, empty_ok: Collection[str], message: str) -> str:
    """``${NAME:?message}``: a shell (or Compose) stops with ``message`` when ``NAME`` is unset or empty;
    ``${NAME?message}`` for a setting whose empty value is valid (:func:`whole_json_values`)."""
    return f"${{{name}{'?' if name in empty_ok else ':?'}{message}}}"


def shell_command(tokens: Iterable[str | RankTerm], word: Callable[[str], str], rank_var: str,
                  indent: str = "  ") -> str:
    """Shell words of an argv, a flag and its value per line; rank terms as arithmetic on ``rank_var``."""
    words = [(f'"$(({rank_var} * {t.step}))"', False) if isinstance(t, RankTerm) else (word(t), t.startswith("-"))
             for t in tokens]
    lines: list[str] = []
    i = 0
    while i < len(words):
        w, is_flag = words[i]
        if is_flag and i + 1 < len(words) and not words[i + 1][1]:
            lines.append(f"{w} {words[i + 1][0]}")
            i += 2
        else:
            lines.append(w)
            i += 1
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
