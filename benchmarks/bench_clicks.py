"""Click -> new command painted, in headless Chromium on loopback (not a test).

For each CPU throttle rate (Chromium's CDP ``Emulation.setCPUThrottlingRate``)
and each mode, a fresh server (cold caches) is started and a real browser
clicks through a sequence of builder pills the way a person does: the pointer
rests on a pill for ``--hover`` ms, then clicks. The page records, in its own
clock, the time from the click event to the frame after the new builder is in
the DOM (``requestAnimationFrame`` + ``setTimeout``: the frame has painted).

Modes, measured in the same run:
  prefetch   the site as shipped (hover/focus/idle prefetch, swap from memory)
  round-trip prefetch switched off (``localStorage['vllm-recipes:prefetch'] = 'off'``):
             every click fetches its fragment, as the site did before

    .venv/bin/python benchmarks/bench_clicks.py [--hover 150] [--rates 1,4] [--json out.json]

Targets (issue 14, C3): median click -> paint <= 50 ms at 1x and <= 200 ms at 4x.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_web import free_port, start_server  # one server harness for the web benchmarks

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RECIPE = "/deepseek-ai/DeepSeek-V4.1-Flash"
#: a plausible exploration: hardware, strategy, features, frontend, back
CLICKS = ["hardware:h100", "hardware:b200", "strategy:single_node_dep", "hardware:mi355x", "strategy:single_node_tp",
          "frontend:python", "features:spec_decoding", "hardware:h200", "strategy:pd_cluster", "hardware:gb200",
          "strategy:single_node_tep", "hardware:b300"]

PROBE = """
(() => {
  window.__clicks = [];
  document.addEventListener('click', (e) => {
    if (!e.target.closest || !e.target.closest('#builder a[data-nav]')) { return; }
    const t0 = performance.now();
    const before = document.getElementById('builder');
    const obs = new MutationObserver(() => {
      const now = document.getElementById('builder');
      if (now && now !== before) {
        obs.disconnect();
        requestAnimationFrame(() => setTimeout(() => window.__clicks.push(performance.now() - t0), 0));
      }
    });
    obs.observe(document.body, { childList: true, subtree: true });
  }, true);
})();
"""


def run_mode(browser: Any, rate: float, prefetch: bool, hover_ms: int) -> list[float]:
    port = free_port()
    proc = start_server(port, "create_app()")  # cold caches, no warm-up: every fragment renders on demand
    try:
        ctx = browser.new_context(base_url=f"http://127.0.0.1:{port}", viewport={"width": 1366, "height": 900})
        ctx.add_init_script(PROBE)
        if not prefetch:
            ctx.add_init_script("localStorage.setItem('vllm-recipes:prefetch', 'off')")
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": rate})
        page.goto(RECIPE)
        page.wait_for_load_state("networkidle")
        for i, key in enumerate(CLICKS):
            sel = f'#builder a[data-key="{key}"]'
            if page.locator(sel).count() == 0 or "is-active" in (page.locator(sel).get_attribute("class") or ""):
                continue
            page.hover(sel)
            page.wait_for_timeout(hover_ms)
            done = page.evaluate("window.__clicks.length")
            page.click(sel)
            page.wait_for_function("(n) => window.__clicks.length > n", arg=done, timeout=20_000)
            page.wait_for_timeout(50 + i % 3 * 40)  # a person reads the command before moving on
        times = list(page.evaluate("window.__clicks"))
        ctx.close()
        return times
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hover", type=int, default=150, help="ms the pointer rests on a pill before clicking")
    ap.add_argument("--rates", default="1,4", help="CPU throttle rates (comma list)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is not installed")
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {"hover_ms": args.hover, "results": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for rate in (float(r) for r in args.rates.split(",")):
            row: dict[str, Any] = {"rate": rate}
            for mode, prefetch in (("prefetch", True), ("round-trip", False)):
                t = run_mode(browser, rate, prefetch, args.hover)
                row[mode] = {"times_ms": [round(x, 1) for x in t], "n": len(t), "median_ms": round(statistics.median(t), 1),
                             "p90_ms": round(sorted(t)[int(0.9 * (len(t) - 1))], 1), "max_ms": round(max(t), 1)}
            row["ratio_median"] = round(row["prefetch"]["median_ms"] / row["round-trip"]["median_ms"], 3)
            out["results"].append(row)
            print(f"CPU x{rate:g}: prefetch median {row['prefetch']['median_ms']} ms "
                  f"(p90 {row['prefetch']['p90_ms']}, max {row['prefetch']['max_ms']}, n={row['prefetch']['n']}); "
                  f"round-trip median {row['round-trip']['median_ms']} ms (p90 {row['round-trip']['p90_ms']}); "
                  f"ratio {row['ratio_median']}", flush=True)
        browser.close()
    for row in out["results"]:
        print(f"  x{row['rate']:g} per click (prefetch): {row['prefetch']['times_ms']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
