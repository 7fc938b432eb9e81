"""The type checker runs with the tests (so ``.ci/run`` runs it): ``mypy`` is clean on the modules below.

Packages join the list as they become clean (no blanket ignores: a module is
listed only when mypy finds nothing in it). Imported modules that are not yet
clean are followed for their types but not reported (``--follow-imports=silent``).
Not yet clean (errors at the time of writing): ``catalog.validate``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLEAN_PACKAGES = ("vllm_recipes.lint", "vllm_recipes.api", "vllm_recipes.agents", "vllm_recipes.perf",
                  "vllm_recipes.synth", "vllm_recipes.render", "vllm_recipes.cli", "vllm_recipes.review",
                  "vllm_recipes.i18n", "vllm_recipes.fit", "vllm_recipes.service",
                  "vllm_recipes.select", "vllm_recipes.web")
CLEAN_MODULES = ("vllm_recipes.parallel", "vllm_recipes.jsvalues", "vllm_recipes.catalog.identifiers",
                 # every catalog module
                 "vllm_recipes.catalog", "vllm_recipes.catalog.diagnostics", "vllm_recipes.catalog.featuremodes",
                 "vllm_recipes.catalog.fileset", "vllm_recipes.catalog.gitrev", "vllm_recipes.catalog.layers",
                 "vllm_recipes.catalog.loader", "vllm_recipes.catalog.models", "vllm_recipes.catalog.parsecache",
                 "vllm_recipes.catalog.remote", "vllm_recipes.catalog.usable", "vllm_recipes.catalog.validate",
                 "vllm_recipes.catalog.yamlsource")


def test_mypy_is_clean_on_the_typed_packages() -> None:
    args = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary"]
    for p in CLEAN_PACKAGES:
        args += ["-p", p]
    for m in CLEAN_MODULES:
        args += ["-m", m]
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    res = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr

