"""Compare what two source trees of vllm-recipes emit for one recipes directory.

Why: a refactor claims "outputs identical"; this proves or disproves it on a whole catalog, for the
things users paste (commands, deploy files, explain, fit, the static JSON API, recipe pages).

    python benchmarks/compare_trees.py OLD_SRC NEW_SRC RECIPES_DIR [--out DIR] [--per-recipe N]

Each tree runs in its own child process (``PYTHONPATH=<tree src>``, its own empty cache dir) that
invokes the CLI in-process through click's runner (one catalog load per process, memoised, unless
``--fresh``) and answers recipe pages with Starlette's TestClient. The selections come from OLD's
``show --json``: the default selection, the default hardware named explicitly, other hardware,
other variants, the other offered strategies (PD / multi-node) and one opt-in feature.
Prints identical/different counts per command and writes every differing pair under ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import filecmp
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

EXPORT_TARGETS = ("k8s", "compose", "slurm", "vllm-config")
DENSE_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
                "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256,
                "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}


# --- worker side (runs with one tree on sys.path) ---------------------------------------------------


def _runner_invoke(cli: Any, args: list[str]) -> dict[str, Any]:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    out: dict[str, Any] = {"exit": result.exit_code, "stdout": result.stdout}
    try:
        out["stderr"] = result.stderr
    except ValueError:  # older click mixes the streams
        out["stderr"] = ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        out["traceback"] = "".join(traceback.format_exception(result.exception))[-3000:]
    return out


def _read_tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(errors="replace")
            for p in sorted(root.rglob("*")) if p.is_file()}


def _memoise_catalog() -> None:
    """One catalog load per process (both trees alike): the CLI reloads it per invocation."""
    import vllm_recipes.catalog as catalog_pkg  # type: ignore[import-untyped]

    original = catalog_pkg.load_catalog
    memo: dict[str, Any] = {}

    def load_catalog(*args: Any, **kwargs: Any) -> Any:
        key = repr((args, sorted(kwargs.items())))
        if key not in memo:
            memo[key] = original(*args, **kwargs)
        return memo[key]

    catalog_pkg.load_catalog = load_catalog  # type: ignore[assignment]


def plan(recipes: str, per_recipe: int) -> list[dict[str, Any]]:
    """Selections per recipe from this tree's ``show --json`` (run with the OLD tree)."""
    from vllm_recipes.cli.main import cli  # type: ignore[import-untyped]

    listing = _runner_invoke(cli, ["list", "--json", "--recipes-dir", recipes])
    ids = [r["hf_id"] for r in json.loads(listing["stdout"])]
    cases: list[dict[str, Any]] = []
    for hf_id in ids:
        shown = _runner_invoke(cli, ["show", hf_id, "--json", "--recipes-dir", recipes])
        if shown["exit"] != 0:
            cases.append({"hf_id": hf_id, "name": "default", "args": []})
            continue
        cases.extend(_selections(json.loads(shown["stdout"]), per_recipe))
    return cases


STRATEGY_ORDER = ("pd_cluster", "multi_node_dep", "multi_node_tp", "multi_node_tep", "multi_node_tp_pp")


def _selections(show: dict[str, Any], per_recipe: int) -> list[dict[str, Any]]:
    """The default, the default hardware named, then up to ``per_recipe`` others taken in turn from
    each kind (hardware, variant, strategy, PD layout, install, KV offload, feature)."""
    hf_id, default_hw = show["hf_id"], show.get("default_hardware")
    hardware = show.get("hardware", [])

    def case(name: str, args: list[str]) -> dict[str, Any]:
        return {"hf_id": hf_id, "name": name, "args": args}

    out = [case("default", [])]
    if default_hw:
        out.append(case(f"hw={default_hw}(explicit default)", ["--hardware", default_hw]))
    kinds: dict[str, list[dict[str, Any]]] = {k: [] for k in ("hw", "variant", "strategy", "pd", "install", "kv", "feature", "mode")}
    for hw in [h for h in hardware if h.get("id") != default_hw and h.get("known", True)][:2]:
        kinds["hw"].append(case(f"hw={hw['id']}", ["--hardware", hw["id"]]))
    for variant in [v for v in show.get("variants", []) if v["key"] != "default"][:2]:
        on = next((h["id"] for h in hardware if variant["key"] in h.get("variants", [])), None)
        kinds["variant"].append(case(f"variant={variant['key']}@{on}",
                                     ["--variant", variant["key"]] + (["--hardware", on] if on else [])))
    others = [s for s in show.get("strategies", []) if not s.get("recommended")]
    others.sort(key=lambda s: STRATEGY_ORDER.index(s["id"]) if s["id"] in STRATEGY_ORDER else len(STRATEGY_ORDER))
    for strategy in others[:3]:
        on = (strategy.get("supported_on") or [default_hw])[0]
        where = ["--hardware", on] if on else []
        kinds["strategy"].append(case(f"strategy={strategy['id']}@{on}", ["--strategy", strategy["id"], *where]))
        if strategy["id"] == "pd_cluster":
            kinds["pd"].append(case(f"pd=dep-prefill-rank0@{on}", ["--strategy", "pd_cluster", *where, "--prefill-mode", "dep",
                                                                   "--decode-mode", "tep", "--prefill-rank", "0"]))
            kinds["pd"].append(case(f"pd=1p2d-rank1@{on}", ["--strategy", "pd_cluster", *where, "--prefill-nodes", "1",
                                                            "--decode-nodes", "2", "--decode-rank", "1"]))
            kinds["pd"].append(case(f"pd=colocated@{on}", ["--strategy", "pd_cluster", *where,
                                                           "--prefill-nodes", "0", "--decode-nodes", "0"]))
        elif strategy["id"].startswith("multi_node"):
            kinds["pd"].append(case(f"nodes=4 {strategy['id']}@{on}", ["--strategy", strategy["id"], *where, "--nodes", "4"]))
    kinds["install"].append(case("install=docker", ["--install", "docker"]))
    kinds["kv"].append(case("kv=kv_store_centralized_mooncake", ["--kv-offload", "kv_store_centralized_mooncake"]))
    kinds["kv"].append(case("kv=kv_store_distributed_mooncake x2 #1", ["--kv-offload", "kv_store_distributed_mooncake",
                                                                       "--kv-instances", "2", "--kv-instance", "1"]))
    kinds["install"].append(case("frontend=rust", ["--frontend", "rust"]))
    for feature in [f for f in show.get("features", []) if f.get("modes")][:2]:
        for mode in [m for m in feature["modes"] if m != feature.get("default_mode")][:1]:
            key = mode if isinstance(mode, str) else mode.get("key", mode.get("id"))
            kinds["mode"].append(case(f"mode={feature['key']}:{key}", ["--feature", feature["key"], "--mode", f"{feature['key']}:{key}"]))
    for feature in (show.get("opt_in_features") or [])[:1]:
        kinds["feature"].append(case(f"feature={feature}", ["--feature", feature]))
    for feature in [f for f in show.get("features", []) if f.get("default_on")][:1]:
        kinds["feature"].append(case(f"no-feature={feature['key']}", ["--no-feature", feature["key"]]))
    ordered: list[dict[str, Any]] = []
    while any(kinds.values()):
        for queue in kinds.values():
            if queue:
                ordered.append(queue.pop(0))
    return out + ordered[:per_recipe]


def run_cases(recipes: str, cases: list[dict[str, Any]], scratch: Path) -> dict[str, Any]:
    """Every command of every case; keys are 'command|hf_id|selection'."""
    from vllm_recipes.cli.main import cli  # type: ignore[import-untyped]

    results: dict[str, Any] = {}
    base = ["--recipes-dir", recipes]
    config = scratch / "config.json"  # one dense shape, so fit plans something offline for every selection
    config.write_text(json.dumps(DENSE_CONFIG))
    shown: set[str] = set()
    for i, case in enumerate(cases):
        hf_id, sel, args = case["hf_id"], case["name"], case["args"]
        if hf_id not in shown:
            shown.add(hf_id)
            results[f"show|{hf_id}|-"] = _runner_invoke(cli, ["show", hf_id, *base])
            results[f"show --json|{hf_id}|-"] = _runner_invoke(cli, ["show", hf_id, "--json", *base])
        key = f"{hf_id}|{sel}"
        results[f"command|{key}"] = _runner_invoke(cli, ["command", hf_id, *args, *base])
        results[f"command --format json|{key}"] = _runner_invoke(cli, ["command", hf_id, *args, "--format", "json", *base])
        results[f"explain --format json|{key}"] = _runner_invoke(cli, ["explain", hf_id, *args, "--format", "json", *base])
        results[f"fit --offline --json|{key}"] = _runner_invoke(cli, ["fit", hf_id, *args, "--offline", "--json", *base])
        results[f"fit --hf-config --json|{key}"] = _runner_invoke(
            cli, ["fit", hf_id, *args, "--offline", "--hf-config", str(config), "--json", *base])
        for target in EXPORT_TARGETS:
            where = scratch / f"case{i}-{target}"
            answer = _runner_invoke(cli, ["export", hf_id, *args, "--to", target, "-o", str(where), *base])
            answer["stdout"] = answer["stdout"].replace(str(where), "<OUT>")
            answer["stderr"] = answer["stderr"].replace(str(where), "<OUT>")
            answer["files"] = _read_tree(where) if where.is_dir() else {}
            results[f"export --to {target}|{key}"] = answer
        if sel == "default" or sel.startswith(("strategy=pd", "pd=", "nodes=")):
            options = ["--namespace", "ns-a", "--name", "job-a", "--pvc", "hf-cache", "--image", "reg.example/vllm:1",
                       "--rdma", "none", "-o", "-"]
            results[f"export --to k8s (options)|{key}"] = _runner_invoke(cli, ["export", hf_id, *args, "--to", "k8s", *options, *base])
            results[f"export --to slurm -o - --name|{key}"] = _runner_invoke(
                cli, ["export", hf_id, *args, "--to", "slurm", "--name", "job-a", "-o", "-", *base])
    return results


def _query(case: dict[str, Any]) -> str | None:
    """The page/API query of a case's CLI options (None when one has no URL twin, e.g. --feature)."""
    args, items = case["args"], []
    for flag, value in zip(args[::2], args[1::2], strict=True):
        if flag in ("--feature", "--no-feature"):
            return None
        items.append((flag[2:].replace("-", "_"), value))
    from urllib.parse import urlencode

    return urlencode(items)


def pages(recipes: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Recipe pages and /api/resolve answers of every case with a URL twin, through the app (no socket)."""
    from starlette.testclient import TestClient

    from vllm_recipes.catalog import load_catalog  # type: ignore[import-untyped]
    from vllm_recipes.web import create_app  # type: ignore[import-untyped]

    results: dict[str, Any] = {}
    with TestClient(create_app(load_catalog([Path(recipes)]))) as client:
        for case in cases:
            query = _query(case)
            if query is None:
                continue
            key = f"{case['hf_id']}|{case['name']}"
            page = client.get(f"/{case['hf_id']}" + (f"?{query}" if query else ""))
            results[f"page html|{key}"] = {"exit": page.status_code, "stdout": page.text}
            api = client.get(f"/api/resolve?model={case['hf_id']}" + (f"&{query}" if query else ""))
            results[f"api/resolve|{key}"] = {"exit": api.status_code, "stdout": api.text}
            builder = client.get(f"/{case['hf_id']}/builder" + (f"?{query}" if query else ""))
            results[f"builder fragment|{key}"] = {"exit": builder.status_code, "stdout": builder.text}
    return results


def worker(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("plan", "run"))
    parser.add_argument("recipes")
    parser.add_argument("out")
    parser.add_argument("--cases")
    parser.add_argument("--per-recipe", type=int, default=14)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--mutated")
    ns = parser.parse_args(argv)
    if not ns.fresh:
        _memoise_catalog()
    if ns.mode == "plan":
        Path(ns.out).write_text(json.dumps(plan(ns.recipes, ns.per_recipe), indent=1))
        return
    cases = json.loads(Path(ns.cases).read_text())
    scratch = Path(tempfile.mkdtemp(prefix="compare-"))
    results = run_cases(ns.recipes, cases, scratch)
    results.update(pages(ns.recipes, cases))
    api = scratch / "api"
    from vllm_recipes.cli.main import cli  # type: ignore[import-untyped]

    results["build-api|-|-"] = _runner_invoke(cli, ["build-api", str(api), "--recipes-dir", ns.recipes])
    results["build-api|-|-"]["stdout"] = results["build-api|-|-"]["stdout"].replace(str(api), "<OUT>")
    for fmt in ("text", "json"):
        results[f"validate --format {fmt}|-|-"] = _runner_invoke(cli, ["validate", "--format", fmt, "--recipes-dir", ns.recipes])
    if ns.mutated:
        for fmt in ("text", "json", "markdown"):
            answer = _runner_invoke(cli, ["diff", ns.recipes, ns.mutated, "--format", fmt, "--jobs", "1"])
            results[f"diff catalogs --format {fmt}|-|-"] = answer
    for hf_id in sorted({c["hf_id"] for c in cases}):
        hws = [c["args"][1] for c in cases if c["hf_id"] == hf_id and c["args"][:1] == ["--hardware"]]
        if len(hws) >= 2:
            results[f"diff --a --b --json|{hf_id}|{hws[0]} vs {hws[1]}"] = _runner_invoke(
                cli, ["diff", hf_id, "--a", f"hardware={hws[0]}", "--b", f"hardware={hws[1]}", "--json",
                      "--recipes-dir", ns.recipes])
    Path(ns.out).write_text(json.dumps({"results": results, "api": str(api)}))


# --- driver side ------------------------------------------------------------------------------------


def _child(src: Path, args: list[str], cache: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(src.resolve()), VLLM_RECIPES_CACHE_DIR=str(cache))
    return subprocess.Popen([sys.executable, __file__, "--worker", *args], env=env)


def _mutated_copy(recipes: Path, where: Path) -> Path:
    """RECIPES with a few recipe changes, for the catalog impact diff: the first three recipes' first
    ``vram_minimum_gb`` raised by 1, ``--max-num-seqs 7`` put before the first quoted flag of the
    second and third, and the fourth recipe deleted."""
    import re
    import shutil

    shutil.copytree(recipes, where)
    files = sorted((where / "models").glob("*/*.yaml"))
    for path in files[:3]:
        text = path.read_text()
        text = re.sub(r"vram_minimum_gb: (\d+)", lambda m: f"vram_minimum_gb: {int(m[1]) + 1}", text, count=1)
        if path != files[0]:
            text = re.sub(r'(\n[ \t]*)- "--', r'\1- "--max-num-seqs"\1- "7"\1- "--', text, count=1)
        path.write_text(text)
    if len(files) > 3:
        files[3].unlink()
    return where


def _api_diff(old: Path, new: Path) -> list[str]:
    """Relative paths that differ, or exist on one side only."""
    out: list[str] = []

    def walk(cmp: filecmp.dircmp[str], prefix: str) -> None:
        out.extend(f"{prefix}{n} (only old)" for n in cmp.left_only)
        out.extend(f"{prefix}{n} (only new)" for n in cmp.right_only)
        _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
        out.extend(f"{prefix}{n}" for n in mismatch + errors)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(old, new), "")
    return sorted(out)


def _lines(answer: Any) -> list[str]:
    """One answer as diffable lines: each stream and file under its name, JSON stdout pretty-printed."""
    if answer is None:
        return ["<missing>"]
    out: list[str] = [f"exit: {answer.get('exit')}"]
    streams = {"stdout": answer.get("stdout", ""), "stderr": answer.get("stderr", ""),
               "traceback": answer.get("traceback", "")}
    streams.update({f"file {name}": text for name, text in answer.get("files", {}).items()})
    for name, text in streams.items():
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=1)
        out.append(f"== {name}")
        out.extend(f"{name.split()[-1]}: {line}" for line in text.splitlines())
    return out


def page_text(html_text: str) -> list[str]:
    """What a reader sees of a page: text without scripts, styles, tags, heading '#' anchors or
    snippet templates (this round's page-weight work moved those to app.js), one stripped line each."""
    import html
    import re

    text = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", html_text, flags=re.S)
    text = re.sub(r'<a class="header-anchor"[^>]*>#</a>', "", text)
    text = re.sub(r'\sdata-tpl="[^"]*"', "", text, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    return [line.strip() for line in html.unescape(text).splitlines() if line.strip()]


def _write_diff(out: Path, key: str, old: Any, new: Any) -> None:
    safe = key.replace("/", "_").replace(" ", "_").replace("|", "__")[:180]
    lines = difflib.unified_diff(_lines(old), _lines(new), "old", "new", lineterm="", n=2)
    (out / f"{safe}.diff").write_text("\n".join(lines) + "\n")


def main() -> None:
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old_src", type=Path)
    parser.add_argument("new_src", type=Path)
    parser.add_argument("recipes")
    parser.add_argument("--out", type=Path, default=Path("compare-out"))
    parser.add_argument("--per-recipe", type=int, default=14, help="non-default selections per recipe")
    parser.add_argument("--fresh", action="store_true", help="reload the catalog for every command")
    ns = parser.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="compare-trees-"))
    extra = ["--fresh"] if ns.fresh else []
    cases = ns.out / "cases.json"
    if _child(ns.old_src, ["plan", ns.recipes, str(cases), "--per-recipe", str(ns.per_recipe), *extra],
              tmp / "cache-plan").wait():
        sys.exit("planning failed")
    mutated = _mutated_copy(Path(ns.recipes), tmp / "mutated")
    extra += ["--mutated", str(mutated)]
    children = [_child(src, ["run", ns.recipes, str(tmp / f"{side}.json"), "--cases", str(cases), *extra],
                       tmp / f"cache-{side}") for side, src in (("old", ns.old_src), ("new", ns.new_src))]
    if any(child.wait() for child in children):
        sys.exit("a worker failed")
    old, new = (json.loads((tmp / f"{side}.json").read_text()) for side in ("old", "new"))
    diffs = ns.out / "diffs"
    diffs.mkdir(exist_ok=True)
    summary: dict[str, list[int]] = {}
    differing: list[str] = []
    for key in sorted(set(old["results"]) | set(new["results"])):
        command = key.split("|")[0]
        a, b = old["results"].get(key), new["results"].get(key)
        same = a == b
        summary.setdefault(command, [0, 0])[0 if same else 1] += 1
        if not same:
            differing.append(key)
            _write_diff(diffs, key, a, b)
        if command in ("page html", "builder fragment") and a and b:
            seen = a["exit"] == b["exit"] and page_text(a["stdout"]) == page_text(b["stdout"])
            summary.setdefault(f"{command} text (normalised)", [0, 0])[0 if seen else 1] += 1
            if not seen:
                differing.append(f"{command} text (normalised)" + key[len(command):])
    api = _api_diff(Path(old["api"]), Path(new["api"]))
    summary["build-api files"] = [-1, len(api)]
    (ns.out / "different.txt").write_text("\n".join(differing) + "\n")
    (ns.out / "api-different.txt").write_text("\n".join(api) + "\n")
    print(f"{'command':28} {'identical':>9} {'different':>9}")
    for command, (same, other) in summary.items():
        print(f"{command:28} {same if same >= 0 else '-':>9} {other:>9}")
    print(f"old api: {old['api']}  new api: {new['api']}  diffs: {diffs}")


if __name__ == "__main__":
    main()
