"""Issue 33, finding 4: joining by the code. The start page has a "Join a class" box (#join-code, an input) on its first
screen, on a phone too; the code typed as the teacher's screen shows it, spaces and lower case and all, opens the class;
a wrong code is said right there, on the first screen, the box beside it to correct it (a wrong join link too)."""
from __future__ import annotations

import pytest

from .harness import new_page
from .lesson_kit import PHONE, api, box, spaced, wait_headline

pytestmark = pytest.mark.browser


def on_first_screen(page, sel) -> bool:
    page.evaluate("() => window.scrollTo(0, 0)")
    b = box(page, sel)
    return b["height"] > 0 and b["top"] >= 0 and b["bottom"] <= PHONE[1]


def test_a_student_types_the_code_and_a_wrong_one_is_said_at_the_box(browser, app_url):
    status, room = api(app_url, "", {"example": "confident", "step": 5})  # a class (made as any tool may make one)
    assert status == 200, room
    code = room["code"]
    phone = new_page(browser, width=PHONE[0], height=PHONE[1], record_toasts=False)
    held = []  # the page's room script, held back: a code typed the moment the box shows, before the script is there
    phone.route("**/assets/room.js*", lambda route: held.append(route))
    phone.goto(app_url)
    phone.wait_for_selector("#join-code", timeout=60_000)
    assert phone.evaluate("() => document.getElementById('join-code').tagName") == "INPUT"
    assert on_first_screen(phone, "#join-code") and on_first_screen(phone, "#join-go")

    phone.fill("#join-code", "zzz zzz")
    phone.press("#join-code", "Enter")
    phone.wait_for_timeout(500)
    assert "code=" not in phone.url and phone.locator("#join-code").count() == 1  # (the page stayed: no form sent)
    for route in held:
        route.continue_()
    phone.unroute("**/assets/room.js*")
    phone.wait_for_function("() => /no class with the code ZZZ ZZZ/.test(document.getElementById('join-msg').textContent)", timeout=30_000)
    assert on_first_screen(phone, "#join-msg") and on_first_screen(phone, "#join-code")
    assert phone.input_value("#join-code") == "zzz zzz" and "room=" not in phone.url  # (the box keeps it, to correct)

    phone.fill("#join-code", f" {spaced(code).lower()} ")  # as read off the projector, in lower case
    phone.click("#join-go")
    phone.wait_for_url(f"**?room={code}", timeout=15_000)
    wait_headline(phone, f"Class {spaced(code)}")
    assert api(app_url, code)[1]["students"] == 1


def test_a_join_link_with_a_wrong_code_says_so_at_the_box(browser, app_url):
    phone = new_page(browser, width=PHONE[0], height=PHONE[1], record_toasts=False)
    phone.goto(app_url + "?room=ZZZZZZ")
    phone.wait_for_function("() => /no class with the code ZZZ ZZZ/.test(document.getElementById('join-msg')?.textContent || '')",
                            timeout=60_000)
    assert phone.input_value("#join-code") == "ZZZ ZZZ"
    assert on_first_screen(phone, "#join-msg") and on_first_screen(phone, "#join-code")
    assert not phone.evaluate("() => document.documentElement.classList.contains('room-joining')")
