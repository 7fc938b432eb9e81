"""Suite-wide guard: a skipped test must never pass unnoticed.

Golden tests compare our output with the project's own reference renderings
(``tests/golden/expected``); a skip there would silently stop checking
exactness, so any skipped golden test fails the run. Under CI (``CI=true``,
where ``.ci/run`` installs Chromium) every skip fails the run: the suite is
meant to run whole on a fresh clone.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from vllm_recipes.catalog import Catalog, load_catalog

_GOLDEN_MARKERS = ("tests/golden/", "test_api_build_seeds.py", "test_bundled_data.py")


def _is_golden(nodeid: str) -> bool:
    return any(marker in nodeid for marker in _GOLDEN_MARKERS)


def pytest_configure(config: pytest.Config) -> None:
    """Keep the parse cache (and everything a test's subprocess writes to it) out of the user's home."""
    if "VLLM_RECIPES_CACHE_DIR" not in os.environ:
        os.environ["VLLM_RECIPES_CACHE_DIR"] = tempfile.mkdtemp(prefix="vllm-recipes-test-cache-")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    skipped = [r.nodeid for r in reporter.stats.get("skipped", [])]
    strict = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    offending = skipped if strict else [n for n in skipped if _is_golden(n)]
    if offending:
        why = "under CI no test may skip" if strict else "golden tests may not skip"
        reporter.write_line(f"FAILED: {len(offending)} skipped test(s); {why}:", red=True)
        for nodeid in offending[:20]:
            reporter.write_line(f"  {nodeid}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The bundled catalog, loaded once for the whole run (a catalog is immutable)."""
    return load_catalog()


def invoke(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    """Run ``vllm-recipes ARGS`` in-process: ``exit_code``, ``stdout`` and ``stderr`` apart."""
    from vllm_recipes.cli.main import cli

    return CliRunner().invoke(cli, list(args), env=env, input=input)


@pytest.fixture
def run_cli() -> Callable[..., Result]:
    """The suite's one CLI runner (:func:`invoke`)."""
    return invoke


def write_recipe(root: Path, hf_id: str, data: object) -> Path:
    """Write ``data`` as the recipe ``models/<hf_id>.yaml`` under ``root``; returns its path."""
    path = root / "models" / f"{hf_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def recipe_writer() -> Callable[[Path, str, object], Path]:
    """The suite's one way to write a recipe fixture file (:func:`write_recipe`)."""
    return write_recipe


#: A recipe whose default PD decode pool is DEP over two 8-GPU nodes (its GPU floor is 16)
#: while TP fits one node: the shape where a pool-mode override must resize the pool.
DEP_POOL_RECIPE = {
    "meta": {"title": "Big"}, "model": {"model_id": "acme/Big"},
    "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 100}},
    "compatible_strategies": ["single_node_tp", "multi_node_tp", "multi_node_dep", "pd_cluster"],
    "strategy_min_gpus": {"multi_node_dep": 16},
    "strategy_overrides": {"pd_cluster": {"decode": {"parallelism": "dep"}}},
}


@pytest.fixture
def dep_pool_catalog_dir(tmp_path: Path) -> Path:
    """A recipes directory holding only ``acme/Big`` (:data:`DEP_POOL_RECIPE`)."""
    path = tmp_path / "models" / "acme" / "Big.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(DEP_POOL_RECIPE, sort_keys=False), encoding="utf-8")
    return tmp_path


def _half_head_closed(port: int, request_line: bytes, wait: float) -> tuple[bool, float]:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:
        slow.sendall(request_line + b"\r\nHost: 127.0.0.1\r\nX-Slow: ")
        started = time.monotonic()
        slow.settimeout(wait)
        try:
            closed = slow.recv(1) == b""
        except TimeoutError:
            closed = False
        except OSError:  # (a reset is closed too)
            closed = True
        return closed, time.monotonic() - started


@pytest.fixture(scope="session")
def half_head_closed() -> Callable[[int, bytes, float], tuple[bool, float]]:
    """Send a request head that never ends to a local server: (closed by the server?, seconds waited)."""
    return _half_head_closed
