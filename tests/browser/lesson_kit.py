"""What the lesson's browser tests share (no tests here): a teacher's page and a student's, the room's API, the lesson's
steps, and what a person can read on a page (all its text, scrolling included, and the tooltips of what is shown),
checked for a step's answer: the words that would give it away before its reveal."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from functools import lru_cache

from .harness import new_page

PHONE, LAPTOP, PROJECTOR = (390, 844), (1366, 768), (1920, 960)

# everything a person can read: the page's text (the whole document, not the screen: scrolling included), the text of
# the figures drawn, the tooltips, placeholders and labels of what is shown, and what the text boxes hold
READABLE = """() => {
  const shown = (e) => { if (!e.getClientRects().length) return false;
    for (let n = e; n && n.nodeType === 1; n = n.parentElement) { const cs = getComputedStyle(n);
      if (cs.display === 'none' || cs.visibility === 'hidden' || cs.opacity === '0') return false; }
    return true; };
  const attrs = [...document.querySelectorAll('[title], [aria-label], [placeholder], [alt]')].filter(shown)
    .map((e) => ['title', 'aria-label', 'placeholder', 'alt'].map((a) => e.getAttribute(a) || '').join(' '));
  const svg = [...document.querySelectorAll('svg text')].filter(shown).map((t) => t.textContent);
  const boxes = [...document.querySelectorAll('textarea, input[type=text], input:not([type])')].filter(shown).map((e) => e.value);
  return [document.body.innerText, ...attrs, ...svg, ...boxes].join('\\n'); }"""


def readable(page) -> str:
    return page.evaluate(READABLE)


@lru_cache(maxsize=None)
def lesson():
    from pipeline import gallery

    return gallery.lesson()


@lru_cache(maxsize=None)
def trace(name: str):
    from pipeline import gallery

    return gallery.load(name)


def telltales(x) -> list[str]:
    """What would give lesson step `x`'s answer away before its reveal: the text written through the step (the step's
    token after the text before it), the step's word where the text before it does not hold that word, the character
    a byte token begins; the distribution's and the room chart's marks of the model's pick; every sentence for the
    teacher and every example's caption (each names an answer)."""
    from pipeline import gallery

    t = trace(x.example)
    s = t.steps[x.step]
    before = "".join(st.text for st in t.steps[: x.step])
    out = ["◀ sampled", "of the room guessed", "It wrote"]
    out += [y.say[:40] for y in lesson()] + [e.look[:40] for e in gallery.entries()]
    context = t.prompt.text + before
    if s.text.strip():  # the shortest end of the text through the step that the text before it does not hold
        full = before + s.text
        k = min(len(full), max(len(s.text) + 6, 10))
        while k < len(full) and full[-k:] in context:
            k += 1
        out += [full[-k:]] if full[-k:] not in context else []
        word = s.text.strip()
        out += [word] if len(word) >= 3 and word not in context else []
    else:  # a token of bytes: the character it begins (its bytes' labels are the prompt's emoji's too: not a sign)
        out += [next(st.text for st in t.steps[x.step + 1:] if st.text).strip()]
    return out


def leaks(page, x) -> list[str]:
    text = readable(page)
    return [t for t in telltales(x) if t and t in text]


def api(app_url, path, body=None, key=None):
    """`path` after /api/rooms ("" to make a room), `body` to POST it. (app.py adds the rooms' routes just after the
    server answers: a 404 of the server's own, not the API's, is asked again for a while.)"""
    for _ in range(60):
        status, answer = _api(app_url, path, body, key)
        if not (status == 404 and answer == {"detail": "Not Found"}):
            break
        time.sleep(0.5)
    return status, answer


def _api(app_url, path, body, key):
    req = urllib.request.Request(app_url.rstrip("/") + "/api/rooms" + (f"/{path}" if path else ""), method="POST" if body is not None else "GET",
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **({"X-Room-Key": key} if key else {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def themed(url: str, dark: bool) -> str:
    return url + ("&" if "?" in url else "?") + "__theme=dark" if dark else url


def teacher_page(browser, app_url, *, present=True, dark=False, size=PROJECTOR):
    """A teacher's page with a class started: (page, code)."""
    page = new_page(browser, width=size[0], height=size[1], record_toasts=False)
    page.goto(themed(app_url + ("?view=present" if present else ""), dark))
    page.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=120_000)
    page.click("#class-start")
    page.wait_for_selector("#class-info .class-card[data-code]", state="attached", timeout=30_000)
    page.wait_for_function("() => document.body.classList.contains('teaching')", timeout=10_000)
    return page, page.get_attribute("#class-info .class-card", "data-code")


def student_page(browser, app_url, code, *, size=PHONE, dark=False):
    """A student's page that opened the join link, once it shows the room's line."""
    page = new_page(browser, width=size[0], height=size[1], record_toasts=False)
    page.goto(themed(f"{app_url}?room={code}", dark))
    wait_headline(page, "Class ")
    return page


def wait_headline(page, text, timeout=90_000):
    page.wait_for_function("(t) => (document.querySelector('#room-head .room-headline')?.textContent || '').includes(t)"
                           " && !document.documentElement.classList.contains('room-joining')", arg=text, timeout=timeout)


def on_step(page, x, timeout=60_000):
    """The page shows lesson step `x`'s trace (told by its number of steps) at its step."""
    page.wait_for_function("([n, s]) => window.LLMApp && LLMApp.mounted() && LLMApp.state.bundle.n_steps === n && LLMApp.state.step === s",
                           arg=[len(trace(x.example).steps), x.step], timeout=timeout)


def send(page, text):
    """A student's guess typed and sent, once the page says it was sent."""
    page.fill("#guess-input textarea", text)
    page.click("#guess-submit")
    page.wait_for_function("(t) => (document.querySelector('#room-bar .room-note')?.textContent || '').includes('Sent: “' + t)", arg=text,
                           timeout=15_000)


def next_in_lesson(page):
    page.click("#lesson-next")


def spaced(code: str) -> str:
    return f"{code[:3]} {code[3:]}"


def box(page, elem_id: str) -> dict:
    """An element's box on the page as it is scrolled now: {top, bottom, left, right}."""
    return page.evaluate("(i) => { const r = document.querySelector(i).getBoundingClientRect();"
                         " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height}; }", elem_id)
