"""Suite-wide guard: a skipped test must never pass unnoticed.

Golden tests compare our output with the project's own reference renderings
(``tests/golden/expected``); a skip there would silently stop checking
exactness, so any skipped golden test fails the run. Under CI (``CI=true``,
where ``.ci/run`` installs Chromium) every skip fails the run: the suite is
meant to run whole on a fresh clone.
"""

from __future__ import annotations

import os

import pytest

_GOLDEN_MARKERS = ("tests/golden/", "test_api_build_seeds.py", "test_bundled_data.py")


def _is_golden(nodeid: str) -> bool:
    return any(marker in nodeid for marker in _GOLDEN_MARKERS)


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
