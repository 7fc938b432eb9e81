"""Release-aware lint of one ``vllm serve`` process: its argument tokens and env against a vLLM release.

Pure: tokens, env and a :class:`LintTarget` in, :class:`VllmFinding` s out; no
catalog, no I/O (the shipped tables are read once by :mod:`.vllm_tables`).
Callers map a finding's ``token_index`` / ``env_key`` back to the recipe line
that produced it (``vllm_plan.py``).

Codes and severities are stable: the table is in ``docs/decisions-vllm-lint.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from .vllm_tables import FlagSpec, Ranges, ReleaseView, Tables, load_tables, parse_version

LintSeverity = Literal["error", "warning", "info"]

#: flags whose values name something in a registry that a plugin may extend
REGISTRY_FLAGS = {
    "--tool-call-parser": "tool_call_parsers",
    "--reasoning-parser": "reasoning_parsers",
    "--tokenizer-mode": "tokenizer_modes",
    "--attention-backend": "attention_backends",
}
#: JSON keys whose values name registry entries: (flag, key) -> registry
REGISTRY_KEYS = {("--kv-transfer-config", "kv_connector"): "kv_connectors"}
#: image repositories that ship stock vLLM (tags are vLLM release versions)
STOCK_REPOS = frozenset({"vllm/vllm-openai", "vllm/vllm-openai-rocm", "vllm/vllm-tpu", "vllm/vllm-openai-cpu",
                         "vllm/vllm-openai-xpu"})
_HUMAN_INT = re.compile(r"^\d+(\.\d+)?[kKmMgGtT]$")
_JSON_HUMAN = re.compile(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b")
_NEG_NUMBER = re.compile(r"^-\d+(\.\d+)?$")
_VAR = re.compile(r"\$(\{?[A-Za-z_][A-Za-z0-9_]*\}?|\()")


class VllmFinding(NamedTuple):
    """One lint result. ``token_index`` points into the linted tokens, ``env_key`` at an env entry."""

    code: str
    severity: LintSeverity
    subject: str
    message: str
    token_index: int | None = None
    env_key: str | None = None


@dataclass(frozen=True, eq=False)
class LintTarget:
    """The release a rendering is checked against, and why (equal by identity: one per distinct
    :func:`choose_target` call, and the lint's bounded caches look it up by hash thousands of times)."""

    view: ReleaseView
    #: the release the recipe's ``min_vllm_version`` maps to (checked for "added later") or None
    min_view: ReleaseView | None = None
    min_declared: str | None = None
    image: str | None = None
    stock: bool = True
    reason: str = ""
    #: option strings and env names (``VLLM_ASCEND_*`` prefixes) the recipe declares a plugin adds
    declared_flags: frozenset[str] = field(default_factory=frozenset)
    declared_env: tuple[str, ...] = ()

    @property
    def release(self) -> str:
        return self.view.release

    def badge(self) -> str:
        """``vLLM 0.33`` (major.minor of the checked release)."""
        v = parse_version(self.release)
        return f"vLLM {v[0]}.{v[1]}" if v else f"vLLM {self.release}"


def split_image(image: str) -> tuple[str, str]:
    """``repo:tag`` -> (repo without ``docker.io/``, tag or ``latest``)."""
    name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "latest")
    name = name.removeprefix("docker.io/").removeprefix("index.docker.io/")
    return name, tag or "latest"


def choose_target(image: str | None, min_version: str | None = None, *, forced: str | None = None,
                  declared_flags: Iterable[str] = (), declared_env: Iterable[str] = (),
                  tables: Tables | None = None) -> tuple[LintTarget, list[VllmFinding]]:
    """Which release a rendering runs: a pinned stock image tag -> that release; ``latest``,
    ``nightly``, other tags and pip -> the newest table, plus ``min_version`` for "added later";
    ``forced`` (``--vllm``) overrides both. Returns the target and its info findings."""
    t = tables or load_tables()
    notes: list[VllmFinding] = []
    stock = True
    reason = "pip / no pinned image: newest release"
    idx = len(t.releases) - 1
    check_min = True
    if image:
        repo, tag = split_image(image)
        stock = repo in STOCK_REPOS
        if not stock:
            reason = f"image {image} is not stock vLLM: checked against the newest release"
            notes.append(VllmFinding("vllm-plugin", "info", image,
                                     f"{image} is not a stock vLLM image; flags, keys and env it adds are "
                                     "reported as info unless the recipe declares them (model.vllm_extensions)"))
        elif tag in {"latest"} or tag.startswith("nightly"):
            reason = f"{tag} image: newest release"
        elif parse_version(tag) is not None:
            pinned = t.index_of(tag)
            if pinned is None:
                idx = t.nearest_index(tag)
                notes.append(VllmFinding("vllm-release", "info", image,
                                         f"{image}: no table for {tag}; checked against vLLM {t.releases[idx]}"))
            else:
                idx = pinned
            reason = f"pinned image tag {tag}"
            check_min = False
        else:
            reason = f"image tag {tag} is not a release: newest release"
            notes.append(VllmFinding("vllm-release", "info", image,
                                     f"{image}: tag {tag!r} is not a vLLM release; checked against the newest "
                                     f"table (vLLM {t.newest})"))
    if forced:
        f_idx = t.index_of(forced)
        if f_idx is None:
            raise ValueError(f"no table for vLLM {forced}; known releases: {', '.join(t.releases)}")
        idx, reason, check_min = f_idx, f"--vllm {forced}", False
    min_view = None
    if check_min and min_version:
        m = t.index_of(str(min_version))
        if m is None and parse_version(str(min_version)) is not None:
            m = t.nearest_index(str(min_version))
        if m is not None and m < idx:
            min_view = t.view(m)
    target = LintTarget(t.view(idx), min_view, str(min_version) if min_version else None, image, stock, reason,
                        frozenset(declared_flags), tuple(declared_env))
    return target, notes


# --------------------------------------------------------------------------------------
# the rules
# --------------------------------------------------------------------------------------


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    return _close(word, candidates if isinstance(candidates, frozenset) else frozenset(candidates))


@lru_cache(maxsize=4096)
def _close(word: str, candidates: frozenset[str]) -> str:
    # imported here: only an unknown name is looked up, and nothing else on ``command``'s path imports difflib
    from vllm_recipes.catalog.suggest import likely_meant

    close = likely_meant(word, candidates)
    return f"; did you mean {' or '.join(close)}?" if close else ""


@lru_cache(maxsize=65536)
def _is_value(tok: str) -> bool:
    if not tok.startswith("-"):
        return True
    return tok == "-" or (tok[1:2].isdigit() and _NEG_NUMBER.match(tok) is not None)


class _Run:
    """State of one lint run (tokens of one process against one target)."""

    def __init__(self, target: LintTarget) -> None:
        self.t = target
        self.view = target.view
        self.tables = target.view.tables
        self.out: list[VllmFinding] = []

    def add(self, code: str, severity: LintSeverity, subject: str, message: str, token: int | None = None,
            env_key: str | None = None, plugin_may_add: bool = False) -> None:
        if plugin_may_add and not self.t.stock:
            severity = "info"
            code = "vllm-plugin"
            message += f" (unknown to stock vLLM; {self.t.image} may add it)"
        self.out.append(VllmFinding(code, severity, subject, message, token, env_key))

    def where(self) -> str:
        return f"vLLM {self.view.release}"

    # ---- argv
    def tokens(self, toks: tuple[str, ...]) -> None:
        """Lint flag by flag (each flag with the values that follow it: :func:`_flag_findings`)."""
        i, n = 0, len(toks)
        while i < n:
            tok = toks[i]
            if _is_value(tok):
                self.add("vllm-arity", "error", tok, f"stray value {tok!r}: no flag before it takes a value", i)
                i += 1
                continue
            end = i + 1 + self._count_values(toks, i)
            for f in _flag_findings(toks[i:end], self.t):
                self.out.append(f if f.token_index is None else f._replace(token_index=f.token_index + i))
            i = end

    def flag(self, seg: Sequence[str]) -> None:
        """Lint one flag (``seg[0]``) and the values after it (``seg[1:]``)."""
        tok = seg[0]
        name, joined = _split_joined(tok)
        if joined is not None:
            # ``--x=1`` (and ``--json-arg.key=value``) is argparse syntax vLLM accepts: it runs, so a warning
            # (still one item to the dedupe); ``'--x 1'`` as one item is an option vLLM does not know: an error
            self.add("vllm-joined-value", "warning" if "=" in tok and tok.startswith("-") else "error", name,
                     f"{tok!r} puts the flag and its value in one argv item; write {name!r} and the value "
                     "as two items (the recipe engine dedupes by flag token, so a later value cannot shadow it)",
                     0)
        head, dot, keypath = name.partition(".")
        head = self._spelling(head, name)
        spec = self._known_spec(head)
        if spec is None:
            return
        if dot:
            self._dotted(spec, head, keypath, seg, joined)
            return
        values = [joined] if joined is not None else list(seg[1:])
        used = self._arity(spec, head, head != spec.primary and head.startswith("--no-"), values,
                           joined is not None)
        for k, v in enumerate(values[:used]):
            self._check_value(spec, head, v, 0 if joined is not None else 1 + k)
        for j in range(1 + (0 if joined is not None else used), len(seg)):
            self.add("vllm-arity", "error", head, f"{head} takes {self._takes(spec)}; {seg[j]!r} is left over "
                     "(vLLM would refuse it as an unrecognized argument)", j)

    def _spelling(self, head: str, name: str) -> str:
        """``--max_model_len`` is accepted as ``--max-model-len``: reported, and linted as that."""
        if head.startswith("--") and "_" in head:
            fixed = "--" + head[2:].replace("_", "-")
            if fixed in self.view.options or fixed in self.t.declared_flags:
                self.add("vllm-underscore", "info", name, f"{head} is accepted as {fixed}; spell it {fixed}", 0)
                return fixed
        return head

    def _known_spec(self, head: str) -> FlagSpec | None:
        """The release's spec of ``head`` after the unknown / min-version / deprecated checks (``None``: a
        flag the recipe declares, one vLLM does not know, or one without a spec: nothing more to check)."""
        if head in self.t.declared_flags:
            return None
        primary = self.view.options.get(head)
        if primary is None:
            self._unknown_flag(head)
            return None
        spec = self.view.specs.get(primary)
        mv = self.t.min_view
        if mv is not None and head not in mv.options:
            self._newer_than_min(mv, head, f"{head} is not in", self.tables.flag_ranges(head), 0)
        if spec is not None and spec.deprecated:
            self.add("vllm-deprecated-flag", "warning", head, f"{head} is deprecated in {self.where()}: "
                     f"{spec.deprecated}", 0)
        return spec

    @staticmethod
    def _count_values(toks: Sequence[str], i: int) -> int:
        j = i + 1
        while j < len(toks) and _is_value(toks[j]):
            j += 1
        return j - i - 1

    @staticmethod
    def _takes(spec: FlagSpec) -> str:
        if spec.kind == "switch":
            return "no value"
        if isinstance(spec.nargs, int):
            return f"exactly {spec.nargs} values"
        return {"+": "one or more values", "?": "at most one value"}.get(spec.nargs or "", "one value")

    def _arity(self, spec: FlagSpec, head: str, negated: bool, values: list[str], joined: bool) -> int:
        """How many of ``values`` the flag consumes; reports a missing value."""
        if spec.kind == "switch":
            if joined:
                self.add("vllm-arity", "error", head, f"{head} is a switch and takes no value", 0)
            return 0
        if negated:
            return 0
        if spec.nargs == "?":
            return min(1, len(values))
        if spec.nargs == "+":
            if not values:
                self.add("vllm-arity", "error", head, f"{head} expects one or more values", 0)
            return len(values)
        need = spec.nargs if isinstance(spec.nargs, int) else 1
        if len(values) < need:
            self.add("vllm-arity", "error", head, f"{head} expects {self._takes(spec)}, got {len(values)}", 0)
        return min(need, len(values))

    def _unknown_flag(self, head: str) -> None:
        ranges = self.tables.flag_ranges(head)
        if ranges:
            why = f"{head} is not an option of {self.where()}: {self.tables.window(ranges, self.view.idx)}"
        else:
            why = f"{head} is not an option of {self.where()} (nor of any release since {self.tables.releases[0]})"
        self.add("vllm-unknown-flag", "error", head, why + did_you_mean(head, self.view.option_names), 0,
                 plugin_may_add=True)

    def _newer_than_min(self, mv: ReleaseView, subject: str, what: str, ranges: Ranges | None,
                        j: int | None = None, env_key: str | None = None) -> None:
        """``what`` ("--x is not in") is missing from ``mv``, the recipe's ``min_vllm_version``."""
        self.add("vllm-min-version", "warning", subject, f"{what} vLLM {mv.release}: "
                 f"{self.tables.window(ranges, mv.idx)}, while the recipe declares min_vllm_version "
                 f"{self.t.min_declared}", j, env_key)

    def _check_value(self, spec: FlagSpec, head: str, value: str, j: int) -> None:
        if _VAR.search(value):  # the shell fills it in where the command runs
            return
        if spec.kind == "json":
            self._json(spec, head, value, j)
            return
        problem = _type_problem(spec, head, value)
        if problem is not None:
            self.add("vllm-invalid-type", "error", head, problem, j)
            return
        if spec.choices is not None and not self._choice(spec, head, value, j):
            return
        registry = REGISTRY_FLAGS.get(spec.primary)
        if registry is not None:
            self._registry(registry, head, value, j)
        elif spec.known is not None and value not in {str(k) for k in spec.known}:
            self.add("vllm-unregistered-name", "warning", head, f"{value!r} is not a built-in value of {head} in "
                     f"{self.where()}" + did_you_mean(value, [str(k) for k in spec.known]), j)

    def _choice(self, spec: FlagSpec, head: str, value: str, j: int) -> bool:
        """Whether ``value`` is one of the flag's choices (reported when not)."""
        choices = spec.choices or ()
        allowed = {str(c) for c in choices if c is not None} | ({"None", ""} if None in choices else set())
        v = value.lower().replace("-", "_") if head in _CASE_FOLDED_CHOICES else value
        if v in allowed:
            return True
        self.add("vllm-invalid-choice", "error", head, f"{value!r} is not a choice of {head} in "
                 f"{self.where()} (choose from {', '.join(sorted(allowed - {'', 'None'}))})"
                 + did_you_mean(value, allowed), j, plugin_may_add=True)
        return False

    def _registry(self, registry: str, subject: str, value: str, j: int | None) -> None:
        if value in {"", "none", "None", "auto"}:
            return
        names = self.view.registries.get(registry)
        if names is None:
            return
        label = registry.replace("_", " ").rstrip("s")
        if value not in names:
            ranges = self.tables.registry_ranges(registry, value)
            why = self.tables.window(ranges, self.view.idx) if ranges else "no release registers it"
            self.add("vllm-unregistered-name", "warning", subject,
                     f"{value!r} is not a registered {label} in {self.where()} ({why}); only a plugin can provide it"
                     + did_you_mean(value, names), j, plugin_may_add=True)
            return
        mv = self.t.min_view
        if mv is not None and value not in mv.registries.get(registry, frozenset()):
            self._newer_than_min(mv, subject, f"{label} {value!r} is not in",
                                 self.tables.registry_ranges(registry, value), j)

    # ---- JSON
    def _json(self, spec: FlagSpec, head: str, value: str, j: int) -> None:
        try:
            obj = json.loads(value)
        except ValueError:
            try:
                obj = json.loads(_JSON_HUMAN.sub("0", value))
            except ValueError as exc:
                self.add("vllm-invalid-type", "error", head, f"{head} expects JSON: {exc}", j)
                return
        if spec.config and isinstance(obj, dict):
            self._keys(spec, head, spec.config, obj, "", j)
        elif spec.config and obj is not None and not isinstance(obj, dict):
            self.add("vllm-invalid-type", "error", head, f"{head} expects a JSON object ({spec.config})", j)

    def _keys(self, spec: FlagSpec, head: str, cls: str, obj: Mapping[str, Any], prefix: str, j: int) -> None:
        configs = self.tables.configs
        cfg = configs.get(cls)
        present = self.view.keys.get(spec.primary, frozenset())
        for raw_key, val in obj.items():
            key = str(raw_key).replace("-", "_") if spec.primary == "--speculative-config" else str(raw_key)
            path = prefix + key
            if path not in present:
                self._unknown_key(spec, head, cls, cfg, path, key, j)
                continue
            mv = self.t.min_view
            if mv is not None and path not in mv.keys.get(spec.primary, frozenset()):
                self._newer_than_min(mv, f"{head} {path}", f"{head} key {path!r} is not in",
                                     self.tables.key_ranges(spec.primary, path), j)
            field_spec = cfg["fields"].get(key) if cfg else None
            if field_spec is None:
                continue
            if field_spec.get("config") and isinstance(val, dict):
                self._keys(spec, head, field_spec["config"], val, path + ".", j)
            elif field_spec.get("choices") and isinstance(val, str) and self.view.is_newest \
                    and val not in field_spec["choices"]:
                self.add("vllm-invalid-choice", "error", f"{head} {path}",
                         f"{path}={val!r} is not a choice in {self.where()} (choose from "
                         f"{', '.join(str(c) for c in field_spec['choices'] if c is not None)})", j)
            reg = REGISTRY_KEYS.get((spec.primary, path))
            if reg is not None and isinstance(val, str):
                self._registry(reg, f"{head} {path}", val, j)

    def _unknown_key(self, spec: FlagSpec, head: str, cls: str, cfg: Mapping[str, Any] | None, path: str, key: str,
                     j: int) -> None:
        ranges = self.tables.key_ranges(spec.primary, path)
        why = self.tables.window(ranges, self.view.idx) if ranges else "no release has it"
        siblings = [p.rsplit(".", 1)[-1] for p in self.view.keys.get(spec.primary, ())
                    if p.rpartition(".")[0] == path.rpartition(".")[0]]
        forbid = cfg.get("forbid", True) if cfg else True
        severity: LintSeverity = "error" if forbid else "warning"
        effect = "vLLM refuses to start" if forbid else "vLLM ignores it"
        self.add("vllm-unknown-key", severity, f"{head} {path}",
                 f"{head} key {path!r} is not a field of {cls} in {self.where()} ({why}); {effect}"
                 + did_you_mean(key, siblings), j, plugin_may_add=True)

    def _dotted(self, spec: FlagSpec, head: str, keypath: str, seg: Sequence[str], joined: str | None) -> None:
        """``--x.a.b v`` (merged into the JSON of ``--x``) and ``--x.k+ v`` (append)."""
        if spec.kind != "json":
            self.add("vllm-invalid-type", "error", f"{head}.{keypath}", f"{head} is not a JSON flag; "
                     f"{head}.{keypath} is not accepted", 0)
            return
        obj: Any = joined if joined is not None else (seg[1] if len(seg) > 1 else "")
        for part in reversed(keypath.removesuffix("+").split(".")):
            obj = {part: obj}
        if spec.config:
            self._keys(spec, head, spec.config, obj, "", 0)

    # ---- env
    def env_key(self, key: str) -> None:
        """Checks of one env entry (its name only: values are the recipe's business)."""
        if not key.startswith("VLLM_") or any(key == d or (d.endswith("*") and key.startswith(d[:-1]))
                                              for d in self.t.declared_env):
            return
        if key not in self.view.env:
            ranges = self.tables.env_ranges(key)
            why = self.tables.window(ranges, self.view.idx) if ranges else "no release reads it"
            self.add("vllm-unknown-env", "warning", key, f"{key} is not read by {self.where()} ({why}); vLLM "
                     "logs it as unknown and the setting has no effect" + did_you_mean(key, self.view.env),
                     env_key=key, plugin_may_add=True)
            return
        mv = self.t.min_view
        if mv is not None and key not in mv.env:
            self._newer_than_min(mv, key, f"{key} is not read by", self.tables.env_ranges(key), env_key=key)


def lint_tokens(tokens: Sequence[str], env: Iterable[str], target: LintTarget) -> list[VllmFinding]:
    """Findings for one ``vllm serve`` process: ``tokens`` are its arguments after the model id, ``env``
    the names of its environment variables."""
    run = _Run(target)
    run.tokens(tuple(tokens))
    for key in env:
        run.env_key(key)
    return run.out


@lru_cache(maxsize=4096)
def _flag_findings(segment: tuple[str, ...], target: LintTarget) -> tuple[VllmFinding, ...]:
    """The findings of one flag and its values (``segment``), token indices from 0, remembered (bounded):
    a pure function of its arguments, and processes share most of their flags."""
    run = _Run(target)
    run.flag(segment)
    return tuple(run.out)


#: flags whose choices vLLM matches case- and dash-insensitively
_CASE_FOLDED_CHOICES = frozenset({"--moe-backend", "--linear-backend", "--sparse-indexer-topk-backend"})


def _type_problem(spec: FlagSpec, head: str, value: str) -> str | None:
    """Why ``value`` is not of the flag's type (``None``: it is, or the type is not checked)."""
    t = spec.type
    if t in {"int", "human_int", "human_int_or_auto"}:
        ok = (
            re.fullmatch(r"-?\d+", value) is not None
            or (t != "int" and _HUMAN_INT.match(value) is not None)  # 1.5k, 2M
            or (t == "human_int_or_auto" and value == "auto")
            or (value in {"None", ""} and spec.choices is None)
        )
        return None if ok else f"{head} expects {spec.describe()}, got {value!r}"
    if t == "float":
        try:
            float(value)
        except ValueError:
            return None if value == "None" else f"{head} expects a float, got {value!r}"
        return None
    if t == "json_or_str" and value.lstrip().startswith("{"):
        try:
            json.loads(value)
        except ValueError as exc:
            return f"{head}: invalid JSON ({exc})"
    return None


def _split_joined(tok: str) -> tuple[str, str | None]:
    """``(flag, value)`` of one argv item holding both (``--x=1``, ``-cc.key=1``, ``'--x 1'``); value ``None``: it does not."""
    if tok.startswith("-") and "=" in tok:  # vLLM splits any dotted ``-`` flag too
        name, _, joined = tok.partition("=")
        return name, joined
    if " " in tok.strip():
        name, _, joined = tok.strip().partition(" ")
        return name, joined
    return tok, None
