"""The gallery on the page: its traces loaded once and shared by every session, its names for the dropdown, which
trace on screen is a gallery one as opened (a class room and "Copy link" name it), and the lesson's steps.
No Gradio here: ui/links.py opens an example on the page."""
from __future__ import annotations

import weakref

from pipeline import gallery
from pipeline.errors import GalleryError

# Process-wide, shared by every session, no lock (docs/state.md): bounded by the gallery, and by the traces on screen.
_TRACES: dict = {}  # gallery name -> Trace, loaded once and shared by every session: the viewer's bundle is built once per class
_SHOWN: dict = {}  # id(trace) -> (weak reference, gallery name): which trace on screen is a gallery one


def example_choices() -> list[tuple[str, str]]:
    """(title, name) for the dropdown; empty when the gallery cannot be read (said once in the log)."""
    try:
        return [(e.title, e.name) for e in gallery.entries()]
    except GalleryError as e:
        print(f"gallery unavailable: {e}", flush=True)
        return []


def names() -> tuple:
    return tuple(name for _, name in example_choices())


def gallery_trace(name: str):
    if name not in _TRACES:
        _TRACES[name] = gallery.load(name)
    return _TRACES[name]


def remember(trace, name: str) -> None:
    for k in [k for k, (ref, _) in _SHOWN.items() if ref() is None]:
        del _SHOWN[k]
    _SHOWN[id(trace)] = (weakref.ref(trace), name)


def shown_example(trace) -> str | None:
    """The gallery name of `trace` when it is a gallery trace as opened (a generation from it is not)."""
    hit = _SHOWN.get(id(trace))
    return hit[1] if hit and hit[0]() is trace else None


def lesson_steps() -> list[tuple[str, gallery.LessonStep]]:
    """(the example's title, the step) of the gallery's lesson, in order; empty when it cannot be read."""
    try:
        titles = dict((name, title) for title, name in example_choices())
        return [(titles[x.example], x) for x in gallery.lesson()]
    except (GalleryError, KeyError) as e:
        print(f"gallery lesson unavailable: {e}", flush=True)
        return []


def lesson_pick(pick) -> tuple[str, int] | None:
    """The lesson's "NAME:STEP" (assets/room.js writes it) as (a gallery name, a step); None when it is neither."""
    name, _, k = str(pick or "").partition(":")
    return (name, int(k)) if name in names() and k.isdigit() and len(k) < 7 else None


__all__ = ["example_choices", "names", "gallery_trace", "remember", "shown_example", "lesson_steps", "lesson_pick"]
