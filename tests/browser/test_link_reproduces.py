"""A link reproduces the lesson and never contradicts (the page's promise: docs/teaching.md), driven as an
impatient person would:

- "Copy link" after a run (greedy, and sampled with a seed) opened in a fresh browser: the same text,
  written anew by the model, at the same step, even after the what-if sliders were moved;
- a link's values are in the fields at the first frame that shows them, and a prompt typed at once is
  never written over by the link later;
- an example chosen from the gallery puts its prompt, mode and settings into the fields, says so in one
  line, and the distribution is drawn with what the sliders show.

Screenshots go to /tmp/links_shots/.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from pipeline import gallery

from .harness import error_toasts, new_page, set_number, slider_value, wait_model_loaded

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/links_shots")
FIELDS = "() => { const v = (id) => document.querySelector('#' + id + ' input[type=number], #' + id + ' textarea')?.value;" \
         " const m = document.querySelector('#mode input:checked')?.value;" \
         " return {prompt: v('prompt'), mode: m, system: v('system-prompt'), temperature: Number(v('temperature')), top_k: Number(v('top-k'))," \
         " top_p: Number(v('top-p')), seed: Number(v('seed')), max_new: Number(v('max-new-tokens'))}; }"
# the fields as the first animation frame that holds them shows them (before that frame is painted)
FIRST_FRAME = """
window.__firstFrame = null; window.__linkAt = null;
const look = () => {
  const box = document.querySelector('#prompt textarea'), t = document.querySelector('#temperature input[type=number]');
  const p = document.querySelector('#top-p input[type=number]');
  if (box && t && p) {
    const now = {prompt: box.value, temperature: Number(t.value), top_p: Number(p.value), at: performance.now()};
    window.__firstFrame = window.__firstFrame || now;
    if (now.prompt === 'Once upon a time' && now.temperature === 0.3 && now.top_p === 0.8) { window.__linkAt = now.at; return; }
  }
  requestAnimationFrame(look);
};
requestAnimationFrame(look);
"""
# the longest a link's values may take to reach the fields once they are drawn. Strictly they are there at the
# first paint only when the writer runs from the page's <head> (see ui/links.py); a component's js_on_load comes a
# moment later on a busy machine, Gradio's load event seconds later
FIRST_MS = 2_000
DONE = ("([k, n]) => window.LLMApp && LLMApp.mounted() && LLMApp.state.key !== k && LLMApp.state.bundle.n_steps === n"
        " && document.querySelector('#output .stop-reason')")


def _shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def _key(page):
    return page.evaluate("() => (window.LLMApp && LLMApp.mounted()) ? LLMApp.state.key : null")


def _set_step(page, n):
    """As a drag of the step slider would."""
    page.evaluate("(n) => { const r = document.querySelector('#step-slider input[type=range]'); r.value = n;"
                  " r.dispatchEvent(new Event('input', {bubbles: true})); r.dispatchEvent(new Event('change', {bubbles: true})); }", n)


@pytest.mark.parametrize("settings", [dict(temperature=0, top_k=0, top_p=1, seed=0),
                                      dict(temperature=0.9, top_k=40, top_p=0.95, seed=1234)], ids=["greedy", "sampled"])
def test_copy_link_writes_the_same_text_at_the_same_step(browser, app_url, settings):
    page = new_page(browser)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(app_url)
    page.wait_for_selector("#prompt textarea")
    page.click("#mode input[value='Raw text']")
    page.fill("#prompt textarea", "The best thing about the sea is")
    for elem_id, v in (("temperature", settings["temperature"]), ("top-k", settings["top_k"]), ("top-p", settings["top_p"]),
                       ("seed", settings["seed"]), ("max-new-tokens", 6)):
        set_number(page, elem_id, v)
    wait_model_loaded(page)
    before = _key(page)
    page.click("#generate")
    page.wait_for_function(DONE, arg=[before, 6], timeout=300_000)
    text = page.inner_text("#output")  # the whole text (the last step on screen)
    # the what-if sliders move after the run: the link must still say how the text was made
    set_number(page, "temperature", 1.7)
    set_number(page, "top-p", 0.5)
    _set_step(page, 3)
    page.wait_for_function("() => Number(document.querySelector('#step-slider input[type=number]').value) === 3", timeout=10_000)
    page.wait_for_timeout(500)
    at3 = page.inner_text("#output")
    page.click("#copy-link")
    page.wait_for_function("() => /copied/i.test(document.querySelector('#copy-link')?.innerText || '')", timeout=30_000)
    link = page.input_value("#link-box input, #link-box textarea")
    _shot(page, f"copied_{'greedy' if settings['temperature'] == 0 else 'sampled'}")
    assert page.evaluate("() => navigator.clipboard.readText()") == link
    q = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    assert q.get("run") == "1" and q.get("step") == "3", link
    assert float(q["temperature"]) == settings["temperature"] and float(q["top_p"]) == settings["top_p"], link

    other = new_page(browser)
    other.goto(link)
    other.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.key !== null", timeout=120_000)
    other.wait_for_function(DONE, arg=[_key(other), 6], timeout=300_000)  # (the page's own example first, then the link's run)
    other.wait_for_function("() => Number(document.querySelector('#step-slider input[type=number]').value) === 3", timeout=30_000)
    other.wait_for_timeout(1000)
    _shot(other, f"opened_{'greedy' if settings['temperature'] == 0 else 'sampled'}")
    assert other.inner_text("#output") == at3 and slider_value(other) == 3
    _set_step(other, 5)
    other.wait_for_function("() => Number(document.querySelector('#step-slider input[type=number]').value) === 5", timeout=10_000)
    other.wait_for_timeout(500)
    assert other.inner_text("#output") == text
    assert other.input_value("#prompt textarea") == "The best thing about the sea is"
    assert not error_toasts(page) and not page.errors and not error_toasts(other) and not other.errors


def test_a_links_values_are_there_at_first_paint_and_typing_wins(browser, app_url):
    page = new_page(browser)
    page.add_init_script(FIRST_FRAME)
    page.goto(app_url + "/?prompt=Once%20upon%20a%20time&mode=raw&temperature=0.3&top_p=0.8&seed=5")
    page.wait_for_function("() => window.__firstFrame", timeout=60_000, polling=50)
    # read as soon as the fields exist: at once, or within a moment (not after the model, not after the server)
    try:
        page.wait_for_function("() => window.__linkAt", timeout=FIRST_MS, polling=50)
    except Exception:  # (playwright's TimeoutError) the assertion below says what the fields held
        pass
    first = {**page.evaluate("() => window.__firstFrame"), "link_at": page.evaluate("() => window.__linkAt")}
    print("fields drawn at", round(first["at"]), "ms; the link's values in them at", first["link_at"])
    first_now = page.evaluate(FIELDS)
    # a person types at once, over what the link put there
    page.click("#prompt textarea")
    page.keyboard.press("Control+A")
    page.keyboard.type("My own words")
    _shot(page, "first_paint_typed")
    assert first_now["prompt"] == "Once upon a time" and first_now["temperature"] == 0.3 and first_now["top_p"] == 0.8, (first, first_now)
    page.wait_for_timeout(12_000)
    _shot(page, "first_paint_after_12s")
    f = page.evaluate(FIELDS)
    assert f["prompt"] == "My own words", f
    assert f["mode"] == "Raw text" and f["temperature"] == 0.3 and f["top_p"] == 0.8 and f["seed"] == 5, f
    assert not error_toasts(page) and not page.errors


def test_an_example_link_writes_nothing_over_typing(browser, app_url):
    """?example=loop: the example's settings fill the fields, except the prompt a person typed meanwhile."""
    e, trace = gallery.entry("loop"), gallery.load("loop")
    page = new_page(browser)
    page.goto(app_url + "/?example=loop")
    page.wait_for_selector("#prompt textarea")
    page.click("#prompt textarea")
    page.keyboard.press("Control+A")
    page.keyboard.type("Typed before the example came")
    page.wait_for_function("(t) => document.querySelector('#example-traces input')?.value === t", arg=e.title, timeout=120_000)
    page.wait_for_timeout(3000)
    f = page.evaluate(FIELDS)
    s = trace.settings
    assert f["prompt"] == "Typed before the example came", f
    assert f["temperature"] == pytest.approx(s.temperature) and f["top_k"] == s.top_k and f["top_p"] == pytest.approx(s.top_p), f
    assert f["mode"] == ("Chat" if s.chat else "Raw text"), f
    assert not error_toasts(page) and not page.errors


def test_choosing_an_example_fills_the_fields_and_says_so(browser, app_url):
    name = "flat"
    e, trace = gallery.entry(name), gallery.load(name)
    s = trace.settings
    page = new_page(browser)
    page.goto(app_url + "/?prompt=Something%20else&mode=chat&temperature=0.35&top_k=12&top_p=0.5&max_new_tokens=9")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && Number(document.querySelector('#top-k input[type=number]')?.value) === 12",
                           timeout=120_000)
    before = _key(page)
    page.click("#example-traces input")
    page.get_by_role("option", name=e.title).click()
    page.wait_for_function("([k, n]) => window.LLMApp && LLMApp.mounted() && LLMApp.state.key !== k && LLMApp.state.bundle.n_steps === n",
                           arg=[before, len(trace.steps)], timeout=120_000)
    page.evaluate("() => LLMApp.settled()")
    page.wait_for_timeout(1500)
    f = page.evaluate(FIELDS)
    assert f["prompt"] == trace.prompt.text, f
    assert f["mode"] == ("Chat" if s.chat else "Raw text"), f
    assert f["temperature"] == pytest.approx(s.temperature) and f["top_k"] == s.top_k and f["top_p"] == pytest.approx(s.top_p), f
    assert f["seed"] == s.seed, f
    look = page.inner_text("#example-look")
    said = [line for line in look.splitlines() if "field" in line.lower()]
    assert len(said) == 1 and "prompt" in said[0].lower(), look
    meta = page.evaluate("""() => { const b = document.getElementById('dist-plot');
      const el = b.classList.contains('viewer-on') ? b.querySelector(':scope > .viewer-plot.js-plotly-plot, :scope > .viewer-plot .js-plotly-plot')
                                                   : b.querySelector(':scope > :not(.viewer-plot) .js-plotly-plot');
      const m = el && el.layout && el.layout.meta; return m ? {temperature: m.temperature, top_k: m.top_k, top_p: m.top_p} : null; }""")
    assert meta is not None
    assert meta["temperature"] == pytest.approx(f["temperature"]) and meta["top_k"] == f["top_k"] and meta["top_p"] == pytest.approx(f["top_p"]), (meta, f)
    page.locator("#example-look").scroll_into_view_if_needed()
    _shot(page, "example_chosen")
    assert not error_toasts(page) and not page.errors
