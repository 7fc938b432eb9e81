"""Long fuzz run: mutated real recipes through every command and the web app, in batches (not run in CI).

Usage::

    .venv/bin/python tools/fuzz_recipes.py --seeds-dir RECIPES_DIR [--mutants 5000] [--batch 60]
        [--minutes 80] [--seed 0] [--limit 30] [--work DIR] [--no-server] [--log FILE]

A *batch* is one recipes directory: the shared files of ``--seeds-dir`` (taxonomy, platforms,
strategies, kv stores), two of its recipes unchanged (the *siblings*), ``--batch`` mutants
(``tools/fuzzlib.py``: one to five mutations each, under their own model ids) and three recipe
links (out of the directory and in). Every sixth batch also breaks one shared file. Per batch,
in a fresh worker process sandboxed to the batch directory (``HOME``, ``XDG_*``, ``TMPDIR``,
``HF_HOME``, the working directory; ``HF_HUB_OFFLINE=1``):

* ``validate`` and ``build-api OUT`` once (the siblings must be published, with llms.txt);
* per mutant, in-process (click's runner): ``command`` (default, pip, docker --json, PD),
  ``explain``, ``show``, ``fit --offline`` (default and h200 --json), ``export --to`` k8s,
  compose, slurm and vllm-config into OUT;
* one ``serve`` of the batch: per mutant its page, builder, twins, ``/api/resolve`` (default and
  PD), ``/api/export`` x4, ``/api/fit``, ``/api/perf`` and odd parameters, then a sibling's page;
* the sandbox is compared before/after: a file anywhere but OUT and the cache is a write outside OUT;
  no output (OUT, pages) may hold the text of the file the links point to.

Findings: tracebacks (an exception out of a command, a logged exception, a traceback in the
server log), steps over ``--limit`` s (a soft alarm in the worker; a worker silent for 3x that is
killed by the parent), answers >= 500, writes outside OUT, a sibling missing from OUT or its page
not answering 200. Progress goes to ``--log``; the figures are printed at the end. Mutant ``i`` is
seed recipe ``i % len(seeds)`` mutated with ``random.Random(i)``: ``--seed I --mutants 1`` replays it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzzlib

SIBLINGS = 2
CLI_STEPS: list[tuple[str, list[str]]] = [
    ("validate", []), ("command", ["-q"]), ("command-pip", ["-q", "--install", "pip"]),
    ("command-docker-json", ["-q", "--install", "docker", "--json"]),
    ("command-pd", ["-q", "--strategy", "pd_cluster", "--prefill-nodes", "2", "--decode-nodes", "2"]),
    ("explain", []), ("show", []), ("fit", ["--offline"]), ("fit-h200-json", ["--offline", "--hardware", "h200", "--json"]),
    *((f"export-{t}", ["--to", t]) for t in ("k8s", "compose", "slurm", "vllm-config")),
]


# --------------------------------------------------------------------------------------------
# The worker: one batch, in its sandbox
# --------------------------------------------------------------------------------------------

class Recorder:
    """Per-mutant findings and step times; the current step goes to a progress file for the watchdog."""

    def __init__(self, progress: Path, limit: float) -> None:
        self.progress, self.limit = progress, limit
        self.records: dict[str, dict[str, Any]] = {}
        self.slowest: tuple[float, str, str] = (0.0, "", "")

    def rec(self, who: str) -> dict[str, Any]:
        return self.records.setdefault(who, {"tracebacks": [], "hangs": [], "slow": [], "5xx": [], "steps": 0})

    def step(self, who: str, name: str, fn: Any) -> Any:
        self.progress.write_text(f"{who} {name}\n")
        r = self.rec(who)
        r["steps"] += 1
        t = time.perf_counter()
        try:
            with fuzzlib.deadline(self.limit):
                return fn()
        except fuzzlib.Hang:
            r["hangs"].append(name)
        except Exception:
            r["tracebacks"].append(f"{name}: {traceback.format_exc(limit=-8)}")
        finally:
            dt = time.perf_counter() - t
            if dt > self.limit:
                r["slow"].append(f"{name} {dt:.1f}s")
            if who != "batch":  # (whole-batch steps are reported apart)
                self.slowest = max(self.slowest, (dt, who, name))
        return None


class LoggedTracebacks:
    """A logging handler counting records that carry an exception (a swallowed traceback is one too)."""

    def __init__(self) -> None:
        import logging

        class H(logging.Handler):
            def emit(h, record: logging.LogRecord) -> None:
                if record.exc_info:
                    self.seen.append(f"{record.getMessage()[:200]}: {record.exc_info[1]!r}")

        self.seen: list[str] = []
        self.handler = H()


def cli_call(args: list[str]) -> Any:
    from click.testing import CliRunner

    from vllm_recipes.cli.main import cli

    res = CliRunner().invoke(cli, args, catch_exceptions=True)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception.with_traceback(res.exc_info[2] if res.exc_info else None)
    if "Traceback (most recent call last)" in res.output:
        raise RuntimeError("traceback printed: " + res.output[-2000:])
    return res


def solo_catalog(recipes: Path, dest: Path, hf_id: str) -> Path:
    """``recipes``' shared files and the one recipe ``hf_id`` as a recipes directory of its own (hard links;
    links stay links): each command then parses one recipe, not the batch's (huge) others."""
    own = Path("models", f"{hf_id}.yaml")
    if (recipes / own).parent.is_symlink():  # a linked folder stays a linked folder
        (dest / own).parent.parent.mkdir(parents=True, exist_ok=True)
        (dest / own).parent.symlink_to(os.readlink((recipes / own).parent), target_is_directory=True)
    for rel in [*(p.relative_to(recipes) for p in recipes.iterdir() if p.name != "models"), own]:
        src = recipes / rel
        items = [src] if not src.is_dir() or src.is_symlink() else sorted(src.iterdir())
        for item in items:
            target = dest / item.relative_to(recipes)
            if target.parent.is_symlink():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if item.is_symlink():
                target.symlink_to(os.readlink(item))
            elif item.is_file():
                os.link(item, target)
    return dest


def files_under(root: Path) -> set[str]:
    out = set()
    for d, dirs, fs in os.walk(root):
        for name in fs + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            out.add(os.path.relpath(os.path.join(d, name), root))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_batch(box: Path, recipes: Path, mutants: list[dict[str, Any]], siblings: list[str], rec: Recorder,
                rng: random.Random, watch: bool) -> dict[str, Any]:
    """One ``serve`` of the batch (``--watch``: the authors' preview, which renders invalid recipes too);
    every mutant's views, a sibling's page after each."""
    import httpx
    import yaml

    port = free_port()
    log_path = box / "out" / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "vllm_recipes", "serve", "--port", str(port),
                                 "--recipes-dir", str(recipes), "--log-level", "warning", *(["--watch"] if watch else [])],
                                stdout=log, stderr=subprocess.STDOUT)  # (in the worker's group: the watchdog ends both)
    base = f"http://127.0.0.1:{port}"
    info: dict[str, Any] = {"sibling_not_200": [], "server_tracebacks": 0, "leaks": [], "watch": watch}
    try:
        t0 = time.monotonic()
        rec.progress.write_text("batch serve-start\n")
        while True:
            try:
                h = httpx.get(base + "/api/health", timeout=5).json()
                if h.get("api") or h.get("warm_error") or watch:  # (--watch builds the API on first use)
                    break
            except (httpx.HTTPError, ValueError):
                pass
            if proc.poll() is not None or time.monotonic() - t0 > 240:
                rec.rec("batch")["tracebacks"].append("serve did not start: " + log_path.read_text()[-2000:])
                return info
            time.sleep(0.3)
        info["start_s"] = round(time.monotonic() - t0, 1)
        with httpx.Client(base_url=base, timeout=rec.limit) as client:
            for m in mutants:
                try:
                    data = yaml.safe_load(m["text"]) if m.get("text") else None
                except Exception:
                    data = None
                for url in fuzzlib.mutant_urls(m["hf_id"], data, rng):
                    r = _timed_get(client, url, rec, m["who"])
                    if r is not None and fuzzlib.SECRET in r.text:
                        info["leaks"].append(url)
                sib = f"/{siblings[len(m['who']) % len(siblings)]}"
                r = _timed_get(client, sib, rec, m["who"])
                if r is None or r.status_code != 200:
                    info["sibling_not_200"].append(f"{m['who']}: {sib} -> {None if r is None else r.status_code}")
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        text = log_path.read_text(errors="replace")
        info["server_tracebacks"] = text.count("Traceback (most recent call last)")
        if info["server_tracebacks"]:
            info["server_log_tail"] = text[-4000:]
    return info


def _timed_get(client: Any, url: str, rec: Recorder, who: str) -> Any:
    import httpx

    r = rec.rec(who)
    r["steps"] += 1
    rec.progress.write_text(f"{who} web {url[:200]}\n")
    t = time.perf_counter()
    try:
        resp = client.get(url)
    except httpx.TimeoutException:
        r["hangs"].append("web " + url[:160])
        return None
    except httpx.HTTPError as exc:
        r["tracebacks"].append(f"web {url[:160]}: {exc!r}")
        return None
    finally:
        dt = time.perf_counter() - t
        if dt > rec.limit:
            r["slow"].append(f"web {url[:120]} {dt:.1f}s")
        rec.slowest = max(rec.slowest, (dt, who, "web " + url[:120]))
    if resp.status_code >= 500:
        r["5xx"].append(f"{resp.status_code} {url[:160]}")
    return resp


def worker(args: argparse.Namespace) -> int:
    """Run one batch (``--first`` .. ``--first + --batch``) in ``--box``; write its records as JSON."""
    import logging


    box: Path = args.box
    recipes, out, outside = box / "recipes", box / "out", box / "outside"
    seeds = fuzzlib.seeds(args.seeds_dir)
    src = Path(args.seeds_dir)
    for name in ("taxonomy.yaml", "platforms.yaml"):
        if (src / name).is_file():
            shutil.copy2(src / name, recipes / name)
    for name in ("strategies", "kv_store"):
        if (src / name).is_dir():
            shutil.copytree(src / name, recipes / name)
    batch_rng = random.Random(f"batch-{args.first}")
    sib_seeds = [seeds[(args.first // args.batch + k * 37) % len(seeds)] for k in range(SIBLINGS)]
    siblings = []
    for rel, text in sib_seeds:
        (recipes / "models" / rel).parent.mkdir(parents=True, exist_ok=True)
        (recipes / "models" / rel).write_bytes(text)
        siblings.append(rel[:-5])
    mutants: list[dict[str, Any]] = []
    for i in range(args.first, args.first + args.batch):
        rel, text = seeds[i % len(seeds)]
        hf = rel[:-5]
        new = f"{hf}-f{i}"
        mutated, classes = fuzzlib.mutate_labelled(text.replace(hf.encode(), new.encode()), random.Random(i))
        path = recipes / "models" / f"{new}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(mutated)
        mutants.append({"who": str(i), "hf_id": new, "text": mutated, "classes": sorted(set(classes))})
    tag = str(args.first)
    for k, rel in enumerate(fuzzlib.plant_links(recipes, outside, sib_seeds[0][0], tag)):
        mutants.append({"who": f"link{tag}-{k}", "hf_id": rel[:-5], "text": None, "classes": ["symlink"]})
    catalog_classes = []
    if args.break_shared:
        for _ in range(batch_rng.randrange(1, 3)):
            catalog_classes.append(fuzzlib.mutate_catalog_file(recipes, batch_rng, outside))
    solo = {m["who"]: solo_catalog(recipes, box / "solo" / m["who"], m["hf_id"]) for m in mutants}
    before = files_under(box)
    rec = Recorder(box / "progress", args.limit)
    logged = LoggedTracebacks()
    logging.getLogger().addHandler(logged.handler)
    logging.getLogger("vllm_recipes").setLevel(logging.WARNING)
    from vllm_recipes.cli import api_cmds, engine_cmds, export_cmds, fit_cmds, inspect_cmds  # noqa: F401  (registers the commands)

    rd = ["--recipes-dir", str(recipes)]
    batch: dict[str, Any] = {"first": args.first, "catalog_classes": catalog_classes}
    phase: dict[str, float] = {}
    t_phase = time.perf_counter()
    res = rec.step("batch", "build-api", lambda: cli_call(["build-api", str(out / "api"), *rd, "-j", "1"]))
    batch["build_exit"] = None if res is None else res.exit_code
    batch["build_s"] = round(time.perf_counter() - t_phase, 1)
    batch["build_tail"] = None if res is None else res.output[-600:]
    missing = [s for s in siblings if not (out / "api" / f"{s}.json").is_file()]
    missing += [f for f in ("llms.txt", "llms-full.txt") if not (out / "api" / f).is_file()]
    batch["siblings_missing"] = [] if catalog_classes else missing  # a broken shared file may reject them
    batch["siblings_missing_broken_shared"] = missing if catalog_classes else []
    phase["build"] = time.perf_counter() - t_phase
    t_phase = time.perf_counter()
    for m in mutants:
        for name, extra in CLI_STEPS:
            cmd = "command" if name.startswith("command") else "fit" if name.startswith("fit") else \
                "export" if name.startswith("export") else name
            argv = [cmd, *([] if cmd == "validate" else [m["hf_id"]]), "--recipes-dir", str(solo[m["who"]]), *extra]
            if cmd == "export":
                argv += ["-o", str(out / "export" / m["who"] / name)]
            res = rec.step(m["who"], name, lambda argv=argv: cli_call(argv))
            if name == "validate":
                rec.rec(m["who"])["valid"] = res is not None and res.exit_code == 0
    phase["cli"] = time.perf_counter() - t_phase
    t_phase = time.perf_counter()
    if not args.no_server:
        batch["server"] = serve_batch(box, recipes, mutants, siblings, rec, batch_rng,
                                      watch=(args.first // args.batch) % 2 == 1)
    phase["web"] = time.perf_counter() - t_phase
    batch["phase_s"] = {k: round(v, 1) for k, v in phase.items()}
    after = files_under(box)
    batch["outside_writes"] = sorted(f for f in after - before
                                     if not f.startswith(("out/", "home/.cache/vllm-recipes/")) and f != "progress")
    leaks = []
    for d, _, fs in os.walk(out):
        for f in fs:
            if f != "server.log" and fuzzlib.SECRET.encode() in Path(d, f).read_bytes():
                leaks.append(os.path.relpath(os.path.join(d, f), box))
    batch["leaks"] = leaks + batch.get("server", {}).get("leaks", [])
    batch["logged_tracebacks"] = logged.seen[:20]
    batch["logged_traceback_count"] = len(logged.seen)
    batch["slowest"] = list(rec.slowest)
    records = []
    for m in mutants:
        r = rec.rec(m["who"])
        records.append({"who": m["who"], "hf_id": m["hf_id"], "classes": m["classes"], **r})
    batch["batch_record"] = rec.rec("batch")
    args.result.write_text(json.dumps({"batch": batch, "mutants": records}, default=str))
    return 0


# --------------------------------------------------------------------------------------------
# The driver: batches in worker processes, a watchdog, the figures
# --------------------------------------------------------------------------------------------

def sandbox_env(box: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_RECIPES", "HF_", "XDG_"))}
    home = box / "home"
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local/share"), TMPDIR=str(box / "tmp"), HF_HOME=str(home / "hf"),
               HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def run_batch(args: argparse.Namespace, first: int, size: int, work: Path, break_shared: bool) -> dict[str, Any]:
    box = work / f"b{first}"
    shutil.rmtree(box, ignore_errors=True)
    for d in ("recipes/models", "out", "home", "cwd", "tmp", "outside"):
        (box / d).mkdir(parents=True)
    result = box / "result.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", "--box", str(box), "--first", str(first),
            "--batch", str(size), "--seeds-dir", str(args.seeds_dir), "--limit", str(args.limit),
            "--result", str(result)]
    argv += ["--break-shared"] if break_shared else []
    argv += ["--no-server"] if args.no_server else []
    with open(box / "worker.log", "wb") as wlog:
        proc = subprocess.Popen(argv, cwd=box / "cwd", env=sandbox_env(box), stdout=wlog, stderr=subprocess.STDOUT,
                                start_new_session=True)
    progress = box / "progress"
    killed = None
    while proc.poll() is None:
        time.sleep(2)
        # a whole-batch step (build-api, the server's start) may take 10x one recipe's limit
        allowed = args.limit * (10 if progress.exists() and progress.read_text().startswith("batch") else 3)
        if progress.exists() and time.time() - progress.stat().st_mtime > allowed:
            killed = progress.read_text().strip()
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if killed is not None or not result.exists():
        tail = (box / "worker.log").read_text(errors="replace")[-3000:]
        return {"batch": {"first": first, "worker_failed": killed or f"exit {proc.returncode}", "tail": tail},
                "mutants": []}
    data = json.loads(result.read_text())
    bad = _batch_bad(data)
    if not bad and not args.keep:
        shutil.rmtree(box, ignore_errors=True)
    return data


def _batch_bad(data: dict[str, Any]) -> bool:
    b = data["batch"]
    if b.get("worker_failed"):
        return True
    s = b.get("server", {})
    return bool(any(m["tracebacks"] or m["hangs"] or m["5xx"] or m["slow"] for m in data["mutants"])
                or b.get("worker_failed") or b["batch_record"]["tracebacks"] or b["batch_record"]["hangs"]
                or b["outside_writes"] or b["leaks"] or b["siblings_missing"] or b["logged_traceback_count"]
                or s.get("sibling_not_200") or s.get("server_tracebacks"))


def summarize(results: list[dict[str, Any]], limit: float) -> tuple[str, bool]:
    n = Counter()
    classes: Counter[str] = Counter()
    slowest = (0.0, "", "")
    for data in results:
        b = data["batch"]
        n["batches"] += 1
        if b.get("worker_failed"):
            n["worker_killed"] += 1
            continue
        for c in b["catalog_classes"]:
            classes[c] += 1
        br = b["batch_record"]
        n["tracebacks"] += len(br["tracebacks"]) + b["logged_traceback_count"] + b.get("server", {}).get(
            "server_tracebacks", 0)
        n["hangs"] += len(br["hangs"])
        n["batch_slow"] += len(br["slow"])
        n["batch_slowest"] = max(n["batch_slowest"], b.get("build_s", 0))
        n["steps"] += br["steps"]
        n["outside"] += len(b["outside_writes"])
        n["leaks"] += len(b["leaks"])
        n["siblings_missing"] += len(b["siblings_missing"])
        n["sibling_not_200"] += len(b.get("server", {}).get("sibling_not_200", []))
        n["build_exit_nonzero"] += b["build_exit"] not in (0,)
        if b["slowest"][1] != "batch":  # (runs before the fix recorded whole-batch steps here)
            slowest = max(slowest, tuple(b["slowest"]))
        for m in data["mutants"]:
            n["mutants"] += 1
            n["valid"] += bool(m.get("valid"))
            n["watch"] += bool(b.get("server", {}).get("watch"))
            for c in m["classes"]:
                classes[c] += 1
            n["tracebacks"] += len(m["tracebacks"])
            n["hangs"] += len(m["hangs"])
            n["slow"] += len(m["slow"])
            n["5xx"] += len(m["5xx"])
            n["steps"] += m["steps"]
    bad = any(n[k] for k in ("worker_killed", "tracebacks", "hangs", "slow", "5xx", "outside", "leaks",
                             "siblings_missing", "sibling_not_200"))
    lines = [f"mutants run:            {n['mutants']} in {n['batches']} batches ({n['steps']} steps); "
             f"validate-clean {n['valid']}; served by serve --watch (invalid ones rendered too) {n['watch']}",
             "per class:              " + ", ".join(f"{k} {v}" for k, v in sorted(classes.items())),
             f"tracebacks:             {n['tracebacks']}",
             f"steps over {limit:g} s:       {n['slow'] + n['hangs']} (hangs {n['hangs']}, workers killed "
             f"{n['worker_killed']})",
             f"answers >= 500:         {n['5xx']}",
             f"writes outside OUT:     {n['outside']}; outside file's text in an output: {n['leaks']}",
             f"siblings missing from OUT: {n['siblings_missing']}; sibling page not 200: {n['sibling_not_200']}",
             f"build-api exit != 0:    {n['build_exit_nonzero']} batches",
             f"whole-batch build-api:  slowest {n['batch_slowest']:.1f} s; over {limit:g} s: {n['batch_slow']}",
             f"slowest step:           {slowest[0]:.1f} s (mutant {slowest[1]}, {slowest[2]})"]
    return "\n".join(lines), bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mutants", type=int, default=5000, help="stop after this many mutants")
    ap.add_argument("--batch", type=int, default=60, help="mutants per recipes directory")
    ap.add_argument("--minutes", type=float, default=0, help="time budget (0: none)")
    ap.add_argument("--seed", type=int, default=0, help="first mutant index")
    ap.add_argument("--limit", type=float, default=30.0, help="seconds one step may take")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temp dir)")
    ap.add_argument("--seeds-dir", type=Path, default=None, help="recipes directory whose recipes are mutated")
    ap.add_argument("--no-server", action="store_true", help="skip the web app")
    ap.add_argument("--parallel", type=int, default=1, help="batches at once (default 1)")
    ap.add_argument("--keep", action="store_true", help="keep every batch directory")
    ap.add_argument("--log", type=Path, default=None, help="progress log (default: stderr)")
    ap.add_argument("--results", type=Path, default=None, help="append each batch's JSON here")
    ap.add_argument("--replay", type=Path, nargs="+", default=None, metavar="RESULTS",
                    help="run again the batches of --results files that had findings (same mutants)")
    ap.add_argument("--summarize", type=Path, nargs="+", default=None, metavar="RESULTS",
                    help="print the figures of --results files and exit")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--box", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--first", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--break-shared", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.seeds_dir is None:
        from vllm_recipes.catalog import BUNDLED_DIR

        args.seeds_dir = BUNDLED_DIR
    if args.worker:
        return worker(args)
    if args.summarize:  # the figures of earlier runs' --results files (runs stopped early included)
        results = [json.loads(line) for f in args.summarize for line in f.read_text().splitlines() if line]
        text, bad = summarize(results, args.limit)
        print(text)
        return 1 if bad else 0
    work = args.work or Path(tempfile.mkdtemp(prefix="fuzz-recipes-"))
    work.mkdir(parents=True, exist_ok=True)
    log = open(args.log, "a") if args.log else sys.stderr  # noqa: SIM115
    results: list[dict[str, Any]] = []
    t0 = time.monotonic()
    plan = []  # (first index, size, break a shared file)
    first = args.seed
    while first - args.seed < args.mutants and not args.replay:
        size = min(args.batch, args.seed + args.mutants - first)
        plan.append((first, size, len(plan) % 6 == 5))
        first += size
    for f in args.replay or ():  # the batches of earlier runs that had findings (or whose worker was killed)
        for line in f.read_text().splitlines():
            data = json.loads(line)
            if _batch_bad(data):
                b = data["batch"]
                plan.append((b["first"], args.batch, bool(b.get("catalog_classes"))))

    def one(item: tuple[int, int, bool]) -> dict[str, Any] | None:
        if args.minutes and time.monotonic() - t0 > args.minutes * 60:
            return None
        tb = time.monotonic()
        data = run_batch(args, item[0], item[1], work, item[2])
        data["batch"]["wall_s"] = round(time.monotonic() - tb, 1)
        return data

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(args.parallel) as pool:
        for data in pool.map(one, plan):
            if data is None:
                continue
            results.append(data)
            if args.results:
                with open(args.results, "a") as f:
                    f.write(json.dumps(data, default=str) + "\n")
            done = sum(len(d["mutants"]) for d in results)
            b = data["batch"]
            print(f"{time.strftime('%H:%M:%S')} batch {len(results)}/{len(plan)} (first {b['first']}) "
                  f"{b['wall_s']} s {b.get('phase_s', '')}; {done} mutants done, "
                  f"{done * 60 / (time.monotonic() - t0):.0f}/min; "
                  f"{'FINDINGS in b' + str(b['first']) if _batch_bad(data) else 'clean'}",
                  file=log, flush=True)
    text, bad = summarize(results, args.limit)
    text += f"\nwall time:              {(time.monotonic() - t0) / 60:.1f} min; work dir {work}"
    print(text, file=log, flush=True)
    if log is not sys.stderr:
        print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
