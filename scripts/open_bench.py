"""Page-open benchmark: the app's page against a bare Gradio page with one Plotly bar chart, side by side.

    .venv/bin/python scripts/open_bench.py [--reps 5]

Both servers run at once on this machine; each rep opens both pages in fresh browser contexts, in
alternating order, and times navigation start -> the first animation frame with a bar of the next-token distribution
(the app: the example trace's, before the model has loaded or after; the bare page: its chart). It
prints each time, the medians and their ratio (issue 24's target: the app within 1.5x), and the
app's main-thread long tasks in its first 10 s.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.browser_kit import CHROMIUM_FLAGS, app_server, chromium_path, free_port  # noqa: E402

BARE = """
import sys, gradio as gr, plotly.graph_objects as go
fig = go.Figure(go.Bar(x=[0.49, 0.32, 0.16, 0.04], y=["air", "gases", "nitrogen", "water"], orientation="h"))
with gr.Blocks() as demo:
    gr.Markdown("# A bare page")
    gr.Plot(fig, elem_id="bare-plot")
demo.launch(server_port=int(sys.argv[1]))
"""
LONG_TASKS = """new PerformanceObserver((l) => { window.__long = (window.__long || []).concat(l.getEntries().map(e => e.duration)); })
.observe({type: 'longtask', buffered: true});"""
# the frame in which the first bar is on screen: checked at every animation frame (a frame is painted once the
# page's script gives way, so a bar inserted during a long task counts when that task ends and the bar shows)
FIRST_BAR = """(sel) => { const look = () => { if (document.querySelector(sel)) window.__bar = performance.now(); else requestAnimationFrame(look); };
requestAnimationFrame(look); }"""


def _bare_server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", BARE, str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={"GRADIO_ANALYTICS_ENABLED": "False", "PATH": "/usr/bin:/bin"})
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}", timeout=2).read(1)
            return proc
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("the bare Gradio page did not start")


def _open(browser, url: str, selector: str) -> tuple[float, float]:
    """Seconds from navigation start to the first bar drawn, and the long tasks' total in ms (first 10 s)."""
    ctx = browser.new_context(viewport={"width": 1920, "height": 960})
    page = ctx.new_page()
    page.add_init_script(LONG_TASKS + f"\n({FIRST_BAR})({json.dumps(selector)});")
    page.goto(url)
    page.wait_for_function("() => window.__bar !== undefined", timeout=120_000)
    took = page.evaluate("() => window.__bar") / 1000
    time.sleep(max(0.0, 10 - took))
    long_ms = page.evaluate("() => (window.__long || []).reduce((a, b) => a + b, 0)")
    ctx.close()
    return took, long_ms


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    bare_port = free_port()
    bare = _bare_server(bare_port)
    try:
        with app_server() as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            pages = {"app": (url, "#dist-plot .main-svg .bars .point"), "bare": (f"http://127.0.0.1:{bare_port}", "#bare-plot .main-svg .bars .point")}
            times: dict[str, list] = {"app": [], "bare": []}
            for rep in range(args.reps):
                for name in (("app", "bare") if rep % 2 == 0 else ("bare", "app")):
                    times[name].append(_open(browser, *pages[name]))
                print(f"rep {rep}: app {times['app'][-1][0]:.2f} s (long tasks {times['app'][-1][1]:.0f} ms), "
                      f"bare {times['bare'][-1][0]:.2f} s", flush=True)
            app_s, bare_s = (statistics.median(t for t, _ in times[k]) for k in ("app", "bare"))
            print(f"median: app {app_s:.2f} s, bare Gradio page {bare_s:.2f} s, ratio {app_s / bare_s:.2f} (target <= 1.5); "
                  f"app long tasks in its first 10 s: median {statistics.median(m for _, m in times['app']):.0f} ms")
    finally:
        bare.terminate()


if __name__ == "__main__":
    main()
