"""A new selection's recipe page, in-process (not a test).

Fetches a start page, then each page its builder pills link to (new selections: their
builder is not cached yet) once, and prints the median CPU ms (``process_time``: the app
runs in this process, so it holds on a shared machine), wall ms and ``resolve`` calls
per page. Compare two checkouts by running it with each one's ``src`` on ``PYTHONPATH``.

    python benchmarks/bench_new_page.py [--recipes-dir DIR] START_URL [--pages 9]

e.g. ``/deepseek-ai/DeepSeek-V4.1-Flash?hardware=h200&frontend=python`` (bundled) or
``/moonshotai/Kimi-K3?hardware=h200&frontend=rust`` (public catalog): a frontend choice
rides along on every link, which is where each link used to resolve its target.
"""

from __future__ import annotations

import argparse
import html
import re
import statistics
import sys
import threading
import time
from types import FrameType
from typing import Any

from starlette.testclient import TestClient

from vllm_recipes.catalog import load_catalog
from vllm_recipes.synth import resolve as resolve_module
from vllm_recipes.web import create_app

LINK = re.compile(r'<a class="pill[^"]*" href="([^"]+)" data-nav')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("start")
    ap.add_argument("--recipes-dir")
    ap.add_argument("--pages", type=int, default=9)
    a = ap.parse_args()
    catalog = load_catalog(a.recipes_dir)
    client, counted = (TestClient(create_app(catalog)) for _ in range(2))  # timed; resolves counted
    for c in (client, counted):
        c.get(a.start.split("?")[0])  # an app's first page pays for its warm-up
    page = client.get(a.start).text
    counted.get(a.start)
    links = [u for u in dict.fromkeys(html.unescape(h) for h in LINK.findall(page)) if u != a.start][:a.pages]
    code = resolve_module.resolve.__code__
    calls = [0]

    def count(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code is code:
            calls[0] += 1

    cpu, wall, resolves = [], [], []
    for url in links:
        c0, w0 = time.process_time(), time.perf_counter()
        assert client.get(url).status_code == 200, url
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    for url in links:  # counted apart: the profiler hook slows the run
        calls[0] = 0
        threading.setprofile(count)
        sys.setprofile(count)
        counted.get(url)
        sys.setprofile(None)
        threading.setprofile(None)
        resolves.append(calls[0])
    print(f"{a.start}: {len(links)} new pages, median CPU {statistics.median(cpu):.1f} ms, "
          f"wall {statistics.median(wall):.1f} ms, resolves/page {statistics.median(resolves):g}")


if __name__ == "__main__":
    main()
