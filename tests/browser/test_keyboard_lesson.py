"""The lesson from the keyboard alone (issue 47, docs/accessibility.md): no mouse and no click(), only keys, and at every
Tab stop on the way a focus a person can see (tests/browser/keys.py: a ring of 2 px or more at 3:1 against what is
behind it; never the page's body).

- alone, at 1366x768 light: the prompt -> Enter generates -> the step slider (Home, End, arrow keys) -> Guess first on ->
  a guess typed, Enter reveals -> a candidate of the distribution chosen to branch from -> Draw many -> Switch off;
- a class, the teacher's presenter view (dark) and a student's laptop: the teacher's Start a class -> the lesson's
  Next; a student's join box -> the focus in the guess box -> a guess, Enter sends it; the teacher's Reveal -> the
  round's summary -> Next; the student's verdict a polite status."""
from __future__ import annotations

import pytest


from .harness import new_page, wait_model_loaded
from .keys import stop, tab_to, unseen
from .lesson_kit import leaks, lesson, on_step, wait_headline

STEPS = 12


def state(page, expr: str):
    return page.evaluate(f"() => {expr}")


def wait(page, expr: str, timeout=60_000):
    page.wait_for_function(f"() => {expr}", timeout=timeout)


def generate(page, stops):
    """From the prompt: a new prompt typed, Enter; the run's whole trace on screen."""
    assert state(page, "document.activeElement === document.querySelector('#prompt textarea')")  # (the page opens there)
    page.keyboard.press("Control+A")
    page.keyboard.type("Once upon a time, in a small village by the sea,")
    page.keyboard.press("Enter")
    wait(page, f"window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle && LLMApp.state.bundle.n_steps === {STEPS}"
               " && !document.querySelector('#generate button:disabled, button#generate:disabled')", timeout=120_000)
    stops.append(stop(page))
    # a screen reader hears the new text (a polite live region, by sentence; the rest once it stops growing)
    wait(page, "(document.getElementById('text-announce')?.textContent || '').trim().length > 3", timeout=15_000)
    heard = state(page, "document.getElementById('text-announce').textContent.trim()")
    assert heard in page.inner_text("#output") and "Once upon" not in heard, (heard, page.inner_text("#output"))  # (the new text)


def steps_by_keys(page, stops):
    stops += tab_to(page, "#step-slider input[type=range]")
    for key, want in (("Home", 0), ("End", STEPS - 1), ("ArrowLeft", STEPS - 2)):
        page.keyboard.press(key)
        wait(page, f"LLMApp.state.step === {want}")


def guess(page, stops):
    """Guess first on (Space on its box), a guess typed in its box, Enter: the step's verdict, said once."""
    stops += tab_to(page, "#guess-toggle input")
    page.keyboard.press("Space")
    wait(page, "document.body.classList.contains('guess-hidden')")
    stops += tab_to(page, "#guess-input textarea")
    page.keyboard.type("Paris")
    page.keyboard.press("Enter")
    wait(page, f"document.querySelector('#guess-result .guess-result[data-step=\"{STEPS - 2}\"]')", timeout=60_000)
    wait(page, "!document.body.classList.contains('guess-hidden')")
    # the verdict is said once, as it is written (a polite live region); the text is not read while guessing
    assert state(page, "document.getElementById('guess-result').getAttribute('aria-live')") == "polite"
    assert state(page, "document.getElementById('text-announce').textContent") == ""


def branch(page, stops):
    """What a click on a bar does: the list of candidates, the third, "Branch here": the model writes on from it, the focus
    back on the list's button."""
    before = page.inner_text("#output")
    stops += tab_to(page, "#branch-keys")
    page.keyboard.press("Enter")
    page.wait_for_selector("#branch-choose:not([hidden])", timeout=5_000)
    stops.append(stop(page))  # (the first candidate has the focus)
    for _ in range(2):
        page.keyboard.press("Tab")
        stops.append(stop(page))
    third = state(page, "document.activeElement.textContent")
    page.keyboard.press("Enter")
    page.wait_for_selector("#branch-confirm:not([hidden])", timeout=5_000)
    assert "rank 3" in page.inner_text("#branch-confirm p"), third
    stops.append(stop(page))
    page.keyboard.press("Enter")
    # the focus back on the list's button (the dialog's button is hidden: a focus left there falls to the page's body)
    assert state(page, "document.activeElement.id") == "branch-keys"
    stops.append(stop(page))
    page.wait_for_function("(t) => { const o = document.querySelector('#output').innerText; return o && o !== t; }", arg=before,
                           timeout=120_000)


def draw_many(page, stops):
    """Guess first off again (the branch's new steps are not guessed: their draws would be hidden), back with Shift+Tab;
    four continuations of three tokens drawn."""
    stops += tab_to(page, "#guess-toggle input", key="Shift+Tab")
    page.keyboard.press("Space")
    wait(page, "!document.body.classList.contains('guessing')")
    stops += tab_to(page, "#samples-n input")
    page.keyboard.press("Control+A")
    page.keyboard.type("4")
    stops += tab_to(page, "#samples-m input")
    page.keyboard.press("Control+A")
    page.keyboard.type("3")
    stops += tab_to(page, "#samples-run")
    page.keyboard.press("Enter")
    page.wait_for_selector("#samples-result .samples-result", timeout=180_000)
    assert page.locator("#samples-result .sample-text").count() == 4


def switch_off(page, stops):
    stops += tab_to(page, "#tab-ablate-button", limit=200)
    page.keyboard.press("Enter")
    page.wait_for_selector("#ablate-result", timeout=120_000)
    stops += tab_to(page, "#ablate-run")
    page.keyboard.press("Enter")
    wait(page, "document.querySelector('#ablate-result') && document.querySelector('#ablate-result').dataset.layer !== undefined",
         timeout=120_000)


def test_the_lesson_alone_from_the_keyboard(browser, app_url):
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(f"{app_url}?max_new_tokens={STEPS}&mode=raw")
    wait_model_loaded(page)
    stops: list[dict] = []
    for part in (generate, steps_by_keys, guess, branch, draw_many, switch_off):
        part(page, stops)
        assert unseen(stops) == [], (part.__name__, unseen(stops))
    assert len(stops) > 40 and page.errors == []


@pytest.mark.walk
def test_a_class_round_from_the_keyboard(browser, app_url):
    """The teacher (projector's presenter view, dark): Start a class, the lesson's Next; a student (laptop, light): the
    join box, a guess, Enter sends it; the teacher: Reveal, Next, the round's summary. Keys only, a ring at every stop."""
    teacher = new_page(browser, width=1366, height=768, record_toasts=False)
    teacher.goto(f"{app_url}?view=present&__theme=dark")
    wait(teacher, "window.LLMApp && LLMApp.mounted()", timeout=120_000)
    stops = {"teacher": tab_to(teacher, "#class-start")}
    teacher.keyboard.press("Enter")
    teacher.wait_for_selector("#class-info .class-card[data-code]", state="attached", timeout=30_000)
    code = teacher.get_attribute("#class-info .class-card", "data-code")
    stops["teacher"] += tab_to(teacher, "#lesson-next")
    teacher.keyboard.press("Enter")
    x = lesson()[0]
    on_step(teacher, x)

    student = new_page(browser, width=1366, height=768, record_toasts=False)
    student.goto(app_url)
    wait(student, "window.LLMApp && LLMApp.mounted()", timeout=120_000)
    stops["student"] = tab_to(student, "#join-code", key="Shift+Tab")  # (back from the prompt, where the page opens)
    student.keyboard.type(code)
    student.keyboard.press("Enter")
    wait_headline(student, f"step {x.step} · What comes next?")
    on_step(student, x)
    wait(student, "!!document.activeElement.closest('#guess-input')", timeout=10_000)  # (where a joined student begins)
    stops["student"].append(stop(student))
    # (the keyboard's list of the candidates is the distribution: no way to it before the reveal)
    assert state(student, "!document.getElementById('branch-keys').checkVisibility()") and leaks(student, x) == []
    student.keyboard.type("the")
    student.keyboard.press("Enter")
    student.wait_for_function("() => (document.querySelector('#room-bar .room-note')?.textContent || '').includes('Sent: “the')",
                              timeout=15_000)

    teacher.wait_for_function("() => /1 of 1 students? (has|have) guessed/.test(document.getElementById('class-chart').textContent)",
                              timeout=20_000)
    stops["teacher"] += tab_to(teacher, "#class-reveal", key="Shift+Tab")  # (back from Next)
    teacher.keyboard.press("Enter")
    teacher.wait_for_selector("#class-chart .room-marks", timeout=30_000)
    student.wait_for_selector("#room-chart .room-col", timeout=30_000)
    # a screen reader hears "Sent: ..." and, at the reveal, the student's verdict (each a polite status, said once)
    student.wait_for_selector("#room-bar .room-own[role=status].is-wrong, #room-bar .room-own[role=status].is-right", timeout=15_000)
    assert state(student, "document.querySelector('#room-bar .room-note').getAttribute('role')") == "status"
    stops["teacher"] += tab_to(teacher, "#class-summary-show")
    teacher.keyboard.press("Enter")
    teacher.wait_for_selector("#class-summary:not([hidden])", timeout=30_000)
    stops["teacher"] += tab_to(teacher, "#lesson-next", key="Shift+Tab")
    teacher.keyboard.press("Enter")
    on_step(teacher, lesson()[1])
    on_step(student, lesson()[1])
    assert {k: unseen(v) for k, v in stops.items()} == {"teacher": [], "student": []}, {k: unseen(v) for k, v in stops.items()}
    assert teacher.errors == [] and student.errors == []


def test_a_plots_mode_bar_is_one_tab_stop_its_buttons_on_the_arrow_keys(browser, app_url):
    """Plotly's mode bar (zoom, pan, reset, the camera) is a toolbar: one Tab stop a plot, the arrow keys, Home and End
    move along it, the next Tab leaves it (eight stops a plot were eight a keyboard user passed on the way)."""
    page = new_page(browser, width=1366, height=768, record_toasts=False)
    page.goto(app_url)
    wait(page, "window.LLMApp && LLMApp.mounted() && document.querySelectorAll('.modebar').length >= 1", timeout=120_000)
    page.focus("#prompt textarea")
    stops = tab_to(page, ".modebar-btn")
    # the first Tab drew every step panel, those below the screen too: each figure's toolbar is a Tab stop
    wait(page, "LLMAppPanels.every((id) => document.querySelector('#' + id + ' .viewer-plot .modebar'))", timeout=30_000)
    bar = "document.activeElement.closest('.modebar')"
    assert state(page, f"{bar}.getAttribute('role')") == "toolbar" and unseen(stops) == []
    n = state(page, f"{bar}.querySelectorAll('.modebar-btn').length")
    assert n >= 2
    for key, at in (("ArrowRight", 1), ("ArrowLeft", 0), ("ArrowLeft", n - 1), ("Home", 0), ("End", n - 1), ("ArrowRight", 0)):
        page.keyboard.press(key)
        assert state(page, f"[...{bar}.querySelectorAll('.modebar-btn')].indexOf(document.activeElement)") == at, key
        assert unseen([stop(page)]) == [], key
    page.keyboard.press("ArrowRight")
    state(page, f"(window.__bar = {bar}, true)")
    page.keyboard.press("Tab")  # out of the toolbar: the next stop is not one of its buttons
    assert state(page, "document.activeElement.closest('.modebar') !== window.__bar && document.activeElement !== document.body")
    # every drawn plot's bar: one button in the Tab order, the one last used
    assert state(page, """[...document.querySelectorAll('.modebar')].every((m) =>
      m.querySelectorAll('.modebar-btn[tabindex="0"]').length === 1)""")
