"""The teacher's tools and the class's score (issue 36), as a class uses them: a teacher's page on the projector
(1920x960, presenter view) and two students (a laptop, light; a phone, dark, touch) on the chat example's last two
steps. A rude answer is replaced on the teacher's chart (the filter runs on the server: the word never reaches a
page); the marks beside the chart say the class's answer and the model's top pick right or wrong; each student sees
their own guess right or wrong and their running score; "hide counts" leaves shares alone on every chart; the last
step's reveal opens the summary card (type for the back of a room) with the numbers the summary's API gives and
the running score agrees; Download results saves a CSV whose rows are the guesses as typed, anonymous, formula-safe.
Screenshots: artifacts/screenshots/i36_teacher_*.png."""
from __future__ import annotations

import csv
import re

import pytest

from pipeline import gallery
from viz.style import visible

from .harness import new_page, wait_model_loaded
from .lesson_kit import api, box

pytestmark = pytest.mark.browser

EXAMPLE, FIRST = "chat", 18  # its last two steps: "," (the model's top pick is not it) and " such" (it is)


def model_ready(browser, app_url):
    """The app's model loaded (a guess rated over the whole vocabulary), seen on a plain page: a page opened on a
    gallery example says "Viewing a saved trace of ..." once the model is loaded, never "Model: ..."."""
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(app_url)
    wait_model_loaded(page)
    page.close()


def teacher_on(browser, app_url):
    """The projector (1920x960, presenter view) on the chat example's step FIRST, its class started."""
    model_ready(browser, app_url)
    page = new_page(browser, width=1920, height=960, record_toasts=False)
    page.goto(f"{app_url}?example={EXAMPLE}&step={FIRST}")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    page.wait_for_function("([n, s]) => LLMApp.state.bundle.n_steps === n && LLMApp.state.step === s",
                           arg=[len(gallery.load(EXAMPLE).steps), FIRST], timeout=30_000)
    page.click("#class-start")
    page.wait_for_selector("#class-info .class-card[data-code]", timeout=30_000)
    page.click("#present-toggle")  # (the projector: presenter view)
    page.wait_for_function("() => document.body.classList.contains('present')", timeout=10_000)
    code = page.get_attribute("#class-info .class-card", "data-code")
    assert api(app_url, code)[1]["step"] == FIRST and page.evaluate("() => document.body.classList.contains('present')")
    return page, code


def student(browser, app_url, code, *, phone=False):
    if phone:  # (a phone in dark mode, touch)
        page = browser.new_page(viewport={"width": 390, "height": 844}, color_scheme="dark", has_touch=True, is_mobile=True)
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.goto(f"{app_url}?room={code}&__theme=dark")
    else:
        page = new_page(browser, width=1366, height=768, record_toasts=False)
        page.goto(f"{app_url}?room={code}")
    page.wait_for_function("() => (document.querySelector('#room-bar .room-status')?.textContent || '').includes('following')", timeout=60_000)
    return page


def at(page, step):
    page.wait_for_function("(s) => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === s"
                           " && /What comes next/.test(document.querySelector('#room-head')?.textContent || '')", arg=step, timeout=30_000)


def send(page, text):
    page.fill("#guess-input textarea", text)
    page.click("#guess-submit")
    page.wait_for_function("() => /Sent/.test(document.querySelector('#room-bar .room-note')?.textContent || '')", timeout=10_000)


def reveal(teacher, n):
    """Reveal once `n` students have guessed. The room's state is then drawn from the Reveal's own answer: the teacher's
    polls of the state are answered "not modified" until the chart shows the reveal's marks."""
    teacher.wait_for_function("(n) => new RegExp(n + ' of \\\\d+ students have guessed').test(document.getElementById('class-chart').textContent)",
                              arg=n, timeout=15_000)
    code = teacher.get_attribute("#class-info .class-card", "data-code")
    polls = re.compile(rf"/api/rooms/{code}(\?[^/]*)?$")

    def unchanged(route):  # (a poll: the room as the page last saw it; the reveal and the summary go through)
        route.fulfill(status=304) if route.request.method == "GET" else route.continue_()

    teacher.route(polls, unchanged)
    try:
        teacher.click("#class-reveal")
        teacher.wait_for_function("() => document.querySelector('#class-chart .room-marks')", timeout=20_000)
    finally:
        teacher.unroute(polls, unchanged)


def chart(page, box_id):
    return page.evaluate("""(id) => [...document.querySelectorAll('#' + id + ' .room-col')].map((c) => ({
      title: c.querySelector('.room-col-title').textContent,
      rows: [...c.querySelectorAll('.room-row')].map((r) => [r.querySelector('.room-label').textContent, r.querySelector('.room-value').textContent]) }))""",
                         box_id)


def contrast(page, sel) -> float:
    """The WCAG contrast of `sel`'s text against the page's background behind it."""
    return page.evaluate("""(sel) => {
      const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number), lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255;
        return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }).reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
      const e = document.querySelector(sel); let n = e, bg = null;
      while (n && !bg) { const c = getComputedStyle(n).backgroundColor; if (c && !/rgba\\(.*, 0\\)$/.test(c) && c !== 'transparent') bg = c; n = n.parentElement; }
      const [a, b] = [lum(rgb(getComputedStyle(e).color)), lum(rgb(bg || 'rgb(255,255,255)'))];
      return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); }""", sel)


def small_text(page, sel):
    """The text of `sel` set in type under 24 px (what the back of a room could not read)."""
    return page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' *')].filter((e) => e.childElementCount === 0
      && e.textContent.trim() && e.getClientRects().length).map((e) => [e.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(e).fontSize)])
      .filter(([, px]) => px < 24)""", sel)


@pytest.mark.walk
def test_a_round_with_the_teachers_tools_ends_on_the_summary_card(browser, app_url, shots, tmp_path):
    tr = gallery.load(EXAMPLE)
    s1, s2 = tr.steps[FIRST], tr.steps[FIRST + 1]
    assert FIRST + 2 == len(tr.steps) and s1.piece == "," and s2.piece == " such"
    assert int(s1.top_ids[0]) != s1.token_id and int(s2.top_ids[0]) == s2.token_id
    teacher, code = teacher_on(browser, app_url)
    laptop, phone = student(browser, app_url, code), student(browser, app_url, code, phone=True)
    for p in (laptop, phone):
        at(p, FIRST)

    # the guess box types as meant on a phone: no capital first letter, no "correction" (both pages)
    for p in (laptop, phone):
        assert p.evaluate("() => ['autocapitalize', 'autocorrect', 'spellcheck'].map((k) => "
                          "document.querySelector('#guess-input textarea').getAttribute(k))") == ["off", "off", "false"]
    # step 18: the laptop guesses the real token, the phone a rude word
    send(laptop, ",")
    send(phone, "shit")
    reveal(teacher, 2)
    room = chart(teacher, "class-chart")[0]
    assert sorted(label for label, _ in room["rows"]) == sorted([",", "***"]) and all(v == "1" for _, v in room["rows"])
    assert "shit" not in teacher.inner_text("#class-info").lower()
    marks = teacher.inner_text("#class-chart .room-marks")
    # a tie of "," and the rude one: the class has no one answer (the real token among them is not the class's answer)
    assert "The class was split: " in marks and "no one answer" in marks and "right" not in marks.split("The model")[0], marks
    assert f"The model's top pick “{visible(str(s1.top_pieces[0]))}”: wrong" in marks
    teacher.wait_for_function("() => /So far: 50% of guesses right · the class's answer 0 of 1 · SmolLM2 0 of 1/"
                              ".test(document.getElementById('class-score').textContent)", timeout=10_000)
    for p, right in ((laptop, True), (phone, False)):
        p.wait_for_function("() => /You: \\d of 1 right/.test(document.querySelector('#room-bar .room-tally')?.textContent || '')", timeout=15_000)
        own = p.inner_text("#room-bar .room-own")
        assert own.startswith("✓" if right else "✗") and "“,”" in own, own
        assert p.inner_text("#room-bar .room-tally") == f"You: {int(right)} of 1 right"
        assert "shit" not in p.inner_text("#room-chart").lower()  # (the phone's own rude word too: the chart is the room's)
        assert p.is_hidden("#room-bar .room-note")  # (its own line says the guess: once)
    # the phone's marks read on its dark background: the ✗ line light enough (WCAG contrast 4.5 and more)
    assert contrast(phone, "#room-bar .room-own") >= 4.5 and contrast(laptop, "#room-bar .room-own") >= 4.5
    teacher.screenshot(path=str(shots / "i36_teacher_projector_revealed.png"))
    phone.screenshot(path=str(shots / "i36_teacher_phone_dark_revealed.png"), full_page=False)

    # hide counts: shares alone, on the projector and on the phones
    teacher.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    teacher.check("#class-hide-counts")
    teacher.wait_for_function("() => /out of 100%/.test(document.querySelector('#class-chart .room-col-title')?.textContent || '')"
                              " && !/guess/.test(document.querySelector('#class-chart .room-col-title').textContent)", timeout=10_000)
    for p, where in ((teacher, "class-chart"), (phone, "room-chart"), (laptop, "room-chart")):
        p.wait_for_function("(id) => !/guess/.test(document.querySelector('#' + id + ' .room-col-title')?.textContent || 'guess')", arg=where,
                            timeout=15_000)
        room = chart(p, where)[0]
        assert [v for _, v in room["rows"]] == ["50%", "50%"], room
        assert not re.search(r"\bguess(es)?\b", p.inner_text(f"#{where}")), p.inner_text(f"#{where}")
    assert api(app_url, code)[1]["options"] == {"profanity": "replace", "hide_counts": True}
    phone.screenshot(path=str(shots / "i36_teacher_phone_dark_shares.png"))

    # step 19, the last: the laptop wrong, the phone a formula; its reveal opens the summary card
    teacher.evaluate("() => window.scrollTo(0, 0)")
    teacher.click("#class-next")
    for p in (laptop, phone):
        at(p, FIRST + 1)
    send(laptop, "like")
    send(phone, "=1+1")
    reveal(teacher, 2)
    teacher.wait_for_selector("#class-summary:not([hidden]) .summary-class", timeout=15_000)
    summary = api(app_url, f"{code}/summary")[1]
    tot = summary["totals"]
    # the score, counted here from the guesses: step 18 a tie with the real token among it (split), step 19 nobody right
    assert (tot["steps_guessed"], tot["class_right"], tot["model_right_guessed"]) == (2, 0, 1)
    assert [k["class_split"] for k in summary["steps"]] == [True, True] and summary["real_text"] is False
    assert tot["class_share_right"] == pytest.approx((1 / 2 + 0) / 2)
    card = teacher.inner_text("#class-summary")
    # the share of students right first, the most common answer second; a text the model wrote: no study beside it
    assert card.index("Your students: 25% of their guesses right") < card.index("The class's most common answer: right at 0 of 2")
    assert "SmolLM2: 1 of 2" in card and "written by the model itself" in card
    assert "People in a study" not in card and "GPT-Neo-125M" not in card and "The study:" not in card
    assert f"Step {FIRST}, “,”: class – · SmolLM2 ✗" in card and f"Step {FIRST + 1}, “·such”: class – · SmolLM2 ✓" in card
    teacher.evaluate("() => window.scrollTo(0, 0)")
    for sel in (".summary-title", ".summary-class", ".summary-model", ".summary-study"):  # on the projector's first screen
        b = box(teacher, f"#class-summary {sel}")
        assert b["height"] > 0 and 0 <= b["top"] and b["bottom"] <= 960 and b["left"] >= 960 - 40, (sel, b)  # (over the distribution's half)
    assert small_text(teacher, "#class-summary") == []  # read from the back of a room
    assert "So far: 25% of guesses right · the class's answer 0 of 2 · SmolLM2 1 of 2" in teacher.inner_text("#class-score")
    teacher.evaluate("() => window.scrollTo(0, 0)")
    teacher.screenshot(path=str(shots / "i36_teacher_projector_summary.png"))
    laptop.wait_for_function("() => /You: 1 of 2 right/.test(document.querySelector('#room-bar .room-tally')?.textContent || '')", timeout=15_000)
    laptop.screenshot(path=str(shots / "i36_teacher_laptop_light.png"))
    teacher.click("#class-summary-close")  # "Back to the chart"
    teacher.wait_for_selector("#class-summary", state="hidden", timeout=5_000)
    teacher.click("#class-summary-show")  # ("Round summary": again, at any time)
    teacher.wait_for_selector("#class-summary:not([hidden]) .summary-class", timeout=10_000)
    teacher.click("#class-summary-close")

    # Download results: the CSV, read back
    with teacher.expect_download() as d:
        teacher.click("#class-download")
    assert d.value.suggested_filename == f"class-{code}-results.csv"
    path = tmp_path / "results.csv"
    d.value.save_as(path)
    rows = list(csv.reader(path.open(encoding="utf-8-sig", newline="")))
    assert {r[0] for r in rows[1:]} == {"1"}  # (the room's first text)
    body = [(r[1], r[2], r[3], r[4], r[8]) for r in rows[1:]]
    assert body == [("S1", str(FIRST), ",", "yes", ","), ("S2", str(FIRST), "shit", "no", ","),
                    ("S1", str(FIRST + 1), "like", "no", "·such"), ("S2", str(FIRST + 1), "'=1+1", "no", "·such")]
    assert all(r[6] and 0 < float(r[6]) <= 1 and int(r[7]) >= 1 for r in rows[1:] if r[5])
    # the teacher's card in the normal view of a laptop: the tools under the chart
    teacher.click("#present-toggle")
    teacher.set_viewport_size({"width": 1366, "height": 768})
    teacher.locator(".class-tools").scroll_into_view_if_needed()
    teacher.screenshot(path=str(shots / "i36_teacher_card_1366.png"))
    assert [e for p in (teacher, laptop, phone) for e in p.errors] == []


def test_a_student_alone_keeps_a_running_score_beside_the_models(browser, app_url, shots):
    """Guess first without a class, on the chat example's last two steps: "," (right; the model's top pick "." is not)
    then "like" (wrong; the model's top pick " such" is right): "You: 1 of 2; the model's top pick: 1 of 2."."""
    tr = gallery.load(EXAMPLE)
    model_ready(browser, app_url)
    page = new_page(browser, width=390, height=844, record_toasts=False)
    page.goto(f"{app_url}?example={EXAMPLE}&step={FIRST}&guess=1")
    page.wait_for_function("(s) => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === s"
                           " && document.body.classList.contains('guess-hidden')", arg=FIRST, timeout=90_000)
    want = {"right": 0, "model": 0}
    for k, text in ((FIRST, ","), (FIRST + 1, "like")):
        if k != FIRST:
            page.evaluate("(v) => { const r = document.querySelector('#step-slider input[type=range]'); r.value = v;"
                          " r.dispatchEvent(new Event('input', {bubbles: true})); }", k)
            page.wait_for_function("(s) => LLMApp.state.step === s && document.body.classList.contains('guess-hidden')", arg=k, timeout=15_000)
        page.fill("#guess-input textarea", text)
        page.click("#guess-submit")
        page.wait_for_function("(s) => document.getElementById('guess-result').dataset.step === String(s)", arg=k, timeout=30_000)
        step = tr.steps[k]
        want["right"] += text.strip() == step.text.strip()
        want["model"] += int(step.top_ids[0]) == int(step.token_id)
    assert want == {"right": 1, "model": 1}
    page.wait_for_function("() => document.getElementById('guess-score')?.dataset.steps === '2'", timeout=10_000)
    assert page.inner_text("#guess-score").startswith("You: 1 of 2; the model's top pick: 1 of 2.")
    page.locator("#guess-score").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "i36_teacher_alone_phone.png"))
