"""Build the shipped vLLM command-line tables from the sources of several releases.

Dev-only. ``VERSIONS_DIR`` holds one directory per release (``0.33.0/vllm/...``);
the newest release's full table goes to ``OUT/latest.json`` and the history of
every release to ``OUT/history.json``::

    python tools/build_vllm_tables.py VERSIONS_DIR src/vllm_recipes/lint/vllm_data

History format (release indices refer to ``releases``; a range is ``[first, last]``):

- ``names``: every option string (primary, short aliases, ``--no-x``) -> ranges;
- ``aliases``: every non-primary option string -> its primary option;
- ``flags``: primary option -> ``[[release index, entry], ...]``, a new entry
  only when the flag's behaviour (kind, type, arity, choices, config, deprecation) changed,
  ``null`` from the release on which it is no longer registered as a primary option;
- ``keys``: JSON flag -> dotted key path -> ranges (nested config classes included);
- ``env``: env var -> ranges; ``registries``: registry -> name -> ranges.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_cli_extract import extract


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))


def key_paths(configs: dict[str, Any], cls: str, prefix: str = "", depth: int = 0) -> list[str]:
    out: list[str] = []
    spec = configs.get(cls)
    if spec is None or depth > 4:
        return out
    for name, f in spec["fields"].items():
        path = f"{prefix}{name}"
        out.append(path)
        if f.get("config"):
            out.extend(key_paths(configs, f["config"], path + ".", depth + 1))
    return out


def _add(ranges: dict[str, list[list[int]]], name: str, i: int) -> None:
    rs = ranges.setdefault(name, [])
    if rs and rs[-1][1] == i - 1:
        rs[-1][1] = i
    else:
        rs.append([i, i])


def flag_signature(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "names"}


def build(tables: list[dict[str, Any]]) -> dict[str, Any]:
    releases = [t["version"] for t in tables]
    names: dict[str, list[list[int]]] = {}
    aliases: dict[str, str] = {}
    flags: dict[str, list[list[Any]]] = {}
    keys: dict[str, dict[str, list[list[int]]]] = {}
    env: dict[str, list[list[int]]] = {}
    regs: dict[str, dict[str, list[list[int]]]] = {}
    for i, t in enumerate(tables):
        for primary, entry in t["flags"].items():
            for n in [primary, *entry.get("names", [])]:
                _add(names, n, i)
            for n in entry.get("names", []):
                aliases[n] = primary
            sig = flag_signature(entry)
            hist = flags.setdefault(primary, [])
            if not hist or hist[-1][1] != sig:
                hist.append([i, sig])
            if entry.get("config"):
                fk = keys.setdefault(primary, {})
                for p in key_paths(t["configs"], entry["config"]):
                    _add(fk, p, i)
        for primary, hist in flags.items():
            if primary not in t["flags"] and hist[-1][1] is not None:
                hist.append([i, None])  # no longer registered as a primary option
        for e in t["env"]:
            _add(env, e, i)
        for reg, members in t["registries"].items():
            for m in members:
                _add(regs.setdefault(reg, {}), m, i)
    return {"releases": releases, "names": dict(sorted(names.items())),
            "aliases": dict(sorted(aliases.items())), "flags": dict(sorted(flags.items())),
            "keys": {k: dict(sorted(v.items())) for k, v in sorted(keys.items())},
            "env": dict(sorted(env.items())),
            "registries": {k: dict(sorted(v.items())) for k, v in sorted(regs.items())}}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src, out = Path(argv[0]), Path(argv[1])
    dirs = sorted((d for d in src.iterdir() if (d / "vllm").is_dir()), key=lambda d: version_key(d.name))
    tables = []
    for d in dirs:
        t = extract(d)
        t["version"] = t["version"] or d.name
        print(f"{t['version']}: {len(t['flags'])} flags, {len(t['configs'])} config classes, "
              f"{len(t['env'])} env vars", file=sys.stderr)
        tables.append(t)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.json").write_text(json.dumps(tables[-1], separators=(",", ":"), sort_keys=False) + "\n")
    (out / "history.json").write_text(json.dumps(build(tables), separators=(",", ":")) + "\n")
    for f in ("latest.json", "history.json"):
        print(f"{out / f}: {(out / f).stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
