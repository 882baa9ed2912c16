"""Every figure on a phone (390x844, touch; issue 46, item 10): its title, legend, notes and axis titles within the
figure, never cut at its edges (Plotly wraps none of them: the page wraps titles in lines that fit, the figures made
on the server write theirs in short lines). Screenshot: artifacts/screenshots/i46_phone_figures.png."""
from __future__ import annotations

import pytest

from .harness import wait_model_loaded

pytestmark = pytest.mark.browser

CUT = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getClientRects().length).flatMap((p) => {
  const svg = p.querySelector('svg.main-svg'); if (!svg) return [];
  const box = svg.getBoundingClientRect(), id = (p.closest('[id]') || {}).id;
  return [...p.querySelectorAll('.gtitle, .legendtext, .annotation-text, .cbtitle text, .g-xtitle text, .g-ytitle text')].map((e) => {
    const b = e.getBoundingClientRect(); return [id, e.textContent.slice(0, 60), Math.round(b.left - box.left), Math.round(box.right - b.right)]; })
    .filter(([, , l, r]) => l < -1 || r < -1); })"""
# two of a figure's notes on top of each other (the attention grid's tile titles ran into their neighbours on one line)
OVERLAP = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getClientRects().length).flatMap((p) => {
  const a = [...p.querySelectorAll('.annotation-text')].flatMap((e) => { const lines = e.querySelectorAll('tspan.line'); // (each line's own box)
    return (lines.length ? [...lines] : [e]).map((x) => [e.textContent, x.getBoundingClientRect(), e]); }).filter(([, b]) => b.width);
  return a.flatMap(([s, b, e], i) => a.slice(i + 1).filter(([, c, f]) => e !== f && b.left < c.right - 1 && c.left < b.right - 1
    && b.top < c.bottom - 1 && c.top < b.bottom - 1).map(([t]) => [(p.closest('[id]') || {}).id, s, t])); })"""
DRAWN = "() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getClientRects().length && p.querySelector('.main-svg')).length"


@pytest.mark.parametrize("lang", ["en", "de"])
def test_no_figure_on_a_phone_cuts_its_words(browser, app_url, shots, lang):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    page.goto(f"{app_url}?lang={lang}")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=120_000)
    if lang == "en":
        wait_model_loaded(page)  # (the panels that need the model drawn too; its words are English)
    height = page.evaluate("() => document.documentElement.scrollHeight")
    for y in range(0, height, 600):  # (the panels further down draw as they scroll into view)
        page.evaluate("(y) => window.scrollTo(0, y)", y)
        page.wait_for_timeout(100)
    page.wait_for_function(f"() => ({DRAWN})() >= 8", timeout=60_000)
    assert page.evaluate(CUT) == []
    page.wait_for_selector("#attn-plot .annotation-text", state="attached", timeout=30_000)  # (the grid of every head)
    assert page.evaluate(OVERLAP) == []
    page.locator("#attn-plot").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"i46_phone_figures_{lang}.png"))
    ctx.close()
