"""Draw many in Chromium: N continuations from the step on screen, their tree, texts and first-token counts; one opened as
a branch (the trace on screen becomes it, every panel drawn); a phone in dark mode; and Draw before the model has loaded.

The first tests share the directory's app process (conftest.py); the last starts its own, whose model never loads.
"""
from __future__ import annotations

import pytest

from .harness import app_server, error_toasts, open_page, set_number, slider_max, wait_model_loaded

pytestmark = pytest.mark.browser


def _draw(page, n: int, m: int):
    set_number(page, "samples-n", n)
    set_number(page, "samples-m", m)
    page.click("#samples-run")
    page.wait_for_selector("#samples-result .samples-result", timeout=180_000)
    return page.locator("#samples-result .samples-result")


def test_draw_many_shows_the_continuations_and_opens_one_as_a_branch(browser, app_url, shots):
    page = open_page(browser, app_url, width=1366, height=768)
    wait_model_loaded(page)
    step = slider_max(page)  # the example opens on its last step: the continuations replace it
    res = _draw(page, 8, 6)
    assert res.get_attribute("data-n") == "8" and int(res.get_attribute("data-step")) == step
    assert page.locator("#samples-result .sample-text").count() == 8
    assert page.locator("#samples-result .sample-open").count() == 8
    # the batch's cost, measured beside one alone (which runs after the continuations are on screen)
    page.wait_for_function("() => document.querySelector('#samples-result').innerText.includes('one alone takes')", timeout=120_000)
    page.locator("#samples").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "samples_1366x768.png"))
    text = page.locator("#samples-result .sample-text").nth(3).inner_text()
    before = page.get_attribute("#output .gen-text", "data-steps")
    page.locator("#samples-result .sample-open").nth(3).click()
    page.wait_for_function(f"() => document.querySelector('#output .gen-text')?.dataset.steps !== '{before}'", timeout=120_000)
    steps = int(page.get_attribute("#output .gen-text", "data-steps"))
    assert step < steps <= step + 6
    assert page.inner_text("#output .gen-text").rstrip().endswith(text.strip()[-12:])
    page.wait_for_function(f"() => Number(document.querySelector('#step-slider input[type=range]').max) === {steps - 1}", timeout=30_000)
    assert not page.errors and not error_toasts(page)


def test_draw_many_on_a_phone_in_dark_mode(browser, app_url, shots):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark", has_touch=True, is_mobile=True)
    page = ctx.new_page()
    page.goto(app_url)
    page.wait_for_selector("#samples-run", timeout=60_000)
    wait_model_loaded(page)
    set_number(page, "samples-n", 4)
    set_number(page, "samples-m", 4)
    page.tap("#samples-run")
    page.wait_for_selector("#samples-result .samples-result[data-n='4']", timeout=180_000)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways ({width}px)"
    page.locator("#samples-result").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "samples_390x844_dark.png"))
    ctx.close()


def test_draw_before_the_model_has_loaded_says_it_needs_the_model(browser, tmp_path):
    gate = tmp_path / "never"  # the model's loading waits for this file, which never comes
    with app_server(log=tmp_path / "app.log", env={"LLM_VIZ_LOAD_GATE": str(gate)}) as url:
        page = open_page(browser, url, width=1366, height=768)
        page.click("#samples-run")  # at once, as an impatient newcomer would
        page.wait_for_selector("#samples-result .samples-refused", timeout=60_000)
        said = page.inner_text("#samples-result")
        assert "runs the model" in said and "not loaded" in said and "Generate" not in said, said
        assert page.locator("#output .gen-text").count() == 1  # the example trace stays on screen
