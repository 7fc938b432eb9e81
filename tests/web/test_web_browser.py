"""The site in real headless Chromium (Debian's /usr/bin/chromium driven by Playwright).

Never downloads a browser: without /usr/bin/chromium these tests are skipped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
V41 = "/deepseek-ai/DeepSeek-V4.1-Flash"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed (apt-get install chromium)"),
]


@pytest.fixture()
def page(browser: Any, live: Any) -> Iterator[Any]:
    ctx = browser.new_context(base_url=live.url, viewport={"width": 1280, "height": 900},
                              permissions=["clipboard-read", "clipboard-write"])
    pg = ctx.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    yield pg
    ctx.close()


def command(pg: Any) -> str:
    return pg.locator("#builder .panel code.cmd-text").first.inner_text()


def wait_url(pg: Any, pattern: str) -> None:
    pg.wait_for_url(re.compile(pattern), timeout=10_000)


def test_default_page_and_hardware_change_updates_in_place(page: Any) -> None:
    page.goto(V41)
    assert "--tensor-parallel-size 2" in command(page)
    assert "VLLM_USE_RUST_FRONTEND=1" in command(page)
    assert page.locator('a[data-key="hardware:gb200"]').get_attribute("aria-current") == "true"
    page.evaluate("window.__marker = 42")
    page.click('a[data-key="hardware:h100"]')
    wait_url(page, r"\?hardware=h100$")
    page.wait_for_function("() => document.querySelector('a[data-key=\"hardware:h100\"]').getAttribute('aria-current') === 'true'")
    assert "--tensor-parallel-size 8" in command(page)
    assert page.evaluate("window.__marker") == 42  # no full reload
    assert not page.errors, page.errors


def test_variant_strategy_features_change_command_and_url(page: Any) -> None:
    page.goto("/deepseek-ai/DeepSeek-V4-Flash")
    before = command(page)
    page.click('a[data-key="variant:nvfp4"]')
    wait_url(page, r"variant=nvfp4")
    page.wait_for_function("() => document.querySelector('a[data-key=\"variant:nvfp4\"]').classList.contains('is-active')")
    assert command(page) != before

    page.goto(V41)
    page.click('a[data-key="strategy:single_node_dep"]')
    wait_url(page, r"strategy=single_node_dep")
    page.wait_for_function("() => document.querySelector('#builder .panel code').textContent.includes('--data-parallel-size')")

    before = command(page)
    page.click('a[data-key="features:spec_decoding"]')
    wait_url(page, r"features=.*spec_decoding")
    page.wait_for_function("() => document.querySelector('#builder .panel code').textContent.includes('--speculative-config')")
    assert page.locator('a[data-key="features:spec_decoding"]').get_attribute("aria-checked") == "true"
    assert command(page) != before
    # mutual exclusion: text_only switches encoder_parallel off
    page.click('a[data-key="features:text_only"]')
    page.wait_for_function("() => document.querySelector('#builder .panel code').textContent.includes('--language-model-only')")
    assert "--mm-encoder-tp-mode" not in command(page)
    assert page.locator('a[data-key="features:encoder_parallel"]').get_attribute("aria-checked") == "false"
    assert not page.errors, page.errors


def test_pd_tabs_and_back_button(page: Any) -> None:
    page.goto(V41)
    page.click('a[data-key="strategy:pd_cluster"]')
    wait_url(page, r"strategy=pd_cluster")
    page.wait_for_selector('label.tab:has-text("Decode")')
    page.click('label.tab:has-text("Decode")')
    visible = page.locator("#builder [data-deploy] .panel:visible code").first.inner_text()
    assert "kv_consumer" in visible
    page.go_back()
    wait_url(page, r"DeepSeek-V4\.1-Flash$")
    page.wait_for_function("() => !document.querySelector('[data-deploy]')")
    assert "--tensor-parallel-size 2" in command(page)


def test_copy_button_copies_the_command(page: Any) -> None:
    page.goto(V41)
    expected = command(page)
    page.locator("#builder .panel .code button.copy").first.click()
    page.wait_for_function("() => document.querySelector('#builder .panel .code button.copy').textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == expected


def test_reload_restores_selection_from_url(page: Any) -> None:
    page.goto(V41)
    page.click('a[data-key="hardware:mi355x"]')
    wait_url(page, r"hardware=mi355x")
    page.wait_for_function("() => document.querySelector('#builder .panel code').textContent.includes('rocm')")
    shown = command(page)
    page.reload()
    assert page.url.endswith("?hardware=mi355x")
    assert command(page) == shown
    assert page.locator('a[data-key="hardware:mi355x"]').get_attribute("aria-current") == "true"


def test_keyboard_navigation(page: Any) -> None:
    page.goto(V41)
    page.focus('a[data-key="hardware:gb200"]')
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.getAttribute('data-key')") == "hardware:b300"
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("document.activeElement.getAttribute('data-key')") == "hardware:b200"
    page.keyboard.press("Enter")
    wait_url(page, r"hardware=b200")
    page.wait_for_function("() => document.activeElement && document.activeElement.getAttribute('data-key') === 'hardware:b200'")
    assert page.locator('a[data-key="hardware:b200"]').get_attribute("aria-current") == "true"
    # Tab moves on to the next focusable control
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.tagName") == "A"


def test_env_panel_substitutes_names(page: Any) -> None:
    page.goto(V41 + "?strategy=pd_cluster")
    page.click("details[data-env-panel] > summary")
    page.fill('input[data-env="ROUTER_HOST"]', "10.1.2.3")
    page.fill('input[data-env="PREFILL_NODE_1"]', "prefill-a")
    snippet = page.locator("code.snippet").first.inner_text()
    assert "http://10.1.2.3:30000/v1/chat/completions" in snippet
    text = page.locator("#builder [data-deploy] .panel code.cmd-text").all_inner_texts()
    joined = "\n".join(text)
    assert "prefill-a" in joined and "$PREFILL_NODE_1" not in joined
    # values persist across a selection change
    page.click('a[data-key="frontend:python"]')
    wait_url(page, r"frontend=python")
    page.wait_for_function("() => document.querySelector('input[data-env=\"ROUTER_HOST\"]').value === '10.1.2.3'")


def test_search_shortcut_and_results(page: Any) -> None:
    page.goto("/")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "site-q"
    page.keyboard.type("v4.1 flash")
    page.wait_for_selector("#search-results:not([hidden]) a")
    links = page.locator("#search-results a").all_inner_texts()
    assert any("DeepSeek-V4.1-Flash" in t for t in links)
    assert any("Browse" in t for t in links)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+k")
    assert page.evaluate("document.activeElement.id") == "site-q"


def test_remembered_hardware_is_restored_on_a_bare_url(page: Any) -> None:
    page.goto(V41)
    page.click('a[data-key="hardware:b200"]')
    wait_url(page, r"hardware=b200")
    page.goto(V41)  # no parameters: the per-recipe memory applies
    wait_url(page, r"hardware=b200")
    page.goto(V41 + "?hardware=h200")  # the URL always wins
    page.wait_for_timeout(300)
    assert page.url.endswith("?hardware=h200")


def test_screenshot_artifact(page: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(V41)
    page.screenshot(path=str(ARTIFACTS / "recipe-page.png"), full_page=False)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(V41 + "?strategy=pd_cluster")
    page.screenshot(path=str(ARTIFACTS / "recipe-page-mobile.png"))
    assert (ARTIFACTS / "recipe-page.png").stat().st_size > 10_000
    # no horizontal overflow of the page itself on a phone
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_zh_translation_page(page: Any) -> None:
    pytest.importorskip("vllm_recipes.i18n")
    page.goto(V41 + "?lang=zh")
    assert page.evaluate("document.documentElement.lang") == "zh"
    assert page.locator(".i18n-notice--stale").count() == 0  # the package ships an up-to-date translation
    page.locator('.langs a[hreflang="en"]').click()
    wait_url(page, r"lang=en")
    assert page.evaluate("document.documentElement.lang") == "en"


def test_stale_zh_notice_links_to_the_original(browser: Any, live_stale_zh: Any) -> None:
    pytest.importorskip("vllm_recipes.i18n")
    page = browser.new_context(base_url=live_stale_zh.url).new_page()
    page.goto(V41 + "?lang=zh")
    notice = page.locator(".i18n-notice--stale").first
    assert notice.is_visible()
    notice.locator("a").click()
    wait_url(page, r"lang=en#")
    assert page.evaluate("document.documentElement.lang") == "en"


def test_recipe_html_cannot_run_script(browser: Any, live_xss: Any) -> None:
    ctx = browser.new_context(base_url=live_xss.url)
    pg = ctx.new_page()
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.goto("/evil/XSS-7B")
    for link in pg.locator(".md a").all():
        link.click(no_wait_after=True)
    pg.hover(".md")
    pg.wait_for_timeout(300)
    assert pg.evaluate("window.__xss") is None
    assert not dialogs
    ctx.close()


def test_cuda_choice_switches_the_docker_run_image_and_is_remembered(page: Any) -> None:
    page.goto(V41)  # NVIDIA, Docker tab, nightly image
    assert "vllm/vllm-openai:nightly deepseek-ai/" in command(page)
    page.click('label[for="cuda-129"]')
    page.wait_for_function("() => document.querySelector('#builder .panel code.cmd-text').textContent"
                           ".includes('vllm/vllm-openai:cu129-nightly deepseek-ai/')")
    assert page.locator(".cuda-alt code").inner_text() == "docker pull vllm/vllm-openai:cu129-nightly"
    page.click('a[data-key="hardware:h100"]')
    wait_url(page, r"hardware=h100")
    page.wait_for_function("() => document.querySelector('a[data-key=\"hardware:h100\"]').classList.contains('is-active')")
    assert page.locator("#cuda-129").is_checked()
    assert "vllm/vllm-openai:cu129-nightly deepseek-ai/" in command(page)
    page.click('label[for="cuda-130"]')
    assert "vllm/vllm-openai:nightly deepseek-ai/" in command(page)
    assert not page.errors, page.errors


def test_hardware_memory_restores_only_an_nvidia_last_pick(page: Any) -> None:
    page.goto(V41)
    page.click('a[data-key="hardware:b200"]')
    wait_url(page, r"hardware=b200")
    page.click('a[data-key="hardware:mi355x"]')
    wait_url(page, r"hardware=mi355x")
    page.goto("/deepseek-ai/DeepSeek-V4-Flash")  # last pick is AMD: not restored
    page.wait_for_timeout(400)
    assert page.url.endswith("/deepseek-ai/DeepSeek-V4-Flash")
    page.goto(V41 + "?hardware=mi355x")
    page.click('a[data-key="hardware:h100"]')
    wait_url(page, r"hardware=h100")
    page.goto("/deepseek-ai/DeepSeek-V4-Flash")  # last pick is NVIDIA: restored on another recipe
    wait_url(page, r"DeepSeek-V4-Flash\?hardware=h100$")


def test_env_substitution_is_one_pass(page: Any) -> None:
    page.goto(V41 + "?strategy=pd_cluster")
    page.click("details[data-env-panel] > summary")
    page.fill('input[data-env="PREFILL_NODE_1"]', "$DECODE_NODE_1")
    page.fill('input[data-env="DECODE_NODE_1"]', "d1")
    joined = "\n".join(page.locator("#builder [data-deploy] .panel code.cmd-text").all_inner_texts())
    assert "$PREFILL_NODE_1" not in joined and "d1" in joined
    assert "$DECODE_NODE_1" in joined  # a value is inserted as is, never substituted again
    page.fill('input[data-env="PREFILL_NODE_1"]', "")  # empty field: the name comes back
    joined = "\n".join(page.locator("#builder [data-deploy] .panel code.cmd-text").all_inner_texts())
    assert "$PREFILL_NODE_1" in joined
