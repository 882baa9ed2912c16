"""The first visitor of a waking Space: Generate is clicked while the model is still loading.

Each test starts its own app process with LLM_VIZ_LOAD_GATE, so the model's loading waits until the
test creates the gate file: the test acts while the model is loading, then lets it load.
"""
from __future__ import annotations

import os
import time

import pytest

from .harness import app_server, error_toasts, new_page, set_number, slider_max, slider_value, wait_plot_step

pytestmark = pytest.mark.browser

COLD_STARTS = int(os.environ.get("LLM_VIZ_COLD_STARTS", 10))
ANSWER_MS = 60_000  # a click after loading streams a token or says why within this; a hang fails
MODEL_LINE = "() => (document.querySelector('#model-info')?.innerText || '')"
PAGE_STATE = """() => ({output: (document.querySelector('#output')?.innerText || '').slice(0, 160),
  stale: document.querySelectorAll('#output .stale').length,
  fields: ['temperature', 'max-new-tokens'].map(id => document.querySelector('#' + id + ' input')?.value),
  raw: document.querySelector('input[value="Raw text"]')?.checked,
  prompt: document.querySelector('#prompt textarea')?.value,
  generating: !!document.querySelector('#generate[disabled], .generating')})"""
# every toast the page shows, warnings too (they vanish after a while): read by _toasts()
RECORD_TOASTS = """
window.__toasts = [];
new MutationObserver(() => {
  document.querySelectorAll('.toast-body').forEach(t => {  // Gradio reuses a toast's element: a new text is a new toast
    const text = t.innerText.replace(/\\s+/g, ' ');
    if (t.__text !== text) { t.__text = text; window.__toasts.push(text); }
  });
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def _open(browser, url: str):
    page = new_page(browser)
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.add_init_script(RECORD_TOASTS)
    page.goto(url)
    return page


def _toasts(page, since: int = 0) -> list[str]:
    return page.evaluate("(n) => window.__toasts.slice(n)", since)


def _wait_loaded(page, timeout_ms: int = 300_000):
    page.wait_for_function(f"() => ({MODEL_LINE})().startsWith('Model:')", timeout=timeout_ms)


def _click_while_loading(page):
    """Generate the moment the button exists: a warning, and the example trace stays on screen."""
    page.click("#generate")
    page.wait_for_selector(".toast-body:has-text('still loading')", timeout=30_000)
    page.wait_for_function("() => (document.querySelector('#output')?.innerText || '').includes('Rayleigh scattering')",
                           timeout=30_000)
    assert "loading" in page.inner_text("#model-info")


def test_generate_while_the_model_loads_warns_only_and_works_once_loaded(browser, tmp_path):
    gate = tmp_path / "load-now"
    with app_server(log=tmp_path / "app.log", env={"LLM_VIZ_LOAD_GATE": str(gate)}) as url:
        page = _open(browser, url)
        _click_while_loading(page)
        # the example trace stays explorable
        set_number(page, "step-slider", 7)
        wait_plot_step(page, "attn-plot", 7)
        assert slider_max(page) == 39 and slider_value(page) == 7
        assert "loading" in page.inner_text("#model-info")
        # a second impatient click, then the model loads
        page.click("#generate")
        gate.touch()
        _wait_loaded(page)
        page.get_by_label("Raw text").check()
        page.fill("#prompt textarea", "The capital of France is")
        set_number(page, "max-new-tokens", 4)
        set_number(page, "temperature", 0)
        page.evaluate("() => document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'))")
        page.click("#generate")
        page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=120_000)
        page.wait_for_function("() => !document.querySelector('#download-trace').disabled", timeout=60_000)
        assert "Paris" in page.inner_text("#output .gen-text")
        assert slider_max(page) == 3
        assert page.errors == [] and error_toasts(page) == []
        assert "Could not preprocess" not in page.inner_text("body")


def _click_until_loaded(page, timeout_s: float = 300) -> int:
    """An impatient newcomer: Generate about three times a second for as long as the model line says it is
    loading (each click is refused at once with a warning, or dropped by the page while the last is
    pending). Returns the clicks made."""
    clicks, t0 = 0, time.perf_counter()
    # the line read and the button clicked in one go: a click made only while the page says "loading"
    while page.evaluate(f"() => !({MODEL_LINE})().startsWith('Model:') && (document.querySelector('#generate').click(), true)"):
        clicks += 1
        assert "failed" not in page.evaluate(MODEL_LINE) and time.perf_counter() - t0 < timeout_s, "the model did not load"
        try:  # (the pace of the clicks, not a wait for anything)
            _wait_loaded(page, timeout_ms=300)
        except Exception:  # noqa: BLE001  (still loading: click again)
            pass
    return clicks


def _generate_and_wait(page, prompt: str, word: str, what: str) -> float:
    """Generate `prompt` (greedy, 2 tokens): its first token must write `word` within ANSWER_MS, a click
    the page dropped never does. Returns the seconds to the first token."""
    page.fill("#prompt textarea", prompt)
    page.evaluate("() => document.querySelectorAll('#output *').forEach(e => e.classList.add('stale'))")
    n, t0 = len(_toasts(page)), time.perf_counter()
    page.click("#generate")
    try:
        page.wait_for_function("(w) => (document.querySelector('#output .gen-text:not(.stale)')?.innerText || '').includes(w)",
                               arg=word, timeout=ANSWER_MS)
    except Exception as e:  # noqa: BLE001  (say which click went unanswered, and what the page said)
        raise AssertionError(f"{what}: no '{word}' within {ANSWER_MS / 1000:.0f} s; toasts since the click: {_toasts(page, n)}; "
                             f"model line: {page.evaluate(MODEL_LINE)[:60]!r}; page: {page.evaluate(PAGE_STATE)}") from e
    return time.perf_counter() - t0


def _cold_start(browser, tmp_path, i: int) -> dict:
    """One fresh app: clicks while loading, the model let go, then Generate twice (see the test)."""
    gate, t0 = tmp_path / f"load-now-{i}", time.perf_counter()
    with app_server(log=tmp_path / f"app-{i}.log", env={"LLM_VIZ_LOAD_GATE": str(gate)}) as url:
        page = _open(browser, url)
        took = {"up_s": time.perf_counter() - t0}
        _click_while_loading(page)
        gate.touch()
        took["clicks_while_loading"] = _click_until_loaded(page)  # with the page's defaults: a chat reply of 64 tokens
        page.get_by_label("Raw text").check()
        set_number(page, "max-new-tokens", 2)
        set_number(page, "temperature", 0)
        took["first_token_s"] = _generate_and_wait(page, "The capital of France is", "Paris", f"start {i}, the click after loading")
        page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=ANSWER_MS)
        took["again_first_token_s"] = _generate_and_wait(page, "The capital of Italy is", "Rome", f"start {i}, the click again at once")
        page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=ANSWER_MS)
        assert page.errors == [] and error_toasts(page) == [], (page.errors, error_toasts(page))
        page.close()
    took["start_s"] = time.perf_counter() - t0
    return took


@pytest.mark.walk
def test_ten_cold_starts_every_click_after_loading_is_answered(browser, tmp_path):
    """Issue 23: fresh starts in a row, each with clicks while the model loads, then Generate the moment
    the model line says "Model:", then again the moment that run ended: both must write their answer.
    (A click made while the line said "loading" used to become a whole run of the default prompt when the
    model arrived meanwhile, and the page dropped every click on Generate while that run went on.)"""
    fails = []
    for i in range(COLD_STARTS):
        try:
            took = _cold_start(browser, tmp_path, i)
        except AssertionError as e:
            fails.append(f"start {i}: {str(e)[:300]}")
            print(f"cold start {i}: FAILED {str(e)[:300]}", flush=True)
            for ctx in list(browser.contexts):
                ctx.close()
            continue
        print(f"cold start {i}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in took.items()), flush=True)
    assert fails == [], f"{len(fails)} of {COLD_STARTS} cold starts left a click unanswered: {fails}"
