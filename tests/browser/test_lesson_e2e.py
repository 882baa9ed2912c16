"""Issue 33: a real lesson, played as a class plays it. The teacher's projector (1920x960, presenter view) and three
students, each their own browser: a phone that opened the join link, a phone in dark mode that typed the code off the
projector (in lower case, with its space) and reloads in the middle of a step, a laptop in dark mode that joins late.
The six steps of the lesson one after another, each guessed, sent and revealed; a screenshot of every screen at every
phase (artifacts/screenshots/lesson/); and before each reveal, nothing any of them can read gives the step's answer."""
from __future__ import annotations

import pytest

from .harness import new_page
from .lesson_kit import LAPTOP, PHONE, leaks, lesson, next_in_lesson, on_step, send, spaced, student_page, teacher_page, themed, wait_headline

pytestmark = pytest.mark.browser

HIDDEN = "() => document.body.classList.contains('guess-hidden')"
REVEALED = "() => !document.body.classList.contains('guess-hidden') && document.querySelectorAll('#{} .room-col').length === 2"


def shoot(folder, pages: dict, phase: str) -> None:
    """Every screen as it is seen (the page at its top); a phone's second screen too once the chart has come."""
    for name, page in pages.items():
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(folder / f"{phase}-{name}.png"))
        if phase.endswith("revealed") and name != "projector":
            page.evaluate("() => window.scrollTo(0, innerHeight)")
            page.screenshot(path=str(folder / f"{phase}-{name}-2.png"))
            page.evaluate("() => window.scrollTo(0, 0)")


def typed_join(browser, app_url, code):
    """A dark phone that opens the start page and types the code as it reads it off the projector."""
    page = new_page(browser, width=PHONE[0], height=PHONE[1], record_toasts=False)
    page.goto(themed(app_url, True))
    page.wait_for_selector("#join-code", timeout=60_000)
    page.fill("#join-code", spaced(code).lower())
    page.press("#join-code", "Enter")
    page.wait_for_url(f"**room={code}**", timeout=15_000)
    wait_headline(page, f"Class {spaced(code)}")
    return page


@pytest.mark.walk
def test_a_lesson_played_end_to_end_gives_no_answer_away(browser, app_url, shots):
    folder = shots / "lesson"
    folder.mkdir(exist_ok=True)
    teacher, code = teacher_page(browser, app_url)
    pages = {"projector": teacher, "phone-link": student_page(browser, app_url, code), "phone-typed-dark": typed_join(browser, app_url, code)}
    shoot(folder, pages, "0-joined")
    for i, x in enumerate(lesson()):
        next_in_lesson(teacher)
        if i == 2:  # a laptop, dark, joins late: the room's trace at once, at the room's step
            pages["laptop-late-dark"] = student_page(browser, app_url, code, size=LAPTOP, dark=True)
        for page in pages.values():
            on_step(page, x)
            page.wait_for_function(HIDDEN, timeout=15_000)
        students = [p for n, p in pages.items() if n != "projector"]
        for p in students:
            wait_headline(p, f"step {x.step} · What comes next?")
        found = {n: leaks(p, x) for n, p in pages.items()}
        assert found == {n: [] for n in pages}, (x, found)
        shoot(folder, pages, f"{i + 1}-guessing")

        send(pages["phone-typed-dark"], "banana")
        if i == 1:  # a reload in the middle of a step: the guess and its note come back
            pages["phone-typed-dark"].reload()
            pages["phone-typed-dark"].wait_for_function(
                "() => /Sent: “banana”/.test(document.querySelector('#room-bar .room-note')?.textContent || '')", timeout=90_000)
        for p in students[2:]:
            send(p, "the")
        send(pages["phone-link"], x.expect.strip() or "hello")  # (its own guess on its own screen: not checked below)
        n = len(students)
        teacher.wait_for_function(f"() => /{n} of {n} students have guessed/.test(document.getElementById('class-chart').textContent)",
                                  timeout=20_000)
        found = {name: leaks(p, x) for name, p in pages.items() if name != "phone-link"}
        assert found == {name: [] for name in found}, (x, found)
        shoot(folder, pages, f"{i + 1}-sent")

        teacher.click("#class-reveal")
        for name, p in pages.items():
            p.wait_for_function(REVEALED.replace("{}", "class-chart" if name == "projector" else "room-chart"), timeout=30_000)
        shoot(folder, pages, f"{i + 1}-revealed")

    teacher.click("#class-close")
    for name, p in pages.items():
        if name != "projector":
            p.wait_for_function("() => /has ended/.test(document.querySelector('#room-bar .room-status')?.textContent || '')", timeout=15_000)
    shoot(folder, pages, "7-ended")
    assert not any(p.errors for p in pages.values()), {n: p.errors for n, p in pages.items()}
