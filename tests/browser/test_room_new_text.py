"""A teacher gives the class a new text mid-round (issue 46): asked first, with the results' file offered; the earlier
text's results stay in the summary and the CSV; the room opens the new text at its first step on every screen; each
student is told so in their page, with their score on the last text. The projector (presenter view left to type a
prompt) keeps the class code on screen. Screenshots: artifacts/screenshots/i46_new_text_*.png."""
from __future__ import annotations

import csv
import io
import urllib.request

import pytest

from .lesson_kit import api
from .test_room_teacher_tools import FIRST, at, reveal, send, student, teacher_on

pytestmark = pytest.mark.browser


def in_view(page, sel) -> bool:
    return page.evaluate("""(sel) => { const e = document.querySelector(sel); if (!e || !e.getClientRects().length) return false;
      const b = e.getBoundingClientRect(); return b.top >= 0 && b.bottom <= innerHeight && b.left >= 0 && b.right <= innerWidth; }""", sel)


@pytest.mark.walk
def test_a_new_text_keeps_the_last_ones_results_and_says_so(browser, app_url, shots):
    teacher, code = teacher_on(browser, app_url)
    laptop, phone = student(browser, app_url, code), student(browser, app_url, code, phone=True)
    for p in (laptop, phone):
        at(p, FIRST)
    send(laptop, ",")  # the real token
    send(phone, "like")
    reveal(teacher, 2)
    first_trace = api(app_url, code)[1]["trace"]

    # out of presenter view to type a prompt: the class code stays on the first screen
    teacher.click("#present-toggle")
    teacher.wait_for_function("() => !document.body.classList.contains('present')", timeout=10_000)
    teacher.evaluate("() => window.scrollTo(0, 0)")
    assert in_view(teacher, "#class-code-chip") and code[:3] in teacher.inner_text("#class-code-chip"), "the class code left the screen"
    teacher.fill("#prompt textarea", "The cat sat on the")
    teacher.click("#generate")
    teacher.wait_for_selector("#new-text-ask[open]", timeout=10_000)
    words = teacher.inner_text("#new-text-ask")
    assert "results of this one stay" in words and "Download results" in words
    t_now = teacher.evaluate("() => LLMValues.number('temperature')")  # (the settings it will be written with, said first)
    assert f"temperature {t_now:g}," in words and "top-p" in words, words
    teacher.screenshot(path=str(shots / "i46_new_text_asked.png"))
    teacher.click("#new-text-ask button:has-text('Keep this one')")  # nothing happens: the round goes on
    teacher.wait_for_selector("#new-text-ask", state="hidden", timeout=5_000)
    teacher.keyboard.press("Escape")
    assert api(app_url, code)[1]["trace"] == first_trace and teacher.evaluate("() => LLMApp.state.step") == FIRST

    teacher.press("#prompt textarea", "Enter")  # (Enter generates too: asked as well)
    teacher.wait_for_selector("#new-text-ask[open]", timeout=10_000)
    teacher.click("#new-text-ask button:has-text('New text')")
    for _ in range(600):  # the room takes the new text once it is written (its bundle on the teacher's page)
        st = api(app_url, code)[1]
        if st["trace"] != first_trace:
            break
        teacher.wait_for_timeout(200)
    assert st["trace"] != first_trace and st["step"] == 0 and st["phase"] == "guessing"  # (its first step, not its last)
    teacher.wait_for_function("() => LLMApp.state.step === 0", timeout=30_000)

    for p, said in ((laptop, "On the last one you had 1 of 1 right."), (phone, "On the last one you had 0 of 1 right.")):
        p.wait_for_function("(w) => (document.querySelector('#room-bar .room-news')?.textContent || '').includes(w)", arg=said,
                            timeout=60_000)
        assert "The teacher has started a new text" in p.inner_text("#room-bar .room-news")
    phone.screenshot(path=str(shots / "i46_new_text_phone.png"))

    summary = api(app_url, f"{code}/summary")[1]
    assert summary["text"] == 2 and [e["text"] for e in summary["earlier"]] == [1]
    assert summary["earlier"][0]["totals"]["class_share_right"] == pytest.approx(0.5) and summary["steps"] == []
    req = urllib.request.Request(f"{app_url}/api/rooms/{code}/results.csv", headers={"X-Room-Key": teacher.get_attribute(
        "#class-info .class-card", "data-key")})
    rows = list(csv.reader(io.StringIO(urllib.request.urlopen(req, timeout=30).read().decode("utf-8-sig"))))
    assert rows[0][0] == "text" and [(r[0], r[1], r[3], r[4]) for r in rows[1:]] == [("1", "S1", ",", "yes"), ("1", "S2", "like", "no")]
    teacher.screenshot(path=str(shots / "i46_new_text_teacher.png"))
    assert not laptop.errors and not phone.errors
