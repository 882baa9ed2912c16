"""The first visitor of a waking Space: Generate is clicked while the model is still loading.

Its own app process, started with LLM_VIZ_LOAD_GATE so the model's loading waits until the
test creates the gate file: the test acts while the model is loading, then lets it load.
"""
from __future__ import annotations

import pytest

from .harness import app_server, set_number, slider_max, slider_value

pytestmark = pytest.mark.browser

# every error toast and console error the page shows, recorded as it appears (toasts vanish)
RECORD_ERRORS = """
window.__errors = [];
new MutationObserver(() => {
  document.querySelectorAll('.toast-body.error').forEach(t => {
    if (!t.__seen) { t.__seen = true; window.__errors.push('toast: ' + t.innerText); }
  });
}).observe(document, {subtree: true, childList: true});
"""


def _errors(page) -> list:
    return page.evaluate("() => window.__errors") + page.console_errors


def _attn_step(page, step: int, timeout_ms: int = 30_000):
    page.wait_for_function("(s) => (document.querySelector('#attn-plot .js-plotly-plot')?.layout?.title?.text || '')"
                           ".includes('step ' + s + ':')", arg=step, timeout=timeout_ms)


def test_generate_while_the_model_loads_warns_only_and_works_once_loaded(browser, tmp_path):
    gate = tmp_path / "load-now"
    with app_server(log=tmp_path / "app.log", env={"LLM_VIZ_LOAD_GATE": str(gate)}) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.console_errors = []
        page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
        page.on("pageerror", lambda e: page.console_errors.append(str(e)))
        page.add_init_script(RECORD_ERRORS)
        page.goto(url)
        page.click("#generate")  # the moment the button exists
        page.wait_for_selector(".toast-body:has-text('still loading')", timeout=30_000)
        # the example trace stays on screen and explorable
        page.wait_for_function("() => (document.querySelector('#output')?.innerText || '').includes('Rayleigh scattering')",
                               timeout=30_000)
        set_number(page, "step-slider", 7)
        _attn_step(page, 7)
        assert slider_max(page) == 39 and slider_value(page) == 7
        assert "still loading" in page.inner_text("#model-info") or "loading" in page.inner_text("#model-info").lower()
        # a second impatient click, then the model loads
        page.click("#generate")
        gate.touch()
        page.wait_for_function("() => (document.querySelector('#model-info')?.innerText || '').startsWith('Model:')", timeout=300_000)
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
        assert _errors(page) == []
        assert "Could not preprocess" not in page.inner_text("body")
