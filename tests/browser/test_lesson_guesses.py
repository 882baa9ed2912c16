"""Issue 33, finding 6: a step's guess stays with its step. A new step clears the box and the "Sent" note; a reload
keeps the note with the guess; after the reveal the button no longer says Send; the box's label, its button and the
hidden chart's stand-in name the same act, and the stand-in on the teacher's screen does not tell the teacher to type."""
from __future__ import annotations

import pytest

from .lesson_kit import api, lesson, on_step, student_page, teacher_page

pytestmark = pytest.mark.browser

# what the guess box says: its label, its button, the text standing in for the hidden chart (a CSS ::after), the note
WORDS = """() => ({ label: document.querySelector('#guess-input [data-testid="block-info"]')?.textContent || '',
  button: document.getElementById('guess-submit').textContent.trim(),
  standin: document.body.classList.contains('guess-hidden') ? getComputedStyle(document.getElementById('panel-distribution'), '::after').content : '',
  box: document.querySelector('#guess-input textarea').value, note: document.querySelector('#room-bar .room-note')?.textContent || '' })"""


def words(page) -> dict:
    return page.evaluate(WORDS)


# what a student's page shows of its class, said when a wait fails
SHOWN = """() => ({ head: document.getElementById('room-head')?.textContent || '', status: document.querySelector('#room-bar .room-status')?.textContent || '',
  note: document.querySelector('#room-bar .room-note')?.textContent || '', box: document.querySelector('#guess-input textarea')?.value,
  joining: document.documentElement.classList.contains('room-joining'), key: window.LLMApp && LLMApp.state.key, step: window.LLMApp && LLMApp.state.step })"""


def wait_shown(page, condition: str, timeout: int):
    """Until `condition` holds in the page; else fail saying what the page showed."""
    try:
        page.wait_for_function(condition, timeout=timeout)
    except Exception as e:  # noqa: BLE001  (playwright's TimeoutError)
        raise AssertionError(f"not within {timeout / 1000:.0f} s: {condition}; the page showed {page.evaluate(SHOWN)}") from e


def at_step(page, step):
    page.wait_for_function("(s) => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === s"
                           " && document.body.classList.contains('guess-hidden')", arg=step, timeout=30_000)


@pytest.mark.walk
def test_a_guess_stays_with_its_step_and_the_box_says_one_thing(browser, app_url):
    teacher, code = teacher_page(browser, app_url, present=False, size=(1366, 768))
    teacher.locator("#class-lesson .lesson-open").first.click()  # (a step with a next one)
    on_step(teacher, lesson()[0])
    teacher.wait_for_function("() => document.body.classList.contains('guess-hidden')", timeout=15_000)
    standin = words(teacher)["standin"]
    assert standin and "type" not in standin.lower() and "reveal" in standin.lower(), standin  # the teacher reveals, types nothing

    phone = student_page(browser, app_url, code)
    step = phone.evaluate("() => LLMApp.state.step")
    at_step(phone, step)
    w = words(phone)
    assert w["button"] == "Send" and "Send" in w["label"] and "Send" in w["standin"], w
    phone.fill("#guess-input textarea", "hello")
    phone.click("#guess-submit")
    phone.wait_for_function("() => /Sent: “hello”/.test(document.querySelector('#room-bar .room-note').textContent)", timeout=15_000)

    phone.reload()  # the note comes back with the guess
    wait_shown(phone, "() => /Sent: “hello”/.test(document.querySelector('#room-bar .room-note')?.textContent || '')"
               " && document.querySelector('#guess-input textarea').value === 'hello'", timeout=90_000)

    teacher.click("#class-next")  # a new step: an empty box, no note
    at_step(phone, step + 1)
    phone.wait_for_function("() => document.querySelector('#guess-input textarea').value === ''"
                            " && !(document.querySelector('#room-bar .room-note')?.textContent || '')", timeout=15_000)
    phone.fill("#guess-input textarea", "world")
    phone.click("#guess-submit")
    phone.wait_for_function("() => /Sent: “world”/.test(document.querySelector('#room-bar .room-note').textContent)", timeout=15_000)
    assert api(app_url, code)[1]["guesses"] == 1

    teacher.click("#class-reveal")
    phone.wait_for_function("() => !document.body.classList.contains('guess-hidden')", timeout=30_000)
    phone.wait_for_function("() => document.getElementById('guess-submit').textContent.trim() !== 'Send'", timeout=10_000)
    w = words(phone)
    assert w["button"] in w["label"] and "Send" not in w["label"] and "Sent" not in w["note"], w
