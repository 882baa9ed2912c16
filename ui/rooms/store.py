"""Class rooms kept on disk, so that a restart of the app (a Space's rebuild, crash or sleep) does not end them.

    store = open_store()              # SQLite at LLM_VIZ_ROOMS_DB (default_path()); "off": memory only
    ROOMS.attach(store)               # app.py, before serving: every open room taken back, then kept

`RoomStore` is the whole interface a `Rooms` (ui/rooms/rooms.py) uses: `save(room)` (called under the rooms' lock at every
change, Room.bump: it only marks the room dirty), `load_all()`, `delete(code)`, `start(lock)`, `flush()`, `close()`.
Another store (several replicas sharing rooms: Redis, docs/rooms.md) is one more class with these methods.

`SqliteRoomStore` writes on a thread of its own, with one connection (WAL): it wakes at a change, writes every dirty
room in one transaction, then sleeps FLUSH_S before the next, so a class of 500 guessing costs one write each half
second, never one per guess, and no request waits for the disk. What is kept of a room: its code, the sha256 of
its key (never the key), its step, phase, version, hidden answers, options, the students' anonymous names, the
revealed steps' scores, every step's guesses (each Guess's fields, whatever they are) and its trace: a gallery
example by its name, any other trace (a generation, a passage: the one the guesses were made on) written whole with
pipeline/trace/files.py, once per trace of the room. Not kept: who is present, the step's distribution (recomputed).
A room ended, or idle longer than rooms.IDLE_S, is not taken back; a damaged file is set aside (said in the log).
"""
from __future__ import annotations

import atexit
import dataclasses
import gzip
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from pipeline.trace import files as trace_io
from pipeline.errors import GalleryError, TraceFormatError
from pipeline.paths import cache_dir
from ui.rooms import rooms

FLUSH_S = 0.5  # at most one write of the dirty rooms this often
VERSION_GAP = 1_000_000  # a room taken back: its version moved on this far, past every change not written when it stopped
FORMAT = 1  # a room row's layout (`meta`'s "format")
OFF = ("", "0", "off", "none")  # LLM_VIZ_ROOMS_DB values that keep rooms in memory only
SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (code TEXT PRIMARY KEY, meta TEXT NOT NULL, saved REAL NOT NULL);
CREATE TABLE IF NOT EXISTS traces (code TEXT PRIMARY KEY, trace_n INTEGER NOT NULL, name TEXT, data BLOB);
CREATE TABLE IF NOT EXISTS guesses (code TEXT NOT NULL, trace_n INTEGER NOT NULL, step INTEGER NOT NULL,
                                    data TEXT NOT NULL, PRIMARY KEY (code, trace_n, step));
"""


def log(line: str):
    print(f"class rooms: {line}", flush=True)


def default_path() -> Path | None:
    """$LLM_VIZ_ROOMS_DB ("off": None); else a Space's persistent storage (/data, when the Space has it), else the app's
    own data folder (pipeline.paths.cache_dir: ~/.cache/llm-pipeline-viz, where the embedded model is converted)."""
    v = os.environ.get("LLM_VIZ_ROOMS_DB")
    if v is not None:
        return None if v.strip().lower() in OFF else Path(v).expanduser()
    data = Path("/data")
    if data.is_dir() and os.access(data, os.W_OK):
        return data / "llm-pipeline-viz" / "rooms.sqlite3"
    return cache_dir() / "rooms.sqlite3"


def open_store(path: Path | None | str = "default") -> RoomStore:
    path = default_path() if path == "default" else path
    if path is None:
        log("kept in memory only (LLM_VIZ_ROOMS_DB is off): a restart ends every class")
        return RoomStore()
    return SqliteRoomStore(path)


class RoomStore:
    """Rooms in memory only: every method does nothing (tests, LLM_VIZ_ROOMS_DB=off)."""

    def start(self, lock): pass

    def save(self, room): pass

    def load_all(self) -> list: return []

    def delete(self, code: str): pass

    def flush(self): pass

    def close(self): pass


# -- a room as rows, and back ------------------------------------------------------------------------------------
def _plain(v):
    """JSON for what json cannot write itself: numpy numbers, tuples and sets."""
    if hasattr(v, "item"):
        return v.item()
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    raise TypeError(f"a room's {type(v).__name__} cannot be stored")


def _json(v) -> str:
    return json.dumps(v, default=_plain, ensure_ascii=False, separators=(",", ":"))


def snapshot(room, steps) -> dict:
    """What is written of `room` (taken under the rooms' lock: copies of its containers, the Guesses shared, as they are
    replaced, never changed): its meta, and the guesses of `steps` (the steps changed since the last write)."""
    meta = {"format": FORMAT, "code": room.code, "key_hash": room.key_hash, "example": room.example, "passage": room.passage,
            "step": room.step, "phase": room.phase, "version": room.version, "trace_n": room.trace_n, "lang": room.lang,
            "hidden": {str(s): list(h) for s, h in room.hidden.items()}, "options": dict(room.options),
            "names": dict(room.names), "scores": {str(s): dict(v) for s, v in room.scores.items()},
            "past": list(room.past)}
    return {"code": room.code, "closed": room.closed, "trace_n": room.trace_n, "trace": room.trace, "meta": meta,
            "steps": {s: dict(room.guesses.get(s, {})) for s in steps}}


def guess_row(guesses: dict) -> str:
    """A step's guesses (student id -> Guess) as JSON: every field of each Guess, by name."""
    return _json({sid: {f.name: getattr(g, f.name) for f in dataclasses.fields(g)} for sid, g in guesses.items()})


def guesses_from(text: str) -> dict:
    fields = {f.name for f in dataclasses.fields(rooms.Guess)}
    return {sid: rooms.Guess(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in fields})
            for sid, d in json.loads(text).items()}


def by_name(meta: dict) -> str | None:
    """The gallery example the room's trace is, by name (read again from the gallery at a restart); None: a trace
    written whole (a generation; a passage, whose trace needs the model, not loaded yet when the server starts)."""
    name = meta.get("example")
    return name if isinstance(name, str) and name and not meta.get("passage") else None


def trace_blob(trace) -> bytes:
    return gzip.compress(trace_io.dumps(trace).encode("utf-8"), compresslevel=trace_io.GZIP_LEVEL)


def room_from(meta: dict, trace, guesses: dict):
    s = int(meta["step"])
    if not 0 <= s < len(trace.steps) or meta["phase"] not in ("guessing", "revealed"):
        raise ValueError(f"step {s} of {len(trace.steps)}, phase {meta['phase']!r}")
    return rooms.Room(str(meta["code"]), "", trace, meta.get("example"), s, phase=meta["phase"], version=int(meta["version"]),
                      trace_n=int(meta["trace_n"]), guesses=guesses, key_hash=str(meta["key_hash"]), passage=meta.get("passage"),
                      hidden={int(k): set(v) for k, v in meta.get("hidden", {}).items()},
                      options={**rooms.DEFAULT_OPTIONS, **meta.get("options", {})}, names=dict(meta.get("names", {})),
                      scores={int(k): v for k, v in meta.get("scores", {}).items()}, lang=str(meta.get("lang") or rooms.DEFAULT), past=list(meta.get("past", [])))


class SqliteRoomStore(RoomStore):
    """The rooms in one SQLite file, written by a thread of its own (module docstring)."""

    def __init__(self, path, interval: float = FLUSH_S, max_age_s: float = rooms.IDLE_S):
        self.path, self.interval, self.max_age_s = Path(path), interval, max_age_s
        self._dirty: dict = {}  # code -> (room, steps changed): written at the next flush
        self._deleted: set = set()
        self._written: dict = {}  # code -> the trace_n whose trace is on disk
        self._lock = threading.Lock()  # the rooms' lock (start): a snapshot is taken under it
        self._flushing = threading.Lock()  # one flush at a time (the writer's, or close's / a test's)
        self._wake, self._stop, self._thread = threading.Event(), threading.Event(), None
        self.last_flush: tuple[int, float] = (0, 0.0)  # (rooms written, seconds) of the last flush that wrote any
        self.db = self._open()

    # -- the connection ----------------------------------------------------------------------------------------
    def _open(self, again: bool = True):
        """The connection (None, said in the log: rooms kept in memory only). A file that is not a database, or is
        damaged, is set aside as NAME.damaged-TIME and a new one made."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=5)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(SCHEMA)
                db.execute("SELECT count(*) FROM rooms").fetchone()
            except sqlite3.Error:
                db.close()
                raise
            return db
        except sqlite3.OperationalError as e:  # (locked, read-only, no room on the disk: the file is left as it is)
            log(f"{self.path} cannot be used ({e}): classes are kept in memory only, a restart ends them")
        except sqlite3.DatabaseError as e:
            if again and self._set_aside(e):
                return self._open(again=False)
            log(f"{self.path} cannot be used ({e}): classes are kept in memory only, a restart ends them")
        except OSError as e:
            log(f"{self.path} cannot be made ({e}): classes are kept in memory only, a restart ends them")
        return None

    def _set_aside(self, e) -> bool:
        aside = self.path.with_name(f"{self.path.name}.damaged-{int(time.time())}")
        try:
            for suffix in ("-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self.path.rename(aside)
        except OSError:
            return False
        log(f"{self.path} is damaged ({e}): set aside as {aside.name}; the classes in it are lost, a new file is made")
        return True

    # -- the interface --------------------------------------------------------------------------------------------
    def start(self, lock):
        self._lock = lock
        if self.db is not None and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="rooms-store", daemon=True)
            self._thread.start()
            atexit.register(self.close)

    def save(self, room):
        """`room` changed (under the rooms' lock): written at the next flush, with the guesses of its step now."""
        hit = self._dirty.get(room.code)
        if hit is None:
            self._dirty[room.code] = (room, {room.step})
        else:
            hit[1].add(room.step)
        self._wake.set()

    def delete(self, code: str):
        self._dirty.pop(code, None)
        self._deleted.add(code)
        self._wake.set()

    def close(self):
        """Stop the writer, write what is dirty, close the file (at exit: atexit)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        self.flush()
        with self._flushing:
            if self.db is not None:
                self.db.close()
                self.db = None

    def _run(self):
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                self.flush()
            except Exception as e:  # noqa: BLE001  (a failed write is said, and tried again at the next change)
                log(f"writing {self.path} failed ({type(e).__name__}: {e}); tried again at the next change")
            self._stop.wait(self.interval)

    # -- writing ---------------------------------------------------------------------------------------------------
    def flush(self):
        """Write every dirty room (and forget the deleted) in one transaction; the rooms' lock held only to copy."""
        with self._flushing:
            if self.db is None:
                return
            with self._lock:
                dirty, self._dirty = self._dirty, {}
                deleted, self._deleted = self._deleted, set()
                snaps = [snapshot(room, steps) for room, steps in dirty.values()]
            if not snaps and not deleted:
                return
            t0 = time.perf_counter()
            snaps, rows = self._rows_of(snaps)  # (JSON, a trace's bytes: outside the lock)
            db = self.db
            db.execute("BEGIN")
            try:
                for code in deleted | {s["code"] for s in snaps if s["closed"]}:
                    self._forget(code)
                for s, r in zip(snaps, rows):
                    if not s["closed"]:
                        self._write(s, *r)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                with self._lock:  # (written again at the next flush: its changes are not lost)
                    for room, steps in dirty.values():
                        self._dirty.setdefault(room.code, (room, set()))[1].update(steps)
                raise
            for s in snaps:
                self._written[s["code"]] = None if s["closed"] else s["trace_n"]
            self.last_flush = (len(snaps), time.perf_counter() - t0)

    def _rows_of(self, snaps: list) -> tuple[list, list]:
        """(the snapshots that could be written, their rows): a room whose trace or guesses cannot be written is said
        in the log and left out (written again at its next change), the others written."""
        done = []
        for s in snaps:
            try:
                done.append((s, self._rows(s)))
            except (TypeError, ValueError) as e:
                log(f"class {s['code']} cannot be written ({type(e).__name__}: {e}); its changes are kept in memory only")
        return [s for s, _ in done], [r for _, r in done]

    def _rows(self, s: dict) -> tuple:
        """(the meta's JSON, the trace's (name, bytes) when it is not on disk yet, else None, each step's JSON)."""
        trace = None
        if not s["closed"] and self._written.get(s["code"]) != s["trace_n"]:
            name = by_name(s["meta"])
            trace = (name, None if name else trace_blob(s["trace"]))
        return _json(s["meta"]), trace, {step: guess_row(g) for step, g in s["steps"].items()}

    def _write(self, s: dict, meta: str, trace, steps: dict):
        code, n, db = s["code"], s["trace_n"], self.db
        db.execute("INSERT OR REPLACE INTO rooms (code, meta, saved) VALUES (?, ?, ?)", (code, meta, time.time()))
        if trace is not None:
            db.execute("INSERT OR REPLACE INTO traces (code, trace_n, name, data) VALUES (?, ?, ?, ?)", (code, n, *trace))
            db.execute("DELETE FROM guesses WHERE code = ? AND trace_n != ?", (code, n))
        for step, row in steps.items():
            if row == "{}":
                db.execute("DELETE FROM guesses WHERE code = ? AND trace_n = ? AND step = ?", (code, n, step))
            else:
                db.execute("INSERT OR REPLACE INTO guesses (code, trace_n, step, data) VALUES (?, ?, ?, ?)", (code, n, step, row))

    def _forget(self, code: str):
        for table in ("rooms", "traces", "guesses"):
            self.db.execute(f"DELETE FROM {table} WHERE code = ?", (code,))  # noqa: S608  (the table names are ours)
        self._written.pop(code, None)

    # -- reading ---------------------------------------------------------------------------------------------------
    def load_all(self) -> list:
        """Every room kept that is open and was written within max_age_s, oldest first, each as it was but for its version
        (moved on by VERSION_GAP); one that cannot be read back is said in the log and forgotten; a damaged file: set
        aside, and none."""
        if self.db is None:
            return []
        try:
            rows = self.db.execute("SELECT code, meta, saved FROM rooms ORDER BY saved").fetchall()
            out, gone = [], []
            for code, meta, saved in rows:
                room = self._room(code, meta, saved)
                (out if room is not None else gone).append(room or code)
            for code in gone:
                self.db.execute("BEGIN")
                self._forget(code)
                self.db.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            self.db.close()
            self.db = self._open() if self._set_aside(e) else None
            return []
        self._written = {r.code: r.trace_n for r in out}
        if out:
            log(f"{len(out)} class{'es' if len(out) > 1 else ''} taken back from {self.path}")
        return out

    def _room(self, code: str, meta_text: str, saved: float):
        try:
            meta = json.loads(meta_text)
            if meta.get("format") != FORMAT or time.time() - saved > self.max_age_s:
                return None
            n = int(meta["trace_n"])
            row = self.db.execute("SELECT name, data FROM traces WHERE code = ? AND trace_n = ?", (code, n)).fetchone()
            if row is None:
                raise ValueError("its trace is not in the file")
            from ui.examples import gallery_trace  # (the gallery, read when a room names one)

            trace = gallery_trace(row[0]) if row[0] else trace_io.loads(row[1])
            guesses = {int(step): guesses_from(data) for step, data in
                       self.db.execute("SELECT step, data FROM guesses WHERE code = ? AND trace_n = ?", (code, n))}
            room = room_from(meta, trace, guesses)
            room.version += VERSION_GAP  # (a page's ETag of a change not written never matches a different state)
            return room
        except (ValueError, KeyError, TypeError, AttributeError, GalleryError, TraceFormatError) as e:
            log(f"class {code} could not be taken back ({type(e).__name__}: {e}); it is forgotten")
            return None


__all__ = ["RoomStore", "SqliteRoomStore", "open_store", "default_path", "FLUSH_S"]
