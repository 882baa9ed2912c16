"""The page's side of a class room (the rooms themselves: ui/rooms/rooms.py; their JSON API: ui/rooms/api.py).

The teacher's "Start a class" makes a room of the trace and step on their screen; the session keeps the room's
code and key (so a new trace on the teacher's screen becomes the room's: sync); the teacher's browser tab keeps them too,
so that a reloaded teacher's page gets its room back (resume). A student's page opened with
`?room=CODE` asks to join (assets/room.js writes the code into a hidden box): the room's trace comes onto their
page as a loaded trace does; from then on their page follows the room's step by polling the API.
"""
from __future__ import annotations

import json

import gradio as gr

from pipeline.indices import clamp_index
from ui import examples, network
from ui.rooms.rooms import ROOMS, RoomError
from viz import room as room_viz
from viz.text import DEFAULT, language


def start_class(address, trace, step, room):
    """A room of the trace on screen, at the step on screen (a room this session had is ended first)."""
    if room:
        try:
            ROOMS.close(room["code"], room["key"])
        except RoomError:
            pass
    try:
        r = ROOMS.create(trace, clamp_index(step, len(trace.steps)) if trace is not None and trace.steps else 0,
                         example=examples.shown_example(trace) if trace is not None else None)
    except RoomError as e:
        return room_viz.no_class_html(str(e)), None
    return _card(address, r), {"code": r.code, "key": r.key}


def join_base(address) -> tuple[str, str]:
    """(the join link's base, a sentence when students cannot open it): ui/network.py, as Copy link writes it."""
    base, note, _ = network.shareable_base(address)
    return base, note


def join_link(base: str, code: str) -> str:
    """The class's join link (and its QR code): ?room=CODE, and the teacher's language when it is not English as a hint
    (`hl`): each student's page opens in its browser's own language (a Portuguese phone in a German class:
    Portuguese), and in the teacher's where the page does not speak the browser's (assets/language.js)."""
    lang = language()
    return f"{base}?room={code}" + (f"&hl={lang}" if lang != DEFAULT else "")


def _card(address, r, key: str | None = None) -> str:
    base, note = join_base(address)
    return room_viz.class_card_html(r.code, key or r.key, join_link(base, r.code), examples.lesson_steps(), note=note)


def resume_class(saved, address):
    """A teacher's page reloaded: the room it had (its code and key, kept by the browser tab: assets/room.js) when the
    key is the room's and the room is open: (the room, its card, the session's room). None: nothing to resume."""
    try:
        d = json.loads(str(saved or "")[:500])
        key = str(d["key"])[:100]
        r = ROOMS.teacher(str(d["code"]).upper()[:12], key)
    except (ValueError, KeyError, TypeError, RoomError):
        return None
    if r.closed or r.trace is None or not r.trace.steps:
        return None
    # (the key the page kept, checked against the room's hash: a room taken back after a restart knows no other)
    return r, _card(address, r, key), {"code": r.code, "key": key}


def sync_class(room, trace, step):
    """The teacher's screen shows another trace (a new generation, an example, a file): it is the room's now."""
    if not room or trace is None or not trace.steps:
        return
    try:
        ROOMS.set_trace(room["code"], room["key"], trace, clamp_index(step, len(trace.steps)), example=examples.shown_example(trace))
    except RoomError as e:
        gr.Warning(str(e))


def join_trace(code):
    """The trace of room `code` for a student's page (None, said in a warning, when there is none)."""
    try:
        r = ROOMS.seen(str(code or "").strip().upper()[:12], None)
    except RoomError as e:
        gr.Warning(str(e))
        return None
    return r.trace


__all__ = ["start_class", "sync_class", "join_trace", "resume_class", "join_link"]
