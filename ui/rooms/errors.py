"""A class room's refusals (ui/rooms/rooms.py): an HTTP status and one sentence, written in the language spoken where the
refusal is read (viz.text: the page that asked, ui/rooms/api.py)."""
from __future__ import annotations

from pipeline import guess as guessing
from pipeline.guess import MAX_GUESS_CHARS
from ui.messages import sentence
from viz.text import t, thousands


class RoomError(Exception):
    """An HTTP status and one sentence: a str, or a function that writes it, called when the error is read (str(e)), in
    the language spoken there (a class's poll learns its page's language only when it is refused: ui/rooms/api.py)."""

    def __init__(self, status: int, sentence):
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence

    def __str__(self) -> str:
        return str(self.sentence() if callable(self.sentence) else self.sentence)


def refused_guess(text, e: guessing.GuessError):
    """Why a guess is refused, as the page says it (the catalogue's, as the page's own guess box says it:
    assets/viewer_guess.js); another refusal (not text: no page sends one) as pipeline/guess.py says it."""
    if isinstance(text, str) and not text.strip():
        return lambda: t("error.guess_empty")
    if isinstance(text, str) and len(text.strip("\r\n")) > MAX_GUESS_CHARS:
        return lambda: t("error.guess_too_long", n=thousands(MAX_GUESS_CHARS))
    return sentence(e)
