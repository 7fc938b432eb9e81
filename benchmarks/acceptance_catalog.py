"""Acceptance run over a whole catalog: every command on the default selection of every recipe.

Runs ``command``, ``explain``, ``export --to k8s|compose|slurm|vllm-config``,
``fit``, ``validate FILE`` and ``show`` for each recipe of a catalog, as the
CLI does (in-process through click, one load of the catalog per invocation),
and reports, per command, how many succeeded, how many were refused and why
(the first error line, with ids and numbers folded so that equal reasons group),
and any traceback. Usage::

    python benchmarks/acceptance_catalog.py --recipes-dir PATH/TO/RECIPES [--only export-k8s] [--json]

Exit 1 when a command crashed (a traceback) for some recipe. ``fit`` runs with
``HF_HUB_OFFLINE=1`` (the local Hugging Face cache only). Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from collections import Counter, defaultdict
from typing import Any

from click.testing import CliRunner

from vllm_recipes.catalog import load_catalog
from vllm_recipes.cli.main import cli

#: fit's exit codes that are answers, not refusals (0: starts)
FIT_VERDICTS = {0: "starts", 1: "does not start", 3: "unknown"}

COMMANDS: dict[str, list[str]] = {
    "command": ["command"],
    "explain": ["explain"],
    "export-k8s": ["export", "--to", "k8s"],
    "export-compose": ["export", "--to", "compose"],
    "export-slurm": ["export", "--to", "slurm"],
    "export-vllm-config": ["export", "--to", "vllm-config"],
    "fit": ["fit"],
    "validate": ["validate"],
    "show": ["show"],
}


def reason_of(output: str) -> str:
    """The first error line, with quoted values, ids, paths and numbers folded (equal reasons group)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    line = next((ln for ln in lines if ln.startswith(("Error:", "error:"))), None) \
        or next((ln for ln in lines if ": error:" in ln), None) or (lines[-1] if lines else "(no output)")
    line = re.sub(r"^\S+\.ya?ml:\d+:\d+: ", "FILE: ", line)
    line = re.sub(r"'[^']*'", "'…'", line)
    line = re.sub(r"\b[\w.-]+/[\w.-]+\b", "ID", line)
    line = re.sub(r"\d+(\.\d+)?", "N", line)
    return line[:200]


def run(sources: list[str], only: list[str] | None) -> dict[str, Any]:
    catalog = load_catalog(sources)
    where = [a for s in sources for a in ("--recipes-dir", s)]
    runner = CliRunner()
    results: dict[str, dict[str, Any]] = {}
    for name, argv in COMMANDS.items():
        if only and name not in only:
            continue
        ok, refused, crashed, verdicts = 0, Counter(), Counter(), Counter()
        examples: dict[str, list[str]] = defaultdict(list)
        started = time.perf_counter()
        for recipe in catalog.recipes:
            if name == "validate":
                target = str(catalog.root / recipe.rel_path)
                args = ["validate", *where, target]
            else:
                args = [*argv, recipe.hf_id, *where]
                if name.startswith("export"):
                    args += ["--output", "-"]
            got = runner.invoke(cli, args)
            tag = f"{recipe.hf_id}{' (omni)' if recipe.is_omni else ''}"
            if got.exception is not None and not isinstance(got.exception, SystemExit):
                kind = f"TRACEBACK {type(got.exception).__name__}: {got.exception}"[:200]
                crashed[kind] += 1
                examples[kind].append(tag)
                if len(examples[kind]) == 1:
                    traceback.print_exception(got.exception, file=sys.stderr)
            elif got.exit_code == 0 or (name == "validate" and got.exit_code == 1) or \
                    (name == "fit" and got.exit_code in FIT_VERDICTS):
                ok += 1  # (validate: exit 1 is its answer, findings reported; 2 would be a refusal)
                if name == "fit":
                    verdicts[FIT_VERDICTS.get(got.exit_code, "starts")] += 1
            else:
                why = reason_of(got.stderr or got.output)
                refused[why] += 1
                examples[why].append(tag)
        print(f"{name}: {ok} ok, {sum(refused.values())} refused, {sum(crashed.values())} crashed "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
        results[name] = {
            "ok": ok, "refused": sum(refused.values()), "crashed": sum(crashed.values()),
            "seconds": round(time.perf_counter() - started, 1), "verdicts": dict(verdicts),
            "reasons": [{"reason": r, "count": n, "examples": examples[r][:4]} for r, n in refused.most_common()],
            "crashes": [{"reason": r, "count": n, "examples": examples[r][:4]} for r, n in crashed.most_common()],
        }
    omni = sum(r.is_omni for r in catalog.recipes)
    return {"sources": sources, "recipes": len(catalog.recipes), "omni": omni, "commands": results}


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # (fit: what is in the local Hugging Face cache, no network)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipes-dir", required=True, action="append",
                    help="a recipe source (repeatable, as for the CLI)")
    ap.add_argument("--only", action="append", choices=sorted(COMMANDS), help="run only these commands")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    source = " ".join(args.recipes_dir)
    report = run(args.recipes_dir, args.only)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{report['recipes']} recipes ({report['omni']} omni) from {source}")
        for name, r in report["commands"].items():
            total = r["ok"] + r["refused"] + r["crashed"]
            verdicts = f" [{', '.join(f'{v}: {n}' for v, n in r['verdicts'].items())}]" if r["verdicts"] else ""
            print(f"\n{name}: {r['ok']}/{total} ok{verdicts}, {r['refused']} refused, {r['crashed']} crashed "
                  f"({r['seconds']} s)")
            for item in (*r["crashes"], *r["reasons"]):
                print(f"  {item['count']:4d}  {item['reason']}")
                print(f"        e.g. {', '.join(item['examples'])}")
    sys.exit(1 if any(r["crashed"] for r in report["commands"].values()) else 0)


if __name__ == "__main__":
    main()
