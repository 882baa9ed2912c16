"""What the fields show is what the distribution used (the page's promise: docs/teaching.md): after a link,
an example chosen from the gallery and a trace file loaded, the next-token distribution on screen names in
its `layout.meta` the temperature, top-k and top-p it was computed with, and they equal the sliders on
screen, with no slider touched (an impatient person touches none)."""

import pytest

from pipeline import gallery

from .harness import error_toasts, new_page

pytestmark = pytest.mark.browser

# the distribution the page shows: the viewer's plot while the viewer is on, else the server's
SHOWN = """() => {
  const b = document.getElementById('dist-plot');
  if (!b) return null;
  const el = b.classList.contains('viewer-on') ? b.querySelector(':scope > .viewer-plot.js-plotly-plot, :scope > .viewer-plot .js-plotly-plot')
                                                : b.querySelector(':scope > :not(.viewer-plot) .js-plotly-plot');
  const m = el && el.layout && el.layout.meta;
  const num = (id) => Number(document.querySelector('#' + id + ' input[type=number]')?.value);
  return {meta: m ? {step: m.step, temperature: m.temperature, top_k: m.top_k, top_p: m.top_p} : null,
          fields: {temperature: num('temperature'), top_k: num('top-k'), top_p: num('top-p')}};
}"""
AGREE = f"""() => {{
  const s = ({SHOWN})();
  if (!s || !s.meta || !window.LLMApp || !LLMApp.mounted()) return false;
  const close = (a, b) => typeof a === 'number' && Math.abs(a - b) < 1e-9;
  return close(s.meta.temperature, s.fields.temperature) && close(s.meta.top_k, s.fields.top_k) && close(s.meta.top_p, s.fields.top_p);
}}"""


def _fields(page):
    return page.evaluate(SHOWN)["fields"]


def _settled(page):
    """Every panel drawn, then a moment for anything still on its way (a redraw that should follow)."""
    page.evaluate("() => LLMApp.settled()")
    page.wait_for_timeout(1500)
    page.evaluate("() => LLMApp.settled()")


def _assert_agree(page, wait_ms: int = 10_000):
    try:
        page.wait_for_function(AGREE, timeout=wait_ms)
    except Exception:  # (playwright's TimeoutError) say what differs
        pass
    shown = page.evaluate(SHOWN)
    assert shown["meta"] is not None, "the distribution on screen names no settings in layout.meta"
    for k in ("temperature", "top_k", "top_p"):
        assert shown["meta"][k] == pytest.approx(shown["fields"][k]), f"{k}: distribution {shown['meta']} vs fields {shown['fields']}"


def _open(browser, app_url, query, want):
    page = new_page(browser)
    page.goto(app_url + "/" + query)
    page.wait_for_function("(w) => { const n = (id) => Number(document.querySelector('#' + id + ' input[type=number]')?.value);"
                           " return window.LLMApp && LLMApp.mounted() && n('temperature') === w[0] && n('top-k') === w[1]"
                           " && n('top-p') === w[2]; }", arg=want, timeout=120_000)
    _settled(page)
    return page


def _wait_new_trace(page, before, n_steps):
    page.wait_for_function("([k, n]) => window.LLMApp && LLMApp.mounted() && LLMApp.state.key !== k"
                           " && LLMApp.state.bundle.n_steps === n", arg=[before, n_steps], timeout=120_000)


@pytest.mark.parametrize("query, want", [("?temperature=0&top_p=0.5", [0, 0, 0.5]),
                                         ("?top_k=5", [0.7, 5, 0.9]),
                                         ("?temperature=1.3&top_k=5&top_p=0.8", [1.3, 5, 0.8])])
def test_a_links_settings_are_the_distributions(browser, app_url, query, want):
    page = _open(browser, app_url, query, want)
    _assert_agree(page, wait_ms=5_000)
    assert not error_toasts(page) and not page.errors


def test_an_example_chosen_is_drawn_with_the_fields_settings(browser, app_url):
    """The fields first differ from the example's own settings (a link set them); then "flat" is chosen."""
    e, trace = gallery.entry("flat"), gallery.load("flat")
    page = _open(browser, app_url, "?temperature=0.35&top_k=12&top_p=0.5", [0.35, 12, 0.5])
    before = page.evaluate("() => LLMApp.state.key")
    page.click("#example-traces input")
    page.get_by_role("option", name=e.title).click()
    _wait_new_trace(page, before, len(trace.steps))
    _settled(page)
    _assert_agree(page)
    assert not error_toasts(page) and not page.errors


def test_a_trace_file_loaded_is_drawn_with_the_fields_settings(browser, app_url):
    """A file whose settings (temperature 0, top-p 1) differ from the fields the page had."""
    trace = gallery.load("confident")
    page = _open(browser, app_url, "?temperature=1.3&top_k=7&top_p=0.6", [1.3, 7, 0.6])
    before = page.evaluate("() => LLMApp.state.key")
    with page.expect_file_chooser() as fc:
        page.click("#upload-trace")
    fc.value.set_files(str(gallery.GALLERY_DIR / "confident.json.gz"))
    _wait_new_trace(page, before, len(trace.steps))
    _settled(page)
    _assert_agree(page)
    assert not error_toasts(page) and not page.errors
