"""A student's guess in a class room, rated once: when it is sent (its first token, probability and rank: the room's
answers and scores) and, after the reveal, the whole rating the student's page shows (pipeline.guess.rate, with the
verdict the room's: right in any spelling or capitals, ui/rooms/scores.py), made once per text at a step from the
logits the room computed when the step opened. The page never rates it again (assets/room_tools.js asks for it)."""
from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from dataclasses import dataclass

from pipeline import guess as guessing
from ui.rooms import profanity as room_filter
from ui.rooms import scores as room_scores
from ui.rooms.errors import RoomError, refused_guess
from viz.style import visible


@dataclass
class Guess:
    text: str
    token_id: int | None  # the first token as the model would write the guess (the room's answers are grouped by it)
    piece: str
    ids: tuple = ()  # the first token of each spelling ("mat", " mat"): right when the real token is one (ui/rooms/scores.py)
    prob: float | None = None  # the model's temperature-1 probability of token_id at the step (whole vocabulary)
    rank: int | None = None  # its rank there (1: the model's most likely)
    step: int = 0
    case_ids: tuple = ()  # the first tokens of its spellings in other capitals only: right too (ui/rooms/scores.py)
    lang: str = ""  # the language of the page that sent it: its rude words are masked too (ui/rooms/profanity.py)


def probs_of(dist: Future):
    """The step's temperature-1 distribution from its Future (pipeline.guess.step_dist), None when not computable."""
    got = dist.result()
    return None if got is None else got[1]


def rated(lm, step, dist: Future, text: str, locales=()) -> Guess:
    """The guess's first token as the model writes it, in the step's distribution (waited for, when the guess came
    before its forward pass ended)."""
    try:
        text = guessing.clean(text)
    except guessing.GuessError as e:
        raise RoomError(400, refused_guess(text, e)) from None
    probs = probs_of(dist)
    tid, piece = guessing.first_token(lm, step, text, probs)
    room_filter.warm(text, piece, visible(piece), locales=locales)  # (checked here, outside the lock: the reveal's filter finds it known)
    ids, prob, rank, case_ids = room_scores.guess_numbers(lm, step, text, tid, probs)
    return Guess(text, tid, piece, ids, prob, rank, case_ids=case_ids)


def page_rating(lm, trace, s: int, g: Guess, dist: Future) -> guessing.GuessRating:
    """The student's guess `g` at step `s` as the page shows a rating (pipeline.guess.rate, in the logits the room
    holds: no forward pass for the step, one for a guess of several tokens), its verdict the room's."""
    got = dist.result()
    r = guessing.rate(lm, trace, s, g.text, logits=None if got is None else got[0])
    return dataclasses.replace(r, chosen=room_scores.is_right(g, trace.steps[s].token_id))
