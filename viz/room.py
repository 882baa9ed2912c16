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


def class_card_html(code: str, key: str, join_url: str) -> str:
    c, u = html.escape(code), html.escape(join_url)
    return (f"<div class='class-card' data-code='{c}' data-key='{html.escape(key)}'>"
            f"<div class='class-qr' aria-label='QR code of the join link'>{qr_svg(join_url)}</div>"
            f"<div class='class-join'><p class='class-lead'>Join the class: scan the code, or open</p>"
            f"<p class='class-url'><a href='{u}' target='_blank' rel='noopener'>{u}</a></p>"
            f"<p class='class-lead'>Class code</p><p id='class-code' class='class-code'>{html.escape(spaced(code))}</p>"
            "<p class='class-controls'><button id='class-reveal' class='lg primary'>Reveal</button> "
            "<button id='class-next' class='lg secondary'>Next step ›</button> "
            "<button id='class-close' class='lg secondary'>End the class</button></p></div>"
            "<div id='class-chart' class='class-chart' aria-live='polite'></div></div>")


def no_class_html(sentence: str) -> str:
    return f"<div class='class-card class-refused'><p>{html.escape(sentence)}</p></div>"


__all__ = ["qr_svg", "class_card_html", "no_class_html"]
