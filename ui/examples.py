"""The gallery on the page: its traces loaded once and shared by every session, its names for the dropdown, which
trace on screen is a gallery one as opened (a class room and "Copy link" name it), and the lesson's steps.
No Gradio here: ui/links.py opens an example on the page."""
from __future__ import annotations

import weakref

from dataclasses import dataclass, replace

from pipeline import gallery, passages
from pipeline.errors import GalleryError
from ui.model import loaded
from viz.text import DEFAULT, catalogue, t

# Process-wide, shared by every session, no lock (docs/state.md): bounded by the gallery, and by the traces on screen.
_TRACES: dict = {}  # gallery name -> Trace, loaded once and shared by every session: the viewer's bundle is built once per class
_SHOWN: dict = {}  # id(trace) -> (weak reference, gallery name): which trace on screen is a gallery one


@dataclass(frozen=True)
class Shown:
    """What the page says of an example as it opens it: its title, what to look at, the step it opens at."""
    title: str
    look: str
    step: int


def words(area: str, name: str, part: str, english: str) -> str:
    """An example's title or "what to look at" in the language spoken: the catalogue's `gallery.<name>.<part>` or
    `passage.<name>.title` (a name's "-" written "_"), while its English there is the manifest's own (a gallery made
    again since, with other numbers, reads in English until its sentences are translated again)."""
    return said(f"{area}.{name.replace('-', '_')}.{part}", english)


def said(key: str, english: str) -> str:
    """The catalogue's sentence `key` in the language spoken, while its English is `english` (else `english`)."""
    return t(key) if catalogue(DEFAULT).get(key) == english else english


def example_choices() -> list[tuple[str, str]]:
    """(title, name) for the dropdown: the gallery's traces, then the real-text passages (pipeline/passages.py); a part
    that cannot be read is left out (said once in the log)."""
    out = []
    for what, read in (("gallery", lambda: [(words("gallery", e.name, "title", e.title), e.name) for e in gallery.entries()]),
                       ("passages", lambda: [(words("passage", p.name, "title", p.title), p.name) for p in passages.entries()])):
        try:
            out += read()
        except GalleryError as e:
            print(f"{what} unavailable: {e}", flush=True)
    return out


def is_passage(name) -> bool:
    try:
        return isinstance(name, str) and name in passages.names()
    except GalleryError:
        return False


def entry(name: str) -> Shown:
    """The gallery entry or passage `name` as the page introduces it (GalleryError: neither)."""
    if is_passage(name):
        p = passages.get(name)
        return Shown(words("passage", p.name, "title", p.title), t("note.passage_look", source=p.source, licence=p.licence), 0)
    e = gallery.entry(name)
    return Shown(words("gallery", e.name, "title", e.title), words("gallery", e.name, "look", e.look), e.step)


def names() -> tuple:
    return tuple(name for _, name in example_choices())


def _wait_for_model(timeout: float = 120.0):
    """The model once it has loaded (a link to a passage opened while it loads waits for it), or None."""
    from ui import model

    if model.HOLDER is not None and model.HOLDER.ready.wait(timeout):
        return loaded()
    return None


def gallery_trace(name: str):
    """The gallery's trace `name`, or the passage `name` as the loaded model reads it (computed once per model:
    one captured forward pass)."""
    if is_passage(name):
        lm = loaded() or _wait_for_model()
        if lm is None:
            raise GalleryError(t("error.passage_no_model"))
        key = (name, lm.info.id)
        if key not in _TRACES:  # (the captured pass takes the model's lock itself)
            _TRACES[key] = passages.trace(lm, name)
        return _TRACES[key]
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
        # (each step's sentence for the teacher: the catalogue's lesson.step_<i>, in the language spoken)
        return [(titles[x.example], replace(x, say=said(f"lesson.step_{i}", x.say))) for i, x in enumerate(gallery.lesson())]
    except (GalleryError, KeyError) as e:
        print(f"gallery lesson unavailable: {e}", flush=True)
        return []


def lesson_pick(pick) -> tuple[str, int] | None:
    """The lesson's "NAME:STEP" (assets/room.js writes it) as (a gallery name, a step); None when it is neither."""
    name, _, k = str(pick or "").partition(":")
    return (name, int(k)) if name in names() and k.isdigit() and len(k) < 7 else None


__all__ = ["example_choices", "names", "gallery_trace", "remember", "shown_example", "lesson_steps", "lesson_pick"]
