"""On a phone (390x844, touch) the distribution uses the width: its labels short enough for the bars to have most of
it, every label whole; a tap anywhere on a row (its label, or beside a 1% bar) asks to branch on that row's token,
and a tap on the model's own pick says so instead of "instead of its own pick"."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PLOT = "#dist-plot .js-plotly-plot"


def _phone(browser, url):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    page.goto(url)
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === 2", timeout=120_000)
    page.locator("#panel-distribution").scroll_into_view_if_needed()
    page.wait_for_function(f"() => document.querySelector('{PLOT}')?._fullLayout?.yaxis?._length > 0", timeout=30_000)
    return page


def _row_centre(page, i):
    """The page's (x, y) of row i's label, left of its bar where no bar is drawn, the row scrolled to mid-screen."""
    return page.evaluate("([sel, i]) => { const p = document.querySelector(sel), ya = p._fullLayout.yaxis;"
                         " const at = () => p.getBoundingClientRect().top + ya._offset + ya.l2p(i);"
                         " window.scrollBy(0, at() - innerHeight / 2);"
                         " return [p.getBoundingClientRect().left + p._fullLayout._size.l / 2, at()]; }", [PLOT, i])


def test_the_bars_use_the_phone_s_width_and_every_label_is_whole(browser, app_url):
    page = _phone(browser, app_url + "/?example=flat&step=2")
    size = page.evaluate(f"() => {{ const s = document.querySelector('{PLOT}')._fullLayout._size; return [s.l, s.w]; }}")
    assert size[1] >= 2 * size[0], size  # the bars' area at least twice the labels'
    # every tick label inside the plot (none cut at the left edge of the screen or the panel)
    left = page.evaluate(f"() => {{ const p = document.querySelector('{PLOT}'), r = p.getBoundingClientRect();"
                         " return Math.min(...[...p.querySelectorAll('.ytick text')].map((t) => t.getBoundingClientRect().left - r.left)); }")
    assert left >= 0, left
    page.screenshot(path="artifacts/screenshots/phone-distribution.png")


def test_a_tap_on_a_row_s_label_asks_to_branch_on_it_and_the_own_pick_is_named(browser, app_url):
    page = _phone(browser, app_url + "/?example=flat&step=2")
    labels = page.evaluate(f"() => document.querySelector('{PLOT}').data[0].y")
    own = next(i for i, s in enumerate(labels) if "◀" in s)
    other = next(i for i in range(len(labels) - 1) if i != own and i >= 4)
    page.touchscreen.tap(*_row_centre(page, other))
    page.wait_for_selector("#branch-confirm:not([hidden])", timeout=10_000)
    q = page.inner_text("#branch-confirm p")
    assert f"rank {other + 1})" in q and "instead of its own pick" in q and "step 2" in q, q
    page.click("#branch-confirm-no")
    page.touchscreen.tap(*_row_centre(page, own))
    page.wait_for_selector("#branch-confirm:not([hidden])", timeout=10_000)
    q = page.inner_text("#branch-confirm p")
    assert f"rank {own + 1})" in q and "the model's own pick" in q and "instead" not in q and "◀" not in q, q
    page.click("#branch-confirm-no")
    # the last row is the rest of the vocabulary: nothing to branch on
    page.touchscreen.tap(*_row_centre(page, len(labels) - 1))
    page.wait_for_timeout(300)
    assert page.locator("#branch-confirm:not([hidden])").count() == 0
