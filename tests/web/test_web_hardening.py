"""The server on hostile input: skipped recipes, traversal URLs, fuzzed queries, huge requests, idle sockets."""

from __future__ import annotations

import random
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from starlette.testclient import TestClient

from vllm_recipes.catalog import BUNDLED_DIR, load_catalog
from vllm_recipes.web import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import fuzzlib

V41 = "deepseek-ai/DeepSeek-V4.1-Flash"
#: Text only files outside the catalog contain: an answer showing one of them leaked a read.
SECRET = "CANARY-7f3e9b-outside-the-catalog"


def _seed() -> dict[str, Any]:
    return yaml.safe_load((BUNDLED_DIR / "models" / f"{V41}.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory,
                recipe_writer: Callable[[Path, str, object], Path]) -> Path:
    """The bundled recipes plus recipes that fail validation, and secrets beside and inside the root."""
    root = tmp_path_factory.mktemp("hostile") / "recipes"
    models = root / "models"
    (models / "deepseek-ai").mkdir(parents=True)
    for p in (BUNDLED_DIR / "models" / "deepseek-ai").glob("*.yaml"):
        (models / "deepseek-ai" / p.name).write_bytes(p.read_bytes())

    def put(name: str, data: dict[str, Any]) -> None:
        recipe_writer(root, f"evil/{name}", data)

    d = _seed()
    d["strategy_overrides"] = ["not", "a", "mapping"]
    put("BadOverrides", d)
    d = _seed()
    d["compatible_strategies"] = [1, 2.5, True, {"a": 1}, "single_node_tp"]
    put("BadStrategies", d)
    d = _seed()
    d["variants"]["default"]["vram_minimum_gb"] = 2 ** 70
    d["hardware_overrides"] = {1: {"extra_args": ["--x"]}}
    put("BigInts", d)
    d = _seed()
    d["variants"]["fp8"] = {**d["variants"].get("fp8", {}), "model_id": "../../../../tmp/pwned"}
    put("Traversal", d)
    (root.parent / "secret.txt").write_text(SECRET)
    (root / "secret.txt").write_text(SECRET)
    return root


@pytest.fixture(scope="module")
def hostile(hostile_dir: Path) -> Any:
    with TestClient(create_app(load_catalog(hostile_dir)), raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize("name", ["BadOverrides", "BadStrategies", "BigInts", "Traversal"])
def test_invalid_recipes_are_skipped_not_served(hostile: TestClient, name: str) -> None:
    for url in (f"/evil/{name}", f"/evil/{name}?strategy=pd_cluster", f"/evil/{name}/builder",
                f"/evil/{name}.json", f"/api/resolve?model=evil/{name}"):
        r = hostile.get(url)
        assert r.status_code in (400, 404), (url, r.status_code)
    assert f"evil/{name}" not in hostile.get("/models.json").text
    assert hostile.get(f"/{V41}?strategy=pd_cluster").status_code == 200


def test_skipped_recipes_are_logged(hostile_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="vllm_recipes.web"):
        create_app(load_catalog(hostile_dir))
    text = caplog.text
    assert "skipping models/evil/Traversal.yaml" in text and "not a valid model id" in text
    assert "models/evil/BadOverrides.yaml" in text and "strategy_overrides" in text


@pytest.mark.parametrize("path", fuzzlib.TRAVERSAL_PATHS)
def test_traversal_urls_read_nothing_outside(hostile: TestClient, path: str) -> None:
    r = hostile.get(path)
    assert (r.status_code < 500 and r.status_code != 200) or path == "/", (path, r.status_code)
    assert SECRET not in r.text and "root:x:0:0" not in r.text and "[tool." not in r.text
    assert "def load_catalog" not in r.text


def test_fuzzed_urls_never_5xx(hostile: TestClient) -> None:
    rng = random.Random(15)
    ids = [V41, "deepseek-ai/DeepSeek-V4-Flash", "evil/Traversal", "evil/BadOverrides"]
    for _ in range(300):
        url = fuzzlib.fuzz_url(rng, ids)
        r = hostile.get(url)
        assert r.status_code < 500, url
        assert SECRET not in r.text, url


def test_huge_url_and_many_params_over_http(live: Any) -> None:
    for target in ("/" + "a" * 100_000, f"/{V41}?" + "x" * 100_000,
                   f"/{V41}?" + "&".join(f"p{i}=1" for i in range(10_000)),
                   "/api/resolve?" + "&".join(["model=a"] * 10_000)):
        assert fuzzlib.raw_status(live.port, target) in (400, 414), target[:40]
    assert fuzzlib.raw_status(live.port, f"/{V41}") == 200


def test_idle_half_open_connections_do_not_block_others(live: Any) -> None:
    socks = []
    try:
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", live.port), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never finished
            socks.append(s)
        t = time.monotonic()
        r = httpx.get(live.url + f"/{V41}", timeout=10)
        assert r.status_code == 200 and time.monotonic() - t < 5
    finally:
        for s in socks:
            s.close()


def test_skipped_recipe_says_why(hostile: TestClient) -> None:
    r = hostile.get("/api/resolve?model=evil/Traversal")
    assert r.status_code == 400 and "failed to load" in r.json()["error"]
    assert "models/evil/Traversal.yaml:" in r.json()["error"] and ": error: " in r.json()["error"]
