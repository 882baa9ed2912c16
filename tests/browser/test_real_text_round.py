"""A real-text round as a class plays it (issue 36): a teacher's page on the projector (1920x960, presenter view) opens
a passage by its link and starts a class; three students join (a laptop, a phone in dark mode, a phone in light
mode, touch), and five steps go by: everyone guesses, the teacher reveals, Next step. Before each reveal no screen
shows the text's next token (the text through it, its word, the distribution's mark); after it, the projector and
the students' pages show the real token, the marks say the class's answer and the model's top pick right or wrong as
the room's score says, and each student sees their own guess judged. After the fifth step, "Round summary" shows the
class's and the model's totals, equal to GET /api/rooms/{code}/summary and to an independent count of the guesses.
Screenshots: artifacts/screenshots/i36_round_*.png."""
from __future__ import annotations

import json
import re
import urllib.request

import pytest

from pipeline import passages

from .harness import new_page
from .lesson_kit import api, readable
from .test_room_teacher_tools import at as on, reveal, send, student as _student

pytestmark = pytest.mark.browser

PASSAGE, FIRST, STEPS = "text-octopus", 8, 5  # "The octopus is a soft-bodied marine| animal with eight arms. It ..."
N_STEPS = 53  # the passage's tokens under SmolLM2's tokenizer (asserted below)
GUESSES = [("animal", "creature", "animal"), ("that", "with", "that"), ("eight", "many", "eight"), ("legs", "arms", "legs"),
           (".", "and", ",")]


def _smol_ids():
    from pipeline.loading import load_model

    lm = load_model(None)
    return lm, passages.token_ids(lm, passages.get(PASSAGE))


def telltales(lm, ids, n) -> list[str]:
    """What gives step n's answer away: the text through its token (the shortest end of it the text before does not
    hold), its word when the text before does not hold it and it is no word of the page's own ("with"), the
    distribution's mark on it."""
    before, full = lm.tokens.tok.decode(ids[:n]), lm.tokens.tok.decode(ids[:n + 1])
    k = min(len(full), len(full) - len(before) + 6)
    while k < len(full) and full[-k:] in before:
        k += 1
    word = full[len(before):].strip()
    return ["◀ forced", full[-k:]] + ([word] if len(word) >= 6 and word not in before else [])  # (shorter: the page's own words)


def teacher_page(browser, app_url):
    page = new_page(browser, width=1920, height=960, record_toasts=False)
    page.goto(f"{app_url}?example={PASSAGE}&step={FIRST}")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    # (the passage is the model reading it: on the page once the model has loaded, whenever the link was opened)
    page.wait_for_function("([s, n]) => LLMApp.state.step === s && LLMApp.state.bundle.n_steps === n", arg=[FIRST, N_STEPS], timeout=180_000)
    page.click("#class-start")
    page.wait_for_selector("#class-info .class-card[data-code]", timeout=30_000)
    page.click("#present-toggle")
    page.wait_for_function("() => document.body.classList.contains('present')", timeout=10_000)
    return page, page.get_attribute("#class-info .class-card", "data-code")


def phone(browser, app_url, code, dark):
    page = browser.new_page(viewport={"width": 390, "height": 844}, color_scheme="dark" if dark else "light", has_touch=True, is_mobile=True)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(f"{app_url}?room={code}" + ("&__theme=dark" if dark else ""))
    page.wait_for_function("() => (document.querySelector('#room-bar .room-status')?.textContent || '').includes('following')", timeout=90_000)
    return page


def summary(app_url, code):
    with urllib.request.urlopen(f"{app_url.rstrip('/')}/api/rooms/{code}/summary", timeout=10) as r:
        return json.loads(r.read())


@pytest.mark.walk
def test_a_class_plays_five_steps_of_real_text_to_the_summary(browser, app_url, shots):
    lm, ids = _smol_ids()
    assert len(ids) == N_STEPS
    teacher, code = teacher_page(browser, app_url)
    state = api(app_url, code)[1]
    assert state["real_text"] is True and state["passage"] == PASSAGE and state["step"] == FIRST
    students = [_student(browser, app_url, code), phone(browser, app_url, code, dark=True), phone(browser, app_url, code, dark=False)]
    right_by_hand = []
    for j in range(STEPS):
        n = FIRST + j
        for s in students:
            on(s, n)
        for page in [teacher, *students]:  # nothing on any screen gives the real token away before the reveal
            text = readable(page)
            assert not [t for t in telltales(lm, ids, n) if t in text], (n, [t for t in telltales(lm, ids, n) if t in text])
        for s, g in zip(students, GUESSES[j]):
            send(s, g)
        right_by_hand.append([ids[n] in {lm.tokens.plain_ids(v)[0] for v in (g, " " + g)} for g in GUESSES[j]])
        reveal(teacher, 3)
        st = api(app_url, code)[1]
        assert st["sampled"]["token_id"] == ids[n]
        assert st["score"]["class_share_right"] == pytest.approx(sum(right_by_hand[-1]) / 3)
        assert "The text has" in teacher.inner_text("#class-chart .room-summary")  # (never "It wrote": the model did not)
        marks = teacher.inner_text("#class-chart .room-marks")
        assert ("✓" in marks or "✗" in marks) and len(marks) > 5
        for s, ok in zip(students, right_by_hand[-1]):  # each student's own guess judged against the real token
            s.wait_for_function("(ok) => (document.querySelector('#room-bar')?.textContent || '').includes(ok ? 'was right' : 'was not it')",
                                arg=ok, timeout=20_000)
        if j in (0, STEPS - 1):
            teacher.screenshot(path=str(shots / f"i36_round_projector_step{n}.png"))
            students[1].screenshot(path=str(shots / f"i36_round_phone_dark_step{n}.png"))
        if j < STEPS - 1:
            teacher.click("#class-next")
    sm = summary(app_url, code)
    assert [s["step"] for s in sm["steps"]] == list(range(FIRST, FIRST + STEPS))
    assert sm["totals"]["class_share_right"] == pytest.approx(sum(sum(r) / 3 for r in right_by_hand) / STEPS)
    teacher.click("#class-summary-show")
    teacher.wait_for_function("() => !document.getElementById('class-summary').hidden", timeout=10_000)
    card = teacher.inner_text("#class-summary")
    share = re.search(r"Your students: (\d+)% of their guesses right", card)
    assert share and abs(int(share[1]) - 100 * sm["totals"]["class_share_right"]) <= 0.5 + 1e-9, card
    assert share.start() < card.index(f"right at {sm['totals']['class_right']} of {STEPS}")
    assert f"{sm['totals']['model_right']} of {STEPS}" in card
    assert "SmolLM2" in card and "29%" in card and "38%" in card  # (real text: the study of people beside the class)
    size = teacher.evaluate("() => parseFloat(getComputedStyle(document.querySelector('#class-summary')).fontSize)")
    assert size >= 24
    teacher.screenshot(path=str(shots / "i36_round_summary_projector.png"))
    assert not students[1].errors and not students[2].errors
