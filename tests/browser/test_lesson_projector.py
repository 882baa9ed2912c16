"""Issue 33, finding 2: the projector gives no answer away, and a round's controls are on its first screen.

The teacher's page in presenter view at 1920x960: the text, the hidden chart, the count of guesses, Reveal and "Next in
the lesson" on the first screen without scrolling, the code and the join address in a corner, the teacher's notes
never shown; after the reveal the room's chart in type for the back of a room (24 px and more) beside the model's
distribution. On the teacher's page in normal view, light and dark, no lesson step shows its answer before its reveal:
the notes folded away (closed by default), the example's caption and the Tokens panel's comparison held back."""
from __future__ import annotations

import pytest

from .lesson_kit import PROJECTOR, box, leaks, lesson, on_step, readable, teacher_page, trace

pytestmark = pytest.mark.browser

HIDDEN = "() => document.body.classList.contains('guess-hidden')"
W, H = PROJECTOR


def in_a_corner(b) -> bool:
    """A box on the screen in one of its corners: against the top or the bottom edge and the left or the right one
    (within 40 px), no taller than an eighth of the screen and no wider than half of it."""
    on_screen = b["left"] >= 0 and b["right"] <= W and b["top"] >= 0 and b["bottom"] <= H
    small = b["bottom"] - b["top"] <= H / 8 and b["right"] - b["left"] <= W / 2
    return on_screen and small and (b["top"] <= 40 or b["bottom"] >= H - 40) and (b["left"] <= 40 or b["right"] >= W - 40)


def inside(a, b) -> bool:
    return a["left"] >= b["left"] and a["right"] <= b["right"] and a["top"] >= b["top"] and a["bottom"] <= b["bottom"]


def first_screen(page) -> dict:
    """Which of a round's parts lie wholly on the first screen (the page at its top), by their ids."""
    page.evaluate("() => window.scrollTo(0, 0)")
    parts = {"text": "#output", "hidden chart": "#panel-distribution", "count": "#class-chart .room-count",
             "Reveal": "#class-reveal", "Next in the lesson": "#lesson-next"}
    out = {}
    for name, sel in parts.items():
        b = box(page, sel)
        # (the distribution's card is tall: its hidden chart's stand-in, at 40% of it, is what must be seen)
        bottom = b["top"] + 0.4 * b["height"] + 60 if name == "hidden chart" else b["bottom"]
        out[name] = b["height"] > 0 and b["top"] >= 0 and bottom <= H
    return out


def test_the_projector_holds_a_round_on_its_first_screen_and_its_chart_large(browser, app_url, shots):
    page, code = teacher_page(browser, app_url)
    page.wait_for_function(HIDDEN, timeout=10_000)
    page.wait_for_selector("#class-chart .room-count", timeout=15_000)
    everything = dict.fromkeys(["text", "hidden chart", "count", "Reveal", "Next in the lesson"], True)
    assert first_screen(page) == everything  # a class started on the text on screen
    x = lesson()[0]
    page.evaluate("() => document.querySelector('#class-lesson .lesson-open').click()")  # (its first step: the list's own button)
    on_step(page, x)
    page.wait_for_function(HIDDEN, timeout=10_000)
    page.wait_for_function("() => /students? ha(s|ve) guessed step 5/.test(document.getElementById('class-chart').textContent)", timeout=15_000)
    assert first_screen(page) == everything  # and a step of the lesson
    corner = box(page, "#class-info .class-join")  # the code and the join address, together in a corner
    assert in_a_corner(corner) and inside(box(page, "#class-code"), corner) and inside(box(page, "#class-info .class-url a"), corner), corner
    assert page.locator("#class-info .lesson-notes").is_hidden()  # never in presenter view
    # every slider's ends whole inside its box at the projector's 24 px (top-k's "200" was cut to "20(")
    ends = page.evaluate("""() => [...document.querySelectorAll('.slider_input_container')].filter((c) => c.getClientRects().length)
      .map((c) => { const r = c.closest('.block').getBoundingClientRect();
        return [c.closest('[id]').id, [...c.querySelectorAll('.min_value, .max_value')].every((e) => { const b = e.getBoundingClientRect();
          return b.width > 0 && b.left >= r.left && b.right <= r.right; })]; })""")
    assert len(ends) >= 6 and all(ok for _, ok in ends), ends
    assert leaks(page, x) == []
    page.screenshot(path=str(shots / "lesson_projector_guessing.png"))

    page.click("#class-reveal")
    page.wait_for_function("() => !document.body.classList.contains('guess-hidden') && document.querySelector('#class-chart .room-col')",
                           timeout=15_000)
    page.evaluate("() => window.scrollTo(0, 0)")
    sizes = page.evaluate("""() => [...document.querySelectorAll('#class-chart *')].filter((e) => e.childElementCount === 0
      && e.textContent.trim()).map((e) => [e.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(e).fontSize)])""")
    assert sizes and all(px >= 24 for _, px in sizes), [s for s in sizes if s[1] < 24]
    chart, dist = box(page, "#class-chart"), box(page, "#dist-plot")
    # the room's chart in the half of the screen the distribution leaves empty, beginning on the first screen
    assert chart["top"] < H and chart["right"] <= dist["left"], (chart, dist)
    # every bar of the distribution named on the projector (a plot area too short for the bars makes Plotly label every
    # other one: the second candidate, a guess the room may have made, went unnamed)
    ticks = page.evaluate("""() => { const el = document.querySelector('#dist-plot .js-plotly-plot');
      return [el.querySelectorAll('.ytick text').length, el.data[0].y.length]; }""")
    assert ticks[0] == ticks[1], ticks
    page.screenshot(path=str(shots / "lesson_projector_revealed.png"))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_no_step_of_the_lesson_shows_its_answer_on_the_teachers_page_before_its_reveal(browser, app_url, theme):
    page, code = teacher_page(browser, app_url, present=False, dark=theme == "dark")
    for i, x in enumerate(lesson()):
        page.locator("#class-lesson .lesson-open").nth(i).click()
        on_step(page, x)
        page.wait_for_function(HIDDEN, timeout=10_000)
        n = len(trace(x.example).prompt.text + "".join(st.text for st in trace(x.example).steps))
        page.wait_for_function("(n) => document.getElementById('tokenizer-compare').textContent.includes(`(${n} characters)`)",
                               arg=n, timeout=10_000)  # (the Tokens panel has this text's comparison)
        assert leaks(page, x) == [], (x, leaks(page, x))
    assert page.evaluate("() => !document.querySelector('#class-info .lesson-notes').open")  # the notes: folded by default
    # what was held back comes back with the reveal: the example's caption says its step's answer again
    page.click("#class-reveal")
    page.wait_for_function("() => !document.body.classList.contains('guess-hidden')", timeout=15_000)
    page.wait_for_selector("#example-look", state="visible", timeout=10_000)
    assert "the model always takes its top token" in readable(page)  # (the last step's example: the loop)
