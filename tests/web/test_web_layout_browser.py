"""Layout in real Chromium: the command is above the fold on a laptop and usable on a phone (bounding boxes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
V41 = "/deepseek-ai/DeepSeek-V4.1-Flash"
V4 = "/deepseek-ai/DeepSeek-V4-Flash"
CMD = "#builder .cmd .panel code.cmd-text"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed (apt-get install chromium)"),
]


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


def test_laptop_command_column_stays_in_view_while_scrolling_the_rows(laptop: Any) -> None:
    laptop.goto(V41 + "?strategy=pd_cluster")  # many rows
    before = _box(laptop, "#builder .cmd")
    laptop.evaluate("window.scrollTo(0, 320)")
    laptop.wait_for_function("() => window.scrollY >= 300")
    section, cmd = _box(laptop, "#builder .cmd"), _box(laptop, CMD)
    assert before["y"] > 200 and 56 - 0.5 <= section["y"] <= 80, section  # sticky under the site header
    assert cmd["y"] < 900 and cmd["y"] + cmd["height"] > 56, cmd  # the command is still on screen
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
    for code in phone.locator("#builder .code").all():
        if not code.is_visible():
            continue
        button = code.locator("button.copy").bounding_box()
        pre = code.locator("pre").bounding_box()
        assert button is not None and pre is not None
        assert button["y"] + button["height"] <= pre["y"] + 0.5, (button, pre)  # above the code, never on it
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
    label = phone.evaluate("getComputedStyle(document.querySelector('table.browse td[data-label=Provider]'), '::before').content")
    assert "Provider" in label
