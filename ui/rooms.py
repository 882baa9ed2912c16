"""A class as one room: a teacher's page and its students' pages on the same trace and step, guessing together.

Rooms live in this server's memory (one machine, one Space replica; docs/rooms.md says how several replicas
would share them). A room has a short code (the join link's `room=`), a secret key only the teacher's page holds,
the trace on the teacher's screen, the step, and the phase: "guessing" (students send guesses; each may change
theirs until the reveal) or "revealed" (the room's answers, grouped by the model's first token of each guess,
beside the model's top candidates). Every change bumps the room's version: a page polls with it (an ETag), an
unchanged room costs nothing. The step's distribution over the whole vocabulary (a forward pass for a trace that did
not keep its logits) is computed when the step opens, and the next step's after it, on the model's own thread: a guess
never waits for it unless it comes before that pass ends. Errors are RoomError: an HTTP status and one sentence.
"""
from __future__ import annotations

import os
import secrets
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from pipeline import guess as guessing
from pipeline.records import Trace
from ui.messages import sentence
from ui.model import same_model
from viz.fmt import pct
from viz.style import visible

CODE_LETTERS = "ACDEFGHJKMNPQRTUVWXY34679"  # no 0/O, 1/I/L, 2/Z, 5/S, 8/B: read off a projector without doubt
CODE_LEN = 6
MAX_ROOMS = int(os.environ.get("LLM_VIZ_MAX_ROOMS", 50))
MAX_STUDENTS = int(os.environ.get("LLM_VIZ_MAX_STUDENTS", 500))
IDLE_S = 3 * 3600  # a room ends after this long without the teacher's page
PRESENT_S = 30  # a student counts as present while their page has asked within this long
GUESS_GAP_S = 0.5  # a student's guesses at most this often
TOP = 10  # the model's candidates shown beside the room's answers
# the rooms' forward passes, one at a time; process-wide, like ROOMS at the end of this file (docs/state.md)
MODEL_THREAD = ThreadPoolExecutor(1, thread_name_prefix="rooms-model")


class RoomError(Exception):
    def __init__(self, status: int, sentence: str):
        super().__init__(sentence)
        self.status = status


@dataclass
class Guess:
    text: str
    token_id: int | None
    piece: str


@dataclass
class Room:
    code: str
    key: str
    trace: Trace
    example: str | None  # the gallery trace's name, when the trace is one
    step: int
    phase: str = "guessing"
    version: int = 1
    closed: bool = False
    teacher_seen: float = field(default_factory=time.monotonic)
    students: dict = field(default_factory=dict)  # id -> when last seen
    last_guess: dict = field(default_factory=dict)  # id -> when they last guessed
    guesses: dict = field(default_factory=dict)  # step -> {student id: Guess}
    hidden: dict = field(default_factory=dict)  # step -> set of token ids (or texts) the teacher hid
    trace_n: int = 0  # which of the room's traces `trace` is (pages re-join when it changes; the distribution's key)
    # (trace_n, step) -> (the model it was asked of, the Future of the step's distribution: pipeline.guess.step_probs),
    # for the step on screen and the next
    probs: dict = field(default_factory=dict)

    def bump(self):
        self.version += 1


class Rooms:
    """Every open room, behind one lock (a room's work is a few dictionary updates; a guess's rating is one
    lookup in the step's distribution, computed once per step)."""

    def __init__(self, model_of=lambda trace: None, clock=time.monotonic):
        self.rooms: dict[str, Room] = {}
        self.lock = threading.Lock()
        self.model_of = model_of  # the loaded model when it made `trace` (ui/model.py's same_model)
        self.clock = clock

    # -- the teacher ------------------------------------------------------------------------------------
    def create(self, trace: Trace | None, step: int, example: str | None = None) -> Room:
        if trace is None or not trace.steps:
            raise RoomError(400, "There is no text on the page to guess in: pick an example or generate some first.")
        with self.lock:
            self._expire()
            if len([r for r in self.rooms.values() if not r.closed]) >= MAX_ROOMS:
                raise RoomError(429, f"This server has {MAX_ROOMS} open classes, its most: try again later.")
            code = self._new_code()
            room = Room(code, secrets.token_urlsafe(18), trace, example, self._step(trace, step), teacher_seen=self.clock())
            self.rooms[code] = room
            self._warm(room)
            return room

    def teacher(self, code: str, key: str | None) -> Room:
        room = self._open(code)
        if not key or not secrets.compare_digest(str(key), room.key):
            raise RoomError(403, "Only the teacher's page can do that.")
        room.teacher_seen = self.clock()
        return room

    def set_trace(self, code: str, key: str, trace: Trace, step: int, example: str | None = None):
        """The teacher's screen shows `trace` at `step`: the room's trace from now on (its guesses gone). The room's own
        trace again (a reloaded teacher's page, another step of the same gallery trace) only moves the step."""
        with self.lock:
            room = self.teacher(code, key)
            if trace is room.trace:
                self._move(room, step)
                return
            room.trace, room.example, room.step, room.phase = trace, example, self._step(trace, step), "guessing"
            room.guesses, room.hidden, room.probs = {}, {}, {}
            room.trace_n += 1
            room.bump()
            self._warm(room)

    def move(self, code: str, key: str, step) -> Room:
        with self.lock:
            return self._move(self.teacher(code, key), step)

    def _move(self, room: Room, step) -> Room:
        s = self._step(room.trace, step)
        if s != room.step:
            room.step, room.phase = s, "guessing"
            room.bump()
        self._warm(room)
        return room

    def reveal(self, code: str, key: str) -> Room:
        with self.lock:
            room = self.teacher(code, key)
            if room.phase != "revealed":
                room.phase = "revealed"
                room.bump()
            return room

    def hide(self, code: str, key: str, token_id=None, text=None) -> Room:
        with self.lock:
            room = self.teacher(code, key)
            room.hidden.setdefault(room.step, set()).add(int(token_id) if token_id is not None else str(text))
            room.bump()
            return room

    def close(self, code: str, key: str) -> Room:
        with self.lock:
            room = self.teacher(code, key)
            room.closed = True
            room.guesses, room.probs, room.students, room.last_guess = {}, {}, {}, {}  # (kept a while to say "ended": only that)
            room.bump()
            return room

    # -- the students ------------------------------------------------------------------------------------
    def seen(self, code: str, student: str | None, key: str | None = None) -> Room:
        """A page asked for the room's state (a student's, with their id: they count as present; the teacher's, with
        the key: the teacher is still there). A room idle too long ends here, its version bumped so pages hear it."""
        with self.lock:
            room = self.rooms.get(str(code).upper())
            if room is None:
                raise RoomError(404, "There is no class with that code: check the code on the teacher's screen.")
            if key and not room.closed and secrets.compare_digest(str(key), room.key) and not self._idle(room):
                room.teacher_seen = self.clock()
            if not room.closed and self._idle(room):
                room.closed = True
                room.bump()
            if room.closed:
                return room
            if student:
                self._present(room, _student(student))
            return room

    def guess(self, code: str, student, text) -> Guess:
        """A student's guess at the room's step: rated outside the lock (in the step's distribution, computed when the
        step opened: a guess sent before that pass ends waits for it), kept as their one live guess for the step."""
        sid = _student(student)
        if not isinstance(text, str):
            raise RoomError(400, "A guess is text: type a word or a few.")
        with self.lock:
            room = self._open(code)
            trace, s = room.trace, room.step
            lm, probs = self._warm(room)
        g = self._rated(lm, trace.steps[s], probs, text)
        with self.lock:
            room = self._open(code)
            if room.trace is not trace or room.step != s:
                raise RoomError(409, "The teacher has moved on: send your guess for the new step.")
            if room.phase == "revealed":
                raise RoomError(409, "The teacher has revealed this step: wait for the next one.")
            now = self.clock()
            if now - room.last_guess.get(sid, -1e9) < GUESS_GAP_S:
                raise RoomError(429, "One guess at a time: wait a moment and send it again.")
            self._present(room, sid)
            room.last_guess[sid] = now
            room.guesses.setdefault(s, {})[sid] = g  # one live guess per student per step
            room.bump()
            return g

    # -- what a page sees ---------------------------------------------------------------------------------
    def state(self, room: Room) -> dict:
        with self.lock:
            now = self.clock()
            out = {"code": room.code, "version": room.version, "step": room.step, "phase": room.phase,
                   "closed": room.closed or self._idle(room), "trace": f"{room.code}-{room.trace_n}", "example": room.example,
                   "n_steps": len(room.trace.steps),
                   "students": sum(1 for t in room.students.values() if now - t < PRESENT_S),
                   "guesses": len(room.guesses.get(room.step, {}))}
            if room.phase == "revealed":
                out.update(self._revealed(room))
            return out

    def _revealed(self, room: Room) -> dict:
        step = room.trace.steps[room.step]
        room_rows = _answers(room.guesses.get(room.step, {}).values(), room.hidden.get(room.step, set()))
        model = [{"token_id": int(step.top_ids[k]), "piece": str(step.top_pieces[k]), "label": visible(str(step.top_pieces[k])),
                  "prob": float(step.top_probs[k]), "pct": pct(step.top_probs[k])} for k in range(min(TOP, len(step.top_ids)))]
        n = sum(r["count"] for r in room_rows)
        top_share = sum(r["count"] for r in room_rows if r["token_id"] == model[0]["token_id"]) / n if n else 0.0
        got = room.probs.get((room.trace_n, room.step))
        probs = got[1].result() if got and got[1].done() and not got[1].exception() else None
        favourites = [dict(r, **self._model_prob(step, probs, r["token_id"])) for r in room_rows if r["count"] == room_rows[0]["count"]]
        return {"room": room_rows, "model": model, "sampled": {"token_id": step.token_id, "piece": step.piece, "label": visible(step.piece)},
                "top_share": top_share, "favourites": favourites, "favourite_prob": favourites[0]["prob"] if favourites else None}

    @staticmethod
    def _model_prob(step, probs, tid) -> dict:
        """The model's temperature-1 probability of a token (over the whole vocabulary; without it, the kept candidates':
        outside them, only the bound, said so) and as the page writes it."""
        if tid is not None and probs is not None:
            p = float(probs[tid])
        else:
            p = next((float(q) for t, q in zip(step.top_ids, step.top_probs) if int(t) == tid), None)
        if p is None:
            return {"prob": None, "pct": f"less than {pct(step.top_probs[-1])}"}
        return {"prob": p, "pct": pct(p)}

    # -- helpers ------------------------------------------------------------------------------------------
    def _warm(self, room: Room) -> tuple:
        """(The model, the Future of the step's distribution) for the room's step: asked for the moment the step opens
        (a room made, the teacher's step or trace), and the next step's after it (the teacher's likely Next, ready
        before it comes), so that the forward pass each may need is done before the guesses come. On one thread of its
        own, the model's lock taken inside (pipeline.guess): run on whichever of the server's worker threads, each
        forward pass left that thread's own memory arena behind, 10 MB a step. Kept for those two steps only; asked
        again when it failed, or when the model has loaded since."""
        trace, lm = room.trace, self.model_of(room.trace)
        keys = [(room.trace_n, s) for s in (room.step, room.step + 1) if s < len(trace.steps)]
        kept = {k: v for k, v in room.probs.items() if k in keys and v[0] is lm and not (v[1].done() and v[1].exception() is not None)}
        for k in keys:  # (the step on screen first: the one thread takes them in order)
            if k not in kept:
                kept[k] = (lm, MODEL_THREAD.submit(guessing.step_probs, lm, trace, trace.steps[k[1]]))
        room.probs = kept
        return kept[keys[0]]

    @staticmethod
    def _rated(lm, step, probs: Future, text: str) -> Guess:
        """The guess's first token as the model writes it, in the step's distribution (waited for, when the guess came
        before its forward pass ended)."""
        try:
            text = guessing.clean(text)
        except guessing.GuessError as e:
            raise RoomError(400, sentence(e)) from None
        tid, piece = guessing.first_token(lm, step, text, probs.result())
        return Guess(text, tid, piece)

    def _open(self, code: str) -> Room:
        room = self.rooms.get(str(code).upper())
        if room is None:
            raise RoomError(404, "There is no class with that code: check the code on the teacher's screen.")
        if room.closed or self._idle(room):
            raise RoomError(410, "This class has ended.")
        return room

    def _present(self, room: Room, sid: str):
        """`sid` is present now. The limit counts the students present (those gone are forgotten, so ids made up by the
        thousand cannot fill a room for good)."""
        now = self.clock()
        was = now - room.students.get(sid, -1e9) < PRESENT_S
        if not was:
            room.students = {k: t for k, t in room.students.items() if now - t < PRESENT_S}
            room.last_guess = {k: t for k, t in room.last_guess.items() if now - t < GUESS_GAP_S}
            if len(room.students) >= MAX_STUDENTS:
                raise RoomError(429, f"This class is full ({MAX_STUDENTS} students).")
        room.students[sid] = now
        if not was:  # one more student present: the count on the teacher's screen changes
            room.bump()

    def _idle(self, room: Room) -> bool:
        return self.clock() - room.teacher_seen > IDLE_S

    def _expire(self):
        for code in [c for c, r in self.rooms.items() if (r.closed or self._idle(r)) and self.clock() - r.teacher_seen > IDLE_S + 3600]:
            del self.rooms[code]

    def _new_code(self) -> str:
        while True:
            code = "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LEN))
            if code not in self.rooms:
                return code

    @staticmethod
    def _step(trace: Trace, step) -> int:
        try:
            s = int(step)
        except (TypeError, ValueError, OverflowError):
            raise RoomError(400, "A step is a whole number.") from None
        if not 0 <= s < len(trace.steps):
            raise RoomError(400, f"This text has steps 0 to {len(trace.steps) - 1}.")
        return s


def _answers(guesses, hidden: set) -> list[dict]:
    """The room's answers, most guessed first: guesses grouped by the model's first token ("mat" and " mat" one
    answer when the model writes " mat"), or by what was typed when that token is only bytes of a character (🌪 and
    💩 both begin with the bytes "·<0xF0><0x9F>": two answers), or had no token (no tokenizer, not a kept candidate).
    The most common spelling names an answer; a guess the teacher hid (its token, or its text) is left out."""
    texts = {str(h).strip() for h in hidden if isinstance(h, str)}
    groups: dict = {}
    for g in guesses:
        by_text = g.token_id is None or guessing.ends_in_bytes(g.piece)
        if g.text.strip() in texts or (not by_text and g.token_id in hidden):
            continue
        groups.setdefault(("text", g.text.strip()) if by_text else g.token_id, []).append(g)
    rows = [{"text": Counter(g.text for g in gs).most_common(1)[0][0], "token_id": gs[0].token_id, "piece": gs[0].piece,
             "label": visible(gs[0].piece), "by_text": isinstance(k, tuple), "count": len(gs)}
            for k, gs in groups.items()]
    return sorted(rows, key=lambda r: -r["count"])


def _student(sid) -> str:
    if not isinstance(sid, str) or not 1 <= len(sid) <= 64 or not sid.replace("-", "").replace("_", "").isalnum():
        raise RoomError(400, "A student id is 1 to 64 letters, digits, - or _.")
    return sid


# Process-wide (docs/state.md): every class room of this server, read and written by the page (ui/class_room.py) and
# the JSON API (ui/rooms_api.py), behind ROOMS.lock. At most MAX_ROOMS open; an ended or idle one is forgotten (at the
# next create) once its teacher's page has been gone IDLE_S + 1 h.
ROOMS = Rooms(model_of=same_model)

__all__ = ["ROOMS", "Rooms", "Room", "RoomError", "Guess", "CODE_LETTERS", "MAX_ROOMS", "MAX_STUDENTS"]
