"""The teacher's card of a class room: the code, the join link and its QR code (segno, drawn as SVG), and the
room's controls (assets/room.js drives them: the room's JSON API, ui/rooms/api.py). The teacher's key rides in a
data attribute of this card, on the teacher's page only; the join link never carries it.

The card is projected: what a class must not see before a step's reveal (the lesson's sentences for the teacher,
which give the answers) sits folded in "Notes for the teacher", closed by default and never shown in presenter
view (assets/style.css). In presenter view the controls come first, the code and the join address in the
screen's corner. Its words are the catalogue's (room.*: locales/en.json, viz.text)."""
from __future__ import annotations

import html

import segno

from viz.text import t_html


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
    named = [(t_html("room.lesson_item", title=html.escape(title), step=x.step), x) for title, x in steps]
    items = "".join(f"<li><button class='lesson-open' data-pick='{html.escape(f'{x.example}:{x.step}')}'>{name}</button></li>"
                    for name, x in named)
    notes = "".join(f"<li><b>{name}.</b> {html.escape(x.say)}</li>" for name, x in named)
    return (f"<div class='class-lesson'><p class='class-lead'>{t_html('room.lesson_lead', n=len(steps))}</p><ol id='class-lesson'>{items}</ol>"
            f"<details class='lesson-notes'><summary>{t_html('room.notes_summary')}</summary><ol>{notes}</ol></details></div>")


def _join(code: str, join_url: str, note: str) -> str:
    c, u = html.escape(spaced(code)), html.escape(join_url)
    warn = f"<p class='class-note'>{html.escape(note)}</p>" if note else ""
    label = html.escape(t_html("room.qr_label"), quote=True)
    return (f"<div class='class-join'><div class='class-qr' aria-label='{label}'>{qr_svg(join_url)}</div>"
            f"<div class='class-where'><p class='class-lead'>{t_html('room.join_lead')}</p>"
            f"<p class='class-url'><a href='{u}' target='_blank' rel='noopener'>{u}</a></p>{warn}"
            f"<p class='class-lead class-code-lead'>{t_html('room.code_lead')}</p><p id='class-code' class='class-code'>{c}</p>"
            f"<p class='class-qr-row'><button id='class-qr-show' class='class-qr-show'>{t_html('room.qr_button')}</button></p></div></div>")


def tools_html() -> str:
    """The teacher's tools under the room's chart (assets/room_tools.js): the projector's options (rude words in the
    answers: ui/rooms/profanity.py's modes; shares only), Round summary (the round's summary card) and Download results
    (the CSV: ui/rooms/results.py). Under the chart: the round's controls keep the projector's first screen."""
    modes = "".join(f"<option value='{m}'>{name}</option>" for m, name in
                    (("replace", t_html("room.options_replace")), ("hide", t_html("room.options_hide")), ("off", t_html("room.options_off"))))
    return ("<div class='class-tools'>"
            f"<p class='class-tools-title'>{t_html('room.options_title')}</p><p class='class-options'>"
            f"<label for='class-profanity'>{t_html('room.options_profanity')}</label> <select id='class-profanity'>{modes}</select> "
            f"<label class='class-check'><input type='checkbox' id='class-hide-counts'> {t_html('room.options_hide_counts')}</label> "
            f"<button id='class-summary-show' class='lg secondary'>{t_html('room.score_summary_button')}</button> "
            f"<button id='class-download' class='lg secondary'>{t_html('room.csv_button')}</button></p>"
            "<p id='class-tools-msg' class='class-tools-msg' role='alert'></p></div>")


def class_card_html(code: str, key: str, join_url: str, lesson=(), note: str = "") -> str:
    """`note`: a sentence when students' devices cannot open the join link (ui/class_room.py's join_base). The
    controls a round needs (Reveal, Next step, Next in the lesson) and the count of guesses (#class-chart) first; the
    running score in one line above it; the round's summary card (#class-summary: in the chart's place, on the projector
    over the distribution's half of the screen) while it is open; the teacher's tools under the chart
    (assets/room_tools.js)."""
    nxt = f"<button id='lesson-next' class='lg secondary' data-n='{len(lesson)}'>{t_html('room.lesson_next')}</button> " if lesson else ""
    return (f"<div class='class-card' data-code='{html.escape(code)}' data-key='{html.escape(key)}'>"
            f"<div class='class-run'><p class='class-controls'><button id='class-reveal' class='lg primary'>{t_html('room.reveal')}</button> "
            f"<button id='class-next' class='lg secondary'>{t_html('room.next_step')}</button> {nxt}"
            f"<button id='class-close' class='lg secondary'>{t_html('room.close')}</button></p>"
            "<p id='lesson-where' class='lesson-where' aria-live='polite'></p>"
            "<p id='class-score' class='class-score' aria-live='polite'></p>"
            "<div id='class-summary' class='class-summary' aria-live='polite' hidden></div>"
            f"<div id='class-chart' class='class-chart' aria-live='polite'></div>{tools_html()}</div>"
            f"{_join(code, join_url, note)}{lesson_html(lesson)}</div>")


def join_box_html() -> str:
    """The start page's "Join a class" box: the code as the teacher's screen shows it (spaces and lower case are
    fine). assets/room.js checks it with the room's API and opens ?room=CODE, or says here why not."""
    return ("<form class='join-form' id='join-form' autocomplete='off'>"
            f"<label for='join-code' class='join-label'>{t_html('room.join_label')}</label>"
            "<input id='join-code' name='code' type='text' inputmode='text' autocapitalize='characters' spellcheck='false' "
            "maxlength='16' placeholder='ABC DEF' aria-describedby='join-msg'>"
            f"<button id='join-go' type='submit'>{t_html('room.join_button')}</button></form><p id='join-msg' class='join-msg' role='alert'></p>")


def no_class_html(sentence: str) -> str:
    return f"<div class='class-card class-refused'><p>{html.escape(sentence)}</p></div>"


__all__ = ["qr_svg", "class_card_html", "tools_html", "lesson_html", "join_box_html", "no_class_html"]
