"""The text and the token chips follow the step on screen, however the trace was opened: a saved example opened
at step 5 grows to step 7 with the slider and shrinks to step 2, exactly as the trace's own text at that step."""
from __future__ import annotations

import pytest

from pipeline import gallery

from .harness import new_page

pytestmark = pytest.mark.browser

MOUNTED = "(s) => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === s"
SHOWN = ("() => ({text: document.querySelector('#output .gen-text').innerText,"
         " chips: [...document.querySelectorAll('#tokens-html .tok.gen')].filter((c) => c.offsetParent !== null).length,"
         " hl: [...document.querySelectorAll('#tokens-html .tok.hl')].map((c) => c.dataset.step)})")


def _move(page, v):
    page.evaluate("(v) => { const r = document.querySelector('#step-slider input[type=range]'); r.value = v;"
                  " r.dispatchEvent(new Event('input', {bubbles: true})); }", v)
    page.wait_for_function(MOUNTED, arg=v, timeout=30_000)


def test_an_example_opened_at_a_step_grows_and_shrinks_with_the_slider(browser, app_url):
    trace = gallery.load("confident")
    want = ["".join(s.text for s in trace.steps[: i + 1]) for i in range(len(trace.steps))]
    page = new_page(browser)
    page.goto(app_url + "/?example=confident&step=5")  # no wait for the model: the saved trace needs none
    page.wait_for_function(MOUNTED, arg=5, timeout=120_000)
    for s in (5, 7, 2, len(trace.steps) - 1, 5):
        _move(page, s)
        page.wait_for_function("(w) => document.querySelector('#output .gen-text').innerText.trim() === w.trim()",
                               arg=want[s], timeout=10_000)
        got = page.evaluate(SHOWN)
        assert got["chips"] == s + 1 and got["hl"] == [str(s)], (s, got)
    # Play from step 0 ends at the last step, the whole text on screen
    _move(page, 0)
    page.click("#play")
    page.wait_for_function("() => !LLMApp.playing()", timeout=60_000)
    assert page.evaluate(SHOWN)["text"].strip() == want[-1].strip()
