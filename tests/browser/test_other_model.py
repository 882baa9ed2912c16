"""A trace of another model loaded into the page: explorable, never continued with the wrong model.

The trace is made here by a tiny random model (2 layers, 4 heads, its own tokenizer); the app
runs the embedded SmolLM2-135M (30 layers, 9 heads). Shares the one app process (conftest.py).
"""
from __future__ import annotations

import pytest

from pipeline.trace import files as trace_io
from pipeline.generate import start
from pipeline.trace.records import Settings

from .harness import error_toasts, open_page, set_number, slider_max, wait_model_loaded, wait_plot_step
from .test_app import mark_stale, wait_stopped

pytestmark = pytest.mark.browser

PROMPT = "Why is the sky blue?"


@pytest.fixture(scope="module")
def tiny_trace_file(tmp_path_factory):
    from tests import tiny

    lm = tiny.loaded("llama", ctx=128)
    gen = start(lm, PROMPT, Settings(temperature=0, max_new_tokens=5))
    for _ in gen:
        pass
    path = tmp_path_factory.mktemp("tiny") / "tiny-trace.json.gz"
    trace_io.save(gen.trace(), path)
    return path


def _choices(page, elem_id: str) -> tuple[int, list[str]]:
    """(how many options a dropdown offers, the first few), as a person sees them when opening it."""
    page.click(f"#{elem_id} input")
    opt = f"#{elem_id} [data-testid=dropdown-option]"
    page.wait_for_selector(opt, timeout=10_000)
    n = int(page.get_attribute(opt, "aria-setsize"))
    first = [li.get_attribute("aria-label") for li in page.query_selector_all(opt)][:5]
    page.keyboard.press("Escape")
    return n, first


def _load(page, path):
    with page.expect_file_chooser() as fc:
        page.click("#upload-trace")
    fc.value.set_files(str(path))
    page.wait_for_selector("#model-info :text('Viewing a saved trace of tiny-llama')", timeout=30_000)


def _refused(page, button: str, words: str):
    page.click(button)
    page.wait_for_selector(f".toast-body.warning:has-text('{words}')", timeout=30_000)
    page.click(".toast-body.warning [data-testid='toast-close']")


def test_a_trace_of_another_model_is_explored_not_continued(browser, app_url, tiny_trace_file):
    page = open_page(browser, app_url, width=1440, height=1100)
    wait_model_loaded(page)
    _load(page, tiny_trace_file)
    # 1. its own shape: 2 layers and 4 heads in the dropdowns, its 5 steps on the slider
    assert _choices(page, "layer") == (2, ["0", "1"])
    assert _choices(page, "head") == (5, ["all", "0", "1", "2", "3"])
    assert slider_max(page) == 4
    wait_plot_step(page, "attn-plot", 4)
    text = page.inner_text("#output .gen-text")  # (the text itself: Gradio may lay its progress line over the box)
    # 2. the logit lens says why it cannot be drawn: another model made the trace
    page.locator("#panel-inside").scroll_into_view_if_needed()
    page.click("#tab-lens-button")
    page.wait_for_selector("#lens-summary :text('made by tiny-llama, not by the loaded model')", timeout=30_000)
    # 3. +1 token (its prompt in the box), re-sample and branch are refused, with the reason
    page.fill("#prompt textarea", PROMPT)
    _refused(page, "#step", "made by tiny-llama, not by the loaded model")
    _refused(page, "#resample", "made by tiny-llama, not by the loaded model")
    page.click("#tab-branches-button")
    set_number(page, "branch-rank", 2)
    _refused(page, "#branch-button", "made by tiny-llama, not by the loaded model")
    assert page.inner_text("#output .gen-text") == text and slider_max(page) == 4  # the trace stays on screen, untouched
    assert page.input_value("#prompt textarea") == PROMPT
    # 4. Generate makes a trace of the loaded model: its name and shape come back
    page.get_by_label("Raw text").check()
    set_number(page, "max-new-tokens", 3)
    set_number(page, "temperature", 0)
    mark_stale(page)
    page.click("#generate")
    wait_stopped(page)
    assert page.inner_text("#model-info").startswith("Model: SmolLM2-135M-Instruct")
    assert _choices(page, "layer")[0] == 30
    assert _choices(page, "head")[0] == 10  # "all" and 9 heads
    assert not page.errors and not error_toasts(page)
