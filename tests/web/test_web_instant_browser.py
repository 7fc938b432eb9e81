"""Instant clicks (prefetched fragments swapped from memory), the page without JS, and the restored-selection notice."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
V41 = "/deepseek-ai/DeepSeek-V4.1-Flash"
CODE = "#builder .panel code.cmd-text"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed (apt-get install chromium)"),
]


@pytest.fixture()
def ctx(browser: Any, live: Any) -> Iterator[Any]:
    c = browser.new_context(base_url=live.url, viewport={"width": 1366, "height": 900})
    yield c
    c.close()


def fragment_requests(pg: Any) -> list[str]:
    seen: list[str] = []
    pg.on("request", lambda r: seen.append(r.url) if "/builder" in r.url else None)
    return seen


def test_hover_prefetches_and_click_swaps_from_memory(ctx: Any) -> None:
    pg = ctx.new_page()
    pg.goto(V41)
    seen = fragment_requests(pg)
    target = pg.locator('a[data-key="frontend:python"]')  # not among the idle prefetches (hardware, strategy)
    fragment = target.get_attribute("href").replace(V41, V41 + "/builder", 1)
    pg.hover('a[data-key="frontend:python"]')
    pg.wait_for_function("(u) => performance.getEntriesByType('resource').some(e => e.name.endsWith(u))",
                         arg=fragment)
    before = len(seen)
    assert any(u.endswith(fragment) for u in seen)
    pg.evaluate("window.__marker = 1")
    target.click()
    pg.wait_for_url(re.compile(r"frontend=python"))
    pg.wait_for_function("() => !document.querySelector('#builder .panel code').textContent.includes('VLLM_USE_RUST_FRONTEND=1')")
    assert not any(u.endswith(fragment) for u in seen[before:])  # the clicked fragment came from memory
    assert pg.evaluate("window.__marker") == 1  # swapped in place


def test_idle_prefetch_fetches_likely_next_pills_and_can_be_switched_off(ctx: Any) -> None:
    pg = ctx.new_page()
    seen = fragment_requests(pg)
    pg.goto(V41)
    pg.wait_for_function("() => performance.getEntriesByType('resource').filter(e => e.name.includes('/builder')).length >= 2")
    assert any("hardware=" in u or "strategy=" in u for u in seen)
    pg.evaluate("localStorage.setItem('vllm-recipes:prefetch', 'off')")
    pg.goto(V41)
    seen.clear()
    pg.hover('a[data-key="hardware:h100"]')
    pg.wait_for_timeout(600)
    assert seen == []  # prefetch off: nothing fetched ahead of a click
    pg.click('a[data-key="hardware:h100"]')
    pg.wait_for_function("() => document.querySelector('#builder .panel code').textContent.includes('--tensor-parallel-size 8')")
    assert len(seen) == 1


def test_every_selection_is_a_real_link_without_javascript(browser: Any, live: Any) -> None:
    c = browser.new_context(base_url=live.url, java_script_enabled=False)
    try:
        pg = c.new_page()
        pg.goto(V41)
        assert "--tensor-parallel-size 2" in pg.locator(CODE).first.inner_text()
        pg.click('a[data-key="hardware:h100"]')
        pg.wait_for_url(re.compile(r"\?hardware=h100$"))
        assert "--tensor-parallel-size 8" in pg.locator(CODE).first.inner_text()
        pg.click('a[data-key="strategy:pd_cluster"]')
        pg.wait_for_url(re.compile(r"strategy=pd_cluster"))
        assert pg.locator("#builder [data-deploy] .panel").count() >= 2
        assert pg.locator(".restored").count() == 0
    finally:
        c.close()


def test_restored_selection_is_announced_and_can_be_reset(ctx: Any) -> None:
    pg = ctx.new_page()
    pg.goto(V41)
    pg.evaluate("localStorage.clear()")
    pg.goto(V41)
    assert pg.locator(".restored").count() == 0  # nothing remembered: nothing restored, no notice
    pg.click('a[data-key="hardware:b200"]')
    pg.wait_for_url(re.compile(r"hardware=b200"))
    assert pg.locator(".restored").count() == 0  # the user's own click is not a restoration

    pg.goto(V41)  # a plain recipe URL: the remembered selection comes back, and the page says so
    pg.wait_for_url(re.compile(r"hardware=b200"))
    bar = pg.locator("#builder .restored")
    bar.wait_for()
    assert "Restored your last selection" in bar.inner_text()
    assert pg.locator('a[data-key="hardware:b200"]').get_attribute("aria-current") == "true"

    bar.locator("a[data-reset]").click()
    pg.wait_for_function("() => !document.querySelector('#builder .restored') && location.search === ''")
    assert pg.locator('a[data-key="hardware:gb200"]').get_attribute("aria-current") == "true"  # recommended
    pg.goto(V41)
    pg.wait_for_timeout(400)
    assert pg.url.endswith(V41) and pg.locator(".restored").count() == 0  # forgotten, not restored again

    pg.click('a[data-key="hardware:h100"]')
    pg.wait_for_url(re.compile(r"hardware=h100"))
    pg.goto(V41 + "?hardware=h200")  # the URL always wins: nothing restored, no notice
    pg.wait_for_timeout(400)
    assert pg.url.endswith("?hardware=h200") and pg.locator(".restored").count() == 0
