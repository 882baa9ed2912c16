"""The projector after a reveal (issue 46, item 7), at 1920x960 in presenter view on the poem (real text): the room's
chart on the first screen; the join bar clear of the language button (the page's title gives it the top row); no
"<|endoftext|>" prompt in large type; a real token outside the model's top 10 gets its own row in the model's column
(its probability as the pages write one, never a footnote); the summary card's citation on screen. Screenshot:
artifacts/screenshots/i46_projector_revealed.png."""
from __future__ import annotations

import pytest

from .lesson_kit import api
from .test_room_teacher_tools import model_ready

pytestmark = pytest.mark.browser

STEP = 11  # the poem's step 11: its real token is not among the model's 10 likeliest (asserted below)
BOX = "(s) => { const e = document.querySelector(s); if (!e || !e.getClientRects().length) return null; const b = e.getBoundingClientRect();" \
      " return {left: b.left, top: b.top, right: b.right, bottom: b.bottom}; }"


def meet(a, b) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


def test_the_projector_after_a_reveal_shows_the_room_and_the_real_token(browser, app_url, shots):
    model_ready(browser, app_url)
    page = browser.new_page(viewport={"width": 1920, "height": 960})
    page.goto(f"{app_url}?example=text-tyger&step={STEP}")
    page.wait_for_function("(s) => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === s", arg=STEP, timeout=120_000)
    page.click("#class-start")
    page.wait_for_selector("#class-info .class-card[data-code]", timeout=30_000)
    page.click("#present-toggle")
    code, key = (page.get_attribute("#class-info .class-card", a) for a in ("data-code", "data-key"))
    for sid, text in (("s1", "that"), ("s2", "and"), ("s3", "that")):
        assert api(app_url, f"{code}/guesses", {"student": sid, "text": text})[0] == 200
    page.wait_for_function("() => /3 of/.test(document.getElementById('class-chart').textContent)", timeout=20_000)
    page.click("#class-reveal")
    page.wait_for_selector("#class-chart .room-marks", timeout=20_000)
    state = api(app_url, code)[1]
    assert state["sampled"]["token_id"] not in [m["token_id"] for m in state["model"]]  # (the step is what this test needs)
    page.evaluate("() => window.scrollTo(0, 0)")

    last = page.evaluate(BOX, "#class-chart .room-col:first-child .room-row:last-child")
    assert last and last["bottom"] <= 960, last  # the room's answers on the first screen
    join, lang = page.evaluate(BOX, "#class-info .class-join"), page.evaluate(BOX, "#language-bar summary")
    assert join and lang and not meet(join, lang), (join, lang)
    assert page.evaluate("() => getComputedStyle(document.querySelector('#intro h1')).visibility") == "hidden"
    assert page.evaluate(BOX, "#prompt textarea") is None  # ("<|endoftext|>": no prompt a class reads)
    rows = page.evaluate("""() => [...document.querySelectorAll('#class-chart .room-col')[1].querySelectorAll('.room-row')]
      .map((r) => [r.querySelector('.room-label').textContent, r.querySelector('.room-value').textContent])""")
    assert rows[-1] == [f"⋯ {state['sampled']['label']}", state["sampled"]["pct"]] and len(rows) == len(state["model"]) + 1, rows
    assert "e-" not in rows[-1][1]  # (never in scientific notation)
    page.screenshot(path=str(shots / "i46_projector_revealed.png"))

    page.click("#class-summary-show")
    page.wait_for_selector("#class-summary:not([hidden]) .summary-source", timeout=15_000)
    src = page.evaluate(BOX, "#class-summary .summary-source")
    assert src and src["bottom"] <= 960 and "Shlegeris" in page.inner_text("#class-summary .summary-source")
    page.screenshot(path=str(shots / "i46_projector_summary.png"))
