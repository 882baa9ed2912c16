"""A class as one room, tested as a class uses it: a teacher's page and three students' pages (each its own
browser context: its own student id), guessing, the reveal, moving on, a student joining late, a student's tab
reloading (their id and guess kept), a hostile guess, the teacher's key refused to a student, the class ended."""
from __future__ import annotations


import pytest

from .harness import new_page, wait_model_loaded
from .lesson_kit import api

pytestmark = pytest.mark.browser

HIDDEN = "() => document.body.classList.contains('guess-hidden')"
TOKEN_HIDDEN = "() => { const e = document.querySelector('#output .gen-text .at-step'); return !!e && getComputedStyle(e).display === 'none'; }"


def student(browser, app_url, code, name):
    page = new_page(browser, width=390, height=844, record_toasts=False)
    page.goto(f"{app_url}?room={code}")
    page.wait_for_function("(c) => (document.querySelector('#room-bar .room-status')?.textContent || '').includes('following')", arg=code,
                           timeout=60_000)
    return page


def at_step(page, step, timeout=30_000):
    page.wait_for_function("(s) => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === s", arg=step, timeout=timeout)


def send(page, text):
    page.fill("#guess-input textarea", text)
    page.click("#guess-submit")
    page.wait_for_function("() => /Sent|guess/.test(document.querySelector('#room-bar .room-note')?.textContent || '')", timeout=10_000)


@pytest.mark.walk
def test_a_class_guesses_sees_the_reveal_and_moves_on(browser, app_url):
    teacher = new_page(browser, width=1920, height=960, record_toasts=False)
    teacher.goto(app_url)
    teacher.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    wait_model_loaded(teacher)
    teacher.evaluate("() => { const r = document.querySelector('#step-slider input[type=range]'); r.value = 3;"
                     " r.dispatchEvent(new Event('input', {bubbles: true})); }")  # (a step with a next one)
    at_step(teacher, 3)
    teacher.click("#class-start")
    teacher.wait_for_selector("#class-info .class-card[data-code] svg", timeout=30_000)
    code = teacher.get_attribute("#class-info .class-card", "data-code")
    key = teacher.get_attribute("#class-info .class-card", "data-key")
    assert len(code) == 6 and code.replace(" ", "") in teacher.inner_text("#class-code").replace(" ", "")
    assert key not in teacher.inner_text("#class-info") and key not in teacher.get_attribute("#class-info a", "href")
    teacher.wait_for_function(HIDDEN, timeout=10_000)  # the projector hides the answer until Reveal
    step = teacher.evaluate("() => LLMApp.state.step")

    a, b = student(browser, app_url, code, "a"), student(browser, app_url, code, "b")
    for s in (a, b):
        at_step(s, step)
        assert s.evaluate(HIDDEN)
    answer = teacher.evaluate("() => document.querySelector('#output .gen-text .at-step').textContent").strip()
    send(a, answer)
    send(b, "<img src=x onerror=alert(1)>")
    teacher.wait_for_function("() => /2 of 2 students have guessed/.test(document.getElementById('class-chart').textContent)", timeout=15_000)
    # a student is not the teacher
    assert api(app_url, f"{code}/reveal", {}, key="not-the-key")[0] == 403
    # a reload keeps the student's id and guess
    b.reload()
    at_step(b, step)
    b.wait_for_function("() => (document.querySelector('#guess-input textarea')?.value || '').includes('onerror')", timeout=15_000)
    c = student(browser, app_url, code, "c")  # joins late
    at_step(c, step)

    teacher.click("#class-reveal")
    teacher.wait_for_function("() => !document.body.classList.contains('guess-hidden') && /of the room guessed/.test(document.getElementById('class-chart').textContent)",
                              timeout=15_000)
    chart = teacher.inner_text("#class-chart")
    assert "<img src=x onerror=alert(1)>" in chart and teacher.locator("#class-chart img").count() == 0
    state = api(app_url, code)[1]
    assert sum(r["count"] for r in state["room"]) == 2 and state["students"] == 3
    # the chart's bars on an absolute scale: each the model's probability of its track (a bar under 2 px: 2 px)
    bars = teacher.evaluate("""() => [...document.querySelectorAll('#class-chart .room-col')].map((c) => [...c.querySelectorAll('.room-row')]
      .map((r) => [r.querySelector('.room-bar').getBoundingClientRect().width, r.querySelector('.room-track').getBoundingClientRect().width]))""")
    assert [b / t for b, t in bars[1]] == pytest.approx([max(2 / t, m["prob"]) for m, (_, t) in zip(state["model"], bars[1])], abs=0.01)
    for s in (a, b):  # the students' screens: the step shown, their own guess rated, the room's chart
        s.wait_for_function("() => !document.body.classList.contains('guess-hidden') && /of the room guessed/.test(document.getElementById('room-chart').textContent)",
                            timeout=20_000)
    # the student's own rating, at the step the page shows (the slider's value: the server rates at it)
    a.wait_for_function("(s) => document.getElementById('guess-result').dataset.chosen === '1'"
                        " && document.getElementById('guess-result').dataset.step === String(s)", arg=step, timeout=30_000)
    # ... as the room rated it when it was sent (GET .../rating): the page did not rate it again
    assert a.evaluate("() => !!document.querySelector('#guess-result > .room-rating .guess-result') && document.querySelector('#guess-input textarea').value")

    assert all(key not in s.content() for s in (a, b, c))  # the teacher's key never reaches a student's page

    teacher.click("#class-next")
    nxt = step + 1
    assert nxt < teacher.evaluate("() => LLMApp.state.bundle.n_steps")
    for s in (a, b, c):
        at_step(s, nxt)
        s.wait_for_function(HIDDEN, timeout=10_000)
    send(a, "the")  # a guess at the next step goes to the room (the reveal's own rating of the last one is not in its way)
    teacher.wait_for_function("() => /1 of 3 students have guessed/.test(document.getElementById('class-chart').textContent)", timeout=15_000)
    assert api(app_url, code)[1]["guesses"] == 1 and a.evaluate(HIDDEN)

    teacher.click("#class-close")
    for s in (a, c):
        s.wait_for_function("() => /has ended/.test(document.querySelector('#room-bar .room-status')?.textContent || '')", timeout=15_000)
        assert s.evaluate("() => LLMApp.mounted()")  # the trace stays to explore
    assert api(app_url, f"{code}/guesses", {"student": "x", "text": "late"})[0] == 410


def lesson_on(page, example_steps, step, timeout=60_000):
    """The page shows the lesson's trace (told by its number of steps) at `step`. (A lesson step's first opening
    builds its trace's bundle on the server: 1.5-3 s on the quiet 2-core machine, 10 s with other tests running
    beside, and past 30 s once in a suite run with another suite on the same cores.)"""
    page.wait_for_function("([n, s]) => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === n && LLMApp.state.step === s",
                           arg=[example_steps, step], timeout=timeout)


@pytest.mark.walk
def test_the_lesson_opens_on_every_screen_and_a_reloaded_teacher_keeps_the_room(browser, app_url):
    from pipeline import gallery

    lesson = gallery.lesson()
    n_steps = {x.example: len(gallery.load(x.example).steps) for x in lesson}
    teacher = new_page(browser, width=1920, height=960, record_toasts=False)
    teacher.goto(app_url)
    teacher.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    teacher.click("#class-start")
    teacher.wait_for_selector("#class-lesson .lesson-open", timeout=30_000)
    code = teacher.get_attribute("#class-info .class-card", "data-code")
    items = teacher.locator("#class-lesson li")
    assert items.count() == len(lesson) and lesson[2].say not in items.nth(2).inner_text()
    assert lesson[2].say in teacher.text_content('#class-info .lesson-notes')  # (folded away: test_lesson_projector.py)
    s = student(browser, app_url, code, "a")

    teacher.locator("#class-lesson .lesson-open").nth(2).click()  # the lesson's third step, on every screen
    for page in (teacher, s):
        lesson_on(page, n_steps[lesson[2].example], lesson[2].step)
        page.wait_for_function(HIDDEN, timeout=10_000)
        page.wait_for_function(TOKEN_HIDDEN, timeout=10_000)
    teacher.click("#lesson-next")
    for page in (teacher, s):
        lesson_on(page, n_steps[lesson[3].example], lesson[3].step)
    send(s, "word")
    teacher.wait_for_function("() => /1 of 1 student has guessed/.test(document.getElementById('class-chart').textContent)", timeout=15_000)

    teacher.reload()  # the teacher's page reloaded: the same room, its trace and step, the lesson's place
    teacher.wait_for_selector(f"#class-info .class-card[data-code='{code}']", timeout=60_000)
    lesson_on(teacher, n_steps[lesson[3].example], lesson[3].step)
    teacher.wait_for_function(TOKEN_HIDDEN, timeout=10_000)
    teacher.wait_for_function("() => document.querySelectorAll('#class-lesson li')[3].classList.contains('lesson-now')", timeout=10_000)
    teacher.wait_for_function("() => /1 of 1 student has guessed/.test(document.getElementById('class-chart').textContent)", timeout=15_000)
    state = api(app_url, code)[1]
    assert state["step"] == lesson[3].step and state["guesses"] == 1 and state["phase"] == "guessing"
    teacher.click("#class-reveal")  # the reloaded page is still the teacher's
    s.wait_for_function("() => /of the room guessed/.test(document.getElementById('room-chart').textContent)", timeout=20_000)
    teacher.click("#class-close")
    s.wait_for_function("() => /has ended/.test(document.querySelector('#room-bar .room-status')?.textContent || '')", timeout=15_000)
    teacher.reload()  # an ended class is not asked back
    teacher.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=60_000)
    teacher.wait_for_timeout(3000)
    assert teacher.locator("#class-info .class-card[data-code]").count() == 0
