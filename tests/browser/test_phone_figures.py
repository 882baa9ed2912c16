"""Every figure on a phone (390x844, touch; issue 46, item 10): its title, legend, notes and axis titles within the
figure, never cut at its edges (Plotly wraps none of them: the page wraps titles in lines that fit, the figures made
on the server write theirs in short lines). Screenshot: artifacts/screenshots/i46_phone_figures.png."""
from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from viz.text import catalogue

from .harness import scroll_through, wait_model_loaded

pytestmark = pytest.mark.browser

# (what shows: the figure's drawing as far as its box on the page, which cuts a drawing wider than itself)
CUT = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getClientRects().length).flatMap((p) => {
  const svg = p.querySelector('svg.main-svg'); if (!svg) return [];
  const s = svg.getBoundingClientRect(), o = p.getBoundingClientRect(), id = (p.closest('[id]') || {}).id;
  const box = {left: Math.max(s.left, o.left), right: Math.min(s.right, o.right)};
  return [...p.querySelectorAll('.gtitle, .legendtext, .annotation-text, .cbtitle text, .g-xtitle text, .g-ytitle text')].map((e) => {
    const b = e.getBoundingClientRect(); return [id, e.textContent.slice(0, 60), Math.round(b.left - box.left), Math.round(box.right - b.right)]; })
    .filter(([, , l, r]) => l < -1 || r < -1); })"""
# two of a figure's notes on top of each other (the attention grid's tile titles ran into their neighbours on one line)
OVERLAP = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getClientRects().length).flatMap((p) => {
  const a = [...p.querySelectorAll('.annotation-text')].flatMap((e) => { const lines = e.querySelectorAll('tspan.line'); // (each line's own box)
    return (lines.length ? [...lines] : [e]).map((x) => [e.textContent, x.getBoundingClientRect(), e]); }).filter(([, b]) => b.width);
  return a.flatMap(([s, b, e], i) => a.slice(i + 1).filter(([, c, f]) => e !== f && b.left < c.right - 1 && c.left < b.right - 1
    && b.top < c.bottom - 1 && c.top < b.bottom - 1).map(([t]) => [(p.closest('[id]') || {}).id, s, t])); })"""
# a note written for one panel (xref "x2 domain") outside that panel's width (the logit lens's "prediction forms here"
# lay over the top-5 table's cells), and a table's word wider than its cell (it ran over its neighbours)
PANEL = "(p, ax) => { const a = p._fullLayout[ax], l = p.querySelector('svg.main-svg').getBoundingClientRect().left + a._offset;" \
        " return [l, l + a._length]; }"
SPILLS = f"""() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getClientRects().length && p._fullLayout).flatMap((p) => {{
  const id = (p.closest('[id]') || {{}}).id, panel = {PANEL}, out = [];
  (p._fullLayout.annotations || []).forEach((n, i) => {{
    const m = /^(x\\d*) domain$/.exec(n.xref || ''), e = p.querySelector(`.annotation[data-index="${{i}}"] .annotation-text`);
    if (!m || !e || !n.visible) return;
    const [l, r] = panel(p, 'xaxis' + m[1].slice(1)), b = e.getBoundingClientRect(), top = p._fullLayout._size.t;
    if (b.width && b.bottom > p.querySelector('svg.main-svg').getBoundingClientRect().top + top  // (in the plot, not a title above it)
        && (b.left < l - 2 || b.right > r + 2)) out.push([id, e.textContent, 'outside its panel']);
  }});
  (p._fullData || []).filter((t) => t.type === 'heatmap' && t.text && t.visible !== false).forEach((t) => {{
    const [l, r] = panel(p, 'xaxis' + (t.xaxis || 'x').slice(1)), cell = (r - l) / (t.x ? t.x.length : t.z[0].length);
    p.querySelectorAll('.hm .heatmap-label').forEach((e) => {{
      const w = e.getBoundingClientRect().width; if (w > cell + 1) out.push([id, e.textContent, `${{Math.round(w)}} px in a cell of ${{Math.round(cell)}}`]); }});
  }});
  return out; }})"""
DRAWN = "() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getClientRects().length && p.querySelector('.main-svg')).length"


# every line of a figure's title or note that begins with a closing mark (Chinese typesetting keeps "：" and "，" at the
# end of the line before; assets/viewer_phone.js wraps so)
OPENS_CLOSED = """() => [...document.querySelectorAll('.js-plotly-plot .gtitle, .js-plotly-plot .annotation-text')]
  .flatMap((t) => (t.querySelectorAll('tspan.line').length ? [...t.querySelectorAll('tspan.line')] : [t]))
  .map((l) => l.textContent).filter((x) => /^[、。，．：；！？）」』】》〉]/.test(x))"""


# every note of a figure that lies over one of its bars (the timing's figures in its panel's corner lay over the
# tallest bars: viz/kv.py leaves room above them, and a phone that wraps the note raises the axis as much)
NOTE_OVER_BARS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.getClientRects().length).flatMap((p) => {
  const bars = [...p.querySelectorAll('.barlayer .point path')].map((b) => b.getBoundingClientRect()).filter((r) => r.width && r.height);
  return [...p.querySelectorAll('.annotation-text')].filter((t) => t.textContent.trim()).map((t) => [t, t.getBoundingClientRect()])
    .filter(([, a]) => bars.some((b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2))
    .map(([t]) => `${p.closest('[id]').id}: ${t.textContent.slice(0, 40)}`); })"""


@pytest.mark.parametrize("lang", ["en", "de", "zh-CN"])
def test_no_figure_on_a_phone_cuts_its_words(browser, app_url, shots, lang):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    page.goto(f"{app_url}?lang={lang}")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=120_000)
    if lang == "en":
        wait_model_loaded(page)  # (the panels that need the model drawn too; its words are English)
    scroll_through(page)  # (the panels further down draw as they come near the screen)
    page.wait_for_function(f"() => ({DRAWN})() >= 8", timeout=60_000)
    assert page.evaluate(CUT) == [] and page.evaluate(NOTE_OVER_BARS) == []
    page.wait_for_selector("#attn-plot .annotation-text", state="attached", timeout=30_000)  # (the grid of every head)
    assert page.evaluate(OVERLAP) == []
    page.locator("#lens-plot").scroll_into_view_if_needed()  # (the "Inside the model" tab's figures draw in view)
    page.wait_for_selector("#lens-plot .hm .heatmap-label", state="attached", timeout=60_000)
    try:  # (Gradio draws them; the page fits them within half a second)
        page.wait_for_function(f"() => ({SPILLS})().length === 0", timeout=5_000)
    except PlaywrightTimeout:
        pass
    assert page.evaluate(SPILLS) == [], "a phone draws the figures Gradio draws narrow (assets/viewer_phone.js fitGradioFigures)"
    assert page.evaluate(CUT) == [] and page.evaluate(OPENS_CLOSED) == []
    page.locator("#lens-plot").screenshot(path=str(shots / f"phone_lens_{lang}.png"))
    _inside_tabs_fit(page, lang, shots)
    page.locator("#attn-plot").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / f"i46_phone_figures_{lang}.png"))
    ctx.close()


# The "Inside the model" tabs whose figures Gradio draws (gr.Plot), each of them on the phone: on a phone the tab bar
# keeps the first tabs and lists the rest in its menu, whose buttons have no id (clicked by their words).
INSIDE = {"residual": ["residual-plot", "contributions-plot"], "position": ["position-plot"],
          "accounting": ["accounting-plot"], "sampling": ["sampling-plot"], "context": ["context-plot"]}
CLICK_TAB = ("(t) => { const b = [...document.querySelectorAll('#panel-inside button')].filter((x) => x.innerText.trim() === t).pop();"
             " if (b) b.click(); return !!b; }")


def _inside_tabs_fit(page, lang, shots):
    words = catalogue(lang)
    for key, ids in INSIDE.items():
        page.locator("#panel-inside").scroll_into_view_if_needed()
        assert page.evaluate(CLICK_TAB, words[f"tab.{key}"]), key
        for elem_id in ids:
            page.wait_for_selector(f"#{elem_id} .js-plotly-plot .main-svg", timeout=60_000)
        try:  # (Gradio draws them; the page fits them within half a second)
            page.wait_for_function(f"() => ({SPILLS})().length === 0 && ({CUT})().length === 0", timeout=5_000)
        except PlaywrightTimeout:
            pass
        assert (page.evaluate(SPILLS), page.evaluate(CUT), page.evaluate(OPENS_CLOSED)) == ([], [], []), key
        page.locator(f"#{ids[0]}").screenshot(path=str(shots / f"phone_inside_{key}_{lang}.png"))
