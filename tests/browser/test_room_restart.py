"""Issue 36, item 5: a class survives a restart of the app. A teacher's page starts a class, two students (one on a
touch phone, dark) join by ?room=CODE and guess; the server is killed (SIGKILL: no clean exit) while the pages are
open, and started again on the same port with the same rooms' file (LLM_VIZ_ROOMS_DB). Each page says the server is
not answering, then, the server back, reloads itself into the same room at the same step: the teacher's card (its
key checked by its hash), the count of the guesses made before the crash, each student's guess in their box, and the
reveal works with both guesses in the room's chart."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

from .harness import ROOT, free_port, wait_model_loaded
from .lesson_kit import api

pytestmark = pytest.mark.browser

GUESSES = {"a": "the", "b": "mountain"}


def serve(port: int, db, log) -> subprocess.Popen:
    """app.py on `port` with the rooms' file `db`, once it answers (a process this test kills)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1",
           "LLM_VIZ_ROOMS_DB": str(db)}
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], cwd=ROOT, env=env,
                            stdout=open(log, "a"), stderr=subprocess.STDOUT)
    deadline = time.time() + 300
    while True:
        assert proc.poll() is None, f"app.py exited with code {proc.returncode}; see {log}"
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}", timeout=2).read(1)
            return proc
        except OSError:
            assert time.time() < deadline, f"app.py did not answer within 300 s; see {log}"
            time.sleep(0.5)


@pytest.fixture()
def server(tmp_path):
    """(url, start, kill): the app on a port of its own, started again on the same port after a kill."""
    port, procs = free_port(), []
    db, log = tmp_path / "rooms.sqlite3", tmp_path / "app.log"

    def start():
        procs.append(serve(port, db, log))

    def kill():
        procs[-1].kill()  # SIGKILL: what a crash or a Space's hard stop does (no atexit, no last write)
        procs[-1].wait(timeout=20)

    start()
    yield f"http://127.0.0.1:{port}", start, kill, db
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def page_of(browser, w, h, *, touch=False, theme="light"):
    ctx = browser.new_context(viewport={"width": w, "height": h}, has_touch=touch, is_mobile=touch, color_scheme=theme)
    page = ctx.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    return page


def at_step(page, step, timeout=60_000):
    page.wait_for_function("(s) => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === s", arg=step, timeout=timeout)


def chart(page, pattern, timeout=60_000, where="#class-chart"):
    page.wait_for_function("([p, w]) => new RegExp(p).test(document.querySelector(w)?.textContent || '')", arg=[pattern, where],
                           timeout=timeout)


def join(browser, url, code, **kw):
    page = page_of(browser, **kw)
    page.goto(f"{url}?room={code}")
    page.wait_for_function("() => (document.querySelector('#room-bar .room-status')?.textContent || '').includes('following')",
                           timeout=90_000)
    return page


def send(page, text):
    page.fill("#guess-input textarea", text)
    page.click("#guess-submit")
    page.wait_for_function("() => /Sent/.test(document.querySelector('#room-bar .room-note')?.textContent || '')", timeout=15_000)


def on_disk(db, code) -> int:
    """The guesses of room `code` the rooms' file holds (read as any SQLite reader would)."""
    try:
        with sqlite3.connect(db) as c:
            return sum(len(json.loads(d)) for d, in c.execute("SELECT data FROM guesses WHERE code = ?", (code,)))
    except sqlite3.Error:
        return -1


@pytest.mark.walk
def test_a_class_comes_back_after_the_server_is_killed_and_restarted(browser, server, shots):
    url, start, kill, db = server
    teacher = page_of(browser, 1366, 768)
    teacher.goto(url)
    teacher.wait_for_function("() => window.LLMApp && LLMApp.mounted()", timeout=90_000)
    wait_model_loaded(teacher)
    teacher.evaluate("() => { const r = document.querySelector('#step-slider input[type=range]'); r.value = 3;"
                     " r.dispatchEvent(new Event('input', {bubbles: true})); }")
    at_step(teacher, 3)
    teacher.click("#class-start")  # 👩‍🏫 Start a class
    teacher.wait_for_selector("#class-info .class-card[data-code]", timeout=30_000)
    code = teacher.get_attribute("#class-info .class-card", "data-code")
    key = teacher.get_attribute("#class-info .class-card", "data-key")

    a = join(browser, url, code, w=1366, h=768)
    b = join(browser, url, code, w=390, h=844, touch=True, theme="dark")
    for s, who in ((a, "a"), (b, "b")):
        at_step(s, 3)
        send(s, GUESSES[who])
    chart(teacher, "2 of 2 students have guessed")
    deadline = time.time() + 10
    while on_disk(db, code) != 2:  # (written within half a second of the last change)
        assert time.time() < deadline, "the guesses never reached the rooms' file"
        time.sleep(0.2)

    for p in (teacher, a, b):
        p.evaluate("() => { window.__beforeRestart = true; }")
    kill()
    chart(teacher, "not answering", timeout=20_000)
    b.wait_for_function("() => /not answering/.test(document.querySelector('#room-bar .room-status')?.textContent || '')", timeout=20_000)
    teacher.locator("#class-chart").scroll_into_view_if_needed()
    teacher.screenshot(path=str(shots / "i36_persist_teacher_down_1366.png"))
    b.screenshot(path=str(shots / "i36_persist_phone_down_dark_390.png"))

    start()  # the same port, the same rooms' file: a new server (another Gradio app id)
    # a student's page, reloaded, says it is reconnecting (not a blank page) until it is back in the room
    b.wait_for_function("() => window.__beforeRestart !== true && /Reconnecting to class/.test(document.getElementById('room-head')?.textContent"
                        " || '')", timeout=120_000, polling=50)
    for p in (teacher, a, b):  # each page reloads itself once the server answers again
        p.wait_for_function("() => window.__beforeRestart !== true && window.LLMApp && LLMApp.mounted()", timeout=120_000)
    teacher.wait_for_selector(f"#class-info .class-card[data-code='{code}']", timeout=60_000)  # (resumed: the key's hash)
    for p in (teacher, a, b):
        at_step(p, 3)
    for s, who in ((a, "a"), (b, "b")):  # each student's guess back in the box, said sent
        s.wait_for_function("(g) => document.querySelector('#guess-input textarea')?.value === g", arg=GUESSES[who], timeout=30_000)
        s.wait_for_function("() => /Sent/.test(document.querySelector('#room-bar .room-note')?.textContent || '')", timeout=30_000)
    chart(teacher, "2 of 2 students have guessed")
    state = api(url, code)[1]
    assert (state["step"], state["phase"], state["guesses"], state["trace"]) == (3, "guessing", 2, f"{code}-0")
    assert api(url, f"{code}/reveal", {}, key="not-the-key")[0] == 403
    assert key not in db.read_bytes().decode("latin-1")  # (only its hash is kept)

    teacher.click("#class-reveal")
    chart(teacher, "of the room guessed")
    state = api(url, code)[1]
    assert sum(r["count"] for r in state["room"]) == 2
    texts = " ".join(r["text"] for r in state["room"])
    assert all(g in texts for g in GUESSES.values()), state["room"]
    for s in (a, b):
        chart(s, "of the room guessed", where="#room-chart")
    teacher.locator("#class-chart").scroll_into_view_if_needed()
    teacher.screenshot(path=str(shots / "i36_persist_teacher_back_revealed_1366.png"))
    teacher.emulate_media(color_scheme="dark")
    teacher.screenshot(path=str(shots / "i36_persist_teacher_back_revealed_dark_1366.png"))
    a.screenshot(path=str(shots / "i36_persist_student_back_revealed_1366.png"))
    b.screenshot(path=str(shots / "i36_persist_phone_back_revealed_dark_390.png"))
    a.emulate_media(color_scheme="dark")
    a.screenshot(path=str(shots / "i36_persist_student_back_revealed_dark_1366.png"))
    b.emulate_media(color_scheme="light")
    b.screenshot(path=str(shots / "i36_persist_phone_back_revealed_390.png"))
    for p in (teacher, a, b):
        assert not [e for e in p.errors if "Failed to fetch" not in e], p.errors
