"""The teacher's card of a class room: the code, the join link and its QR code (segno, drawn as SVG), and the
room's controls (assets/room.js drives them: the room's JSON API, ui/rooms_api.py). The teacher's key rides in a
data attribute of this card, on the teacher's page only; the join link never carries it."""
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
    opens it on the teacher's screen (and so the room's), with its sentence for the teacher; "Next in the lesson"."""
    if not steps:
        return ""
    items = "".join(
        f"<li><button class='lesson-open' data-pick='{html.escape(f'{x.example}:{x.step}')}'>{html.escape(title)} · step {x.step}</button>"
        f"<span class='lesson-say'>{html.escape(x.say)}</span></li>" for title, x in steps)
    return (f"<div class='class-lesson'><p class='class-lead'>A lesson: {len(steps)} steps to guess, in this order "
            f"(each opens on every screen)</p><ol id='class-lesson'>{items}</ol>"
            "<p><button id='lesson-next' class='lg secondary'>Next in the lesson ›</button></p></div>")


def class_card_html(code: str, key: str, join_url: str, lesson=(), note: str = "") -> str:
    """`note`: a sentence when students' devices cannot open the join link (ui/class_room.py's join_base)."""
    c, u = html.escape(code), html.escape(join_url)
    warn = f"<p class='class-note'>{html.escape(note)}</p>" if note else ""
    return (f"<div class='class-card' data-code='{c}' data-key='{html.escape(key)}'>"
            f"<div class='class-qr' aria-label='QR code of the join link'>{qr_svg(join_url)}</div>"
            f"<div class='class-join'><p class='class-lead'>Join the class: scan the code, or open</p>"
            f"<p class='class-url'><a href='{u}' target='_blank' rel='noopener'>{u}</a></p>{warn}"
            f"<p class='class-lead'>Class code</p><p id='class-code' class='class-code'>{html.escape(spaced(code))}</p>"
            "<p class='class-controls'><button id='class-reveal' class='lg primary'>Reveal</button> "
            "<button id='class-next' class='lg secondary'>Next step ›</button> "
            "<button id='class-close' class='lg secondary'>End the class</button></p></div>"
            f"<div id='class-chart' class='class-chart' aria-live='polite'></div>{lesson_html(lesson)}</div>")


def no_class_html(sentence: str) -> str:
    return f"<div class='class-card class-refused'><p>{html.escape(sentence)}</p></div>"


__all__ = ["qr_svg", "class_card_html", "lesson_html", "no_class_html"]
