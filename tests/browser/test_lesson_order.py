"""Issue 33, finding 8: the lesson's order. "Next in the lesson ›" on a new card opens the lesson's first step (a new
class in the same tab starts it afresh), each click the step after the one open; at the last step it says that the
lesson is over."""
from __future__ import annotations

import pytest

from .lesson_kit import lesson, on_step, teacher_page

pytestmark = pytest.mark.browser


def test_next_in_the_lesson_starts_at_its_first_step_and_says_when_it_is_over(browser, app_url):
    steps = lesson()
    page, code = teacher_page(browser, app_url, present=False)
    page.click("#lesson-next")
    on_step(page, steps[0])
    page.click("#lesson-next")
    on_step(page, steps[1])
    assert f"step 2 of {len(steps)}" in page.inner_text("#lesson-where")

    page.locator("#class-lesson .lesson-open").nth(len(steps) - 2).click()
    on_step(page, steps[-2])
    page.click("#lesson-next")
    on_step(page, steps[-1])
    page.wait_for_function("() => document.getElementById('lesson-next').disabled", timeout=10_000)
    assert "lesson is over" in page.inner_text("#lesson-next")

    page.click("#class-start")  # a new class in the same tab: its lesson starts at its first step again
    page.wait_for_function("(c) => { const k = document.querySelector('#class-info .class-card[data-code]'); return k && k.dataset.code !== c; }",
                           arg=code, timeout=30_000)
    page.wait_for_function("() => !document.getElementById('lesson-next').disabled", timeout=10_000)
    page.click("#lesson-next")
    on_step(page, steps[0])
