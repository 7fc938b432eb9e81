"""One-off check: the static extraction of a release against vLLM's real ``vllm serve`` parser.

Dev-only, not in CI. Run it with the Python of a throwaway venv that has the
release installed (CPU torch is enough; ``VLLM_TARGET_DEVICE=cpu`` lets vLLM
pick its CPU platform on a machine without GPUs)::

    VLLM_TARGET_DEVICE=cpu /tmp/venv/bin/python tools/check_vllm_extraction.py [SRC_DIR]

``SRC_DIR`` defaults to the installed package's parent directory, so the
static extractor reads exactly the sources the real parser was built from.
Every option string, switch/value/JSON kind, arity (``nargs``), choice list and
value type is compared; differences are printed and the exit code is the count
of flags that differ (capped at 100).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_cli_extract import extract


def _type_of(fn: Any, depth: int = 0) -> str:
    """The table's type name for an argparse ``type`` callable (unwrapping vLLM's closures)."""
    if fn is None:
        return "str"
    if fn in (int, float, str):
        return fn.__name__
    name = getattr(fn, "__name__", "")
    if name in {"human_readable_int"}:
        return "human_int"
    if name in {"human_readable_int_or_auto"}:
        return "human_int_or_auto"
    if name in {"parse_dataclass"}:
        return "json"
    if name == "loads":
        return "json"
    if name == "union_dict_and_str":
        return "json_or_str"
    if name == "<lambda>":
        return "str"
    if name == "parse_reasoning_parser":
        return "str"
    if depth < 3 and getattr(fn, "__closure__", None):
        for cell in fn.__closure__:
            inner = cell.cell_contents
            if callable(inner):
                return _type_of(inner, depth + 1)
    return name or "str"


def real_table() -> dict[str, dict[str, Any]]:
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    out: dict[str, dict[str, Any]] = {}
    for a in parser._actions:
        opts = [o for o in a.option_strings if o.startswith("-")]
        if not opts or isinstance(a, argparse._HelpAction):
            continue
        primary = next((o for o in opts if o.startswith("--")), opts[0])
        entry: dict[str, Any] = {"names": sorted(set(parser._option_string_actions) & set(_all_names(parser, a)))}
        cls = type(a).__name__
        if isinstance(a, argparse.BooleanOptionalAction) or a.nargs == 0:
            entry["kind"] = "switch"
        else:
            t = _type_of(a.type)
            entry["kind"] = "json" if t == "json" else "value"
            if entry["kind"] == "value":
                entry["type"] = t
            if a.nargs is not None:
                entry["nargs"] = a.nargs
            if a.choices is not None:
                entry["choices"] = sorted(str(c) for c in a.choices if c is not None)
        entry["action"] = cls
        out[primary] = entry
    return out


def _all_names(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    return [k for k, v in parser._option_string_actions.items() if v is action]


def static_table(src: Path) -> dict[str, dict[str, Any]]:
    t = extract(src)
    out = {}
    for primary, e in t["flags"].items():
        entry = dict(e)
        entry["names"] = sorted({primary, *e.get("names", [])})
        if entry.get("choices"):
            entry["choices"] = sorted(str(c) for c in entry["choices"] if c is not None)
        out[primary] = entry
    return out


def compare(real: dict[str, dict[str, Any]], static: dict[str, dict[str, Any]]) -> list[str]:
    diffs: list[str] = []
    for flag in sorted(set(real) | set(static)):
        r, s = real.get(flag), static.get(flag)
        if r is None:
            diffs.append(f"{flag}: only in the static table")
            continue
        if s is None:
            diffs.append(f"{flag}: only in the real parser ({r['action']})")
            continue
        for key in ("names", "kind", "type", "nargs", "choices"):
            rv, sv = r.get(key), s.get(key)
            if key == "type" and r["kind"] != "value":
                continue
            if rv != sv:
                diffs.append(f"{flag}: {key} real={rv!r} static={sv!r}")
    return diffs


def main(argv: list[str]) -> int:
    import vllm

    src = Path(argv[0]) if argv else Path(vllm.__file__).resolve().parent.parent
    real = real_table()
    static = static_table(src)
    diffs = compare(real, static)
    summary = {"vllm": getattr(vllm, "__version__", "?"), "real_flags": len(real), "static_flags": len(static),
               "option_strings_real": sum(len(e["names"]) for e in real.values()),
               "differences": len(diffs)}
    print(json.dumps(summary))
    for d in diffs:
        print(d)
    return min(len({d.split(":")[0] for d in diffs}), 100)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
