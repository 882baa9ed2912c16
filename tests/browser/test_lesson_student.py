"""Issue 33, finding 5: a student's first screen. Once in a room, a phone shows at its top "Class ABC DEF · step 10 ·
What comes next?" and the guess box; after the reveal, the distribution the lesson is about within two screens. A
late joiner sees the room's trace at once: the page's own example (the trace a page opens with) is never on screen."""
from __future__ import annotations

import pytest

from .harness import ROOT, new_page
from .lesson_kit import PHONE, api, box, spaced, trace, wait_headline

pytestmark = pytest.mark.browser

# every frame the page paints (requestAnimationFrame runs before each paint): the text of the page's own example,
# if it is readable then, is recorded
WATCH_DEFAULT = """(needle) => { window.__default = [];
  const f = () => { const o = document.getElementById('output');
    if (o && o.innerText.includes(needle)) window.__default.push(Math.round(performance.now()));
    requestAnimationFrame(f); };
  requestAnimationFrame(f); }"""


def own_example_text() -> str:
    from pipeline.trace import files as trace_io

    t = trace_io.load(str(ROOT / "assets" / "example_trace.json.gz"))
    return "".join(s.text for s in t.steps)[:24].strip()


def test_a_late_joiners_phone_shows_the_class_line_the_box_and_after_the_reveal_the_distribution(browser, app_url, shots):
    status, room = api(app_url, "", {"example": "mountain", "step": 3})
    code, key = room["code"], room["key"]
    assert api(app_url, f"{code}/step", {"step": 10}, key=key)[0] == 200  # the class is at step 10 when this student comes
    needle = own_example_text()
    phone = new_page(browser, width=PHONE[0], height=PHONE[1], record_toasts=False)
    phone.add_init_script(f"({WATCH_DEFAULT})({needle!r})")
    phone.goto(f"{app_url}?room={code}")
    wait_headline(phone, f"Class {spaced(code)} · step 10 · What comes next?")
    phone.wait_for_function("() => document.getElementById('output').innerText.includes('with a height of 8,')", timeout=30_000)
    assert phone.evaluate("() => window.__default") == []  # never the page's own example, not for one frame
    phone.evaluate("() => window.scrollTo(0, 0)")
    head, guess = box(phone, "#room-head .room-headline"), box(phone, "#guess-input textarea")
    assert head["top"] < 100 and guess["top"] > head["bottom"] - 1 and guess["bottom"] <= PHONE[1], (head, guess)
    phone.screenshot(path=str(shots / "lesson_phone_first_screen.png"))

    assert api(app_url, f"{code}/reveal", {}, key=key)[0] == 200
    phone.wait_for_function("() => !document.body.classList.contains('guess-hidden') && document.querySelectorAll('#room-chart .room-col').length === 2",
                            timeout=30_000)
    phone.evaluate("() => window.scrollTo(0, 0)")
    model = phone.locator("#room-chart .room-col").nth(1)
    top_piece = trace("mountain").steps[10].piece
    assert top_piece.strip() in model.inner_text()  # the model's column: its distribution at the step
    assert box(phone, "#room-chart .room-col:nth-child(2)")["bottom"] <= 2 * PHONE[1]
    phone.screenshot(path=str(shots / "lesson_phone_revealed.png"), full_page=True)
