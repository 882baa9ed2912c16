"""Class rooms kept across a restart (ui/rooms/store.py): a room written to SQLite and read back by a new `Rooms`, as
it was (guesses on several steps with every Guess field, hidden answers, options, names, scores, the step and phase),
its trace by name (a gallery example) or whole (a generation); the teacher's key known only by its hash; writes
coalesced off the request path; a damaged or unusable file said in the log, never a crash."""
import dataclasses
import hashlib
import sqlite3
import threading
import time

import pytest

from pipeline.generate import run_trace
from pipeline.trace.records import Settings
from tests import tiny
from ui import examples
from ui.rooms import store as room_store
from ui.rooms import rooms


@pytest.fixture(scope="module")
def lm():
    return tiny.loaded("llama", ctx=128)


@pytest.fixture(scope="module")
def trace(lm):
    return run_trace(lm, "The quick brown fox", Settings(temperature=0.8, seed=1, max_new_tokens=5))


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        self.t += 1.0  # (every call a second later: a student's guesses are never too close together)
        return self.t


def open_rooms(path, lm, **kw):
    store = room_store.SqliteRoomStore(path, **kw)
    return rooms.Rooms(model_of=lambda t: lm, clock=Clock(), store=store), store


def played(r: rooms.Rooms, room, steps=(1, 3)):
    """Guesses on several steps, an answer hidden, an option changed, a step revealed: a room as a class leaves it."""
    for s in steps:
        r.move(room.code, room.key, s)
        for sid, text in (("s1", "the"), ("s2", "fox"), ("s3", "dog")):
            r.guess(room.code, sid, text)
        r.reveal(room.code, room.key)
    r.hide(room.code, room.key, text="dog")
    with r.lock:
        room.options["hide_counts"] = True
        room.bump()
    return room


def fields(g):
    return {f.name: getattr(g, f.name) for f in dataclasses.fields(g)}


def test_a_room_comes_back_as_it_was(tmp_path, lm, trace):
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    room = played(r1, r1.create(trace, 0))
    assert room.guesses[1] and room.guesses[3] and room.hidden[3] == {"dog"} and room.scores
    store1.close()

    r2, store2 = open_rooms(path, lm)
    back = r2.rooms[room.code]
    assert back is not room and (back.step, back.phase, back.trace_n, back.example) == (3, "revealed", 0, None)
    assert back.version == room.version + room_store.VERSION_GAP  # (past any version a page saw: its ETag honest)
    assert {s: {k: fields(g) for k, g in gs.items()} for s, gs in back.guesses.items()} == \
           {s: {k: fields(g) for k, g in gs.items()} for s, gs in room.guesses.items()}
    assert isinstance(back.guesses[1]["s1"].ids, tuple) and back.guesses[1]["s1"].step == 1
    assert back.hidden == room.hidden and back.options == {**rooms.DEFAULT_OPTIONS, "hide_counts": True}
    assert back.names == room.names == {"s1": "S1", "s2": "S2", "s3": "S3"}
    assert back.scores.keys() == room.scores.keys()
    assert back.scores[1] == pytest.approx(room.scores[1])
    assert [s.token_id for s in back.trace.steps] == [s.token_id for s in trace.steps]  # (written whole: a generation)
    assert back.students == {} and back.probs.keys() <= {(0, 3), (0, 4)}  # (presence not kept; the distribution recomputed)
    # the room works on: the state as before, a guess at its step refused as after a reveal, the next step open
    assert r2.state(back)["room"] == r1.state(room)["room"]
    key = room.key
    r2.move(room.code, key, 4)
    r2.guess(room.code, "s1", "cat")
    store2.close()
    r3, store3 = open_rooms(path, lm)
    assert r3.rooms[room.code].guesses[4]["s1"].text == "cat" and set(r3.rooms[room.code].guesses) == {1, 3, 4}
    store3.close()


def test_the_key_is_kept_only_as_its_hash(tmp_path, lm, trace):
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    room = r1.create(trace, 2)
    key = room.key
    store1.close()
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert key.encode() not in data and hashlib.sha256(key.encode()).hexdigest().encode() in data

    r2, store2 = open_rooms(path, lm)
    back = r2.rooms[room.code]
    assert back.key == "" and back.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert r2.teacher(room.code, key) is back  # (a reloaded teacher's page: its kept key, checked by its hash)
    for bad in ("", None, "guessed", hashlib.sha256(key.encode()).hexdigest()):  # (the hash itself is no key)
        with pytest.raises(rooms.RoomError) as e:
            r2.teacher(room.code, bad)
        assert e.value.status == 403
    before = back.teacher_seen
    r2.seen(room.code, None, key)
    assert back.teacher_seen > before
    store2.close()


def test_a_gallery_trace_is_kept_by_name_a_generation_whole(tmp_path, lm, trace):
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    shown = examples.gallery_trace("confident")
    a = r1.create(shown, 1, example="confident")
    b = r1.create(trace, 1)
    store1.close()
    rows = dict((code, (name, data)) for code, name, data in sqlite3.connect(path).execute("SELECT code, name, data FROM traces"))
    assert rows[a.code] == ("confident", None)
    assert rows[b.code][0] is None and len(rows[b.code][1]) > 100

    r2, store2 = open_rooms(path, lm)
    assert r2.rooms[a.code].trace is shown and r2.rooms[a.code].example == "confident"  # (the gallery's one object)
    assert [s.token_id for s in r2.rooms[b.code].trace.steps] == [s.token_id for s in trace.steps]
    store2.close()


def test_a_passage_or_a_new_trace_is_written_whole_once_a_trace(tmp_path, lm, trace):
    """A passage's trace needs the model (not loaded when the server starts): written whole, as a generation is; a
    room's trace is written once, not at every guess; a new trace replaces it, its old guesses gone."""
    assert room_store.by_name({"example": "text-tyger", "passage": "text-tyger"}) is None
    assert room_store.by_name({"example": "confident", "passage": None}) == "confident"
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    writes = []
    store1.db.set_trace_callback(lambda sql: writes.append(sql) if sql.startswith("INSERT OR REPLACE INTO traces") else None)
    room = r1.create(trace, 1)
    store1.flush()
    for sid in ("a", "b", "c"):
        r1.guess(room.code, sid, "the")
        store1.flush()
    assert len(writes) == 1
    other = run_trace(lm, "Attention is", Settings(temperature=0.8, seed=2, max_new_tokens=3))
    r1.set_trace(room.code, room.key, other, 2)
    store1.flush()
    assert len(writes) == 2
    assert sqlite3.connect(path).execute("SELECT count(*) FROM guesses").fetchone()[0] == 0
    store1.close()
    r2, store2 = open_rooms(path, lm)
    back = r2.rooms[room.code]
    assert back.trace_n == 1 and len(back.trace.steps) == len(other.steps) and back.guesses == {}
    store2.close()


def test_a_passage_room_comes_back_without_the_model(tmp_path, lm, monkeypatch):
    """A passage's trace is computed by the model, which is still loading when the server starts: the room's trace is
    the one written whole, not the passage asked for again by name."""
    from pipeline import passages

    shown = passages.trace(lm, "text-tyger")
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    room = r1.create(shown, 4, example="text-tyger")
    assert room.passage == "text-tyger"
    r1.guess(room.code, "s1", "tiger")
    store1.close()

    def no_model(name):
        raise AssertionError(f"{name} asked for by name")
    monkeypatch.setattr(examples, "gallery_trace", no_model)
    r2, store2 = open_rooms(path, lm)
    back = r2.rooms[room.code]
    assert (back.passage, back.example, back.step) == ("text-tyger", "text-tyger", 4)
    assert [s.token_id for s in back.trace.steps] == [s.token_id for s in shown.steps] and back.guesses[4]["s1"].text == "tiger"
    assert r2.state(back)["real_text"] is True
    store2.close()


def test_writes_are_coalesced_off_the_request_path(tmp_path, lm, trace):
    """60 students guessing within a moment: each guess only marks the room dirty; the writer writes it a handful of
    times (at most once each FLUSH_S), and every guess is on disk after the last write."""
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    commits, lock = [], threading.Lock()

    def seen(sql):
        if sql == "COMMIT":
            with lock:
                commits.append(time.monotonic())
    store1.db.set_trace_callback(seen)
    room = r1.create(trace, 1)
    t0 = time.monotonic()
    for i in range(60):
        r1.guess(room.code, f"s{i}", "the")
    took = time.monotonic() - t0
    time.sleep(2 * room_store.FLUSH_S + 0.3)
    assert 1 <= len(commits) <= 2 + took / room_store.FLUSH_S, (len(commits), took)
    assert all(b - a >= room_store.FLUSH_S * 0.9 for a, b in zip(commits, commits[1:]))
    on_disk = room_store.guesses_from(sqlite3.connect(path).execute("SELECT data FROM guesses").fetchone()[0])
    assert len(on_disk) == 60
    store1.close()


def test_a_flush_of_a_500_guess_room_is_quick(tmp_path, lm, trace):
    """The figure docs/rooms.md gives: one write of a room whose step has 500 guesses (every Guess field)."""
    r1, store1 = open_rooms(tmp_path / "rooms.sqlite3", lm)
    room = r1.create(trace, 1)
    store1.flush()
    g = rooms.Guess("the cat", 42, "Ġthe", ids=(42, 43), prob=0.0123, rank=7, step=1)
    took = []
    for k in range(5):
        with r1.lock:
            room.guesses[1] = {f"student-{k}-{i}": dataclasses.replace(g, text=f"guess {i}") for i in range(500)}
            room.bump()
        t0 = time.perf_counter()
        store1.flush()
        took.append(time.perf_counter() - t0)
    took.sort()
    print(f"\na flush of a 500-guess room: median {took[2] * 1000:.1f} ms, best {took[0] * 1000:.1f} ms")
    assert store1.last_flush[0] == 1 and took[2] < room_store.FLUSH_S
    store1.close()


def test_an_ended_or_forgotten_room_leaves_the_file(tmp_path, lm, trace):
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    a, b = r1.create(trace, 1), r1.create(trace, 2)
    store1.flush()
    r1.close(a.code, a.key)
    store1.flush()
    assert [c for c, in sqlite3.connect(path).execute("SELECT code FROM rooms")] == [b.code]
    r1.clock.t += rooms.IDLE_S + 3601  # (b's teacher gone past the end and the hour after: forgotten at the next create)
    c = r1.create(trace, 1)
    store1.flush()
    assert [c2 for c2, in sqlite3.connect(path).execute("SELECT code FROM rooms")] == [c.code]
    assert sqlite3.connect(path).execute("SELECT count(*) FROM traces").fetchone()[0] == 1
    store1.close()


def test_a_room_written_long_ago_is_not_taken_back(tmp_path, lm, trace):
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    r1.create(trace, 1)
    store1.close()
    r2, store2 = open_rooms(path, lm, max_age_s=-1)  # (every row older than that)
    assert r2.rooms == {} and sqlite3.connect(path).execute("SELECT count(*) FROM rooms").fetchone()[0] == 0
    store2.close()


def test_a_damaged_file_is_set_aside_and_the_rooms_start_empty(tmp_path, lm, trace, capsys):
    path = tmp_path / "rooms.sqlite3"
    path.write_bytes(b"this is not a database, it is a note someone left here" * 100)
    r1, store1 = open_rooms(path, lm)
    out = capsys.readouterr().out
    assert "damaged" in out and "set aside" in out and r1.rooms == {}
    assert [p.name for p in tmp_path.iterdir() if ".damaged-" in p.name]
    room = r1.create(trace, 1)  # (a new file, working)
    store1.close()
    r2, store2 = open_rooms(path, lm)
    assert room.code in r2.rooms
    store2.close()


def test_a_room_that_cannot_be_read_back_is_forgotten_the_others_come_back(tmp_path, lm, trace, capsys):
    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    good, bad = r1.create(trace, 1), r1.create(trace, 2)
    store1.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE traces SET data = ? WHERE code = ?", (b"\x1f\x8bnot gzip", bad.code))
    db.commit()
    r2, store2 = open_rooms(path, lm)
    assert set(r2.rooms) == {good.code} and f"class {bad.code} could not be taken back" in capsys.readouterr().out
    store2.close()


def test_an_unusable_path_keeps_rooms_in_memory(tmp_path, lm, trace, capsys):
    (tmp_path / "a-file").write_text("x")
    r1, store1 = open_rooms(tmp_path / "a-file" / "rooms.sqlite3", lm)  # (a folder that cannot be made)
    assert store1.db is None and "kept in memory only" in capsys.readouterr().out
    room = r1.create(trace, 1)
    r1.guess(room.code, "s1", "the")
    store1.close()


def test_where_the_file_is(monkeypatch, tmp_path):
    monkeypatch.setenv("LLM_VIZ_ROOMS_DB", str(tmp_path / "x.sqlite3"))
    assert room_store.default_path() == tmp_path / "x.sqlite3"
    monkeypatch.setenv("LLM_VIZ_ROOMS_DB", "off")
    assert room_store.default_path() is None and type(room_store.open_store()) is room_store.RoomStore
    monkeypatch.delenv("LLM_VIZ_ROOMS_DB")
    monkeypatch.setenv("LLM_VIZ_CACHE", str(tmp_path / "cache"))
    assert room_store.default_path() in (tmp_path / "cache" / "rooms.sqlite3", room_store.Path("/data/llm-pipeline-viz/rooms.sqlite3"))


def test_without_a_store_rooms_stay_in_memory(lm, trace):
    r = rooms.Rooms(model_of=lambda t: lm, clock=Clock())
    room = r.create(trace, 1)
    assert r.store is None and r.teacher(room.code, room.key) is room
    room.bump()  # (told to no store: nothing happens)


def test_a_rooms_language_and_its_earlier_texts_come_back(tmp_path, lm, trace):
    """A German room that moved on to a new text: after a restart it masks German rude words still, and its first
    text's results are in the summary and the CSV as before."""
    from ui.rooms import results as room_results
    from viz.text import speaking

    path = tmp_path / "rooms.sqlite3"
    r1, store1 = open_rooms(path, lm)
    with speaking("de"):
        room = played(r1, r1.create(trace, 0))
    other = run_trace(lm, "A cat", Settings(temperature=0.8, seed=2, max_new_tokens=3))
    r1.set_trace(room.code, room.key, other, 2)
    csv_before, summary_before = room_results.csv_text(room_results.snapshot(room)), r1.summary(room.code)
    assert room.lang == "de" and len(room.past) == 1 and summary_before["earlier"]
    store1.close()
    r2, store2 = open_rooms(path, lm)
    back = r2.rooms[room.code]
    assert back.lang == "de" and back.past == room.past and back.step == 0
    assert room_results.csv_text(room_results.snapshot(back)) == csv_before and r2.summary(room.code)["earlier"] == summary_before["earlier"]
    store2.close()
