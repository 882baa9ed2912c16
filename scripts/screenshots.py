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

from scripts.browser_kit import (CHROMIUM_FLAGS, app_server, chromium_path, into_view, open_page, set_number,  # noqa: E402
                                wait_model_loaded)
from viz import panels  # noqa: E402


def _title_has(page, elem_id: str, text: str, timeout_ms: int = 60_000):
    page.wait_for_function(
        "([id, t]) => { const el = document.querySelector('#' + id + ' .js-plotly-plot');"
        " const s = el && el.layout && el.layout.title; return !!s && (s.text || String(s)).includes(t); }",
        arg=[elem_id, text], timeout=timeout_ms)


def inside_tabs(page, out: Path, step: int):
    """One screenshot per tab of "Inside the model", for the step on screen."""
    waits = {
        "lens": lambda: _title_has(page, "lens-plot", f"step {step}"),
        "residual": lambda: _title_has(page, "contributions-plot", f"step {step}"),
        "position": lambda: (page.click("#swap-button"), _title_has(page, "swap-plot", "Swap")),
        "kvc": lambda: (page.click("#kvc-button"), page.wait_for_selector("#kvc-summary :text('top token')", timeout=120_000)),
        "accounting": lambda: page.wait_for_selector(f"#accounting-summary :text('step {step}')", timeout=60_000),
        "sampling": lambda: _title_has(page, "sampling-plot", "settings"),
        "bytes": lambda: page.wait_for_selector("#bytes-html :text('bytes of text')", timeout=60_000),
        "context": lambda: page.wait_for_selector("#context-summary :text('tokens used')", timeout=60_000),
        "ablate": lambda: page.wait_for_selector(f"#ablate-result[data-step='{step}']", timeout=120_000),
    }
    for key, wait in waits.items():
        page.locator("#panel-inside").scroll_into_view_if_needed()
        page.click(f"#tab-{key}-button")
        wait()
        time.sleep(1.0)
        page.locator("#panel-inside").screenshot(path=str(out / f"inside-{key}.png"))


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
        into_view(page, "emb-plot")  # (a step panel is drawn as it comes near the screen)
        page.wait_for_function("(s) => (document.querySelector('#emb-plot .js-plotly-plot')?.layout?.title?.text || '').includes('step ' + s)",
                               arg=step, timeout=30_000)
        time.sleep(1.5)
        for card in panels.CARDS:  # every numbered card but speculative decoding's (below, after a speculative run)
            if card.elem_id != "panel-speculative":
                into_view(page, card.elem_id)
                page.locator(f"#{card.elem_id}").first.screenshot(path=str(a.out / f"{card.elem_id.removeprefix('panel-')}.png"))
        inside_tabs(page, a.out, step)
        # the guided tour, at its attention stage
        page.click("#tour")
        for _ in range(2):
            page.click("#tour-next")
        page.wait_for_selector("#tour-box :text('stage 3 of 8')", timeout=30_000)
        page.wait_for_selector("#panel-attention.tour-focus", timeout=10_000)
        time.sleep(1.5)
        page.screenshot(path=str(a.out / "tour.png"))
        page.click("#tour-end")
        # a branch: the third candidate of the step on screen forced, the model writes on
        page.locator("#panel-distribution").scroll_into_view_if_needed()
        page.evaluate("() => document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'))")
        page.locator("#dist-plot g.trace.bars").first.locator("path").nth(2).click(force=True)
        page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=300_000)
        page.click("#tab-branches-button")
        page.wait_for_selector("#branches .branch-row >> nth=1", timeout=60_000)
        time.sleep(1.0)
        page.locator("#panel-inside").screenshot(path=str(a.out / "branches.png"))
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
