"""The recipe page in real Chromium: command above the fold (bounding boxes at 1366x900 and 390 px), instant
clicks (prefetched fragments swapped from memory), the page without JS, and the restored-selection notice.

Chromium comes from the ``browser`` fixture, which skips when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

V41 = "/deepseek-ai/DeepSeek-V4.1-Flash"
V4 = "/deepseek-ai/DeepSeek-V4-Flash"
CMD = "#builder .cmd .panel code.cmd-text"
CODE = "#builder .panel code.cmd-text"

pytestmark = pytest.mark.browser


def _page(browser: Any, live: Any, width: int, height: int) -> Iterator[Any]:
    ctx = browser.new_context(base_url=live.url, viewport={"width": width, "height": height})
    pg = ctx.new_page()
    yield pg
    ctx.close()


@pytest.fixture()
def laptop(browser: Any, live: Any) -> Iterator[Any]:
    yield from _page(browser, live, 1366, 900)


@pytest.fixture()
def phone(browser: Any, live: Any) -> Iterator[Any]:
    yield from _page(browser, live, 390, 844)


def _box(pg: Any, selector: str) -> dict[str, float]:
    box = pg.locator(selector).first.bounding_box()
    assert box is not None, selector
    return box  # type: ignore[no-any-return]


@pytest.mark.parametrize("url", [V41, V4, V41 + "?hardware=mi355x", V4 + "?strategy=pd_cluster"])
def test_laptop_command_is_above_the_fold_beside_the_rows(laptop: Any, url: str) -> None:
    laptop.goto(url)
    cmd, rows = _box(laptop, CMD), _box(laptop, "#builder .builder-rows")
    assert cmd["y"] + 80 <= 900, cmd  # at least the first lines of the command, without scrolling
    assert cmd["x"] >= rows["x"] + rows["width"], (cmd, rows)  # side by side
    assert laptop.evaluate("document.documentElement.scrollWidth") <= 1366


def test_laptop_command_column_beside_the_rows_and_never_clipped(laptop: Any) -> None:
    laptop.goto(V41 + "?strategy=pd_cluster")  # many rows
    section, rows, cmd = _box(laptop, "#builder .cmd"), _box(laptop, "#builder .builder-rows"), _box(laptop, CMD)
    assert section["x"] > rows["x"] + rows["width"] and cmd["y"] + cmd["height"] <= 900, cmd
    # the column flows with the page (issue #27): no own scroll box that would hide its lower panels
    assert laptop.evaluate("(e => getComputedStyle(e).overflowY === 'visible' && e.scrollHeight <= e.clientHeight + 1)"
                           "(document.querySelector('#builder .cmd'))")
    laptop.goto(V41)
    laptop.click('a[data-key="hardware:h100"]')
    laptop.wait_for_function("() => document.querySelector('#builder .panel code').textContent.includes('--tensor-parallel-size 8')")
    assert _box(laptop, CMD)["y"] < 900


def test_phone_command_first_copy_button_clear_of_the_code(phone: Any) -> None:
    phone.goto(V41)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    cmd, rows = _box(phone, CMD), _box(phone, "#builder .builder-rows")
    assert cmd["y"] < rows["y"]  # the command comes before the configuration on a phone
    assert cmd["y"] < 1100, cmd
    covered = phone.evaluate("""() => [...document.querySelectorAll('#builder .code > button.copy')]
      .filter(b => b.offsetParent !== null).filter(b => {
        const br = b.getBoundingClientRect(), r = document.createRange();
        r.selectNodeContents(b.parentNode.querySelector('code'));
        return [...r.getClientRects()].some(t => t.width > 0 && t.left < br.right && t.right > br.left
                                                 && t.top < br.bottom && t.bottom > br.top); }).length""")
    assert covered == 0  # the button sits beside the first line, never on the text
    # tapping a pill still updates the command in place
    phone.click('a[data-key="hardware:h100"]')
    phone.wait_for_function("() => document.querySelector('#builder .panel code').textContent.includes('--tensor-parallel-size 8')")


def test_phone_browse_table_reads_as_cards(phone: Any) -> None:
    phone.goto("/browse")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    rows = phone.locator("table.browse tbody tr")
    assert rows.count() >= 2
    for i in range(rows.count()):
        box = rows.nth(i).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        link = rows.nth(i).locator("td a").first
        assert link.is_visible()
    label = phone.evaluate("getComputedStyle(document.querySelector('table.browse td.hw'), '::before').content")
    assert "Verified on" in label


# --- instant clicks, no-JS links, restored selection ------------------------------------------------


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
