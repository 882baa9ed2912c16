"""A room's answers and the numbers beside them (ui/rooms/rooms.py), on a tiny model with a real byte-level tokenizer:
emoji whose first tokens are only bytes of a character are told apart by what was typed, a guess is rated in both
spellings whatever its kind, ties for the favourite are ties, tokens are labelled as the distribution labels them;
and no guess waits for the step's forward pass (issue 33, findings 7 and 12)."""
import threading
import time

import pytest
import torch

from pipeline import guess as guessing
from pipeline.sampling.stages import softmax
from tests.rooms_setup import room_setup
from viz.fmt import pct
from viz.style import visible


@pytest.fixture()
def setup(lm, monkeypatch):
    client, store, room, clock = room_setup(lm, monkeypatch)
    assert guessing.space_before(room.trace.steps[2])  # (its context ends inside a line of words: " x")
    return client, store, room, clock


def probs_at(lm, step):
    with torch.inference_mode():
        return softmax(lm.model(torch.tensor([list(step.context_ids)])).logits[0, -1].float().numpy())


def guesses(client, room, clock, pairs):
    for sid, text in pairs:
        r = client.post(f"/api/rooms/{room.code}/guesses", json={"student": sid, "text": text})
        assert r.status_code == 200, r.text
        clock[0] += 1
    return client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key}).json()


def test_emoji_are_told_apart_by_what_was_typed_and_rated_in_both_spellings(lm, setup):
    client, store, room, clock = setup
    step = room.trace.steps[2]
    probs = probs_at(lm, step)
    # every emoji here begins with the same bytes: "<0xF0><0x9F>" typed alone, " <0xF0><0x9F>" after a space
    firsts = {t: [lm.tokens.plain_ids(v)[0] for v in (t, " " + t)] for t in ("🌪", "💩")}
    assert firsts["🌪"] == firsts["💩"] and guessing.ends_in_bytes(lm.tokens.piece(firsts["🌪"][0]))
    likelier = max(firsts["🌪"], key=lambda t: probs[t])  # of the two spellings, the model's
    out = guesses(client, room, clock, [("a", "🌪"), ("b", " 🌪"), ("c", "💩")])
    assert [(r["text"], r["count"]) for r in out["room"]] == [("🌪", 2), ("💩", 1)]  # two answers, not one
    assert {r["token_id"] for r in out["room"]} == {likelier} and all(r["by_text"] for r in out["room"])
    assert all(r["label"] == visible(lm.tokens.piece(likelier)) for r in out["room"])
    # the teacher hides one emoji: the other stays
    out = client.post(f"/api/rooms/{room.code}/hide", json={"text": "🌪"}, headers={"X-Room-Key": room.key}).json()
    assert [(r["text"], r["count"]) for r in out["room"]] == [("💩", 1)]


@pytest.mark.parametrize("typed", ["!", "7", "é", "日本", "😀"])
def test_every_kind_of_text_is_rated_in_both_spellings(lm, setup, typed):
    client, store, room, clock = setup
    probs = probs_at(lm, room.trace.steps[2])
    want = max((lm.tokens.plain_ids(v)[0] for v in (typed, " " + typed)), key=lambda t: probs[t])
    for text in (typed, " " + typed):  # typed with its space or without: the same first token
        g = client.post(f"/api/rooms/{room.code}/guesses", json={"student": f"s{len(text)}", "text": text}).json()
        assert g["token_id"] == want, text


def test_ties_for_the_favourite_are_said_as_ties_with_the_models_numbers(lm, setup):
    client, store, room, clock = setup
    step = room.trace.steps[2]
    probs = probs_at(lm, step)
    out = guesses(client, room, clock, [("a", "fox"), ("b", "zz"), ("c", "dog"), ("d", "dog"), ("e", "zz")])
    favs = out["favourites"]
    assert sorted(f["text"] for f in favs) == ["dog", "zz"] and all(f["count"] == 2 for f in favs)
    for f in favs:
        assert f["prob"] == pytest.approx(float(probs[f["token_id"]]), rel=1e-4) and f["pct"] == pct(f["prob"])
    assert out["favourite_prob"] == favs[0]["prob"]
    # the model's candidates and what it wrote, labelled as the distribution labels them ("·x": a space)
    for m, tid, piece, p in zip(out["model"], step.top_ids, step.top_pieces, step.top_probs):
        assert (m["token_id"], m["label"], m["pct"]) == (int(tid), visible(str(piece)), pct(p))
    assert out["sampled"]["label"] == visible(step.piece)


def test_without_the_whole_distribution_a_favourite_outside_the_candidates_gets_the_bound(setup):
    client, store, room, clock = setup
    store.model_of = lambda t: None  # no model, no logits kept: the kept candidates only
    store.move(room.code, room.key, 3)
    out = guesses(client, room, clock, [("a", "☃☃☃")])
    step = room.trace.steps[3]
    assert out["favourites"][0]["prob"] is None and out["favourites"][0]["pct"] == f"less than {pct(step.top_probs[-1])}"


def test_the_steps_distribution_is_computed_when_the_step_opens_not_at_the_first_guess(lm, setup, monkeypatch):
    """The teacher's Next asks for the step's distribution (and the next step's, the likely Next after it) on the
    model's thread, before any guess; the guesses then ask for nothing; a new trace asks for its step at once."""
    client, store, room, clock = setup
    asked, real = [], guessing.step_dist

    def counted(lm_, trace, step):
        asked.append((step.index, threading.current_thread().name))
        return real(lm_, trace, step)

    def until(n):
        deadline = time.time() + 10
        while len(asked) < n and time.time() < deadline:
            time.sleep(0.01)
        return [s for s, _ in asked]

    monkeypatch.setattr(guessing, "step_dist", counted)
    store.move(room.code, room.key, 1)  # the teacher moves back to step 1 (step 2's is kept from the room's start)
    assert until(1) == [1] and asked[0][1].startswith("rooms-model")  # no guess yet
    guesses(client, room, clock, [("a", "fox"), ("b", "dog")])
    store.move(room.code, room.key, 2)  # Next: step 2's is there already; step 3's asked now
    assert until(2) == [1, 3]
    guesses(client, room, clock, [("a", "fox")])
    time.sleep(0.2)
    assert until(3) == [1, 3]  # the guesses waited for nothing: each step computed once, before them
    other = room.trace.__class__(**room.trace.__dict__)
    store.set_trace(room.code, room.key, other, 3)  # a new trace on the teacher's screen: the room opens it at its first step
    assert until(4) == [1, 3, 0, 1]


def test_guesses_in_the_first_second_of_a_step_do_not_wait_for_its_forward_pass(setup, monkeypatch):
    """A class starts and its students read the text a while; the teacher's Next, and 100 students guess at the very
    moment the step opens. Its distribution was computed during the step before: the guesses wait for no forward
    pass, even while the model's thread is stuck in another one (held here until the guesses are in). No clock: a
    guess that waited for a pass would wait for ever, and the join's limit says so."""
    client, store, room, clock = setup
    real, gate, passes = guessing.step_dist, threading.Event(), []
    gate.set()

    def held(lm_, trace, step):
        passes.append((step.index, threading.current_thread().name))
        gate.wait()
        return real(lm_, trace, step)

    monkeypatch.setattr(guessing, "step_dist", held)
    room = store.create(room.trace, 0)  # a new class: step 0's pass, then step 1's (the likely Next)
    deadline = time.time() + 30
    while len(passes) < 2 and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # (step 1's pass returned)
    gate.clear()  # from now on the model's thread is stuck in whatever pass it starts
    store.move(room.code, room.key, 1)  # Next: step 2's pass starts, and is held
    done, go = [], threading.Barrier(100)

    def student(i):
        go.wait()
        store.guess(room.code, f"s{i}", "fox")
        done.append(i)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    held_passes = [s for s, _ in passes]
    gate.set()
    assert len(done) == 100, f"{100 - len(done)} guesses waited for a forward pass (passes asked: {held_passes})"
    assert held_passes[:2] == [0, 1] and all(name.startswith("rooms-model") for _, name in passes), passes
