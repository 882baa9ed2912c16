"""The exported page in Chromium, as an impatient newcomer uses it: scrub fast, every panel ends on
the step on screen; sliders reshape the distribution into the figure viz/ draws; Play runs to the
end; no request of any kind, no console error."""
import numpy as np
import pytest

from tests.synthetic import make_trace
from viz import distribution
from viz.panels import STEP_IDS
from viz.viewer.page import write_html

pytestmark = pytest.mark.browser
IDS = STEP_IDS  # the panels that follow the step (viz.panels)
DRAG = ("([id, v]) => { const r = document.querySelector('#' + id + ' input[type=range]'); r.value = v;"
        " r.dispatchEvent(new Event('input', {bubbles: true})); }")
READ = """(ids) => ({ step: Number(document.querySelector('#step-slider input[type=number]').value),
  metas: ids.map((id) => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                           return el && el.layout && el.layout.meta ? el.layout.meta.step : null; }),
  current: Number(document.querySelector('#output .step.current')?.dataset.step ?? -1) })"""
SETTLED = "([ids, s]) => ids.every((id) => document.querySelector('#' + id + ' .js-plotly-plot')?.layout?.meta?.step === s)"


# The page's plots off screen skip their rendering (CSS content-visibility: auto) until a person
# scrolls to them; a capture of the whole page at once reaches beyond the viewport, so it has them all drawn first.
DRAW_ALL_PLOTS = ".plot { content-visibility: visible !important; }"


def full_page_shot(page, path) -> None:
    """A screenshot of the whole page, every plot drawn (see DRAW_ALL_PLOTS)."""
    tag = page.add_style_tag(content=DRAW_ALL_PLOTS)
    page.screenshot(path=str(path), full_page=True)
    tag.evaluate("(e) => e.remove()")


def drawn_differently_once_scrolled_to(page, selectors, tries: int = 3) -> list[str]:
    """The plots (by CSS selector) that, scrolled into view from the top of the page as a person does,
    look different from the same plot never skipped (see DRAW_ALL_PLOTS). A plot is shot again from
    the top when they differ: the page's layout may still move by a pixel meanwhile."""
    wrong = []
    for sel in selectors:
        plot = page.locator(sel)
        for _ in range(tries):
            page.evaluate("() => window.scrollTo(0, 0)")
            page.wait_for_timeout(100)
            scrolled = plot.screenshot()  # scrolls the plot into view first
            tag = page.add_style_tag(content=DRAW_ALL_PLOTS)
            drawn = plot.screenshot()
            tag.evaluate("(e) => e.remove()")
            if drawn == scrolled:
                break
        else:
            wrong.append(sel)
    return wrong


@pytest.fixture(scope="module")
def trace():
    return make_trace(n_steps=12, prompt_len=8, vocab=400, top_n=40, temperature=0.8, top_p=0.9, seed=2)


@pytest.fixture(scope="module")
def html_file(trace, tmp_path_factory):
    path = tmp_path_factory.mktemp("viewer") / "trace.html"
    write_html(trace, path, layer=1, head=1)
    return path


def _the_pages(message) -> bool:
    """A console error or warning of the page's own, not Chromium's software GL reporting a slow
    pixel read-back (it does when a screenshot reads the WebGL vocabulary cloud)."""
    return message.type in ("error", "warning") and "GL Driver Message" not in message.text


def open_viewer(browser, path):
    """The file in a fresh page: every request recorded, any beyond the file itself refused."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    url = path.as_uri()
    page.errors, page.requests = [], []  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(f"{m.type}: {m.text}") if _the_pages(m) else None)
    page.on("request", lambda r: page.requests.append(r.url))
    page.route("**/*", lambda route: route.continue_() if route.request.url == url else route.abort())
    page.goto(url)
    return page


def settle(page, step):
    page.wait_for_function(SETTLED, arg=[list(IDS), step], timeout=60_000)
    got = page.evaluate(READ, list(IDS))
    assert got == {"step": step, "metas": [step] * len(IDS), "current": step}


def test_scrubbing_fast_every_panel_ends_on_the_step_on_screen(browser, html_file, trace, shots):
    page = open_viewer(browser, html_file)
    page.wait_for_selector("#step-slider input[type=range]")
    for s in (3, 7, 1, 11, 5):  # a fast drag: no waiting between positions
        page.evaluate(DRAG, ["step-slider", s])
    settle(page, 5)
    for s in (0, 11, 6):
        page.evaluate(DRAG, ["step-slider", s])
        settle(page, s)
    title = page.evaluate("() => document.querySelector('#attn-plot .js-plotly-plot').layout.title.text")
    assert title.startswith("Block 1 · head 1 (kv 0) · step 6:")
    full_page_shot(page, shots / "viewer_step6.png")
    assert page.requests == [html_file.as_uri()] and not page.errors


def test_a_step_redraws_the_kv_panels_marks_alone(browser, html_file, trace):
    """The KV panel's step is its ring and bar outline (shapes): Plotly keeps the figure's computed
    data (`calcdata`, made anew by a whole redraw) and redraws those alone, at the step's numbers."""
    page = open_viewer(browser, html_file)
    page.evaluate(DRAG, ["step-slider", 2])
    settle(page, 2)
    page.evaluate("() => { window.__kept = document.querySelector('#kv-plot .js-plotly-plot').calcdata; }")
    for s in (7, 3):
        page.evaluate(DRAG, ["step-slider", s])
        settle(page, s)
        kept, ring, bar = page.evaluate("""() => { const el = document.querySelector('#kv-plot .js-plotly-plot');
          const [ring, bar] = el._fullLayout.shapes; return [el.calcdata === window.__kept, [ring.xanchor, ring.yanchor], bar.y1]; }""")
        assert kept, f"step {s}: the KV figure was redrawn whole"
        assert ring == [s, trace.steps[s].kv_cache_bytes] and bar == pytest.approx(trace.steps[s].ms)
        drawn = page.evaluate("() => document.querySelectorAll('#kv-plot .js-plotly-plot .shapelayer path').length")
        assert drawn == 2
    assert not page.errors


def test_plots_moved_off_screen_show_their_step_when_scrolled_to(browser, html_file):
    """A plot off screen skips its rendering (CSS content-visibility) while the steps move; scrolled
    to, it is drawn exactly as a plot that was never skipped."""
    page = open_viewer(browser, html_file)
    page.set_viewport_size({"width": 1400, "height": 500})
    for s in (4, 9, 7):
        page.evaluate(DRAG, ["step-slider", s])
    settle(page, 7)
    assert page.evaluate("() => document.querySelector('#kv-plot').getBoundingClientRect().top") > 500  # off screen
    assert drawn_differently_once_scrolled_to(page, [f"#{pid} .plot" for pid in IDS]) == []
    assert not page.errors


FITS = """(ids) => ids.map((id) => { const box = document.querySelector('#' + id + ' .plot');
  const paper = box.querySelector('.svg-container');
  return paper ? Math.abs(paper.getBoundingClientRect().width - box.getBoundingClientRect().width) <= 1 : false; })"""


def test_plots_follow_the_window_width_after_scrubbing(browser, html_file):
    """Once a plot is drawn, the viewer stops Plotly measuring it at each redraw (viewer.js unmeasured):
    a window made narrower and wider still resizes every plot to its panel."""
    page = open_viewer(browser, html_file)
    for s in (4, 9):
        page.evaluate(DRAG, ["step-slider", s])
    settle(page, 9)
    widths = []
    for w in (900, 1600):
        page.set_viewport_size({"width": w, "height": 1000})
        page.wait_for_function(f"(ids) => ({FITS})(ids).every(Boolean)", arg=list(IDS), timeout=10_000)
        page.evaluate(DRAG, ["step-slider", 2 if w == 900 else 6])
        settle(page, 2 if w == 900 else 6)
        assert page.evaluate(FITS, list(IDS)) == [True] * len(IDS), w
        widths.append(page.evaluate("() => document.querySelector('#dist-plot .svg-container').getBoundingClientRect().width"))
    assert abs(widths[1] - widths[0]) > 100, widths  # (the panels are one column below 1000 px: wider there)
    assert not page.errors


# A plot's colour bar: its title, tick labels, and the bar's top and bottom from the plot area's top (px).
SCALE = """(root) => { const top = root.getBoundingClientRect().top + root._fullLayout._size.t;
  const fill = root.querySelector('.colorbar .cbfill').getBoundingClientRect();
  return { title: root.querySelector('.colorbar .cbtitle text').textContent,
           ticks: Array.from(root.querySelectorAll('.colorbar .cbaxis .ytick text, .colorbar .ytick text')).map((t) => t.textContent),
           bar: [Math.round(fill.top - top), Math.round(fill.bottom - top)] }; }"""
# The same of the panel's figure at step s as viz/ made it, drawn by Plotly whole in a new plot as wide.
DRAWN_WHOLE = """async ([id, s]) => { const bundle = JSON.parse(document.getElementById('viewer-bundle').textContent);
  const fig = LLMViewer.figureFor(bundle, id, s, LLMViewer.page.state), el = document.querySelector('#' + id + ' .js-plotly-plot');
  const div = document.createElement('div'); div.style.width = el.getBoundingClientRect().width + 'px'; document.body.appendChild(div);
  await Plotly.newPlot(div, fig.data, JSON.parse(JSON.stringify(fig.layout))); const out = (%s)(div); Plotly.purge(div); div.remove(); return out; }""" % SCALE


@pytest.mark.parametrize("pid", ["attn-plot", "attn-overview"])
def test_colour_scales_drawn_once_as_viz_draws_them(browser, html_file, pid):
    """The colour bar is drawn once, beside the plot (viewer_plot.js drawScale), not at every step: the
    plot itself has none, the bar reads as the one Plotly draws in viz's whole figure (title, ticks,
    height and place beside the plot area), and scrubbing redraws the plot only."""
    page = open_viewer(browser, html_file)
    page.wait_for_selector("#step-slider input[type=range]")
    page.evaluate(DRAG, ["step-slider", 5])  # at once, as a person scrubs: no wait for the first drawing
    settle(page, 5)
    page.evaluate("(id) => { const box = document.querySelector('#' + id + ' .colour-scale'); window.__draws = 0;"
                  " box.on('plotly_afterplot', () => { window.__draws++; }); }", pid)
    for s in (11, 3):  # a fast drag
        page.evaluate(DRAG, ["step-slider", s])
    settle(page, 3)
    shown = page.evaluate(f"(id) => ({SCALE})(document.querySelector('#' + id + ' .colour-scale'))", pid)
    assert page.evaluate("() => window.__draws") == 0
    assert page.evaluate("(id) => document.querySelectorAll('#' + id + ' .colorbar').length", pid) == 1
    assert page.evaluate("(id) => document.querySelector('#' + id + ' .js-plotly-plot').querySelector(':scope > .plot-container > .svg-container > .main-svg .colorbar')", pid) is None
    whole = page.evaluate(DRAWN_WHOLE, [pid, 3])
    assert shown["title"] == whole["title"] and shown["ticks"] == whole["ticks"], (shown, whole)
    assert all(abs(a - b) <= 1 for a, b in zip(shown["bar"], whole["bar"])), (shown, whole)
    assert not page.errors


def test_the_camera_saves_the_plot_with_its_colour_scale(browser, html_file, tmp_path):
    """The mode bar's camera saves the panel's whole figure as a PNG: the colour scale drawn beside the
    plot is in it too."""
    page = open_viewer(browser, html_file)
    page.wait_for_selector("#step-slider input[type=range]")
    page.evaluate(DRAG, ["step-slider", 6])  # and the camera pressed at once: what is on screen then is saved
    page.evaluate("""() => { const P = LLMViewer.plotly(), save = P.downloadImage; window.__saved = null;
      P.downloadImage = (fig, opts) => { window.__saved = { showscale: fig.layout.coloraxis.showscale !== false,
        step: fig.layout.title.text, shown: document.querySelector('#attn-plot .js-plotly-plot').layout.title.text };
        return save(fig, opts); }; }""")
    page.locator("#attn-plot .js-plotly-plot").first.hover()
    with page.expect_download() as got:
        page.locator("#attn-plot .modebar-btn[data-title='Download plot as a PNG']").first.click()
    path = tmp_path / "attention.png"
    got.value.save_as(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = page.evaluate("() => window.__saved")
    assert saved["showscale"] is True
    assert saved["step"] == saved["shown"]
    assert not page.errors


SETTINGS = [(0.8, 0, 0.9), (1.3, 0, 1.0), (0.0, 0, 0.9), (0.5, 10, 1.0), (1.5, 25, 0.5), (2.0, 200, 0.99), (0.05, 3, 0.01)]


def _dist(page):
    return page.evaluate("""() => { const el = document.querySelector('#dist-plot .js-plotly-plot');
      const pick = (t) => ({y: Array.from(t.y), x: Array.from(t.x), color: t.marker.color, text: t.text, hover: Array.from(t.customdata)});
      return {bars: el.data.slice(0, 2).map(pick), legend: el.data.slice(2).map((t) => [t.name, t.marker.color]),
              title: el.layout.title.text, rev: el.layout.datarevision,
              shapes: el.layout.shapes.map((s) => [s.y0, s.name]), notes: el.layout.annotations.map((a) => [a.y, a.text])}; }""")


def test_the_sliders_reshape_the_distribution_into_the_figure_viz_draws(browser, html_file, trace):
    page = open_viewer(browser, html_file)
    for step in (2, 9):
        page.evaluate(DRAG, ["step-slider", step])
        for t, k, p in SETTINGS:
            for sid, v in (("temperature", t), ("top-k", k), ("top-p", p)):
                page.evaluate(DRAG, [sid, v])
            page.wait_for_function("(key) => document.querySelector('#dist-plot .js-plotly-plot')?.layout?.datarevision === key",
                                   arg=f"{step}|{t:g}|{k}|{p:g}|0|1", timeout=30_000)  # numbers as JS writes them (min-p 0, no penalty)
            got = _dist(page)
            fig = distribution.distribution_figure(trace.steps[step], temperature=t, top_k=k, top_p=p, vocab_size=400)
            want = [{"y": list(b.y), "x": list(b.x), "color": list(b.marker.color), "text": list(b.text) if b.text else None,
                     "hover": list(b.customdata)} for b in fig.data[:2]]
            where = f"step {step} T={t} k={k} p={p}"
            for g, w in zip(got["bars"], want):
                assert g["y"] == w["y"] and g["hover"] == w["hover"] and g["color"] == w["color"], where
                np.testing.assert_allclose(g["x"], w["x"], atol=1e-6, rtol=0, err_msg=where)
            assert got["bars"][1]["text"] == want[1]["text"], where
            assert got["legend"] == [[t.name, t.marker.color] for t in fig.data[2:]], where
            assert got["title"] == fig.layout.title.text, where
            assert got["shapes"] == [[s.y0, s.name] for s in fig.layout.shapes], where
            assert got["notes"] == [[a.y, a.text] for a in fig.layout.annotations], where
    # min-p and the repetition penalty too, as on the app's page (issue 46: the offline page had only three sliders)
    for t, k, p, mp, pen in ((1.0, 0, 1.0, 0.1, 1.0), (0.8, 0, 0.9, 0.0, 1.3), (1.0, 20, 1.0, 0.05, 1.5)):
        for sid, v in (("temperature", t), ("top-k", k), ("top-p", p), ("min-p", mp), ("repetition-penalty", pen)):
            page.evaluate(DRAG, [sid, v])
        page.wait_for_function("(key) => document.querySelector('#dist-plot .js-plotly-plot')?.layout?.datarevision === key",
                               arg=f"9|{t:g}|{k}|{p:g}|{mp:g}|{pen:g}", timeout=30_000)
        got = _dist(page)
        fig = distribution.distribution_figure(trace.steps[9], temperature=t, top_k=k, top_p=p, min_p=mp, repetition_penalty=pen, vocab_size=400)
        where = f"T={t} k={k} p={p} min-p={mp} penalty={pen}"
        for g, w in zip(got["bars"], fig.data[:2]):
            assert g["y"] == list(w.y), where
            np.testing.assert_allclose(g["x"], list(w.x), atol=1e-6, rtol=0, err_msg=where)
        assert got["title"] == fig.layout.title.text, where
    assert page.requests == [html_file.as_uri()] and not page.errors


def test_play_runs_to_the_last_step(browser, html_file, trace, shots):
    page = open_viewer(browser, html_file)
    page.click("#play")  # as soon as the button is there
    page.wait_for_function("() => Number(document.querySelector('#step-slider input[type=number]').value) >= 3", timeout=30_000)
    page.wait_for_function("() => document.querySelector('#play').textContent.includes('Play')", timeout=60_000)
    last = len(trace.steps) - 1
    settle(page, last)
    page.screenshot(path=str(shots / "viewer_played.png"), full_page=False)
    page.click("#play")  # at the end, Play starts over from step 0
    page.wait_for_function(f"() => Number(document.querySelector('#step-slider input[type=number]').value) < {last}", timeout=10_000)
    page.evaluate(DRAG, ["step-slider", 5])  # a person grabs the slider: Play stops there
    page.wait_for_function("() => document.querySelector('#play').textContent.includes('Play')", timeout=10_000)
    settle(page, 5)
    assert page.requests == [html_file.as_uri()] and not page.errors


def test_the_example_traces_page_replays_the_real_model(browser, tmp_path, shots):
    from pipeline.trace.files import load
    from tests.browser.harness import ROOT

    trace = load(ROOT / "assets" / "example_trace.json.gz")  # SmolLM2-135M, top candidates only
    path = tmp_path / "example.html"
    write_html(trace, path, layer=3, head=2)
    page = open_viewer(browser, path)
    last = len(trace.steps) - 1
    page.evaluate(DRAG, ["step-slider", last])
    settle(page, last)
    title = page.evaluate("() => document.querySelector('#dist-plot .js-plotly-plot').layout.title.text")
    # no full-vocabulary logits in this trace, but each step's rest of the vocabulary summarised: the model's numbers
    assert "approximate" not in title and "entropy" in title
    full_page_shot(page, shots / "viewer_example_last.png")
    assert page.requests == [path.as_uri()] and not page.errors


ATTN = """() => document.querySelector('#attn-plot .js-plotly-plot').data.map((t) => ({name: t.name, x: Array.from(t.x), y: Array.from(t.y),
  z: Array.from(t.z, (row) => Array.from(row, (v) => (v === null || v === undefined ? null : v))),
  customdata: t.customdata ? Array.from(t.customdata, (row) => Array.from(row)) : null}))"""


@pytest.mark.parametrize("window", [128, 10])  # the whole context; a window that slides
def test_every_heads_matrix_on_screen_is_the_one_viz_draws_for_the_step(browser, trace, tmp_path, monkeypatch, window):
    """The attention grid's frames name windows of one band per head, tiled by the page; what Plotly
    holds at each step is viz.attention's own figure for that step in the panel's frame: every cell,
    every label, the head each cell's hover names."""
    from viz import attention
    from viz.attention import attention_figure

    monkeypatch.setattr(attention, "MAX_TOKENS", window)
    path = tmp_path / "grid.html"
    write_html(trace, path, layer=1, head=None)
    page = open_viewer(browser, path)
    pieces = list(trace.steps[-1].context_pieces)
    frame = min(trace.steps[-1].position + 1, attention.window_size(min(trace.model.n_heads, attention.MAX_GRID_HEADS), grid=True))
    for s in (0, 11, 4):
        page.evaluate(DRAG, ["step-slider", s])
        settle(page, s)
        want = attention_figure(steps=trace.steps, step=s, layer=1, head=None, n_kv_heads=trace.model.n_kv_heads, pieces=pieces,
                                frame=frame)
        (got,), (t,) = page.evaluate(ATTN), want.data
        z = np.array([[np.nan if v is None else v for v in row] for row in got["z"]])
        np.testing.assert_array_equal(z, np.asarray(t.z, np.float64), err_msg=f"step {s}")
        assert got["x"] == list(t.x) and got["y"] == list(t.y)
        np.testing.assert_array_equal(np.array(got["customdata"]), np.asarray(t.customdata))
        assert got["name"] == t.name
    assert page.requests == [path.as_uri()] and not page.errors
