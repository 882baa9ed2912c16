"""The room's chart after a reveal, as the projector and the phones show it (assets/room.js drawChart, ui/rooms/rooms.py):
the model's bars on an absolute 0-100% scale (at the flat step the top token's 2.1% is a sliver, not a full bar),
tokens labelled as the distribution labels them ("·" for a space, bytes whole), ties for the favourite said as ties,
emoji whose first tokens are only bytes of a character told apart by what was typed, and each guess rated in its
likelier spelling (with or without a space), emoji included (issue 33, finding 7). Screenshots of the projector
(1920x960) and of phones (390x844, light and dark) go to artifacts/screenshots/room-chart-*.png."""
from __future__ import annotations

import pytest

from pipeline import gallery
from viz.fmt import pct
from viz.style import visible

from .harness import new_page, wait_model_loaded
from .test_class_room import api

pytestmark = pytest.mark.browser

# each column of a chart: its title, and per row the label, the value, the bar's share of its track, the label cut or not
CHART = """(id) => [...document.querySelectorAll('#' + id + ' .room-col')].map((c) => ({
  title: c.querySelector('.room-col-title').textContent,
  rows: [...c.querySelectorAll('.room-row')].map((r) => { const l = r.querySelector('.room-label');
    return { label: l.textContent, value: r.querySelector('.room-value').textContent,
             share: r.querySelector('.room-bar').getBoundingClientRect().width / r.querySelector('.room-track').getBoundingClientRect().width,
             track: r.querySelector('.room-track').getBoundingClientRect().width,
             cut: l.scrollWidth > l.clientWidth + 1 || l.scrollHeight > l.clientHeight + 1 }; }) }))"""


def teacher_on(browser, app_url, example, step):
    """The teacher's page (1920x960) on a gallery example at a step, its class started."""
    page = new_page(browser, width=1920, height=960, record_toasts=False)
    page.goto(f"{app_url}?example={example}&step={step}")
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    wait_model_loaded(page)
    n = len(gallery.load(example).steps)
    page.wait_for_function("([n, s]) => LLMApp.state.bundle.n_steps === n && LLMApp.state.step === s", arg=[n, step], timeout=30_000)
    page.click("#class-start")
    page.wait_for_selector("#class-info .class-card[data-code]", timeout=30_000)
    code, key = (page.get_attribute("#class-info .class-card", a) for a in ("data-code", "data-key"))
    assert api(app_url, code)[1]["step"] == step
    return page, code, key


def phone(browser, app_url, code, dark=False):
    page = new_page(browser, width=390, height=844, record_toasts=False)
    page.goto(f"{app_url}?room={code}" + ("&__theme=dark" if dark else ""))
    page.wait_for_function("() => (document.querySelector('#room-bar .room-status')?.textContent || '').includes('following')", timeout=60_000)
    return page


def send(page, text):
    page.fill("#guess-input textarea", text)
    page.click("#guess-submit")
    page.wait_for_function("() => /Sent/.test(document.querySelector('#room-bar .room-note')?.textContent || '')", timeout=10_000)


def revealed(page, chart_id):
    page.wait_for_function("(id) => /of the room guessed|No guesses/.test(document.getElementById(id)?.textContent || '')", arg=chart_id,
                           timeout=20_000)
    page.wait_for_timeout(300)  # (fonts and layout settled for the screenshot)
    return page.evaluate(CHART, chart_id)


def test_emoji_are_two_answers_rated_with_their_space_and_a_tie_is_a_tie(browser, app_url, shots):
    """split-emoji, step 0 ("... I love the sun"): the model writes " 🌪" beginning with the bytes " <0xF0><0x9F>"
    (86%); "🌪" typed without its space is rated so too. 🌪 and 💩 share those bytes: two answers, tied."""
    step = gallery.load("split-emoji").steps[0]
    teacher, code, key = teacher_on(browser, app_url, "split-emoji", 0)
    a, b = phone(browser, app_url, code), phone(browser, app_url, code, dark=True)
    send(a, "🌪")
    send(b, "💩")
    teacher.wait_for_function("() => /2 of 2 students have guessed/.test(document.getElementById('class-chart').textContent)", timeout=15_000)
    teacher.click("#class-reveal")
    room, model = revealed(teacher, "class-chart")
    assert sorted((r["label"], r["value"]) for r in room["rows"]) == [("🌪", "1"), ("💩", "1")]  # two answers, not one
    assert all(r["share"] == pytest.approx(0.5, abs=0.01) for r in room["rows"])  # each half of the room's guesses
    want = [visible(str(p)) for p in step.top_pieces[:10]]
    assert [r["label"] for r in model["rows"]] == want and want[0] == "·<0xF0><0x9F>"  # as the distribution writes them
    assert [r["value"] for r in model["rows"]] == [pct(p) for p in step.top_probs[:10]]
    assert not any(r["cut"] for col in (room, model) for r in col["rows"])  # every label whole
    summary = teacher.inner_text("#class-chart .room-summary")
    # both emoji begin with the model's most likely token (with its space), and the tie is said
    assert summary.startswith("100% of the room guessed the model's most likely token “·<0xF0><0x9F>”"), summary
    assert "favourites are tied at 1 guess each" in summary and "“🌪”" in summary and "“💩”" in summary
    assert f"each beginning with the model's token “·<0xF0><0x9F>”, which it gave {pct(step.top_probs[0])}." in summary
    assert "one byte of a character" in teacher.inner_text("#class-chart .room-bytes")
    teacher.screenshot(path=str(shots / "room-chart-emoji-teacher.png"))
    for page, name in ((a, "light"), (b, "dark")):
        rows = revealed(page, "room-chart")
        assert [r["label"] for r in rows[1]["rows"]] == want and not any(r["cut"] for c in rows for r in c["rows"])
        page.locator("#room-chart").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / f"room-chart-emoji-phone-{name}.png"))
    teacher.click("#class-close")


@pytest.mark.walk
def test_the_models_bars_are_on_an_absolute_scale(browser, app_url, shots):
    """The flat step: the model's most likely token has 2.1%; its bar is 2.1% of the track, not a full one (and at
    the confident step, Paris's 95% fills 95%): each bar its probability, the room's each its share of the guesses."""
    for example, s in (("flat", 1), ("confident", 5)):
        step = gallery.load(example).steps[s]
        teacher, code, key = teacher_on(browser, app_url, example, s)
        c = phone(browser, app_url, code, dark=example == "confident")
        send(c, "E" if example == "flat" else "Paris")
        assert api(app_url, f"{code}/guesses", {"student": "api-1", "text": "the"})[0] == 200
        teacher.click("#class-reveal")
        room, model = revealed(teacher, "class-chart")
        top = model["rows"][:10]  # (the model's ten; the real token after them when it is not among them)
        got = [r["share"] for r in top]  # (a bar under 2 px is 2 px: still seen)
        assert got == pytest.approx([max(float(p), 2 / r["track"]) for p, r in zip(step.top_probs, top)], abs=0.004), example
        assert max(r["track"] for r in model["rows"]) - min(r["track"] for r in model["rows"]) < 1  # one scale: tracks alike
        assert [r["label"] for r in top] == [visible(str(p)) for p in step.top_pieces[:10]]
        inside = int(step.token_id) in [int(i) for i in step.top_ids[:10]]
        assert [r["label"] for r in model["rows"][10:]] == ([] if inside else [f"⋯ {visible(str(step.piece))}"]), example
        assert [r["share"] for r in room["rows"]] == pytest.approx([0.5, 0.5], abs=0.01)
        if example == "flat":
            assert got[0] < 0.03 and model["rows"][0]["value"] == pct(step.top_probs[0]) == "2.1%"
        else:
            assert model["rows"][0]["label"] == "·Paris" and got[0] > 0.9
        teacher.screenshot(path=str(shots / f"room-chart-{example}-teacher.png"))
        revealed(c, "room-chart")
        c.locator("#room-chart").scroll_into_view_if_needed()
        c.screenshot(path=str(shots / f"room-chart-{example}-phone-{'dark' if example == 'confident' else 'light'}.png"))
        teacher.click("#class-close")
        for p in (teacher, c):
            p.close()
