"""The recipe page and browse at laptop and phone sizes, measured in real Chromium (issue #27).

Fixtures of our own are shaped like the large public recipes: a long JSON argument, prefill/decode
over many nodes, many verified hardware profiles (two with one display name), a dependency with
a long URL, an optional dependency, and a small dense model whose architecture is unknown (its
Fit panel has nothing to compute). Each assertion is geometric: bounding boxes, scroll sizes,
computed styles, and the text the reader sees.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from vllm_recipes.catalog import load_catalog
from vllm_recipes.web import create_app

CHROMIUM = "/usr/bin/chromium"
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
BIG = "/example-labs/Giant-MoE-3T"
SMALL = "/example-labs/Tiny-Dense-1B"
#: what a page panel must never say: a CLI flag, a CLI name, a recipe file to edit
CLI_WORDS = re.compile(r"(?<![\w-])--[a-z]|vllm-recipes|\.yaml\b|\bPATH\b")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed (apt-get install chromium)"),
]

BIG_MOE = """\
meta:
  title: "Giant-MoE-3T"
  provider: "Example Labs"
  description: "A made-up 3T-parameter multimodal mixture-of-experts model with a very long description that wraps over two lines on a laptop, like the large public recipes do."
  performance_headline: "Tensor parallel, expert parallel and disaggregated prefill/decode profiles for the FP8 checkpoint"
  date_added: 2026-05-01
  date_updated: 2026-05-02
  tasks: [text, multimodal]
  default_hardware: b300
  hardware:
    h100: verified
    h200: verified
    b200: verified
    gb200: verified
    b300: verified
    gb300: verified
    mi300x: verified
    mi325x: verified
    mi355x: verified
    rtx_5090: verified
    rtx_5090_2x: verified
model:
  model_id: example-labs/Giant-MoE-3T
  min_vllm_version: "0.21.0"
  architecture: moe
  parameter_count: "3T"
  active_parameters: "16 experts/token + shared (of 1024 routed)"
  context_length: 1048576
  base_args:
    - "--trust-remote-code"
    - "--attention-config"
    - '{"use_prefill_query_quantization":true,"mla_prefill_backend":"flashinfer","use_trtllm_attention":false,"backend":"FLASHINFER_MLA","flash_attn_max_num_splits_for_cuda_graph":32}'
  base_env:
    VLLM_ENGINE_READY_TIMEOUT_S: "3600"
features:
  tool_calling:
    description: "Tool calling."
    args: ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
variants:
  default:
    precision: fp8
    vram_minimum_gb: 1400
    description: "FP8 checkpoint"
compatible_strategies: [single_node_tp, single_node_tep, multi_node_tp, pd_cluster]
dependencies:
  - label: "Kernel build"
    command: "uv pip install 'giant-kernels @ git+https://example.invalid/giant/kernels.git@0123456789abcdef0123456789abcdef01234567#subdirectory=python'"
  - label: "Optional tracing"
    command: "uv pip install giant-trace"
    note: "Only needed to record kernel traces."
    optional: true
guide: |
  ## Serving

  A long guide would go here.
"""

SMALL_DENSE = """\
meta:
  title: "Tiny-Dense-1B"
  provider: "Example Labs"
  description: "A made-up 1B dense model that needs one GPU."
  date_added: 2026-04-01
  date_updated: 2026-04-02
  tasks: [text]
model:
  model_id: example-labs/Tiny-Dense-1B
  architecture: dense
  parameter_count: "1B"
  context_length: 32768
variants:
  default:
    precision: bf16
    vram_minimum_gb: 4
compatible_strategies: [single_node_tp]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, web: SimpleNamespace) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("ux-catalog")
    models = root / "models" / "example-labs"
    models.mkdir(parents=True)
    (models / "Giant-MoE-3T.yaml").write_text(BIG_MOE, encoding="utf-8")
    (models / "Tiny-Dense-1B.yaml").write_text(SMALL_DENSE, encoding="utf-8")
    with web.LiveServer(create_app(load_catalog(root))) as server:
        yield server


def open_page(browser: Any, site: Any, path: str, viewport: dict[str, int], js: bool = True) -> Any:
    ctx = browser.new_context(base_url=site.url, viewport=viewport, java_script_enabled=js,
                              permissions=["clipboard-read", "clipboard-write"])
    pg = ctx.new_page()
    pg.goto(path)
    if js:
        wait_js(pg, "document.querySelectorAll('button.copy:not([hidden])').length > 0")
    return pg


def wait_js(pg: Any, expression: str, timeout: float = 10.0) -> None:
    """Poll a JavaScript expression from outside the page (the site's CSP forbids eval inside it)."""
    deadline = time.monotonic() + timeout
    while not pg.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


def box(pg: Any, selector: str) -> dict[str, float]:
    b = pg.locator(selector).first.bounding_box()
    assert b is not None, f"{selector} is not rendered"
    return b


def command_box(pg: Any) -> dict[str, float]:
    """The current (visible) command block of the command area."""
    return pg.evaluate("""() => {
      const el = [...document.querySelectorAll('#builder .cmd .panel > .code')].find(e => e.offsetParent !== null);
      const r = el.getBoundingClientRect();
      return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
    }""")


def header_bottom(pg: Any) -> float:
    return pg.evaluate("""() => { const t = document.querySelector('.top');
      return getComputedStyle(t).position === 'sticky' ? t.getBoundingClientRect().bottom : 0; }""")


@pytest.mark.parametrize("path", [BIG, BIG + "?strategy=pd_cluster&prefill_nodes=2&decode_nodes=2"])
def test_laptop_command_fully_in_view_on_load(browser: Any, site: Any, path: str) -> None:
    pg = open_page(browser, site, path, LAPTOP)
    c = command_box(pg)
    assert c["top"] >= header_bottom(pg) and c["bottom"] <= LAPTOP["height"], c
    assert pg.evaluate("scrollY") == 0
    pg.context.close()


def test_output_column_panels_are_reachable_and_never_clipped(browser: Any, site: Any) -> None:
    pg = open_page(browser, site, BIG, LAPTOP)
    # no element of the command column scrolls or clips its own content
    clipped = pg.evaluate("""() => [...document.querySelectorAll('#builder .cmd, #builder .cmd *')]
      .filter(e => e.offsetParent !== null)
      .filter(e => { const s = getComputedStyle(e);
        const clips = v => v !== 'visible';
        return (clips(s.overflowY) && e.scrollHeight > e.clientHeight + 1)
            || (clips(s.overflowX) && e.scrollWidth > e.clientWidth + 1); })
      .map(e => e.tagName + '.' + e.className)""")
    assert clipped == []
    # every panel of the column is reachable by scrolling the page, and is what the reader sees there
    for sel in ["details.env > summary", "details.explain > summary", "[data-vllm-lint] > summary",
                ".snips .tab-bar", "[data-deploy-targets] .tab-bar", "#fit"]:
        loc = pg.locator(f"#builder {sel}").first
        loc.scroll_into_view_if_needed()
        b = loc.bounding_box()
        assert b is not None and b["y"] >= 0 and b["y"] + min(b["height"], 40) <= LAPTOP["height"], sel
        hit = pg.evaluate("([x, y, sel]) => { const e = document.elementFromPoint(x, y); "
                          "return !!e && !!e.closest('#builder ' + sel); }",
                          [b["x"] + 10, b["y"] + min(b["height"], 40) / 2, sel])
        assert hit, f"{sel} is covered or clipped"
    # a Deploy file shows all its lines, not one
    pg.locator("[data-deploy-targets] .panel:visible pre code").first.wait_for()
    code = pg.locator("[data-deploy-targets] .panel:visible pre").first
    lines = pg.evaluate("e => e.textContent.split('\\n').length", code.locator("code").element_handle())
    height = code.bounding_box()["height"]
    assert lines > 20 and height > 15 * lines, (lines, height)
    # a long file shows its first 40 lines and a button for the rest; Copy copies the whole file
    more = pg.locator("[data-deploy-targets] .panel:visible .btn.more")
    total = int(re.search(r"\d+", more.inner_text())[0])
    assert lines == 40 < total
    pg.locator("[data-deploy-targets] .panel:visible button.copy").click()
    wait_js(pg, "navigator.clipboard.readText().then(t => t.length > 0)")
    assert pg.evaluate("navigator.clipboard.readText()").count("\n") + 1 >= total - 1
    more.click()
    assert pg.evaluate("e => e.textContent.split('\\n').length", code.locator("code").element_handle()) == total
    pg.context.close()


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_long_lines_wrap_and_the_copy_button_covers_no_text(browser: Any, site: Any,
                                                           viewport: dict[str, int]) -> None:
    pg = open_page(browser, site, BIG, viewport)
    wide = pg.evaluate("""() => [...document.querySelectorAll('#builder .cmd pre')]
      .filter(p => p.offsetParent !== null && p.scrollWidth > p.clientWidth + 1).length""")
    assert wide == 0
    overlaps = pg.evaluate("""() => {
      const hits = [];
      for (const b of document.querySelectorAll('#builder .code > button.copy')) {
        if (b.offsetParent === null) continue;
        const br = b.getBoundingClientRect();
        const r = document.createRange(); r.selectNodeContents(b.parentNode.querySelector('code'));
        for (const t of r.getClientRects()) {
          if (t.width > 0 && t.left < br.right && t.right > br.left && t.top < br.bottom && t.bottom > br.top) {
            hits.push(b.parentNode.textContent.slice(0, 40)); break; }
        }
      }
      return hits; }""")
    assert overlaps == []
    # the wrapped command copies exactly: the JSON value stays one argument on one line
    pg.locator("#builder .cmd .panel > .code > button.copy").first.click()
    wait_js(pg, "document.querySelector('#builder .cmd .panel > .code > button.copy').textContent === 'Copied'")
    copied = pg.evaluate("navigator.clipboard.readText()")
    assert copied == pg.locator("#builder .cmd .panel > .code code").first.text_content()
    assert "  --attention-config '{\"use_prefill_query_quantization\":true," in copied
    assert re.search(r"--attention-config '\{[^\n]*\}' \\\n", copied)
    pg.context.close()


def test_phone_command_first_and_in_view_after_a_tap(browser: Any, site: Any) -> None:
    pg = open_page(browser, site, BIG, PHONE)
    c = command_box(pg)
    rows = box(pg, "#builder .builder-rows")
    assert c["top"] < rows["y"] and c["top"] < PHONE["height"]
    install = box(pg, "#builder .install")
    assert c["bottom"] <= install["y"]  # the command comes before the install steps
    pill = pg.locator("#builder .builder-rows a.pill[data-key='hardware:h200']")
    pill.scroll_into_view_if_needed()
    assert command_box(pg)["bottom"] < 0  # scrolled past the command to reach the pill
    pill.click()
    pg.wait_for_url(re.compile(r"hardware=h200"))
    wait_js(pg, "document.querySelector('#builder').dataset.url.includes('hardware=h200')")
    c = command_box(pg)
    assert 0 <= c["top"] < PHONE["height"] * 0.6, c
    assert "--tensor-parallel-size" in pg.locator("#builder .cmd .panel > .code code").first.text_content()
    pg.context.close()


def test_no_cli_words_in_fit_and_deploy_panels(browser: Any, site: Any) -> None:
    # the Fit panel of a model whose architecture is unknown: plain words, no dead context pills
    pg = open_page(browser, site, SMALL, LAPTOP)
    fit = pg.locator("#fit").inner_text()
    assert "architecture" in fit and not CLI_WORDS.search(fit), fit
    assert pg.locator("#fit .fit-ctx").count() == 0
    pg.context.close()
    # a multi-node PD selection cannot be one Compose file: the tab says why in the page's terms
    pg = open_page(browser, site, BIG + "?strategy=pd_cluster&prefill_nodes=2&decode_nodes=2", LAPTOP)
    pg.locator("label[for='dt-compose']").click()
    refusal = pg.locator("[data-target='compose'] .refusal")
    refusal.wait_for()
    text = refusal.inner_text()
    assert "tab" in text and not CLI_WORDS.search(text), text
    for key in ("k8s", "slurm", "vllm-config"):
        pg.locator(f"label[for='dt-{key}']").click()
        panel = pg.locator(f"[data-target='{key}']")
        wait_js(pg, f"document.querySelector(\"[data-target='{key}'] code\").textContent.length > 0 "
                             f"|| !!document.querySelector(\"[data-target='{key}'] .refusal\")")
        if panel.locator(".refusal").count():
            assert not CLI_WORDS.search(panel.locator(".refusal").inner_text())
    fit = pg.locator("#fit").inner_text()
    assert not CLI_WORDS.search(fit), fit
    pg.context.close()


def test_pills_stay_beside_their_labels_and_16_node_pools_fit_one_line(browser: Any, site: Any) -> None:
    pg = open_page(browser, site, BIG + "?strategy=pd_cluster&prefill_nodes=16&decode_nodes=16", LAPTOP)
    under = pg.evaluate("""() => [...document.querySelectorAll('#builder .pills[data-brand]')].flatMap(g => {
      const label = g.querySelector('.group-l').getBoundingClientRect();
      return [...g.querySelectorAll('.pill')].filter(p => p.getBoundingClientRect().left < label.right)
        .map(p => p.textContent); })""")
    assert under == []
    for row in ("pd-prefill", "pd-decode", "prefill-rank"):
        tops = pg.evaluate(f"""() => [...document.querySelectorAll("#builder [data-row='{row}'] > .pill")]
          .map(p => Math.round(p.getBoundingClientRect().top))""")
        assert len(tops) == 16 and len(set(tops)) == 1, (row, tops)
    pg.context.close()


def test_optional_dependency_text_is_readable(browser: Any, site: Any) -> None:
    pg = open_page(browser, site, BIG, LAPTOP)
    ratio = pg.evaluate("""() => {
      const note = document.querySelector('#builder .extra.optional .note');
      let e = note, opacity = 1;
      while (e) { opacity *= parseFloat(getComputedStyle(e).opacity); e = e.parentElement; }
      const rgb = s => s.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
      const lum = c => { const v = c.map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
      let bg = note; while (getComputedStyle(bg).backgroundColor === 'rgba(0, 0, 0, 0)') bg = bg.parentElement;
      const fg = rgb(getComputedStyle(note).color), back = rgb(getComputedStyle(bg).backgroundColor);
      const mixed = fg.map((x, i) => x * opacity + back[i] * (1 - opacity));
      const [a, b] = [lum(mixed), lum(back)].sort((x, y) => y - x);
      return (a + 0.05) / (b + 0.05); }""")
    assert ratio >= 4.5, ratio
    pg.context.close()


@pytest.mark.parametrize(("query", "canonical"), [("?hardware=h999", ""), ("?hardware=B200", "?hardware=b200"),
                                                  ("?hardware=B300&nodes=oops", "")])
def test_bad_url_parameters_are_canonicalised_in_the_address_bar(browser: Any, site: Any, query: str,
                                                                 canonical: str) -> None:
    pg = open_page(browser, site, BIG + query, LAPTOP)
    wait_js(pg, f"location.search === {canonical!r}")
    assert pg.evaluate("location.pathname") == BIG
    pg.context.close()


def test_browse_fits_a_laptop_and_reaches_the_first_recipe_on_a_phone(browser: Any, site: Any) -> None:
    pg = open_page(browser, site, "/browse", LAPTOP, js=False)
    assert pg.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"]
    table = box(pg, "table.browse")
    assert table["x"] + table["width"] <= LAPTOP["width"] - 12
    # "Verified on" takes at most three lines (eleven profiles here)
    assert pg.evaluate("[...document.querySelectorAll('table.browse tbody td.hw')].every(td => { "
                       "const r = document.createRange(); r.selectNodeContents(td); "
                       "return r.getBoundingClientRect().height < 70; })")
    for label in pg.locator(".filters .frow").all():
        chips = [re.sub(r"\s+\d+$", "", c.strip()) for c in label.locator(".pill").all_inner_texts()]
        assert len(chips) == len(set(chips)), chips
    assert "RTX 5090 ×2" in pg.locator(".filters").inner_text()
    pg.context.close()
    pg = open_page(browser, site, "/browse", PHONE, js=False)
    first = box(pg, "table.browse tbody tr")
    assert first["y"] < 1.5 * PHONE["height"] and first["height"] < 160, first
    assert pg.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    pg.context.close()


def test_the_page_works_without_javascript(browser: Any, site: Any) -> None:
    pg = open_page(browser, site, BIG, PHONE, js=False)
    c = command_box(pg)
    assert c["top"] < box(pg, "#builder .builder-rows")["y"]
    pg.locator("#builder .builder-rows a.pill[data-key='hardware:h200']").click()
    pg.wait_for_url(re.compile(r"hardware=h200"))
    assert "vllm serve example-labs/Giant-MoE-3T" in pg.locator("#builder .cmd .panel > .code code").first.inner_text()
    pg.context.close()


VISIBLE_CLIPPING = """(root) => [...document.querySelectorAll(root + ', ' + root + ' *')]
  .filter(e => e.offsetParent !== null && e.clientWidth > 1 && e.clientHeight > 1)  /* not the 1 px screen-reader text */
  .filter(e => { const s = getComputedStyle(e); const clips = v => v !== 'visible';
    return (clips(s.overflowY) && e.scrollHeight > e.clientHeight + 1)
        || (clips(s.overflowX) && e.scrollWidth > e.clientWidth + 1); })
  .map(e => e.tagName + '.' + e.className)"""


@pytest.mark.parametrize("path", [BIG, BIG + "?strategy=pd_cluster&prefill_nodes=2&decode_nodes=2"])
def test_phone_output_column_never_scrolls_or_clips_with_every_panel_open(browser: Any, site: Any,
                                                                          path: str) -> None:
    """Explain's table too: on a phone each flag is a block, nothing scrolls sideways."""
    pg = open_page(browser, site, path, PHONE)
    pg.evaluate("document.querySelectorAll('#builder details').forEach(d => { d.hidden = false; d.open = true; })")
    assert pg.evaluate(VISIBLE_CLIPPING, "#builder .cmd") == []
    assert pg.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    pg.context.close()


def test_phone_page_head_is_short(browser: Any, site: Any) -> None:
    """A long description, a headline and seven facts: the command still starts high on a phone."""
    pg = open_page(browser, site, BIG, PHONE)
    assert command_box(pg)["top"] <= 460, command_box(pg)
    pg.context.close()


def test_mooncake_instance_pills_stay_on_one_line(browser: Any, site: Any) -> None:
    pg = open_page(browser, site, BIG + "?kv_offload=kv_store_distributed_mooncake&kv_instances=16", LAPTOP)
    for row in ("kv-instances", "kv-instance"):
        tops = pg.evaluate(f"""() => [...document.querySelectorAll("#builder [data-row='{row}'] > .pill")]
          .map(p => Math.round(p.getBoundingClientRect().top))""")
        assert len(tops) == 16 and len(set(tops)) == 1, (row, tops)
    pg.context.close()


def test_performance_panel_speaks_the_page_language(browser: Any, site: Any) -> None:
    """No CLI flags in its prose (the command to measure with is a command, in code); a model whose
    architecture is unknown gets the reason and no workload pills that would do nothing."""
    for path in (BIG + "?isl=1024#perf", SMALL + "?isl=1024#perf"):
        pg = open_page(browser, site, path, LAPTOP)
        prose = pg.evaluate("""() => { const p = document.querySelector('#perf').cloneNode(true);
          p.querySelectorAll('code, pre').forEach(c => c.remove()); return p.innerText; }""")
        assert not CLI_WORDS.search(prose), prose
        assert pg.evaluate(VISIBLE_CLIPPING, "#perf") == []
        if "No estimate" in prose:
            assert pg.locator("#perf .pill").count() == 0
        pg.context.close()
