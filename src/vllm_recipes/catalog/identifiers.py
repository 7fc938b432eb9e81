"""The identifier rule: every id that can become a path or URL segment is a plain name.

Ids from recipe directories are joined into output paths and URLs, so a **name** is 1-96
characters of ``[A-Za-z0-9._-]`` starting with a letter, digit or ``_``, and a **model id** is
``org/name``; anything else is a validation error (docs/decisions-hardening.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from vllm_recipes.jsvalues import as_list, as_map

from .diagnostics import Finding, finding_at
from .yamlsource import KeyPath, YamlDocument, iter_paths

#: Longest name (Hugging Face caps repository names at 96 characters).
MAX_NAME = 96
NAME_PATTERN = rf"[A-Za-z0-9_][A-Za-z0-9._-]{{0,{MAX_NAME - 1}}}"
_NAME = re.compile(NAME_PATTERN)
_MODEL_ID = re.compile(rf"{NAME_PATTERN}/{NAME_PATTERN}")

RULE_NAME = f"1-{MAX_NAME} characters of A-Z a-z 0-9 . _ - starting with a letter, digit or _"
RULE_MODEL_ID = f"org/name, each part {RULE_NAME}"

#: What ``vllm serve`` may serve: a Hub id (``org/name``), a bare name, or an absolute local path
#: (``/models/x``; docker bind-mounts it), every part a name.
_MODEL_REF = re.compile(rf"{NAME_PATTERN}(?:/{NAME_PATTERN})?|(?:/{NAME_PATTERN}){{1,16}}")
RULE_MODEL_REF = "org/name, name or /absolute/path, each part " + RULE_NAME
#: An environment variable name (POSIX, and what ``docker run -e`` and every shell accept).
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}")
RULE_ENV_KEY = "a name of A-Z a-z 0-9 _ not starting with a digit"
#: A container image reference (OCI distribution grammar): [host[:port]/]path[:tag][@digest].
_IMAGE = re.compile(
    r"(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]{1,5})?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,256})?")
RULE_IMAGE = "an image reference [registry[:port]/]name[:tag][@digest] (OCI grammar, lower-case name)"
#: Keys that make a ``docker_image`` map brand-keyed (synthesis.md §9.1).
BRAND_KEYS = ("nvidia", "amd", "tpu", "intel")
#: Keys that make a ``docker_image`` map a CUDA map (synthesis.md §9.1).
CUDA_KEYS = ("cu129", "cu130")
#: A serve binary: a command name or path, then subcommand/option words, no shell syntax.
_BINARY = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./:=@,+%-]*(?: [A-Za-z0-9_./:=@,+%-]+){0,7}")
RULE_BINARY = "a command and up to 7 words of A-Z a-z 0-9 _ . / = : @ , + % - separated by single spaces"


def is_name(value: object) -> bool:
    """Whether ``value`` is a safe path/URL segment name."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def is_model_id(value: object) -> bool:
    """Whether ``value`` is a safe ``org/name`` model id."""
    return isinstance(value, str) and _MODEL_ID.fullmatch(value) is not None


def is_model_ref(value: object) -> bool:
    """Whether ``value`` may be written as the model of ``vllm serve`` (:data:`RULE_MODEL_REF`)."""
    return isinstance(value, str) and _MODEL_REF.fullmatch(value) is not None


def is_image(value: object) -> bool:
    """Whether ``value`` is a container image reference (at most 512 characters)."""
    return isinstance(value, str) and len(value) <= 512 and _IMAGE.fullmatch(value) is not None


def _shown(value: str) -> str:
    text = value.encode("unicode_escape").decode("ascii")
    return text if len(text) <= 60 else text[:57] + "..."


def name_problem(value: str, what: str) -> str:
    return f"{what} '{_shown(value)}' is not a valid identifier ({RULE_NAME})"


def model_id_problem(value: str, what: str) -> str:
    return f"{what} '{_shown(value)}' is not a valid model id ({RULE_MODEL_ID})"


def _recipe_names(data: Mapping[str, Any]) -> Iterator[tuple[KeyPath, Any, str]]:
    """``(key path, value, what)`` of every name a recipe defines or refers to."""
    for i, s in enumerate(as_list(data.get("compatible_strategies"))):
        yield ("compatible_strategies", i), s, "strategy"
    yield ("default_strategy",), data.get("default_strategy"), "strategy"
    for key in ("strategy_overrides", "strategy_hardware"):
        for s in as_map(data.get(key)):
            yield (key, s), s, "strategy"
    for fk, feat in as_map(data.get("features")).items():
        yield ("features", fk), fk, "feature"
        for mk in as_map(as_map(feat).get("modes")):
            yield ("features", fk, "modes", mk), mk, "feature mode"
        for i, s in enumerate(as_list(as_map(feat).get("strategies"))):
            yield ("features", fk, "strategies", i), s, "strategy"
    for i, fk in enumerate(as_list(data.get("opt_in_features"))):
        yield ("opt_in_features", i), fk, "feature"
    for vk in as_map(data.get("variants")):
        yield ("variants", vk), vk, "variant key"


def _name_findings(doc: YamlDocument, names: Iterable[tuple[KeyPath, Any, str]]) -> list[Finding]:
    """An error for each of ``names`` that is a string but not a safe name."""
    return [finding_at(doc, path, "error", name_problem(value, what), "bad-id")
            for path, value, what in names if isinstance(value, str) and not is_name(value)]


#: Mappings whose keys are environment variable names, wherever they appear (recipe, strategy,
#: KV-store and taxonomy files: base_env, extra_env, strategy/role/override env, frontend env).
ENV_MAPS = frozenset({"base_env", "extra_env", "env"})


def value_identifier_findings(doc: YamlDocument) -> list[Finding]:
    """Errors for every value that becomes a name in a command, in any catalog file: env keys at every
    level, model ids, images, the omni serve binary, SMG parser names (docs/decisions-hardening.md H7)."""
    out: list[Finding] = []
    for path, value in iter_paths(doc.data):
        last = path[-1] if path else None
        if last in ENV_MAPS and isinstance(value, dict):
            for k in value:
                if not (isinstance(k, str) and _ENV_KEY.fullmatch(k)):
                    shown = _shown(k) if isinstance(k, str) else repr(k)
                    message = f"environment variable name '{shown}' is not valid ({RULE_ENV_KEY})"
                    out.append(finding_at(doc, (*path, k), "error", message, "bad-id"))
        elif isinstance(value, str) and (problem := _string_problem(path, last, value)) is not None:
            out.append(finding_at(doc, path, "error", problem, "bad-id"))
    return out


def _string_problem(path: KeyPath, last: Any, value: str) -> str | None:
    """What is wrong with a string that becomes a model id, the omni binary, a parser name or an image."""
    if last == "model_id" and value and not is_model_ref(value):
        return model_id_problem(value, "model_id").replace(RULE_MODEL_ID, RULE_MODEL_REF)
    if last == "serve_binary" and not _BINARY.fullmatch(value):
        return f"serve_binary '{_shown(value)}' is not a command ({RULE_BINARY})"
    if last in ("reasoning_parser", "tool_call_parser") and "parser_flags" not in path and not is_name(value):
        return name_problem(value, "parser name")
    if "docker_image" in path and value and not is_image(value):
        return f"docker image '{_shown(value)}' is not valid ({RULE_IMAGE})"
    return None


def hf_id_findings(doc: YamlDocument, hf_id: str) -> list[Finding]:
    """An error when the model id a recipe's path gives (``models/<org>/<repo>.yaml``) is not safe."""
    if is_model_id(hf_id):
        return []
    return [finding_at(doc, (), "error", model_id_problem(hf_id, "the recipe's path gives model id")
                       + "; rename the file or its directory", "bad-id")]


def recipe_identifier_findings(doc: YamlDocument) -> list[Finding]:
    """Errors for every id inside a recipe that is not a safe name."""
    data = as_map(doc.data)
    out = _name_findings(doc, _recipe_names(data))
    for vk, var in as_map(data.get("variants")).items():
        mid = as_map(var).get("model_id")
        if isinstance(mid, str) and "/" in mid and not is_model_id(mid):
            out.append(finding_at(doc, ("variants", vk, "model_id"), "error",
                                  model_id_problem(mid, "model_id"), "bad-id"))
    seen = {f.key_path for f in out}
    return out + [f for f in value_identifier_findings(doc) if f.key_path not in seen]


def _data_file_names(doc: YamlDocument, kind: str) -> Iterator[tuple[KeyPath, Any, str]]:
    """``(key path, value, what)`` of every name a taxonomy, strategy, KV-store or platforms file defines."""
    data = as_map(doc.data)
    if kind in ("strategy", "kv_store"):
        what = "strategy name" if kind == "strategy" else "KV-store deployment name"
        name = data.get("name")
        if isinstance(name, str):
            yield ("name",), name, what
        else:  # (named by its file, as the loader names it)
            yield (), Path(doc.file).stem, f"{what} (from the file name)"
    elif kind == "taxonomy":
        for hw in as_map(data.get("hardware_profiles")):
            yield ("hardware_profiles", hw), hw, "hardware profile id"
        for key in ("kv_offload", "strategies", "frontends"):
            for k in as_map(data.get(key)):
                yield (key, k), k, f"{key} id"
    elif kind == "platforms":
        for i, p in enumerate(as_list(data.get("platforms"))):
            yield ("platforms", i, "id"), as_map(p).get("id"), "platform id"


def data_file_identifier_findings(doc: YamlDocument, kind: str) -> list[Finding]:
    """Errors for ids defined by taxonomy, strategy, KV-store and platforms files."""
    return _name_findings(doc, _data_file_names(doc, kind)) + value_identifier_findings(doc)
