"""The browser tests' helpers: start the real app and drive it in Debian's headless Chromium.

Starting the app and opening a page are shared with the scripts that drive the page: they live in
scripts/browser_kit.py and are re-exported here, so a test imports every helper from one place.
"""
from __future__ import annotations

from pathlib import Path

from scripts.browser_kit import (  # noqa: F401  (re-exported for the tests)
    CHROMIUM_FLAGS,
    RECORD_ERROR_TOASTS,
    app_server,
    chromium_path,
    drag_slider,
    free_port,
    into_view,
    new_page,
    open_page,
    scroll_through,
    set_number,
    slider_max,
    wait_model_loaded,
)

ROOT = Path(__file__).resolve().parents[2]


def error_toasts(page) -> list[str]:
    """The text of every error toast shown since the page opened."""
    return page.evaluate("() => window.__errorToasts || []")


def wait_title(page, elem_id: str, text: str, timeout_ms: int = 30_000):
    """Until the plot's title holds `text` (make it exact: 'step 3:' and not 'step 3', which 'step 39' holds)."""
    into_view(page, elem_id)
    page.wait_for_function(
        "([id, t]) => { const el = document.querySelector('#' + id + ' .js-plotly-plot');"
        " const s = el && el.layout && el.layout.title; return !!s && (s.text || String(s)).includes(t); }",
        arg=[elem_id, text], timeout=timeout_ms)


# -- reading the page --------------------------------------------------------------------------
def slider_value(page, elem_id: str = "step-slider") -> int:
    return int(float(page.input_value(f"#{elem_id} input[type=number]")))


def plot_data(page, elem_id: str) -> list:
    """The traces Plotly drew in a gr.Plot (the real figure data in the browser)."""
    into_view(page, elem_id)
    return page.evaluate(
        f"() => {{ const el = document.querySelector('#{elem_id} .js-plotly-plot');"
        " return el && el.data ? JSON.parse(JSON.stringify(el.data.map(t => ({name: t.name, x: t.x, y: t.y, type: t.type})))) : null; }")


def plot_title(page, elem_id: str) -> str:
    into_view(page, elem_id)
    return page.evaluate(
        f"() => {{ const el = document.querySelector('#{elem_id} .js-plotly-plot');"
        " const t = el && el.layout && el.layout.title; return t ? (t.text || String(t)) : ''; }")


def output_text(page) -> str:
    return page.inner_text("#output")


def n_generated_chips(page) -> int:
    return page.evaluate("() => document.querySelectorAll('#output span.step:not(.stale):not([hidden])').length")


def wait_plot_step(page, elem_id: str, step: int, timeout_ms: int = 30_000):
    """Until the plot's title names exactly `step` ('step 3' followed by no digit: 'step 39' is not step 3)."""
    into_view(page, elem_id)
    page.wait_for_function(
        "([id, n]) => { const el = document.querySelector('#' + id + ' .js-plotly-plot');"
        " const s = el && el.layout && el.layout.title; const t = s ? (s.text || String(s)) : '';"
        " return new RegExp('step ' + n + '(?![0-9])').test(t); }",
        arg=[elem_id, step], timeout=timeout_ms)


# -- acting at the page's own moment ------------------------------------------------------------
# A test that polls from outside is answered only when the page's thread is free: on a loaded machine it
# misses states the page showed, and a click it sends after a check can land after the state it checked
# is gone. These run inside the page.
CHIPS = "document.querySelectorAll('#output span.step:not(.stale):not([hidden])').length"


def record_chip_counts(page) -> None:
    """From now on, the page keeps each number of generated chips it shows (`chip_counts`)."""
    page.evaluate(f"""() => {{
        const seen = window.__chipCounts = [];
        const note = () => {{ const n = {CHIPS}; if (seen[seen.length - 1] !== n) seen.push(n); }};
        new MutationObserver(note).observe(document.querySelector('#output'), {{subtree: true, childList: true, attributes: true}});
    }}""")


def chip_counts(page) -> list[int]:
    """Every number of generated chips the page showed since record_chip_counts, in order."""
    return page.evaluate("() => window.__chipCounts || []")


def click_when(page, condition_js: str, selector: str, timeout_ms: int = 120_000) -> None:
    """Click `selector` in the same moment of the page's thread as `condition_js` first holds (an expression)."""
    page.wait_for_function(f"() => ({condition_js}) && (document.querySelector({selector!r}).click(), true)",
                           timeout=timeout_ms)
