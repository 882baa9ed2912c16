"""The step viewer inside the app: after a generation, the step slider, Play and the sampling sliders
are handled in the page (assets/app_viewer.js) with no request to the server; every panel that follows
the step shows the slider's step; the distribution is pipeline.sampling's to 1e-6."""
import numpy as np
import pytest

from pipeline.trace.files import load
from viz.panels import STEP_IDS
from viz.viewer.page import PLOTLY_JS

from .harness import ROOT, drag_slider, error_toasts, into_view, new_page, set_number, slider_max, slider_value, wait_model_loaded, wait_plot_step
from .viewer_js import N_SHOWN, TOL, reference

pytestmark = pytest.mark.browser
PANELS = STEP_IDS  # the panels that follow the step (viz.panels)
STEPS = "(ids) => ids.map(id => document.querySelector('#' + id + ' .js-plotly-plot')?.layout?.meta?.step)"
BARS = """() => { const el = document.querySelector('#dist-plot .js-plotly-plot');
  const t = el.data.find(t => t.name && t.name.includes('sampled from')); return Array.from(t.x); }"""


def _impatient_generate(page, prompt: str, n: int):
    """Type and click Generate at once; when the model is still loading (a warning says so), click again once it has."""
    page.wait_for_selector("#generate")
    page.fill("#prompt textarea", prompt)
    page.get_by_label("Raw text").check()
    set_number(page, "max-new-tokens", n)
    set_number(page, "temperature", 0)
    # this run's end: its last step on the slider and the stop line (the example, arriving late, has 40 steps)
    done = ("(n) => document.querySelector('#output .stop-reason')"
            " && Number(document.querySelector('#step-slider input[type=range]').max) === n - 1")
    page.click("#generate")
    page.wait_for_function(f"(n) => ({done})(n) || /still loading/i.test(document.body.innerText)", arg=n, timeout=300_000)
    if not page.evaluate(done, n):
        wait_model_loaded(page)
        page.click("#generate")
        page.wait_for_function(done, arg=n, timeout=300_000)
    # the viewer holds this generation's bundle (the example's has 40 steps)
    page.wait_for_function("(n) => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === n", arg=n, timeout=300_000)


def _same_run_with_logits(saved):
    """The page's greedy run made again by the pipeline in this process, with every step's full-vocabulary
    logits (a downloaded trace holds only the top candidates); the same tokens, checked."""
    from ui import run_inputs
    from pipeline.generate import start
    from pipeline.loading import load_model

    st = saved.settings
    settings = run_inputs.settings_from_inputs("Raw text", "", 0, 0, st.top_p, st.seed, len(saved.steps))
    gen = start(load_model(None), saved.prompt.text, settings)
    for _ in gen:
        pass
    trace = gen.trace()
    assert [s.token_id for s in trace.steps] == [s.token_id for s in saved.steps]
    assert all(s.logits is not None for s in trace.steps)
    return trace


def _panel_steps(page) -> list:
    """The step each panel shows, scrolled to in turn (a panel is drawn as it comes near the screen), then the top again."""
    steps = []
    for pid in PANELS:
        into_view(page, pid)
        steps.append(page.evaluate(STEPS, [pid])[0])
    page.evaluate("() => window.scrollTo(0, 0)")
    return steps


def test_scrub_play_and_reshape_send_no_request_and_match_the_pipeline(browser, app_url, tmp_path):
    page = new_page(browser)
    page.goto(app_url)
    _impatient_generate(page, "The three primary colours are", 10)
    n = slider_max(page) + 1
    assert n == 10

    page.evaluate("() => { LLMApp.state.settleMs = 1e9; }")  # no settle call: every request would be the viewer's
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    drag_slider(page, "step-slider", [0.95, 0.6, 0.2, 0.45, 0.3])
    s = slider_value(page)
    assert _panel_steps(page) == [s] * 5
    for v in (7, 2, 9, 4):  # keyboard-fast moves
        page.evaluate("(v) => { const r = document.querySelector('#step-slider input[type=range]'); r.value = v;"
                      " r.dispatchEvent(new Event('input', {bubbles: true})); }", v)
    assert slider_value(page) == 4 and _panel_steps(page) == [4] * 5
    drag_slider(page, "temperature", [0.35, 0.9, 0.6, 0.7])
    drag_slider(page, "top-k", [0.0, 0.3, 0.1])
    drag_slider(page, "top-p", [0.95, 0.5, 0.8])
    assert _panel_steps(page) == [4] * 5
    page.click("#play")
    page.wait_for_function("() => !LLMApp.playing()", timeout=60_000)
    assert slider_value(page) == n - 1 and _panel_steps(page) == [n - 1] * 5
    assert requests == [], requests

    # the distribution on screen is pipeline.sampling's, on the trace's own logits (downloaded from the page)
    with page.expect_download() as dl:
        page.click("#download-trace")
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    trace = _same_run_with_logits(load(path))
    for step, t, k, p in ((n - 1, 0.7, 0, 0.9), (3, 1.3, 40, 1.0), (0, 0.35, 5, 0.5), (6, 2.0, 0, 0.97), (2, 0.0, 0, 1.0)):
        set_number(page, "temperature", t)
        set_number(page, "top-k", k)
        set_number(page, "top-p", p)
        set_number(page, "step-slider", step)
        assert _panel_steps(page) == [step] * 5
        bars = np.array(page.evaluate(BARS))
        ref = reference(trace.steps[step], t, k, p, trace.settings.repetition_penalty)["final"][:N_SHOWN]
        assert np.max(np.abs(bars[:N_SHOWN] - ref)) <= TOL, (step, t, k, p)
        assert abs(bars[N_SHOWN] - max(0.0, 1 - float(ref.sum()))) <= TOL, (step, t, k, p)

    # the text and token chips show the step too, and once the slider is still nothing is asked
    # while the "Inside the model" panel is off screen
    page.evaluate("() => { LLMApp.state.settleMs = 300; window.scrollTo(0, 0); }")
    requests.clear()  # (the download asked the server)
    set_number(page, "step-slider", 5)
    page.wait_for_function("() => document.querySelectorAll('#output span.step:not([hidden])').length === 6", timeout=60_000)
    assert page.evaluate("() => document.querySelector('#tokens-html .tok.hl').dataset.step") == "5"
    page.wait_for_timeout(1000)
    assert requests == [], requests
    assert not page.errors and not error_toasts(page)


def test_layer_and_head_ask_the_server_once_and_follow_the_step(browser, app_url):
    page = new_page(browser)
    page.goto(app_url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=300_000)  # the example trace
    set_number(page, "step-slider", 12)
    page.evaluate("() => LLMApp.settled()")
    page.locator("#head input").click()
    page.get_by_role("option", name="3", exact=True).click()
    page.wait_for_function("() => /head 3/.test(document.querySelector('#attn-plot .js-plotly-plot').layout.title.text)", timeout=60_000)
    assert _panel_steps(page) == [12] * 5
    assert not page.errors and not error_toasts(page)


def test_the_viewer_draws_with_the_plotly_js_of_the_exported_page(browser, app_url):
    """Gradio loads its own Plotly.js over window.Plotly once its plots show (here: the Inside tab, drawn once its
    panel scrolls into view; the page opens with none of Gradio's plots); the viewer keeps drawing with its own
    (assets/vendor/, the copy an exported page inlines: no gl3d traces), the one that drew its plots first."""
    from plotly.offline import get_plotlyjs_version

    page = new_page(browser)
    page.goto(app_url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=300_000)
    ours = get_plotlyjs_version()
    page.locator("#panel-inside").scroll_into_view_if_needed()
    page.wait_for_function("(v) => window.Plotly && window.Plotly.version !== v", arg=ours, timeout=60_000)  # Gradio's is in
    set_number(page, "step-slider", 9)
    assert _panel_steps(page) == [9] * 5  # (each drawn as it is scrolled to)
    assert page.evaluate("() => LLMViewer.plotly().version") == ours
    traces = "(p) => Object.keys(p.PlotSchema.get().traces)"
    assert "scatter3d" in page.evaluate(f"() => ({traces})(window.Plotly)")  # (Gradio's: every trace type)
    assert "scattergl" in page.evaluate(f"() => ({traces})(LLMViewer.plotly())")
    assert "scatter3d" not in page.evaluate(f"() => ({traces})(LLMViewer.plotly())")
    assert not page.errors and not error_toasts(page)


def test_scrubbing_the_moment_a_run_ends_lands_on_the_slider_step(browser, app_url):
    """A person drags the step slider as soon as the stop line shows, before the page's viewer has
    this run's bundle: once it arrives, every step panel shows the step the slider is on."""
    page = new_page(browser)
    page.goto(app_url)
    page.wait_for_selector("#generate")
    page.fill("#prompt textarea", "The colours of the rainbow are")
    page.get_by_label("Raw text").check()
    set_number(page, "max-new-tokens", 12)
    set_number(page, "temperature", 0)
    wait_model_loaded(page)
    page.click("#generate")
    page.wait_for_function("() => document.querySelector('#output .stop-reason')"
                           " && Number(document.querySelector('#step-slider input[type=range]').max) === 11", timeout=300_000)
    drag_slider(page, "step-slider", (0.9, 0.5, 0.2, 0.3))  # at once: no wait for the viewer
    want = slider_value(page)
    assert want < 11
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === 12", timeout=120_000)
    assert _panel_steps(page) == [want] * 5  # (each drawn as it is scrolled to)
    assert page.evaluate("() => LLMApp.state.bundle.n_steps") == 12
    assert not page.errors and not error_toasts(page)


HIGHLIGHTED = "() => Number(document.querySelector('#tokens-html .tok.hl')?.dataset.step)"


def test_a_drag_moves_what_is_on_screen_and_the_rest_catches_up_when_let_go(browser, app_url):
    """While the step slider is held, each move redraws only what is on screen (the text and chips
    next to the slider), so the drag keeps up with the pointer; let go, the panels near the screen show the step, and
    each panel below shows it as it is scrolled to (a panel no one has scrolled to is not drawn at all)."""
    page = new_page(browser)
    page.goto(app_url)
    page.wait_for_selector("#step-slider input[type=range]")
    drag_slider(page, "step-slider", (0.9, 0.1, 0.7))  # at once, as the page opens; then the drag this test looks at
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=120_000)
    first = slider_value(page)
    for pid in PANELS:  # each panel, scrolled to, shows the slider's step
        into_view(page, pid)
        page.wait_for_function(f"(id) => ({STEPS})([id])[0] === {first}", arg=pid, timeout=30_000)
    page.evaluate("() => window.scrollTo(0, 0)")
    before = page.evaluate(STEPS, ["kv-plot"])[0]  # the KV panel: far below the slider, off screen
    assert before == first
    box = page.locator("#step-slider input[type=range]").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 2, y)
    page.mouse.down()
    for f in (0.2, 0.4, 0.6, 0.5):
        page.mouse.move(box["x"] + box["width"] * f, y)
        page.wait_for_function(f"(s) => ({HIGHLIGHTED})() === s", arg=slider_value(page), timeout=10_000)
    held = slider_value(page)
    assert held not in (before, 0)
    assert page.evaluate(STEPS, ["kv-plot"])[0] == before  # not drawn for each move of the drag
    page.mouse.up()
    page.wait_for_function(f"() => ({STEPS})(['dist-plot'])[0] === {held}", timeout=30_000)  # (on screen: at once)
    page.evaluate("() => LLMApp.settled()")
    assert page.evaluate(STEPS, ["kv-plot"])[0] == before  # off screen: not drawn until it is scrolled to
    for pid in PANELS:
        into_view(page, pid)
        page.wait_for_function(f"(id) => ({STEPS})([id])[0] === {held}", arg=pid, timeout=30_000)
    assert not page.errors and not error_toasts(page)


def test_play_pressed_while_a_run_streams_plays_it_once_it_has_ended(browser, app_url):
    """Play pressed before the page holds the run's steps (here: while it streams) says so on the
    button and plays the run from its first step once the run has ended; before, the press was lost."""
    page = new_page(browser)
    page.goto(app_url)
    page.wait_for_selector("#generate")
    page.fill("#prompt textarea", "The colours of the rainbow are")
    page.get_by_label("Raw text").check()
    set_number(page, "max-new-tokens", 12)
    set_number(page, "temperature", 0)
    wait_model_loaded(page)
    page.click("#generate")
    page.wait_for_function("() => window.LLMApp && !LLMApp.mounted()", timeout=60_000)  # the run has begun
    page.click("#play")
    assert "Pause" in page.inner_text("#play")
    page.wait_for_function("() => LLMApp.playing() && LLMApp.state.bundle.n_steps === 12", timeout=300_000)
    assert page.evaluate("() => LLMApp.state.step") <= 2  # from the first step
    page.wait_for_function("() => !LLMApp.playing()", timeout=60_000)
    assert slider_value(page) == 11 and "Play" in page.inner_text("#play")
    assert not page.errors and not error_toasts(page)


TEXT = """() => ({
  output: document.querySelector('#output .gen-text').innerText,
  stop: !!document.querySelector('#output .stop-reason:not([hidden])'),
  tokens: document.querySelector('#tokens-html .tok-counts').innerText + ' '
    + Array.from(document.querySelectorAll('#tokens-html .tok:not([hidden])')).map(e => e.innerText).join(' '),
  hl: Array.from(document.querySelectorAll('#tokens-html .tok.hl')).map(e => e.innerText),
  kv: document.querySelector('#kv-summary .kv-summary').innerText })"""


def test_the_text_chips_and_kv_summary_of_a_step_read_as_the_server_draws_them(browser, app_url):
    """Scrubbing the example trace: the page shows each step's text, token chips, counts and KV summary
    from the whole trace's HTML, with no request, and they read exactly as viz/ renders that step alone."""
    from viz import page as page_viz
    from viz.kv import kv_summary_html

    trace = load("assets/example_trace.json.gz")
    page = new_page(browser)
    page.goto(app_url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=300_000)
    ref = new_page(browser)
    css = (ROOT / "assets" / "style.css").read_text(encoding="utf-8")  # (a chip's look is the page's stylesheet's)
    last = len(trace.steps) - 1
    steps = (3, 0, last, 17)

    def scrub_and_compare():
        for s in steps:
            page.evaluate("(v) => { const r = document.querySelector('#step-slider input[type=range]'); r.value = v;"
                          " r.dispatchEvent(new Event('input', {bubbles: true})); return LLMApp.settled(); }", s)
            shown = page.evaluate(TEXT)
            ref.set_content(f"<style>{css}</style><div id='output'>{page_viz.output_only(trace, step=s)}</div>"
                            f"<div id='tokens-html'>{page_viz.tokens_only(trace, step=s)}</div>"
                            f"<div id='kv-summary'>{kv_summary_html(steps=trace.steps, step=s, model=trace.model)}</div>")
            want = ref.evaluate(TEXT)
            assert shown["output"] == want["output"] and shown["stop"] == want["stop"] == (s == last), s
            assert shown["tokens"].split() == want["tokens"].split(), s
            assert shown["hl"] == want["hl"] and len(shown["hl"]) == 1, s
            assert shown["kv"].split() == want["kv"].split(), s

    scrub_and_compare()  # at once, as a newcomer scrubs while the model still loads
    # again with the server quiet, counting requests: until the model has loaded a timer asks it for the
    # loading status every second, and the page-open chain makes its last calls
    wait_model_loaded(page)
    page.wait_for_timeout(1500)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    scrub_and_compare()
    assert requests == [], requests
    assert not page.errors and not error_toasts(page)


def test_download_as_web_page_gives_the_same_viewer_offline(browser, app_url, tmp_path):
    """The example trace on screen, saved with "Download as web page" at once (a newcomer does not wait):
    one file, which opens with nothing else, scrubs and plays."""
    from .test_viewer_page import open_viewer, settle

    page = new_page(browser)
    page.goto(app_url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=300_000)
    page.locator("#head input").click()
    page.get_by_role("option", name="2", exact=True).click()
    page.wait_for_function("() => /head 2/.test(document.querySelector('#attn-plot .js-plotly-plot').layout.title.text)", timeout=60_000)
    with page.expect_download(timeout=120_000) as dl:
        page.click("#download-page")
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    plotly_bytes = PLOTLY_JS.stat().st_size  # (the page's Plotly.js inlined, the trace's bundle beside it)
    assert path.suffix == ".html" and plotly_bytes + 1_000_000 < path.stat().st_size < 20_000_000
    assert page.locator("#download-page").inner_text() == "Download as web page"
    view = open_viewer(browser, path)
    n = len(load("assets/example_trace.json.gz").steps)
    settle(view, 0)
    assert "head 2" in view.evaluate("() => document.querySelector('#attn-plot .js-plotly-plot').layout.title.text")
    view.evaluate("(v) => { const r = document.querySelector('#step-slider input[type=range]'); r.value = v;"
                  " r.dispatchEvent(new Event('input', {bubbles: true})); }", 9)
    settle(view, 9)
    view.click("#play")
    settle(view, n - 1)
    assert view.requests == [path.as_uri()] and not view.errors, (view.requests, view.errors)
    assert not page.errors and not error_toasts(page)


def test_a_control_pressed_during_play_stops_it_with_the_slider_on_that_step(browser, app_url):
    """While Play runs the page moves the slider itself; a person pressing another control stops Play
    first, so Gradio's slider holds the step on screen, not the one Play started from: a tab opened
    afterwards (computed by the model for the slider's step) shows that step. Play and the click come
    at once, on the example trace, whether or not the model has loaded."""
    page = new_page(browser)
    page.goto(app_url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=300_000)
    page.locator("#panel-inside").scroll_into_view_if_needed()
    page.click("#play")
    page.wait_for_function("() => LLMApp.state.step >= 6", timeout=60_000)
    page.get_by_role("tab", name="Position").click()
    assert not page.evaluate("() => LLMApp.playing()")
    step = page.evaluate("() => LLMApp.state.step")
    assert step >= 6 and slider_value(page) == step
    wait_model_loaded(page)  # the tab's figure needs the model: what it computes is for Gradio's slider value
    page.get_by_role("tab", name="Residual").click()
    wait_plot_step(page, "residual-plot", step, timeout_ms=120_000)
    assert not page.errors and not error_toasts(page)
