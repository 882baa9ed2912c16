"""Take the README's screenshots from the real app in headless Chromium.

    .venv/bin/python scripts/screenshots.py [--out assets/screenshots]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.harness import (CHROMIUM_FLAGS, app_server, chromium_path, open_page, set_number,  # noqa: E402
                                   wait_model_loaded)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots")
    ap.add_argument("--draft", default="", help="the draft for the speculative screenshot (empty: the app's default)")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with app_server() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        page = open_page(browser, url, width=1440, height=1100)
        wait_model_loaded(page)
        page.fill("#prompt textarea", "Explain in two sentences why the sky is blue.")
        set_number(page, "temperature", 0.8)
        set_number(page, "top-p", 0.9)
        set_number(page, "max-new-tokens", 48)
        page.evaluate("() => document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'))")
        page.click("#generate")
        page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=300_000)
        page.wait_for_function("() => !document.querySelector('#download-trace').disabled", timeout=60_000)
        time.sleep(1.5)
        page.screenshot(path=str(a.out / "page.png"), clip={"x": 0, "y": 0, "width": 1440, "height": 1100})
        # a step in the middle, so the distribution shows a real choice
        step = 6
        page.evaluate("([id, v]) => { const r = document.querySelector('#' + id + ' input[type=range]'); r.value = v;"
                      " r.dispatchEvent(new Event('input', {bubbles: true})); }", ["step-slider", step])
        page.wait_for_function("(s) => (document.querySelector('#emb-plot .js-plotly-plot')?.layout?.title?.text || '').includes('step ' + s)",
                               arg=step, timeout=30_000)
        time.sleep(1.5)
        for elem, name in (("#panel-tokens", "tokens"), ("#panel-distribution", "distribution"), ("#panel-embeddings", "embeddings"),
                           ("#panel-attention", "attention"), ("#panel-kv", "kv")):
            page.locator(elem).first.screenshot(path=str(a.out / f"{name}.png"))
        # speculative decoding: a few rounds with a deep self-draft
        page.click("#speculative-settings")
        page.get_by_label("Speculative decoding: a cheap draft proposes, the model checks").check()
        page.fill("#spec-draft textarea, #spec-draft input", a.draft)
        set_number(page, "spec-k", 4)
        set_number(page, "max-new-tokens", 24)
        page.evaluate("() => document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'))")
        page.click("#generate")
        page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=300_000)
        page.wait_for_selector("#spec-summary :text('Measured on this machine')", timeout=300_000)
        time.sleep(1.0)
        page.locator("#panel-speculative").screenshot(path=str(a.out / "speculative.png"))
        browser.close()
    print(f"screenshots in {a.out}")


if __name__ == "__main__":
    main()
