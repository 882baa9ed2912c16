"""Guess first, for one person: a link's guess=1 hides the step's answer (its token in the text and chips, the
distribution, the embeddings) until a guess is rated; the rating's numbers are the model's (the distribution's
own bars); another step hides again; Play stops at each step; a hostile guess shows as its characters."""
from __future__ import annotations

import pytest

from .harness import new_page, scroll_through, wait_model_loaded

pytestmark = pytest.mark.browser

HIDDEN = "() => document.body.classList.contains('guess-hidden')"
SHOWN = ("(s) => !document.body.classList.contains('guess-hidden') && document.getElementById('guess-result').dataset.step === String(s)"
         " && LLMApp.state.step === s")
# what a person sees of the step on screen: its text span and chip shown, the distribution and embeddings visible
VISIBLE = """() => { const vis = (el) => !!el && el.offsetParent !== null && getComputedStyle(el).visibility !== 'hidden';
  return { text: vis(document.querySelector('#output .gen-text .at-step')), chip: vis(document.querySelector('#tokens-html .tok.hl')),
           dist: vis(document.querySelector('#dist-plot .viewer-plot')), emb: vis(document.querySelector('#emb-plot .viewer-plot')),
           tour: getComputedStyle(document.getElementById('tour')).pointerEvents !== 'none' }; }"""


def move(page, step: int):
    page.evaluate("(v) => { const r = document.querySelector('#step-slider input[type=range]'); r.value = v;"
                  " r.dispatchEvent(new Event('input', {bubbles: true})); }", step)


def guess(page, text: str):
    page.fill("#guess-input textarea", text)
    page.click("#guess-submit")


def test_a_guess_reveals_the_step_with_the_models_numbers(browser, app_url):
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(app_url + "?guess=1")
    page.wait_for_function(HIDDEN, timeout=90_000)
    assert page.is_checked("#guess-toggle input")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    scroll_through(page)  # (the panels below the first screen drawn too: hidden as well)
    assert page.evaluate("() => !!document.querySelector('#emb-plot .viewer-plot')?._fullLayout")
    assert page.evaluate(VISIBLE) == {"text": False, "chip": False, "dist": False, "emb": False, "tour": False}  # (the tour names the token)
    # one element an id: the guess box once (a Group wrote its id twice), no id of ours on two elements
    assert page.evaluate("""() => { const c = {}; document.querySelectorAll('[id]').forEach((e) => { if (e.id) c[e.id] = (c[e.id] || 0) + 1; });
      return Object.keys(c).filter((k) => c[k] > 1); }""") == []
    wait_model_loaded(page)
    step = page.evaluate("() => LLMApp.state.step")
    answer = page.evaluate("() => document.querySelector('#output .gen-text .at-step').textContent")
    guess(page, answer.strip())
    page.wait_for_function(SHOWN, arg=step, timeout=30_000)
    assert page.evaluate(VISIBLE) == {"text": True, "chip": True, "dist": True, "emb": True, "tour": True}
    res = page.evaluate("() => ({...document.getElementById('guess-result').dataset})")
    assert res["chosen"] == "1", res
    # the rating's numbers are the distribution's own: the sampled bar's rank and temperature-1 probability
    bars = page.evaluate("""() => { const d = document.querySelector('#dist-plot .viewer-plot').data[0];
      const k = d.y.findIndex((y) => String(y).includes('sampled')); return [k + 1, d.x[k]]; }""")
    assert int(res["rank"]) == bars[0] and float(res["prob"]) == pytest.approx(bars[1], rel=1e-4), (res, bars)
    assert "top 5 at 1 of 1" in page.inner_text("#guess-score") or bars[0] > 5
    # another step: hidden again until its own guess
    move(page, step - 1)
    page.wait_for_function(HIDDEN, timeout=10_000)
    assert page.evaluate(VISIBLE)["dist"] is False and not page.is_visible("#guess-result")
    hostile = "<img src=x onerror=alert(1)>"
    guess(page, hostile)
    page.wait_for_function(SHOWN, arg=step - 1, timeout=30_000)
    assert hostile in page.inner_text("#guess-result") and page.locator("#guess-result img").count() == 0
    move(page, step)  # back to a step already guessed: shown at once
    page.wait_for_function("(s) => LLMApp.state.step === s", arg=step)
    assert not page.evaluate(HIDDEN)
    page.click("#copy-link")  # a copied link keeps Guess first on
    page.wait_for_function("() => /copied|copy it/i.test(document.querySelector('#copy-link')?.innerText || '')", timeout=30_000)
    assert "guess=1" in page.input_value("#link-box input, #link-box textarea")


def test_play_stops_at_each_step_while_guessing(browser, app_url):
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(app_url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    move(page, 0)
    page.evaluate("() => LLMApp.settled()")
    page.click("#guess-toggle input")
    page.wait_for_function(HIDDEN, timeout=10_000)
    page.click("#play")
    page.wait_for_timeout(2500)  # "normal" speed: 4 steps a second, were it not waiting
    assert page.evaluate("() => [LLMApp.playing(), LLMApp.state.step]") == [False, 1]
    assert page.evaluate(HIDDEN)


def test_an_empty_guess_says_why_and_reveals_nothing(browser, app_url):
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(app_url + "?guess=1")
    page.wait_for_function(HIDDEN, timeout=90_000)
    guess(page, "   ")
    page.wait_for_selector("#guess-result .guess-refused", state="attached", timeout=30_000)
    assert "type a guess" in page.evaluate("() => document.querySelector('#guess-result .guess-refused').textContent").lower()
    assert page.evaluate(HIDDEN)
