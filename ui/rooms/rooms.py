"""A class as one room: a teacher's page and its students' pages on the same trace and step, guessing together.

Rooms live in this server's memory (one machine, one Space replica; docs/rooms.md says how several replicas
would share them). A room has a short code (the join link's `room=`), a secret key only the teacher's page holds,
the trace on the teacher's screen, the step, and the phase: "guessing" (students send guesses; each may change
theirs until the reveal) or "revealed" (the room's answers, grouped by the model's first token of each guess,
beside the model's top candidates). Every change bumps the room's version: a page polls with it (an ETag), an
unchanged room costs nothing. The step's distribution over the whole vocabulary (a forward pass for a trace that did
not keep its logits) is computed when the step opens, and the next step's after it, on the model's own thread: a guess
never waits for it unless it comes before that pass ends. Errors are RoomError: an HTTP status and one sentence,
written in the language spoken where it is read (viz.text: a refusal the page shows, in the page's language).
"""
from __future__ import annotations

import hashlib
import os
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pipeline import guess as guessing
from pipeline.trace.records import Trace
from ui.rooms import profanity as room_filter
from ui.rooms import ratings as room_ratings
from ui.rooms import results as room_results
from ui.rooms import scores as room_scores
from ui.rooms.errors import RoomError
from ui.rooms.ratings import Guess
from ui.examples import is_passage
from ui.model import same_model
from viz.text import DEFAULT, language, t, thousands

CODE_LETTERS = "ACDEFGHJKMNPQRTUVWXY34679"  # no 0/O, 1/I/L, 2/Z, 5/S, 8/B: read off a projector without doubt
CODE_LEN = 6
MAX_ROOMS = int(os.environ.get("LLM_VIZ_MAX_ROOMS", 50))
MAX_STUDENTS = int(os.environ.get("LLM_VIZ_MAX_STUDENTS", 500))
IDLE_S = 3 * 3600  # a room ends after this long without the teacher's page
PRESENT_S = 30  # a student counts as present while their page has asked within this long
GUESS_GAP_S = 0.5  # a student's guesses at most this often
DEFAULT_OPTIONS = {"profanity": "replace", "hide_counts": False}
TOP = 10  # the model's candidates shown beside the room's answers
# the rooms' forward passes, one at a time; process-wide, like ROOMS at the end of this file (docs/state.md)
MODEL_THREAD = ThreadPoolExecutor(1, thread_name_prefix="rooms-model")


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
    # (trace_n, step) -> (the model it was asked of, the Future of the step's logits and distribution: pipeline.guess.step_dist),
    # for the step on screen and the next
    probs: dict = field(default_factory=dict)
    ratings: dict = field(default_factory=dict)  # (trace_n, step, text) -> the Future of its page rating (ui/rooms/ratings.py)
    passage: str | None = None  # the passage's name when the trace is real text (pipeline/passages.py)
    options: dict = field(default_factory=lambda: dict(DEFAULT_OPTIONS))  # the teacher's choices for the projector
    names: dict = field(default_factory=dict)  # student id -> "S1", "S2", ... in the order they first guessed (the CSV's)
    scores: dict = field(default_factory=dict)  # step -> its score when revealed (ui/rooms/scores.py), for this trace
    past: list = field(default_factory=list)  # the room's earlier texts' results, kept as set_trace moved on (ui/rooms/results.py)
    lang: str = DEFAULT  # the teacher's page's language when the room was made: its rude words are masked (ui/rooms/profanity.py)
    key_hash: str = ""  # the key's sha256: a teacher's request is checked by it (`key` is never stored: after a restart, "")
    on_change: object = field(default=None, repr=False, compare=False)  # told of every change: the store's save, or None

    def bump(self):
        self.version += 1
        if self.on_change is not None:  # (under Rooms.lock: the store only marks the room dirty; its thread writes it)
            self.on_change(self)

    def is_key(self, key) -> bool:
        return bool(key) and secrets.compare_digest(hashlib.sha256(str(key).encode()).hexdigest(), self.key_hash)


class Rooms:
    """Every open room, behind one lock (a room's work is a few dictionary updates; a guess's rating is one
    lookup in the step's distribution, computed once per step)."""

    def __init__(self, model_of=lambda trace: None, clock=time.monotonic, store=None):
        self.rooms: dict[str, Room] = {}
        self.lock = threading.Lock()
        self.model_of = model_of  # the loaded model when it made `trace` (ui/model.py's same_model)
        self.clock = clock
        self.store = None  # where the rooms are kept across restarts (ui/rooms/store.py); None: in memory only
        if store is not None:
            self.attach(store)

    def attach(self, store):
        """Keep the rooms in `store` (app.py, before any room is made), after taking back every open room it kept as it
        was (ui/rooms/store.py), its teacher seen now, its version (moved on by the store) written again at once."""
        with self.lock:
            self.store = store
            for room in store.load_all()[-MAX_ROOMS:]:
                room.teacher_seen, room.on_change, self.rooms[room.code] = self.clock(), store.save, room
                store.save(room)
                self._warm(room)
            store.start(self.lock)

    # -- the teacher ------------------------------------------------------------------------------------
    def create(self, trace: Trace | None, step: int, example: str | None = None) -> Room:
        if trace is None or not trace.steps:
            raise RoomError(400, lambda: t("error.guess_no_text"))
        with self.lock:
            self._expire()
            if len([r for r in self.rooms.values() if not r.closed]) >= MAX_ROOMS:
                raise RoomError(429, lambda: t("rooms.server_full", n=thousands(MAX_ROOMS)))
            code = self._new_code()
            key = secrets.token_urlsafe(18)
            room = Room(code, key, trace, example, self._step(trace, step), teacher_seen=self.clock(), lang=language(),
                        key_hash=hashlib.sha256(key.encode()).hexdigest(), on_change=self.store and self.store.save)
            room.passage = example if is_passage(example) else None
            self.rooms[code] = room
            if self.store is not None:
                self.store.save(room)
            self._warm(room)
            return room

    def teacher(self, code: str, key: str | None) -> Room:
        room = self._open(code)
        if not room.is_key(key):  # (by its hash: after a restart only the hash is known)
            raise RoomError(403, lambda: t("rooms.teacher_only"))
        room.teacher_seen = self.clock()
        return room

    def set_trace(self, code: str, key: str, trace: Trace, step: int, example: str | None = None):
        """The teacher's screen shows `trace`: the room's trace from now on, at `step` for a gallery text (a lesson's
        step), else at its first step (the teacher's own text, a file). The results of the text before, when it had any
        guesses, are kept (Room.past: the summary and the CSV go on showing them). The room's own trace again (a
        reloaded teacher's page, another step of the same gallery trace) only moves the step."""
        with self.lock:
            room = self.teacher(code, key)
            if trace is room.trace:
                self._move(room, step)
                return
            if any(room.guesses.values()):
                room.past.append(room_results.past_text(room))
            step = step if example is not None else 0
            room.trace, room.example, room.step, room.phase = trace, example, self._step(trace, step), "guessing"
            room.guesses, room.hidden, room.probs, room.scores = {}, {}, {}, {}
            room.passage = example if is_passage(example) else None
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
                room.scores[room.step] = room_scores.step_score(room.trace.steps[room.step], list(room.guesses.get(room.step, {}).values()))
                room.bump()
            return room

    def hide(self, code: str, key: str, token_id=None, text=None) -> Room:
        with self.lock:
            room = self.teacher(code, key)
            room.hidden.setdefault(room.step, set()).add(int(token_id) if token_id is not None else str(text))
            room.bump()
            return room

    def set_options(self, code: str, key: str, /, **opts) -> Room:
        """The teacher's choices for the projector (`profanity`: ui/room_filter.MODES; `hide_counts`: a bool), each
        checked (a bad one: 400, nothing changed); the version bumped so every page redraws."""
        try:
            if "profanity" in opts:
                room_filter.check_mode(opts["profanity"])
        except ValueError as e:
            raise RoomError(400, str(e)) from None
        if "hide_counts" in opts and not isinstance(opts["hide_counts"], bool):
            raise RoomError(400, "hide_counts is true or false.")
        if not opts or set(opts) - set(DEFAULT_OPTIONS):
            raise RoomError(400, f"The options are {' and '.join(DEFAULT_OPTIONS)}.")
        with self.lock:
            room = self.teacher(code, key)
            room.options = {**room.options, **opts}
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
                raise RoomError(404, lambda: t("rooms.no_class"))
            if key and not room.closed and room.is_key(key) and not self._idle(room):
                room.teacher_seen = self.clock()
            if not room.closed and self._idle(room):
                room.closed = True
                room.bump()
            if room.closed:
                return room
            if student:
                self._present(room, _student(student))
            return room

    def guess(self, code: str, student, text, wait: bool = True, lang: str | None = None) -> Guess | None:
        """A student's guess at the room's step: rated outside the lock (in the step's distribution, computed when the
        step opened: a guess sent before that pass ends waits for it), kept as their one live guess for the step.
        `wait` False (the event loop's call: a lookup, no thread): None, nothing done, while that pass runs. `lang`:
        the language of the page that sent it (None: the one spoken now)."""
        lang = lang or language()
        sid = _student(student)
        if not isinstance(text, str):
            raise RoomError(400, "A guess is text: type a word or a few.")
        with self.lock:
            room = self._open(code)
            trace, s = room.trace, room.step
            lm, probs = self._warm(room)
        if not wait and not probs.done():
            return None
        g = room_ratings.rated(lm, trace.steps[s], probs, text, (room.lang, lang))
        g.step, g.lang = s, lang
        with self.lock:
            room = self._open(code)
            if room.trace is not trace or room.step != s:
                raise RoomError(409, lambda: t("rooms.moved_on"))
            if room.phase == "revealed":
                raise RoomError(409, lambda: t("rooms.revealed"))
            now = self.clock()
            if now - room.last_guess.get(sid, -1e9) < GUESS_GAP_S:
                raise RoomError(429, lambda: t("rooms.one_at_a_time"))
            self._present(room, sid)
            room.last_guess[sid] = now
            room.guesses.setdefault(s, {})[sid] = g  # one live guess per student per step
            room.names.setdefault(sid, f"S{len(room.names) + 1}")
            room.bump()
            return g

    def rating(self, code: str, student) -> tuple:
        """(The room's trace and step, the Future of the student's own guess there rated as a page shows a rating, or None: no
        guess of theirs at the step), once the teacher has revealed it. Made once per text at a step, whoever sent it,
        on the rooms' model thread (after the step's distribution; a guess of several tokens: one forward pass)."""
        sid = _student(student)
        with self.lock:
            room = self._open(code)
            if room.phase != "revealed":
                raise RoomError(409, lambda: t("rooms.not_revealed"))
            s, g = room.step, room.guesses.get(room.step, {}).get(sid)
            if g is None:
                return room.trace, s, None
            key = (room.trace_n, s, g.text)
            was = room.ratings.get(key)
            if was is None or (was.done() and was.exception() is not None):  # (asked again after a failed pass)
                lm, dist = self._warm(room)
                room.ratings = {k: v for k, v in room.ratings.items() if k[:2] == key[:2]}  # (the step's only)
                room.ratings[key] = MODEL_THREAD.submit(room_ratings.page_rating, lm, room.trace, s, g, dist)
            return room.trace, s, room.ratings[key]

    def summary(self, code: str) -> dict:
        """Every revealed step of the room's trace, its score, and the round's totals (ui/rooms/scores.py)."""
        with self.lock:
            return room_scores.summary(self._open(code))

    # -- what a page sees ---------------------------------------------------------------------------------
    def state(self, room: Room) -> dict:
        with self.lock:
            now = self.clock()
            out = {"code": room.code, "version": room.version, "step": room.step, "phase": room.phase,
                   "closed": room.closed or self._idle(room), "trace": f"{room.code}-{room.trace_n}", "example": room.example,
                   "n_steps": len(room.trace.steps),
                   "students": self._present_count(room, now),
                   "guesses": len(room.guesses.get(room.step, {})), "real_text": room.passage is not None,
                   "passage": room.passage, "options": dict(room.options)}
            if room.phase == "revealed":
                out.update(room_scores.revealed(room, TOP))
            return out

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
                kept[k] = (lm, MODEL_THREAD.submit(guessing.step_dist, lm, trace, trace.steps[k[1]]))
        room.probs = kept
        return kept[keys[0]]

    def _open(self, code: str) -> Room:
        room = self.rooms.get(str(code).upper())
        if room is None:
            raise RoomError(404, lambda: t("rooms.no_class"))
        if room.closed or self._idle(room):
            raise RoomError(410, lambda: t("room.ended"))
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
                raise RoomError(429, lambda: t("rooms.class_full", n=thousands(MAX_STUDENTS)))
        room.students[sid] = now
        if not was:  # one more student present: the count on the teacher's screen changes
            room.bump()

    @staticmethod
    def _present_count(room: Room, now: float) -> int:
        """The students present: counted once per version of the room and second (a class of 500 polls its room 250
        times a second, and counting 500 students each time was a tenth of the server's work for a poll)."""
        key = (room.version, int(now))
        got = room.__dict__.get("_present")  # (not a field: nothing a store keeps)
        if got is None or got[0] != key:
            got = room.__dict__["_present"] = (key, sum(1 for t in room.students.values() if now - t < PRESENT_S))
        return got[1]

    def _idle(self, room: Room) -> bool:
        return self.clock() - room.teacher_seen > IDLE_S

    def _expire(self):
        for code in [c for c, r in self.rooms.items() if (r.closed or self._idle(r)) and self.clock() - r.teacher_seen > IDLE_S + 3600]:
            del self.rooms[code]
            if self.store is not None:
                self.store.delete(code)

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


def _student(sid) -> str:
    if not isinstance(sid, str) or not 1 <= len(sid) <= 64 or not sid.replace("-", "").replace("_", "").isalnum():
        raise RoomError(400, "A student id is 1 to 64 letters, digits, - or _.")
    return sid


# Process-wide (docs/state.md): every class room of this server, read and written by the page (ui/class_room.py) and
# the JSON API (ui/rooms/api.py), behind ROOMS.lock. At most MAX_ROOMS open; an ended or idle one is forgotten (at the
# next create) once its teacher's page has been gone IDLE_S + 1 h.
ROOMS = Rooms(model_of=same_model)

__all__ = ["ROOMS", "Rooms", "Room", "RoomError", "Guess", "CODE_LETTERS", "MAX_ROOMS", "MAX_STUDENTS"]
