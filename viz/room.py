"""The teacher's card of a class room: the code, the join link and its QR code (segno, drawn as SVG), and the
room's controls (assets/room.js drives them: the room's JSON API, ui/rooms_api.py). The teacher's key rides in a
data attribute of this card, on the teacher's page only; the join link never carries it.

The card is projected: what a class must not see before a step's reveal (the lesson's sentences for the teacher,
which give the answers) sits folded in "Notes for the teacher", closed by default and never shown in presenter
view (assets/style.css). In presenter view the controls come first, the code and the join address in the
screen's corner."""
from __future__ import annotations

import html

import segno


def qr_svg(url: str) -> str:
    """The join link as a QR code, an SVG a phone reads from the back of a room (a quiet zone, dark on white)."""
    return segno.make(url, error="m").svg_inline(scale=7, border=3, dark="#111", light="#fff", omitsize=True)  # (a viewBox: the page sizes it)


def spaced(code: str) -> str:
    return " ".join([code[:3], code[3:]])


def lesson_html(steps) -> str:
    """The gallery's lesson (ui/examples.lesson_steps: (title, pipeline.gallery.LessonStep)): each step a button that
    opens it on the teacher's screen (and so the room's); the sentences for the teacher folded away below."""
    if not steps:
        return ""
    items = "".join(
        f"<li><button class='lesson-open' data-pick='{html.escape(f'{x.example}:{x.step}')}'>{html.escape(title)} · step {x.step}</button></li>"
        for title, x in steps)
    notes = "".join(f"<li><b>{html.escape(title)} · step {x.step}.</b> {html.escape(x.say)}</li>" for title, x in steps)
    return (f"<div class='class-lesson'><p class='class-lead'>The lesson: {len(steps)} steps to guess, in this order "
            f"(each opens on every screen)</p><ol id='class-lesson'>{items}</ol>"
            "<details class='lesson-notes'><summary>Notes for the teacher: they give the answers away, so they stay folded "
            f"on a projected screen (and are never shown in presenter view)</summary><ol>{notes}</ol></details></div>")


def _join(code: str, join_url: str, note: str) -> str:
    c, u = html.escape(spaced(code)), html.escape(join_url)
    warn = f"<p class='class-note'>{html.escape(note)}</p>" if note else ""
    return (f"<div class='class-join'><div class='class-qr' aria-label='QR code of the join link'>{qr_svg(join_url)}</div>"
            f"<div class='class-where'><p class='class-lead'>Join the class: scan the code, or open</p>"
            f"<p class='class-url'><a href='{u}' target='_blank' rel='noopener'>{u}</a></p>{warn}"
            f"<p class='class-lead class-code-lead'>Class code</p><p id='class-code' class='class-code'>{c}</p>"
            "<p class='class-qr-row'><button id='class-qr-show' class='class-qr-show'>QR code</button></p></div></div>")


def class_card_html(code: str, key: str, join_url: str, lesson=(), note: str = "") -> str:
    """`note`: a sentence when students' devices cannot open the join link (ui/class_room.py's join_base). The
    controls a round needs (Reveal, Next step, Next in the lesson) and the count of guesses (#class-chart) first."""
    nxt = ("<button id='lesson-next' class='lg secondary' data-n='{n}'>Next in the lesson ›</button> ".format(n=len(lesson))
           if lesson else "")
    return (f"<div class='class-card' data-code='{html.escape(code)}' data-key='{html.escape(key)}'>"
            "<div class='class-run'><p class='class-controls'><button id='class-reveal' class='lg primary'>Reveal</button> "
            f"<button id='class-next' class='lg secondary'>Next step ›</button> {nxt}"
            "<button id='class-close' class='lg secondary'>End the class</button></p>"
            "<p id='lesson-where' class='lesson-where' aria-live='polite'></p>"
            "<div id='class-chart' class='class-chart' aria-live='polite'></div></div>"
            f"{_join(code, join_url, note)}{lesson_html(lesson)}</div>")


def join_box_html() -> str:
    """The start page's "Join a class" box: the code as the teacher's screen shows it (spaces and lower case are
    fine). assets/room.js checks it with the room's API and opens ?room=CODE, or says here why not."""
    return ("<form class='join-form' id='join-form' autocomplete='off'><label for='join-code' class='join-label'>Join a class</label>"
            "<input id='join-code' name='code' type='text' inputmode='text' autocapitalize='characters' spellcheck='false' "
            "maxlength='16' placeholder='ABC DEF' aria-describedby='join-msg'>"
            "<button id='join-go' type='submit'>Join</button></form><p id='join-msg' class='join-msg' role='alert'></p>")


def no_class_html(sentence: str) -> str:
    return f"<div class='class-card class-refused'><p>{html.escape(sentence)}</p></div>"


__all__ = ["qr_svg", "class_card_html", "lesson_html", "join_box_html", "no_class_html"]
