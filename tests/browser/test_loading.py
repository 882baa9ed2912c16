"""The first visitor of a waking Space: Generate is clicked while the model is still loading.

Its own app process, started with LLM_VIZ_LOAD_GATE so the model's loading waits until the
test creates the gate file: the test acts while the model is loading, then lets it load.
"""
from __future__ import annotations

import pytest

from .harness import app_server, error_toasts, new_page, set_number, slider_max, slider_value, wait_plot_step

pytestmark = pytest.mark.browser


def test_generate_while_the_model_loads_warns_only_and_works_once_loaded(browser, tmp_path):
    gate = tmp_path / "load-now"
    with app_server(log=tmp_path / "app.log", env={"LLM_VIZ_LOAD_GATE": str(gate)}) as url:
        page = new_page(browser)
        page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
        page.goto(url)
        page.click("#generate")  # the moment the button exists
        page.wait_for_selector(".toast-body:has-text('still loading')", timeout=30_000)
        # the example trace stays on screen and explorable
        page.wait_for_function("() => (document.querySelector('#output')?.innerText || '').includes('Rayleigh scattering')",
                               timeout=30_000)
        set_number(page, "step-slider", 7)
        wait_plot_step(page, "attn-plot", 7)
        assert slider_max(page) == 39 and slider_value(page) == 7
        assert "loading" in page.inner_text("#model-info")
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
        assert page.errors == [] and error_toasts(page) == []
        assert "Could not preprocess" not in page.inner_text("body")
