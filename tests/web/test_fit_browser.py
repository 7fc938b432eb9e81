"""The Fit panel in real headless Chromium: without JavaScript it is there; with it, context links
update it in place and the URL keeps ``ctx`` while other pills change."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
V4 = "/deepseek-ai/DeepSeek-V4-Flash"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed (apt-get install chromium)"),
]


def concurrency(pg: Any) -> str:
    return pg.locator("#fit tr", has_text="Concurrency").locator("td").first.inner_text()


def test_fit_panel_with_and_without_javascript(browser: Any, live: Any) -> None:
    plain = browser.new_context(base_url=live.url, java_script_enabled=False)
    pg = plain.new_page()
    pg.goto(V4 + "?hardware=h200&ctx=131072")
    assert "at 131,072" in concurrency(pg) and pg.locator("#fit .fit-verdict").inner_text() == "starts"
    plain.close()

    ctx = browser.new_context(base_url=live.url)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(V4 + "?hardware=h200")
    assert "at 1,048,576" in concurrency(pg)
    pg.evaluate("window.__marker = 1")
    pg.click('#fit a[data-key="ctx:256k"]')
    pg.wait_for_url(re.compile(r"ctx=262144$"), timeout=10_000)
    pg.wait_for_function("() => document.querySelector('#fit').textContent.includes('at 262,144')")
    pg.click('a[data-key="hardware:b200"]')
    pg.wait_for_url(re.compile(r"hardware=b200.*ctx=262144"), timeout=10_000)
    pg.wait_for_function("() => document.querySelector('#fit .fit-hw').textContent.includes('B200')")
    assert "at 262,144" in concurrency(pg)
    assert pg.evaluate("window.__marker") == 1 and not errors  # in place, no reload
    ctx.close()
