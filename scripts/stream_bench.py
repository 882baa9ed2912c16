"""The page while a run streams: how much of the browser's main thread one Generate takes, on a laptop's CPU and a phone's.

    .venv/bin/python scripts/stream_bench.py [--tokens 64] [--throttle 1,4] [--reps 3]

It starts the app and headless Chromium; each rep opens two fresh pages in turn (390x844 touch), both in English:
one as the page opens now, one that has also run Gradio's relabelling listener (ui/language.py `relabelling`), as every
page did at open before 2026-12-07. On each, at each CPU throttle (Chromium's own: 4 is a mid-range phone), one greedy
Raw-text Generate of --tokens tokens, under a CPU profile. Printed per page and throttle: when the run's last token
was on screen (the page's own clock, from the click), the main thread's busy time over the run (CDP
Performance.TaskDuration), and the part of it in Gradio's `update_loading_stati_state` (its bookkeeping at every
message of a run: it reads every component any event of the page has touched). The browser and the app share this
machine's cores, so the times move between reps: compare the two pages within a rep.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.browser_kit import CHROMIUM_FLAGS, app_server, chromium_path, new_page, wait_model_loaded  # noqa: E402

GRADIO_BOOKKEEPING = "update_loading_stati_state"
# the run's end in the page's own clock: the new run's "stopped" line drawn (the old text marked stale first)
WATCH = """() => { document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'));
  const o = document.querySelector('#output'); window.__end = null;
  new MutationObserver(() => { if (window.__end === null && o.querySelector('.stop-reason:not(.stale)'))
    window.__end = performance.now() - window.__t0; }).observe(o, {subtree: true, childList: true}); }"""


def _inclusive_ms(profile: dict, name: str) -> float:
    """Milliseconds of the CPU profile's samples with a function called `name` on their stack."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", [])}
    total = 0.0
    for sample, dt in zip(profile["samples"], profile["timeDeltas"]):
        i = sample
        while i in nodes and nodes[i]["callFrame"]["functionName"] != name:
            i = parent.get(i)
        total += dt if i in nodes else 0
    return total / 1000.0


def _set_up(page, url: str, tokens: int, relabelled: bool, words_fn: int) -> None:
    page.goto(url)
    wait_model_loaded(page)
    if relabelled:  # as every page did at open before: the relabelling ran (nothing to change in English)
        with page.expect_response(lambda r: r.request.method == "POST" and f'"fn_index":{words_fn}' in (r.request.post_data or "")
                                  .replace(" ", "")):
            page.evaluate("() => LLMBridge.send('words')")
    page.get_by_label("Raw text").check()
    page.fill("#prompt textarea", "The history of the printing press")
    for field, value in (("max-new-tokens", tokens), ("temperature", 0)):
        page.fill(f"#{field} input", str(value))
        page.press(f"#{field} input", "Enter")
    page.wait_for_function("() => document.querySelector('#temperature input').value === '0'")


def one_run(browser, url: str, tokens: int, throttle: float, relabelled: bool, words_fn: int) -> dict:
    page = new_page(browser, width=390, height=844, phone=True)
    _set_up(page, url, tokens, relabelled, words_fn)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
    cdp.send("Performance.enable")
    cdp.send("Profiler.enable")
    cdp.send("Profiler.start")
    busy0 = next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration")
    page.evaluate(WATCH)
    page.evaluate("() => { window.__t0 = performance.now(); document.querySelector('#generate').click(); }")
    page.wait_for_function("() => window.__end !== null", timeout=600_000)
    busy = next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "TaskDuration") - busy0
    profile = cdp.send("Profiler.stop")["profile"]
    out = {"end_s": page.evaluate("window.__end") / 1000.0, "busy_s": busy, "gradio_s": _inclusive_ms(profile, GRADIO_BOOKKEEPING) / 1000.0}
    page.context.close()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--throttle", default="1,4", help="Chromium CPU throttling rates, comma-separated")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    rates = [float(x) for x in a.throttle.split(",")]
    runs: dict = {}
    with app_server() as url, sync_playwright() as p:
        cfg = json.load(urllib.request.urlopen(url.rstrip("/") + "/config", timeout=60))
        words_fn = next(d["id"] for d in cfg["dependencies"] if d.get("api_name") == "words")
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        for rep in range(a.reps):
            for rate in rates:
                for relabelled in ((True, False) if rep % 2 == 0 else (False, True)):  # (which goes first alternates)
                    r = one_run(browser, url, a.tokens, rate, relabelled, words_fn)
                    runs.setdefault((rate, relabelled), []).append(r)
                    print(f"rep {rep} throttle {rate:g} {'relabelled (before)' if relabelled else 'now':20s} last token on screen "
                          f"{r['end_s']:5.2f} s  main thread busy {r['busy_s']:5.2f} s  of it Gradio's bookkeeping {r['gradio_s']:5.2f} s",
                          flush=True)
        browser.close()
    print(f"\n{a.tokens} greedy tokens, medians of {a.reps} reps (390x844 touch page, app and browser on this machine's cores):")
    for rate in rates:
        for relabelled in (True, False):
            rs = runs[(rate, relabelled)]
            med = {k: statistics.median(r[k] for r in rs) for k in ("end_s", "busy_s", "gradio_s")}
            print(f"  throttle {rate:g}  {'relabelled (before)' if relabelled else 'now':20s} on screen {med['end_s']:.2f} s, "
                  f"busy {med['busy_s']:.2f} s, Gradio's bookkeeping {med['gradio_s']:.2f} s")


if __name__ == "__main__":
    main()
