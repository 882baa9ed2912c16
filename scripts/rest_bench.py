"""A page at rest: what an open page costs while nobody touches it, with Gradio's status trackers' frames a tenth of a
second apart (assets/status_frames.js) and without, side by side in one run.

    .venv/bin/python scripts/rest_bench.py [--reps 3] [--seconds 8] [--width 1366 --height 768]

Each rep opens the app's page in a fresh Chromium context twice, alternating which goes first: as served, and with
status_frames.js told not to start (an init script names it as started already: the page as it was). Once the model
line says "Model:" and the page has rested 2 s, it measures over `--seconds`: the animation frames the page asks for
(every caller of requestAnimationFrame, counted from before any script of the page), the page's tasks (Chromium's
TaskDuration, the page's own), and the CPU time of Chromium's renderer and GPU processes (the one page open).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.browser_kit import CHROMIUM_FLAGS, app_server, chromium_path, new_page, wait_model_loaded  # noqa: E402

COUNT_FRAMES = """(() => { const raf = window.requestAnimationFrame; window.__frames = 0;
  window.requestAnimationFrame = function (fn) { window.__frames++; return raf.call(this, fn); }; })();"""
AS_IT_WAS = "window.LLMStatusFrames = { off: true };"  # (assets/status_frames.js starts only once)


def chromium_cpu() -> dict[str, float]:
    """CPU seconds so far of Chromium's renderer and GPU processes (Linux /proc)."""
    tick, out = os.sysconf("SC_CLK_TCK"), {"renderer": 0.0, "gpu": 0.0}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_text()
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kind = "renderer" if "--type=renderer" in cmd else "gpu" if "--type=gpu-process" in cmd else None
        if kind and "chrom" in cmd:
            out[kind] += (int(stat[11]) + int(stat[12])) / tick
    return out


def at_rest(browser, url: str, as_it_was: bool, seconds: float, size: tuple[int, int]) -> dict[str, float]:
    page = new_page(browser, width=size[0], height=size[1], record_toasts=False)
    page.add_init_script(COUNT_FRAMES)
    if as_it_was:
        page.add_init_script(AS_IT_WAS)
    page.goto(url)
    page.wait_for_selector("#panel-distribution .js-plotly-plot", timeout=60_000)
    wait_model_loaded(page)
    page.wait_for_timeout(2000)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    task = lambda: next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")  # noqa: E731
    f0, t0, c0 = page.evaluate("() => window.__frames"), task(), chromium_cpu()
    time.sleep(seconds)
    f1, t1, c1 = page.evaluate("() => window.__frames"), task(), chromium_cpu()
    page.context.close()
    return {"frames/s": (f1 - f0) / seconds, "tasks %": 100 * (t1 - t0) / seconds,
            "renderer %": 100 * (c1["renderer"] - c0["renderer"]) / seconds, "gpu %": 100 * (c1["gpu"] - c0["gpu"]) / seconds}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--width", type=int, default=1366)
    ap.add_argument("--height", type=int, default=768)
    a = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    got: dict[bool, list[dict]] = {False: [], True: []}
    with app_server() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        at_rest(browser, url, False, 1.0, (a.width, a.height))  # (the server's first page, not counted)
        for rep in range(a.reps):
            for was in ((True, False) if rep % 2 == 0 else (False, True)):
                got[was].append(at_rest(browser, url, was, a.seconds, (a.width, a.height)))
                print(f"rep {rep} {'as it was' if was else 'as served'}: " + ", ".join(f"{k} {v:.1f}" for k, v in got[was][-1].items()), flush=True)
        browser.close()
    for was in (True, False):
        rows = got[was]
        print(f"{'as it was' if was else 'as served':>10} (median of {len(rows)}): "
              + ", ".join(f"{k} {statistics.median(r[k] for r in rows):.1f}" for k in rows[0]))


if __name__ == "__main__":
    main()
