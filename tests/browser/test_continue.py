"""'+1 token' clicked N times writes exactly what one Generate of N tokens writes.

Shares the one app process of this directory (conftest.py). Each run is its own page.
"""
from __future__ import annotations

import pytest

from .harness import error_toasts, n_generated_chips, open_page, set_number, slider_max, wait_model_loaded
from .test_app import mark_stale

pytestmark = pytest.mark.browser

# SmolLM2-135M answers this (chat, greedy) with emoji, each written by three tokens: two that hold
# bytes of the character and write nothing yet, then the one that completes it (checked in the CLI)
EMOJI_PROMPT = "Send me a heart emoji and a star emoji."


def _settings(page, *, prompt: str, mode: str, temperature: float, seed: int, max_new: int):
    wait_model_loaded(page)
    page.locator(f"#mode input[value='{mode}']").check()
    page.fill("#prompt textarea", prompt)
    set_number(page, "temperature", temperature)
    set_number(page, "seed", seed)
    set_number(page, "max-new-tokens", max_new)


def _click_and_wait(page, button: str):
    """Click, then wait for the new stop line (what this run wrote) and for `finish` (the download enabled)."""
    mark_stale(page)
    page.click(button)
    page.wait_for_selector("#output .stop-reason:not(.stale)", timeout=120_000)
    page.wait_for_function("() => !document.querySelector('#download-trace').disabled", timeout=60_000)


def _written(page) -> tuple[str, int, int]:
    """(the generated text, the steps in the trace, the steps that wrote text)."""
    return page.inner_text("#output .gen-text"), slider_max(page) + 1, n_generated_chips(page)


def _generate_once_and_step_n_times(browser, app_url, n: int, **settings):
    once = open_page(browser, app_url)
    _settings(once, **settings)
    _click_and_wait(once, "#generate")
    stepped = open_page(browser, app_url)  # its own session: the example trace (another prompt) is on screen
    _settings(stepped, **settings)
    for k in range(1, n + 1):
        _click_and_wait(stepped, "#step")
        assert slider_max(stepped) == max(k - 1, 1), f"after {k} clicks"  # (one step: the slider shows 0..1)
    for page in (once, stepped):
        assert not page.errors and not error_toasts(page)
    return _written(once), _written(stepped)


def test_plus_one_token_n_times_writes_what_generate_writes_greedy_across_split_characters(browser, app_url):
    n = 6  # two emoji of three tokens each: the last step completes a character
    once, stepped = _generate_once_and_step_n_times(browser, app_url, n, prompt=EMOJI_PROMPT, mode="Chat", temperature=0, seed=0, max_new=n)
    text, steps, writing = once
    assert steps == n and writing < n, "the answer should split characters across tokens (steps that write nothing)"
    assert len(text) >= 2 and all(ord(c) > 0xFFFF for c in text), f"expected emoji, got {text!r}"
    assert stepped == once
    assert "\ufffd" not in stepped[0]  # no stray replacement character where a click ended mid-character


@pytest.mark.walk
def test_plus_one_token_n_times_writes_what_generate_writes_seeded_at_temperature_1(browser, app_url):
    n = 8
    once, stepped = _generate_once_and_step_n_times(browser, app_url, n, prompt="Once upon a time", mode="Raw text", temperature=1.0,
                                                    seed=11, max_new=n)
    assert once[1] == n and once[0].strip()
    assert stepped == once
    assert "\ufffd" not in stepped[0]
