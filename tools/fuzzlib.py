"""Hostile-input fuzzing shared by the CI fuzz test and ``tools/fuzz_recipes.py``.

:func:`mutate` turns a real recipe into a hostile one (one to five mutations:
deleted keys, swapped types, random strings/numbers/None, deep nesting,
unicode, traversal ids, non-string keys, anchors/aliases, duplicate keys, tabs,
BOM, CRLF, truncation, binary junk). :func:`run_one` puts the file into a
scratch recipe directory and runs it through ``validate``, ``build-api`` and
the web app, reporting tracebacks, 5xx answers, slow steps and files written
outside the output directory.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

TRAVERSALS = ["../../../../pwned/x", "../pwned", "..", ".", "/abs/pwned", "a/../../b", "x\\..\\..\\y",
              "%2e%2e/%2e%2e/pwned", "..%2f..%2fpwned", "a\x00b", "C:\\pwned", "~/pwned", "a//b", " ", ""]
NUMBERS: list[Any] = [0, -1, 1, 2, 7, 3.5, -0.0, 1e308, float("inf"), float("nan"), 10 ** 6, 10 ** 9, 2 ** 63,
                      2 ** 64, 2 ** 70, -(2 ** 70), 10 ** 40, 1e-7]
#: values that are shell or YAML syntax, markup, undeclared variables, off-site links (issues #21, #28.10)
HOSTILE = ["a; touch pwned", "a\nEOF\ntouch pwned\nEOF", "a' ; touch pwned ; '", "$HF_TOKEN", "${HOME}",
           "a\n---\nkind: Pod", "a\nhostPath: {path: /}", "<meta http-equiv=refresh content=0;url=//e.org>",
           "/\\evil.example", "//evil.example", "vllm/x:latest; id", "BAD KEY"]
STRINGS = ["", "x", "true", "null", "8", "h200", "single_node_tp", "pd_cluster", "dep", "Ωmega-ユニコード",
           "\u202e\u200b", "a" * 5000, "{not json", "[1, 2", "--flag value", "$(touch pwned)", "`id`", "<script>",
           *TRAVERSALS, *HOSTILE]
#: values whose derived counts used to be unbounded (issue #28.1): pool sizes from the weights' VRAM
HUGE = [1.0e300, float("inf"), float("nan"), 1e18, 2 ** 70]


def _random_scalar(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(NUMBERS)
    if kind == 1:
        return rng.choice(STRINGS)
    if kind == 2:
        return None
    if kind == 3:
        return rng.choice([True, False])
    if kind == 4:
        return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(1, 12)))
    return rng.randrange(-5, 200)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8)
    if depth < 3 and kind == 0:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if depth < 3 and kind == 1:
        return {_random_key(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))}
    return _random_scalar(rng)


def _random_key(rng: random.Random) -> Any:
    return rng.choice([*STRINGS[:12], *TRAVERSALS[:6], 1, 2.5, True, None, "default", "h200", "tp", "nvidia"])


def _paths(data: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, (*prefix, i))


def _get(data: Any, path: tuple) -> Any:
    for p in path:
        data = data[p]
    return data


def _hostile_count(data: Any, rng: random.Random) -> Any:
    """A huge or non-finite VRAM floor / context length with ``pd_cluster`` offered (issue #28.1, #28.4)."""
    if not isinstance(data, dict):
        return data
    for v in (data.get("variants") or {}).values() if isinstance(data.get("variants"), dict) else ():
        if isinstance(v, dict):
            v["vram_minimum_gb"] = rng.choice(HUGE)
    model = data.get("model")
    if isinstance(model, dict) and rng.random() < 0.5:
        model["context_length"] = rng.choice(HUGE)
    cs = data.get("compatible_strategies")
    if isinstance(cs, list) and "pd_cluster" not in cs:
        cs.append("pd_cluster")
    return data


def _model(data: dict) -> dict:
    model = data.get("model")
    if not isinstance(model, dict):
        model = data["model"] = {}
    return model


def _huge_tokens(data: dict, rng: random.Random) -> None:
    """A validate-clean argument list of thousands of tokens (issue #28.6: quadratic dedupe/lint)."""
    n = rng.choice([2_000, 2_000, 5_000, 10_000, 40_000])
    tokens = [t for i in range(n // 2) for t in (f"--fuzz-flag-{i % 997}", str(i))]
    where = rng.randrange(3)
    variants = data.get("variants")
    if where == 0 or not isinstance(variants, dict) or not variants:
        _model(data)["base_args"] = tokens
    elif where == 1:
        v = next(iter(variants.values()))
        if isinstance(v, dict):
            v["extra_args"] = tokens
    else:
        feats = data.get("features")
        if isinstance(feats, dict) and feats:
            f = next(iter(feats.values()))
            if isinstance(f, dict):
                f["args"] = tokens


def _binary_set(data: dict, rng: random.Random) -> None:
    """Python-only YAML types (``!!binary``, ``!!set``) in an unknown key or a known one (issue #28.2)."""
    value = rng.choice([b"\x00\xffbinary", {"a", "b"}, frozenset({1}), b""])
    if rng.random() < 0.5:
        data[rng.choice(["zz_unknown", "x_extra", "notes"])] = value
    else:
        model = _model(data)
        model[rng.choice(["context_length", "base_args", "base_env", "min_vllm_version", "architecture"])] = value


def _multiline_env(data: dict, rng: random.Random) -> None:
    """Env values with newlines, quotes, ``$VARS`` (issue #28.10: sbatch altered them)."""
    env = _model(data).get("base_env")
    if not isinstance(env, dict):
        env = _model(data)["base_env"] = {}
    env[rng.choice(["FUZZ_ENV", "VLLM_FUZZ", "A_B"])] = rng.choice(
        ["a\nb", "a\n  b\n", "line1\r\nline2", "x'y\"z", "$HF_TOKEN", "a\n---\nkind: Pod", "${HOME}/x"])


def _non_string_keys(data: dict, rng: random.Random) -> None:
    """Non-string map keys where names are expected (issue #28.9: ``features: {1: ...}``, ``{true: verified}``)."""
    key = rng.choice([1, 2.5, True, None, -0.0])
    target = rng.choice(["features", "variants", "meta.hardware", "hardware_overrides", "strategy_overrides"])
    if target == "meta.hardware":
        meta = data.get("meta")
        if isinstance(meta, dict):
            hw = meta.get("hardware")
            if not isinstance(hw, dict):
                hw = meta["hardware"] = {}
            hw[key] = "verified"
        return
    m = data.get(target)
    if not isinstance(m, dict):
        m = data[target] = {}
    m[key] = rng.choice([{"args": ["--x"]}, {"description": "d"}, "v", None, {"tp": 8}])


def _bad_feature_modes(data: dict, rng: random.Random) -> None:
    """Inconsistent feature modes (json-api.md §10.2), which used to abort ``build-api`` for the catalog."""
    feats = data.get("features")
    if not isinstance(feats, dict):
        feats = data["features"] = {}
    name = rng.choice([*(k for k in feats if isinstance(k, str)), "fuzz_modes"])
    feats[name] = rng.choice([
        {"description": "d", "default_mode": "nope", "modes": {"m": {"args": "--x"}}},
        {"description": "d", "args": ["--a"], "modes": {"m": {"args": ["--b"]}}},
        {"description": "d", "modes": {}},
        {"description": "d", "modes": {"m": {"args": [], "variants": ["no_such_variant"]}}}])


def _display_only_type(data: dict, rng: random.Random) -> None:
    """A wrong type under keys only the page shows (``catalog.models.DISPLAY_ONLY``): validate-clean
    (a warning), so every command and page meets it (``meta.related_recipes: 10**40`` made the page 500)."""
    from vllm_recipes.catalog.models import DISPLAY_ONLY

    for pattern in rng.sample(DISPLAY_ONLY, rng.randrange(1, 4)):
        node: Any = data
        for part in pattern[:-1]:
            if not isinstance(node, dict):
                break
            node = rng.choice([v for v in node.values() if isinstance(v, dict)] or [None]) if part == "*" \
                else node.get(part)
        if isinstance(node, dict):
            node[pattern[-1]] = rng.choice([10 ** 40, True, 1e-07, float("inf"), ["a", {"b": 1}], {"k": [1]},
                                            "", -1, "<script>x</script>"])


#: named structural mutations (class -> function), beside the random-path ones of :func:`_mutate_data`
SHAPED = {"huge-token-list": _huge_tokens, "binary-set": _binary_set, "multiline-env": _multiline_env,
          "non-string-key": _non_string_keys, "bad-feature-modes": _bad_feature_modes,
          "display-only-type": _display_only_type}
_HOSTILE_SET = set(HOSTILE) | set(TRAVERSALS)


def _mutate_data(data: Any, rng: random.Random) -> tuple[Any, str]:
    if rng.random() < 0.08:
        return _hostile_count(data, rng), "non-finite-count"
    if isinstance(data, dict) and rng.random() < 0.16:
        name = rng.choice(sorted(SHAPED))
        SHAPED[name](data, rng)
        return data, name
    paths = list(_paths(data))
    path = rng.choice(paths)
    op = rng.randrange(14)
    if op >= 9:  # same-type swaps: what validation passes must still never crash the engine
        leaves = [p for p in paths if p and isinstance(_get(data, p), int | float | str)]
        if leaves:
            leaf = rng.choice(leaves)
            parent, last = _get(data, leaf[:-1]), leaf[-1]
            v = parent[last]
            if isinstance(v, bool):
                parent[last] = not v
            elif isinstance(v, int | float):
                parent[last] = rng.choice([n for n in NUMBERS if not isinstance(n, float) or n == n])
                return data, "huge-number"
            else:
                parent[last] = rng.choice(STRINGS)
                return data, "hostile-value" if parent[last] in _HOSTILE_SET else "same-type-swap"
            return data, "same-type-swap"
    if not path:
        return (data, "noop") if op else (_random_value(rng), "type-swap")
    parent, last = _get(data, path[:-1]), path[-1]
    if op == 0:  # delete
        del parent[last]
        return data, "delete"
    if op in (1, 2):  # swap type / random value
        parent[last] = _random_value(rng)
        return data, "type-swap"
    if op == 3:  # deep nesting
        v: Any = parent[last]
        for _ in range(rng.choice([5, 50, 150, 199])):
            v = [v]
        parent[last] = v
        return data, "deep-nesting"
    if op == 4 and isinstance(parent, dict):  # odd key
        parent[_random_key(rng)] = parent.pop(last)
        return data, "non-string-key"
    if op == 5 and isinstance(parent, dict):  # traversal / unicode id as a key
        parent[rng.choice([*TRAVERSALS, "Ωmega", "a b"])] = parent.pop(last)
        return data, "traversal-key"
    if op == 6:  # traversal where an id is expected
        parent[last] = rng.choice(TRAVERSALS)
        return data, "traversal-id"
    if op == 7:  # huge number
        parent[last] = rng.choice(NUMBERS)
        return data, "huge-number"
    v = parent[last]  # list/str swap
    parent[last] = [v] if not isinstance(v, list) else (v[0] if v else None)
    return data, "list-scalar-swap"


_ALIAS_BLOCK = "zz_anchor: &zz\n  tp: 8\n  extra_args: [--a]\nzz_alias: *zz\n"
#: YAML tags naming Python objects or binary data (only str/int/float/bool/null/list/map are data)
_TAGGED = [b"\nzz_bin: !!binary aGVsbG8=\n", b"\nzz_set: !!set {a, b}\n", b"\nzz_omap: !!omap [a: 1]\n",
           b"\nzz_py: !!python/object:os.system [id]\n", b"\nzz_ts: 2026-01-01T00:00:00Z\n",
           b"\nzz_pairs: !!pairs [a: 1, a: 2]\n"]


def _mutate_text(text: bytes, rng: random.Random) -> tuple[bytes, str]:
    op = rng.randrange(12)
    if op == 0:
        return text[: rng.randrange(len(text) + 1)], "truncate"
    if op == 1:
        return b"\xef\xbb\xbf" + text, "bom"
    if op == 2:
        return text.replace(b"\n", b"\r\n"), "crlf"
    if op == 3:
        lines = text.split(b"\n")
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace(b"  ", b"\t", 1)
        return b"\n".join(lines), "tab"
    if op == 4:
        i = rng.randrange(len(text) + 1)
        return text[:i] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16))) + text[i:], "binary-junk"
    if op == 5:  # duplicate a line (duplicate keys)
        lines = text.split(b"\n")
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return b"\n".join(lines), "duplicate-key"
    if op == 6:
        return text + b"\n" + _ALIAS_BLOCK.encode(), "anchor-alias"
    if op == 7:  # an alias reused where a mapping is expected
        return text.replace(b"\nvariants:", b"\nvariants: &v", 1) + b"\nstrategy_overrides:\n  x: *v\n", "anchor-alias"
    if op == 8:  # complex (non-string) keys
        return text + b"\n? [a, b]\n: 1\n? {k: v}\n: 2\n", "non-string-key"
    if op in (9, 10):  # !!binary / !!set / python tags, at top level or in place of a value
        tagged = rng.choice(_TAGGED)
        if rng.random() < 0.5:
            return text + tagged, "binary-set"
        _key, _, val = tagged.strip().partition(b": ")
        return text.replace(b"context_length:", b"context_length: " + val + b" #", 1), "binary-set"
    return text + b"\n" + "ключ: значение ✓\n".encode(), "unicode"


def mutate_labelled(seed_text: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """One to five mutations of a recipe, data-level and text-level mixed, with the class of each."""
    n = rng.randrange(1, 6)
    data = yaml.safe_load(seed_text)
    text_ops = 0
    classes: list[str] = []
    for _ in range(n):
        if rng.random() < 0.7:
            data, cls = _mutate_data(data, rng)
            classes.append(cls)
        else:
            text_ops += 1
    try:
        text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True).encode("utf-8")
    except (yaml.YAMLError, RecursionError, ValueError):
        text = seed_text
    for _ in range(text_ops):
        text, cls = _mutate_text(text, rng)
        classes.append(cls)
    return text, classes


class _Dumper(yaml.SafeDumper):
    """The safe dumper plus sets (written as ``!!set``), so the mutator can plant them."""


_Dumper.add_representer(set, yaml.SafeDumper.represent_set)
_Dumper.add_representer(frozenset, yaml.SafeDumper.represent_set)


def mutate(seed_text: bytes, rng: random.Random) -> bytes:
    """One to five mutations of a recipe, data-level and text-level mixed."""
    return mutate_labelled(seed_text, rng)[0]


# --------------------------------------------------------------------------------------------
# Running one file
# --------------------------------------------------------------------------------------------

class Hang(Exception):
    pass


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` in the main thread after ``seconds`` (SIGALRM)."""
    def fire(*_a: Any) -> None:
        raise Hang(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    """What one hostile file did."""

    tracebacks: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    outside_writes: list[str] = field(default_factory=list)
    validate_errors: bool = False
    built: bool = False
    slowest: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.tracebacks or self.hangs or self.server_errors or self.outside_writes)


def _files(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def page_urls(hf_id: str, data: Any, rng: random.Random) -> list[str]:
    """Pages and API calls that exercise a recipe: defaults, its strategies, hostile values."""
    q = quote(hf_id)
    urls = [f"/{q}", f"/{q}/builder", f"/{q}.json", "/models.json", f"/api/resolve?model={q}", "/browse"]
    d = data if isinstance(data, dict) else {}
    strategies = [s for s in (d.get("compatible_strategies") or []) if isinstance(s, str)] \
        if isinstance(d.get("compatible_strategies"), list) else []
    so = d.get("strategy_overrides")
    if isinstance(so, dict):
        strategies += [k for k in so if isinstance(k, str)]
    for s in strategies[:4]:
        urls.append(f"/{q}?strategy={quote(s)}")
        urls.append(f"/api/resolve?model={q}&strategy={quote(s)}&hardware=b200&nodes=2")
    for key in ("hardware", "strategy", "variant", "nodes", "feature", "prefill_nodes", "decode_mode"):
        urls.append(f"/{q}?{key}={quote(str(rng.choice([*TRAVERSALS, *map(str, NUMBERS)])))}")
    return urls


def run_one(text: bytes, work: Path, rng: random.Random, *, rel: str = "acme/Fuzz.yaml",
            server: bool = True, limit: float = 30.0) -> Outcome:
    """``text`` as ``models/<rel>`` in a fresh recipes dir under ``work``, through validate, build-api, web."""
    from click.testing import CliRunner

    from vllm_recipes.cli import api_cmds, engine_cmds, export_cmds, fit_cmds, inspect_cmds  # noqa: F401  (register the commands)  # noqa: F401
    from vllm_recipes.cli.main import cli

    shutil.rmtree(work, ignore_errors=True)
    recipes, pub = work / "recipes", work / "pub"
    (recipes / "models" / rel).parent.mkdir(parents=True)
    (recipes / "models" / rel).write_bytes(text)
    pub.mkdir()
    (work / "canary").mkdir()
    (work / "canary" / "keep.txt").write_text("canary")
    before = _files(work)
    out = Outcome()
    runner = CliRunner()

    def step(name: str, fn: Any) -> Any:
        t = time.perf_counter()
        try:
            with deadline(limit):
                return fn()
        except Hang:
            out.hangs.append(name)
        except Exception:
            out.tracebacks.append(f"{name}: {traceback.format_exc(limit=-6)}")
        finally:
            out.slowest = max(out.slowest, time.perf_counter() - t)
        return None

    def cli_run(args: list[str]) -> Any:
        res = runner.invoke(cli, args, catch_exceptions=True)
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            exc = res.exception
            raise exc
        return res

    res = step("validate", lambda: cli_run(["validate", "--recipes-dir", str(recipes)]))
    out.validate_errors = res is not None and res.exit_code == 1
    res = step("build-api", lambda: cli_run(["build-api", str(pub / "api"), "--recipes-dir", str(recipes),
                                             "-j", "1"]))
    out.built = res is not None and res.exit_code == 0
    hf_id = rel[:-5] if rel.endswith(".yaml") else rel
    rd = ["--recipes-dir", str(recipes)]
    for name, args in (("command", ["command", hf_id, *rd, "-q"]),
                       ("command-docker-json", ["command", hf_id, *rd, "-q", "--install", "docker", "--json"]),
                       ("command-pd", ["command", hf_id, *rd, "-q", "--strategy", "pd_cluster"]),
                       ("show", ["show", hf_id, *rd]), ("fit", ["fit", hf_id, *rd, "--hardware", "h200"]),
                       *((f"export-{t}", ["export", hf_id, *rd, "--to", t, "-o", "-"])
                         for t in ("k8s", "compose", "slurm", "vllm-config"))):
        step(name, lambda args=args: cli_run(args))
    allowed = {"pub/api", "pub/.api.lock"}
    for f in sorted(_files(work) - before):
        if not any(f == a or f.startswith(a + "/") for a in allowed) and not f.startswith("recipes/"):
            out.outside_writes.append(f)
    if server:
        step("server", lambda: _serve(recipes, rel, text, rng, out))
    return out


def _serve(recipes: Path, rel: str, text: bytes, rng: random.Random, out: Outcome) -> None:
    from starlette.testclient import TestClient

    from vllm_recipes.catalog import load_catalog
    from vllm_recipes.web import create_app

    try:
        data = yaml.safe_load(text)
    except Exception:
        data = None
    hf_id = rel.rsplit(".", 1)[0]
    app = create_app(load_catalog(recipes))
    with TestClient(app, raise_server_exceptions=False) as client:
        for url in page_urls(hf_id, data, rng):
            r = client.get(url)
            if r.status_code >= 500:
                out.server_errors.append(f"{r.status_code} {url}")


def seeds(directory: Path | None = None) -> list[tuple[str, bytes]]:
    """Real recipes (the package's, or those of a recipes ``directory``): ``(models/-relative path, bytes)``."""
    from vllm_recipes.catalog import BUNDLED_DIR

    base = (directory or BUNDLED_DIR) / "models"
    return [(p.relative_to(base).as_posix(), p.read_bytes()) for p in sorted(base.rglob("*.yaml"))]


# --------------------------------------------------------------------------------------------
# URLs
# --------------------------------------------------------------------------------------------

#: Path forms that try to leave the catalog (raw, percent-encoded, double-encoded, backslashes, NUL).
TRAVERSAL_PATHS = [
    "/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/%252e%252e/%252e%252e/etc/passwd",
    "/..%2f..%2f..%2fetc%2fpasswd", "/..%5c..%5cetc%5cpasswd", "/static/../../pyproject.toml",
    "/static/%2e%2e/%2e%2e/pyproject.toml", "/static/..%2f..%2fcatalog%2floader.py", "/static//etc/passwd",
    "/static/%00.css", "/%00", "/deepseek-ai/..%2f..%2f..%2fsecret.txt", "/deepseek-ai/%2e%2e/secret.txt",
    "/deepseek-ai/DeepSeek-V4.1-Flash/../../secret.txt", "/deepseek-ai/DeepSeek-V4.1-Flash.yaml",
    "/models/deepseek-ai/DeepSeek-V4.1-Flash.yaml", "/taxonomy.yaml", "/..;/secret.txt", "/.%2e/secret.txt",
    "/%c0%ae%c0%ae/secret.txt", "/deepseek-ai/DeepSeek-V4.1-Flash/hw/..%2f..%2f..%2fsecret.json",
    "/secret.txt", "/../secret.txt", "/..\\..\\secret.txt", "/.git/config", "/static/.%2e/.%2e/secret.txt",
]
_PARAMS = ["hardware", "strategy", "variant", "nodes", "features", "feature", "prefill_nodes", "decode_nodes",
           "decode_mode", "prefill_mode", "kv_offload", "frontend", "install", "lang", "model", "mode", "task",
           "sort", "q", "prefill_rank", "decode_rank", "rank"]


def fuzz_url(rng: random.Random, hf_ids: list[str]) -> str:
    """One hostile URL: a real or traversal path and a query of odd, huge, repeated or encoded values."""
    kind = rng.randrange(10)
    if kind == 0:
        path = rng.choice(TRAVERSAL_PATHS)
    elif kind == 1:
        path = "/api/resolve"
    elif kind == 2:
        path = "/" + rng.choice(hf_ids) + rng.choice(["", "/builder", ".json", "/hw/b200.json",
                                                         "/strategies/pd_cluster.json", "/hw/../../x.json"])
    elif kind == 3:
        path = "/" + "/".join(quote(str(_random_scalar(rng)), safe="") or "x" for _ in range(rng.randrange(1, 5)))
    elif kind == 4:
        path = rng.choice(["/", "/browse", "/sitemap.xml", "/api/search.json", "/models.json", "/deepseek-ai"])
    else:
        path = "/" + rng.choice(hf_ids)
    params = []
    for _ in range(rng.choice([0, 1, 2, 3, 5, 12, 60])):
        key = rng.choice([*_PARAMS, "", "%00", "a" * 70, "model"])
        value = rng.choice([*STRINGS[:25], *map(str, NUMBERS), "%00", "%ff%fe", "%E2%80%AE", "a" * 600,
                            "%25", "1e999", "-0", " 8", "pd_cluster", "dep", rng.choice(hf_ids)])
        if "%" not in value:
            value = quote(value, safe="")
        params.append(f"{quote(key, safe='%')}={value}")
    if path == "/api/resolve" and rng.random() < 0.8:
        params.insert(0, f"model={quote(rng.choice(hf_ids), safe='/')}")
    return path + ("?" + "&".join(params) if params else "")


def raw_status(port: int, target: str, timeout: float = 20.0) -> int:
    """The status of ``GET target`` sent as is (HTTP clients refuse URLs this long); 0 if the server hung up."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest("GET", target, skip_accept_encoding=True)
        conn.endheaders()
        return conn.getresponse().status
    except (ConnectionError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


# --------------------------------------------------------------------------------------------
# Catalog files and links (a batch's shared files: issue #28.2 strategies as !!binary, taxonomy, symlinks)
# --------------------------------------------------------------------------------------------

#: a recipe-shaped file outside the recipes directory: its text must never reach an output
SECRET = "CANARY-7f3e-outside-the-recipes-dir"
OUTSIDE_RECIPE = f"meta:\n  title: {SECRET}\n  provider: {SECRET}\nmodel:\n  model_id: x/{SECRET}\n"


def mutate_catalog_file(recipes: Path, rng: random.Random, outside: Path) -> str:
    """Break one shared file of ``recipes`` (taxonomy, platforms, a strategy or kv store): the class name."""
    choices = [p for p in (recipes / "taxonomy.yaml", recipes / "platforms.yaml") if p.is_file()]
    choices += sorted((recipes / "strategies").glob("*.yaml")) + sorted((recipes / "kv_store").glob("*.yaml"))
    target = rng.choice(choices)
    cls = {"taxonomy.yaml": "broken-taxonomy", "platforms.yaml": "broken-platforms"}.get(
        target.name, "broken-strategy" if target.parent.name == "strategies" else "broken-kv-store")
    op = rng.randrange(6)
    if op == 0:
        target.write_bytes(b"!!binary aGVsbG8gd29ybGQ=\n")
    elif op == 1:
        target.write_bytes(rng.choice([b"", b"[]\n", b"42\n", b"!!set {a, b}\n", b"? [a]\n: 1\n"]))
    elif op == 2:  # a link out of the recipes directory in place of the file
        target.unlink()
        target.symlink_to(outside / "secret.yaml")
    else:
        target.write_bytes(mutate_labelled(target.read_bytes(), rng)[0])
    return cls


def plant_links(recipes: Path, outside: Path, sibling_rel: str, tag: str) -> list[str]:
    """Recipe links: out of the directory (file and folder), and to a recipe inside. Their ``models/`` paths."""
    (outside / "secret.yaml").write_text(OUTSIDE_RECIPE)
    (outside / "linked").mkdir(exist_ok=True)
    (outside / "linked" / "Secret.yaml").write_text(OUTSIDE_RECIPE)
    d = recipes / "models" / f"fuzzlink{tag}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "Out.yaml").symlink_to(outside / "secret.yaml")
    (d / "In.yaml").symlink_to(recipes / "models" / sibling_rel)
    (recipes / "models" / f"fuzzlinkdir{tag}").symlink_to(outside / "linked", target_is_directory=True)
    return [f"fuzzlink{tag}/Out.yaml", f"fuzzlink{tag}/In.yaml", f"fuzzlinkdir{tag}/Secret.yaml"]


def mutant_urls(hf_id: str, data: Any, rng: random.Random) -> list[str]:
    """The web app's views of one recipe: pages, twins, live API (resolve, export x4, fit, perf), odd params."""
    q = quote(hf_id)
    urls = [f"/{q}", f"/{q}/builder", f"/{q}/page.json", f"/{q}.json", f"/api/resolve?model={q}",
            f"/api/resolve?model={q}&strategy=pd_cluster&prefill_nodes=2&decode_nodes=2",
            f"/{q}?strategy=pd_cluster", f"/api/fit?model={q}", f"/api/perf?model={q}",
            *(f"/api/export?model={q}&to={t}" for t in ("k8s", "compose", "slurm", "vllm-config")),
            f"/api/export?model={q}&to=k8s&strategy=pd_cluster"]
    odd = page_urls(hf_id, data, rng)[6:]
    return urls + rng.sample(odd, min(4, len(odd)))
