"""Stop and simultaneous sessions: the shared model's slots, lock and hooks are given back.

Shares the one app process of this directory (conftest.py). Each page is its own session.
"""
from __future__ import annotations

import pytest

from .harness import error_toasts, n_generated_chips, open_page, set_number, slider_max, wait_model_loaded
from .test_app import mark_stale, wait_stopped

pytestmark = pytest.mark.browser

STOPS = 5  # stopped runs in a row: each must give back its slot (ui/api.py GENERATE_SLOTS) and its row of the decode loop


def _set(page, prompt: str, max_new: int, *, temperature: float = 0, mode: str = "Raw text"):
    page.locator(f"#mode input[value='{mode}']").check()
    page.fill("#prompt textarea", prompt)
    set_number(page, "max-new-tokens", max_new)
    set_number(page, "temperature", temperature)


def _greedy(page, prompt: str, max_new: int) -> str:
    _set(page, prompt, max_new)
    mark_stale(page)
    page.click("#generate")
    wait_stopped(page)
    return page.inner_text("#output .gen-text")


def test_stop_gives_back_the_slot_the_lock_and_the_hooks(browser, app_url):
    page = open_page(browser, app_url)
    wait_model_loaded(page)
    alone = _greedy(page, "The three largest cities in France are", 12)
    # text only while generating: this test is about the server's slots, not the browser's drawing (on a
    # busy 2-core machine a heavy redraw can keep the page from taking the Stop click for many seconds)
    page.get_by_label("Redraw the figures while generating", exact=False).uncheck()
    # stopped runs in a row: each Stop must give its slot back, and its row leaves the decode loop's batch
    for k in range(STOPS):
        _set(page, f"Tell me a long story about dragon number {k}.", 300, temperature=0.8, mode="Chat")
        mark_stale(page)
        page.click("#generate")
        page.wait_for_function("() => document.querySelectorAll('#output span.step:not(.stale)').length >= 2", timeout=120_000)
        page.click("#stop")
        # `finish` drew the stopped run's last step (its new stop point, not the previous run's)
        page.wait_for_function("() => !document.querySelector('#download-trace').disabled", timeout=60_000)
        assert 2 <= slider_max(page) + 1 < 300
    # at once: the same greedy text as before (no hooks left on the model, its lock free). A Stop clicked
    # as its run ended anyway redraws that run when it is served, which can be after this click: the
    # text is waited for, not read once (a model left with hooks or a held lock never writes it)
    _set(page, "The three largest cities in France are", 12)
    mark_stale(page)
    page.click("#generate")
    page.wait_for_function("(t) => document.querySelector('#output .gen-text:not(.stale)')?.innerText === t", arg=alone, timeout=180_000)
    wait_stopped(page)
    assert not page.errors and not error_toasts(page)


def test_two_sessions_generating_at_once_each_get_their_own_greedy_text(browser, app_url):
    a, b = open_page(browser, app_url), open_page(browser, app_url)
    wait_model_loaded(a)
    prompts = {"a": "The colours of the rainbow are", "b": "def fibonacci(n):"}
    alone = {"a": _greedy(a, prompts["a"], 24), "b": _greedy(b, prompts["b"], 24)}
    for page, key in ((a, "a"), (b, "b")):
        _set(page, prompts[key], 24)
        mark_stale(page)
    a.click("#generate")
    b.click("#generate")
    # both stream at the same time: B's first tokens arrive before A has finished
    b.wait_for_function("() => document.querySelectorAll('#output span.step:not(.stale)').length >= 1", timeout=120_000)
    together_running = not a.query_selector("#output .stop-reason:not(.stale)")
    wait_stopped(a)
    wait_stopped(b)
    assert {"a": a.inner_text("#output .gen-text"), "b": b.inner_text("#output .gen-text")} == alone
    assert slider_max(a) == slider_max(b) == 23
    assert n_generated_chips(a) >= 20 and n_generated_chips(b) >= 20
    assert together_running, "A had finished before B started: the runs did not overlap"
    for page in (a, b):
        assert not page.errors and not error_toasts(page)
