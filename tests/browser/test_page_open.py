"""The page opens drawn (issue 24's fast first screen): what the first screen shows needs no event's round
trip, Gradio's own copy of Plotly.js is not loaded as the page opens, and a run's end reuses the page's plots.

Timings are the benchmarks' (scripts/open_bench.py, scripts/browser_bench.py); these tests check the
causes the benchmarks found, each of which made the page slower when it came back.
"""
from __future__ import annotations

import re

import pytest

from scripts.browser_kit import NEARED

from .harness import into_view, new_page, scroll_through, wait_model_loaded

pytestmark = pytest.mark.browser

BARS = "() => document.querySelectorAll('#dist-plot .viewer-plot .main-svg .bars .point').length"


def test_the_first_screen_is_drawn_with_no_event_answered(browser, app_url):
    """With every answer of Gradio's queue held back, the page still shows the example: its text, its chips,
    its step slider on the last step and its distribution, drawn from the page's first values and the bundle its
    head names."""
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.route(re.compile(r".*/gradio_api/queue/.*"), lambda route: route.abort())
    page.goto(app_url)
    page.wait_for_function(BARS + " > 0", timeout=90_000)
    assert "Rayleigh" in page.inner_text("#output .gen-text")
    assert page.locator("#tokens-html .tok[data-step]").count() > 0
    top = int(page.get_attribute("#step-slider input[type=range]", "max"))
    assert top > 1 and int(page.input_value("#step-slider input[type=number]")) == top
    meta = page.evaluate("() => document.querySelector('#dist-plot .viewer-plot').layout.meta")
    assert meta["step"] == top and meta["temperature"] == float(page.input_value("#temperature input[type=number]"))


def test_gradio_plotly_is_not_loaded_as_the_page_opens(browser, app_url):
    """Every figure of the opened page is drawn with the page's own Plotly.js: a gr.Plot given a value (the
    speculative cost curve was one) made Gradio fetch and run its own 1.3 MB copy while the page opened. The
    cost curve is drawn when it scrolls into view."""
    page = new_page(browser, width=1920, height=960, record_toasts=False)
    scripts = []
    page.on("request", lambda r: scripts.append(r.url) if r.resource_type == "script" else None)
    page.goto(app_url)
    page.wait_for_function(BARS + " > 0", timeout=90_000)
    page.wait_for_timeout(3000)  # the page's load events answered meanwhile
    assert not [u for u in scripts if "PlotlyPlot" in u], scripts
    assert page.locator("#spec-cost-plot .js-plotly-plot").count() == 0  # off screen: not drawn yet
    page.locator("#spec-cost-plot").scroll_into_view_if_needed()
    page.wait_for_selector("#spec-cost-plot .js-plotly-plot .main-svg", timeout=10_000)
    assert page.evaluate("() => document.querySelector('#spec-cost-plot .js-plotly-plot').data.length") >= 2
    assert not [u for u in scripts if "PlotlyPlot" in u]


def test_a_run_redraws_the_page_plots_it_has(browser, app_url):
    """A run's end redraws the viewer's plots in place (the embeddings' WebGL cloud cost 180-280 ms drawn anew
    against about 20 redrawn): the plot element of each step panel is the one it had before the run."""
    page = new_page(browser, width=1400, height=1000, record_toasts=False)
    page.goto(app_url)
    wait_model_loaded(page)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=60_000)
    scroll_through(page)  # (each panel drawn as it comes near the screen)
    page.evaluate("(ids) => ids.forEach((id) => { document.querySelector('#' + id + ' > .viewer-plot').__before = true; })",
                  page.evaluate("() => window.LLMAppPanels"))
    key = page.evaluate("() => LLMApp.state.key")
    page.fill("#prompt textarea", "Name three colours.")
    page.locator("#max-new-tokens input[type=number]").fill("6")
    page.locator("#max-new-tokens input[type=number]").press("Enter")
    page.click("#generate")
    page.wait_for_function("(k) => window.LLMApp && LLMApp.mounted() && LLMApp.state.key !== k", arg=key, timeout=180_000)
    scroll_through(page)
    kept = page.evaluate("(ids) => ids.map((id) => { const el = document.querySelector('#' + id + ' > .viewer-plot');"
                         " return [id, !!(el && el.__before), !!(el && el.closest('.viewer-on'))]; })", page.evaluate("() => window.LLMAppPanels"))
    assert all(before and on for _, before, on in kept), kept


def test_the_text_box_keeps_the_step_on_screen_in_view(browser, app_url):
    """When the text outgrows its box, the box scrolls to its end (the step on screen) as the step moves: the
    page watches the box alone (watching the whole page, each node Plotly touched read the box's height)."""
    page = new_page(browser, width=1400, height=1000, record_toasts=False)
    page.goto(app_url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    page.add_style_tag(content="#output { max-height: 36px !important; min-height: 0 !important; overflow-y: auto !important; }")
    top = int(page.get_attribute("#step-slider input[type=range]", "max"))
    at_end = "() => { const o = document.getElementById('output'); return o.scrollHeight > o.clientHeight + 2 && o.scrollTop + o.clientHeight >= o.scrollHeight - 2; }"
    for step in (top // 2, top):
        page.evaluate("(s) => { const r = document.querySelector('#step-slider input[type=range]'); r.value = s;"
                      " r.dispatchEvent(new Event('input', {bubbles: true})); return LLMApp.settled(); }", step)
        page.wait_for_function(at_end, timeout=5_000)
        last = page.evaluate("() => Math.max(...Array.from(document.querySelectorAll('#output [data-step]:not([hidden])')).map(e => Number(e.dataset.step)))")
        assert last == step


# A step move: at the first frame in which the distribution shows the step, which step panels show it too
FIRST_FRAME = """async (v) => { """ + NEARED + """
  const r = document.querySelector('#step-slider input[type=range]');
  const d = document.querySelector('#dist-plot .viewer-plot');
  const at = (id) => document.querySelector('#' + id + ' .viewer-plot')?.layout?.meta?.step;
  let seen = null;
  const look = () => { if (d.layout.meta.step === v) seen = window.LLMAppPanels.filter((id) => at(id) === v); else requestAnimationFrame(look); };
  requestAnimationFrame(look);
  r.value = v; r.dispatchEvent(new Event('input', {bubbles: true}));
  await LLMApp.settled();
  while (seen === null) await new Promise((ok) => requestAnimationFrame(ok));
  const where = (id) => { const r = document.getElementById(id).getBoundingClientRect();  // (the text's length moves them)
    return r.bottom <= 0 || r.top >= innerHeight ? (r.bottom <= -innerHeight || r.top >= 2 * innerHeight ? 'far' : 'near') : 'on'; };
  await noticed(window.LLMAppPanels.filter((id) => where(id) !== 'far')); await drawn();  // (moved near: the page told late)
  return [seen, window.LLMAppPanels.filter((id) => at(id) === v), Object.fromEntries(window.LLMAppPanels.map((id) => [id, where(id)]))]; }"""


def test_a_step_move_shows_the_panels_on_screen_before_drawing_the_others(browser, app_url):
    """On a tall screen scrolled to the distribution, a step move reaches the screen once the panels on screen
    are drawn: those off screen but within a screen of it are drawn after that frame (drawn first, they held it back:
    94-102 ms against 54-60), and once the page is settled; a panel further away is drawn when scrolled to."""
    page = new_page(browser, width=1440, height=1800, record_toasts=False)
    page.goto(app_url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    page.evaluate("() => LLMApp.settled()")
    page.evaluate("() => { LLMApp.state.settleMs = 1e9; document.getElementById('panel-distribution').scrollIntoView(); }")
    page.wait_for_timeout(500)
    off = page.evaluate("() => window.LLMAppPanels.filter((id) => { const r = document.getElementById(id).getBoundingClientRect();"
                        " return r.bottom <= 0 || r.top >= innerHeight; })")
    assert off and "dist-plot" not in off
    top = int(page.get_attribute("#step-slider input[type=range]", "max"))
    for v in (3, top // 2, top - 1):
        first, showing, where = page.evaluate(FIRST_FRAME, v)
        assert "dist-plot" in first and not set(off) & set(first), (v, first, off)
        assert {k for k, w in where.items() if w != "far"} <= set(showing), (v, showing, where)
    far = [k for k, w in where.items() if w == "far" and k not in showing]
    assert far, (showing, where)  # (a panel no one has come near: not drawn for the step)
    for pid in far:  # scrolled to, it shows the step
        into_view(page, pid)
        assert page.evaluate("(id) => document.querySelector('#' + id + ' .viewer-plot').layout.meta.step", pid) == top - 1


# Every animation frame the page asks the browser for, with who asked (the stack's caller line), from before any
# script of the page runs.
COUNT_FRAMES = """(() => { const raf = window.requestAnimationFrame; window.__frames = [];
  window.requestAnimationFrame = function (fn) {
    window.__frames.push([performance.now(), ((new Error().stack || '').split('\\n')[2] || '').trim().slice(0, 120)]);
    return raf.call(this, fn); }; })();"""


def test_gradios_status_trackers_ask_for_no_frames_on_a_page_at_rest(browser, app_url):
    """Gradio's status tracker of the page's own loading is removed while pending and its loop of animation frames
    went on, 60 a second for as long as the page stayed open (5% of a core at rest here). With the trackers' frames a
    tenth of a second apart (assets/status_frames.js, first in the page: ui/early_head.py), they ask for none.
    (A Svelte spring of Gradio's loader may still ask for about 14-22 a second on a page opened after the model has loaded:
    docs/benchmarks.md, "A page at rest".)"""
    page = new_page(browser, width=1366, height=768)
    page.add_init_script(COUNT_FRAMES)
    page.goto(app_url)
    page.wait_for_selector("#panel-distribution .js-plotly-plot", timeout=60_000)
    wait_model_loaded(page)
    asked = page.evaluate("""async () => { await new Promise((ok) => setTimeout(ok, 1000));  // (the page settles)
      const t0 = performance.now(); await new Promise((ok) => setTimeout(ok, 2000));
      return window.__frames.filter(([t]) => t >= t0).map(([, who]) => who); }""")
    by_trackers = [who for who in asked if "/statustracker-" in who]
    assert by_trackers == [], f"{len(by_trackers)} frames asked for by Gradio's status trackers in 2 s at rest"
    assert page.evaluate("() => window.LLMStatusFrames && window.LLMStatusFrames.TENTH_MS") == 100
