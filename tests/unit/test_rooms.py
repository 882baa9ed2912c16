"""A class as one room (ui/rooms/rooms.py, ui/rooms/api.py): the room's contract through its HTTP API, on a tiny model's
trace: codes, the teacher's key, guesses grouped by the model's first token, the reveal's numbers against an
independent forward pass, ETags, limits, and a 4xx with one sentence for every bad request."""
import json

import numpy as np
import pytest
import torch

from pipeline.sampling.stages import softmax
from ui.rooms import profanity as room_filter
from ui.rooms import rooms


def test_a_room_has_a_readable_code_and_a_secret_key(setup):
    client, store, room, _ = setup
    assert len(room.code) == 6 and set(room.code) <= set(rooms.CODE_LETTERS) and len(room.key) >= 20
    r = client.get(f"/api/rooms/{room.code.lower()}", params={"student": "s1"})  # (a code typed in lower case)
    assert r.status_code == 200 and r.json()["step"] == 2 and r.json()["phase"] == "guessing" and r.json()["students"] == 1
    assert "key" not in r.text and room.key not in r.text


def test_guesses_are_grouped_by_the_models_first_token_and_revealed_with_its_numbers(lm, setup):
    client, store, room, clock = setup
    step = room.trace.steps[2]
    for sid, text in (("a", "fox"), ("b", " fox"), ("c", "fox jumps"), ("d", "zz")):
        assert client.post(f"/api/rooms/{room.code}/guesses", json={"student": sid, "text": text}).status_code == 200
        clock[0] += 1
    state = client.get(f"/api/rooms/{room.code}").json()
    assert state["guesses"] == 4 and "room" not in state  # nothing of the answers before the reveal
    assert client.post(f"/api/rooms/{room.code}/reveal").status_code == 403  # no key: a student cannot
    r = client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key})
    out = r.json()
    assert out["phase"] == "revealed"
    with torch.inference_mode():
        probs = softmax(lm.model(torch.tensor([list(step.context_ids)])).logits[0, -1].float().numpy())
    def first(text):  # as the model writes it: of the spellings with and without a space, the likelier first token
        return max((lm.tokens.plain_ids(v)[0] for v in (text.lstrip(" "), " " + text.lstrip(" "))), key=lambda t: probs[t])

    want = {}
    for text in ("fox", " fox", "fox jumps", "zz"):
        want[first(text)] = want.get(first(text), 0) + 1
    assert {r["token_id"]: r["count"] for r in out["room"]} == want and max(want.values()) >= 2  # ("fox", " fox": one answer)
    fox = out["room"][0]["token_id"]
    assert [m["token_id"] for m in out["model"]] == [int(t) for t in np.argsort(-probs, kind="stable")[:len(out["model"])]]
    assert out["model"][0]["prob"] == pytest.approx(float(probs.max()), rel=1e-4)
    assert out["favourite_prob"] == pytest.approx(float(probs[fox]), rel=1e-4)
    assert out["top_share"] == pytest.approx(sum(r["count"] for r in out["room"] if r["token_id"] == out["model"][0]["token_id"]) / 4)


def test_one_live_guess_a_student_a_step_and_moving_on_opens_guessing_again(setup):
    client, store, room, clock = setup
    g = f"/api/rooms/{room.code}/guesses"
    assert client.post(g, json={"student": "a", "text": "dog"}).status_code == 200
    assert client.post(g, json={"student": "a", "text": "cat"}).status_code == 429  # too soon
    clock[0] += 1
    assert client.post(g, json={"student": "a", "text": "cat"}).status_code == 200
    assert client.get(f"/api/rooms/{room.code}").json()["guesses"] == 1
    key = {"X-Room-Key": room.key}
    client.post(f"/api/rooms/{room.code}/reveal", headers=key)
    clock[0] += 1
    assert client.post(g, json={"student": "a", "text": "cow"}).status_code == 409  # revealed: wait for the next
    s = client.post(f"/api/rooms/{room.code}/step", json={"step": 3}, headers=key).json()
    assert s["step"] == 3 and s["phase"] == "guessing" and s["guesses"] == 0


def test_an_unchanged_room_answers_304(setup):
    client, store, room, clock = setup
    r = client.get(f"/api/rooms/{room.code}", params={"student": "a"})
    tag = r.headers["etag"]
    r2 = client.get(f"/api/rooms/{room.code}", params={"student": "a"}, headers={"If-None-Match": tag})
    assert r2.status_code == 304 and r2.content == b""
    client.post(f"/api/rooms/{room.code}/guesses", json={"student": "b", "text": "x"})
    assert client.get(f"/api/rooms/{room.code}", headers={"If-None-Match": tag}).status_code == 200


def test_hidden_guesses_leave_the_chart(setup):
    client, store, room, clock = setup
    client.post(f"/api/rooms/{room.code}/guesses", json={"student": "a", "text": "<img src=x onerror=alert(1)>"})
    key = {"X-Room-Key": room.key}
    out = client.post(f"/api/rooms/{room.code}/reveal", headers=key).json()
    assert out["room"][0]["text"] == "<img src=x onerror=alert(1)>"  # as typed: the page escapes it (a JSON string)
    out = client.post(f"/api/rooms/{room.code}/hide", json={"text": out["room"][0]["text"]}, headers=key).json()
    assert out["room"] == []


@pytest.mark.parametrize("path,body,status", [
    ("/api/rooms/NOPE42", None, 404),
    ("/api/rooms/{code}/guesses", {"student": "a", "text": ""}, 400),
    ("/api/rooms/{code}/guesses", {"student": "a", "text": "x" * 41}, 400),
    ("/api/rooms/{code}/guesses", {"student": "a", "text": 5}, 400),
    ("/api/rooms/{code}/guesses", {"student": "a b<", "text": "x"}, 400),
    ("/api/rooms/{code}/guesses", [1, 2], 400),
    ("/api/rooms/{code}/step", {"step": 99}, 403),  # no key
    ("/api/rooms", b'{"example": "flat", "step": 1e999}', 400),  # (a number too large for any int)
    ("/api/rooms", {"example": "no-such-trace"}, 404),
    ("/api/rooms", {}, 400),
])
def test_bad_requests_get_a_4xx_and_a_sentence(setup, path, body, status):
    client, store, room, _ = setup
    url = path.format(code=room.code)
    r = (client.get(url) if body is None else client.post(url, content=body, headers={"Content-Type": "application/json"})
         if isinstance(body, bytes) else client.post(url, json=body))
    assert r.status_code == status and r.json()["error"].endswith("."), (r.status_code, r.text)


def test_a_closed_room_says_so_and_refuses_guesses(setup):
    client, store, room, clock = setup
    key = {"X-Room-Key": room.key}
    assert client.post(f"/api/rooms/{room.code}/step", json={"step": 99}, headers=key).status_code == 400
    assert client.post(f"/api/rooms/{room.code}/close", headers={"X-Room-Key": "wrong"}).status_code == 403
    assert client.post(f"/api/rooms/{room.code}/close", headers=key).json()["closed"] is True
    assert client.get(f"/api/rooms/{room.code}").json()["closed"] is True
    assert client.post(f"/api/rooms/{room.code}/guesses", json={"student": "a", "text": "x"}).status_code == 410


def test_a_room_ends_after_three_hours_without_its_teacher(setup):
    client, store, room, clock = setup
    r0 = client.get(f"/api/rooms/{room.code}")
    clock[0] += rooms.IDLE_S * 0.75
    assert client.get(f"/api/rooms/{room.code}", headers={"X-Room-Key": room.key}).status_code == 200  # the teacher's page polls
    clock[0] += rooms.IDLE_S * 0.75
    assert client.get(f"/api/rooms/{room.code}").json()["closed"] is False  # (the teacher's poll kept it)
    clock[0] += rooms.IDLE_S + 1
    r = client.get(f"/api/rooms/{room.code}", headers={"If-None-Match": r0.headers["ETag"]})
    assert r.status_code == 200 and r.json()["closed"] is True  # a page polling with its ETag hears that it ended
    assert client.get(f"/api/rooms/{room.code}", headers={"X-Room-Key": room.key}).json()["closed"] is True  # (no way back)
    assert client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key}).status_code == 410


def test_too_many_rooms_is_refused(setup, monkeypatch):
    client, store, room, _ = setup
    monkeypatch.setattr(rooms, "MAX_ROOMS", 2)
    store.create(room.trace, 0)
    with pytest.raises(rooms.RoomError) as e:
        store.create(room.trace, 0)
    assert e.value.status == 429


def test_the_rooms_own_trace_again_moves_the_step_and_keeps_the_guesses(setup):
    """A reloaded teacher's page, or another lesson step of the same gallery trace, sends the room's own trace: the
    step moves (guessing again), the guesses made so far stay; another trace starts afresh."""
    client, store, room, _ = setup
    assert client.post(f"/api/rooms/{room.code}/guesses", json={"student": "a", "text": "fox"}).status_code == 200
    v = room.version
    store.set_trace(room.code, room.key, room.trace, 2)
    assert room.version == v and client.get(f"/api/rooms/{room.code}").json()["guesses"] == 1  # nothing changed
    store.set_trace(room.code, room.key, room.trace, 1)
    state = client.get(f"/api/rooms/{room.code}").json()
    assert state["step"] == 1 and state["phase"] == "guessing" and state["guesses"] == 0
    store.set_trace(room.code, room.key, room.trace, 2)
    assert client.get(f"/api/rooms/{room.code}").json()["guesses"] == 1  # step 2's guess is still the room's
    was = client.get(f"/api/rooms/{room.code}").json()["trace"]
    other = room.trace.__class__(**room.trace.__dict__)
    store.set_trace(room.code, room.key, other, 2)
    state = client.get(f"/api/rooms/{room.code}").json()
    assert room.trace is other and state["guesses"] == 0 and state["trace"] != was
    assert state["step"] == 0  # (the teacher's own text opens at its first step, whatever step their screen shows)
    assert list(room.probs) == [(room.trace_n, 0), (room.trace_n, 1)]  # (not the old trace's: the new one's, asked at once, and its next)
    # the text before had a guess: its results are kept (the summary's `earlier`, the CSV's text 1)
    assert [p["text"] for p in room.past] == [1] and [r[:2] for r in room.past[0]["rows"]] == [["S1", 2]]
    summary = client.get(f"/api/rooms/{room.code}/summary").json()
    assert summary["text"] == 2 and summary["earlier"][0]["text"] == 1
    store.set_trace(room.code, room.key, room.trace.__class__(**room.trace.__dict__), 2, example="chat")  # a lesson's step
    assert client.get(f"/api/rooms/{room.code}").json()["step"] == 2 and len(room.past) == 1  # (no guesses: nothing to keep)


def test_a_reloaded_teachers_page_gets_its_room_back_with_the_right_key_only(setup, monkeypatch):
    from ui import class_room

    client, store, room, _ = setup
    monkeypatch.setattr(class_room, "ROOMS", store)
    good = json.dumps({"code": room.code.lower(), "key": room.key})
    r, card, kept = class_room.resume_class(good, "http://127.0.0.1:7860/")
    assert r is room and kept == {"code": room.code, "key": room.key}
    assert f"data-code='{room.code}'" in card and "?room=" + room.code in card and "class-lesson" in card
    for bad in (json.dumps({"code": room.code, "key": "guessed"}), json.dumps({"code": "ZZZZZZ", "key": room.key}),
                "not json", "", None, json.dumps([1]), json.dumps({"code": room.code})):
        assert class_room.resume_class(bad, "") is None, bad
    store.close(room.code, room.key)
    assert class_room.resume_class(good, "") is None  # an ended class is not asked back


def test_a_lesson_pick_names_a_gallery_step_or_nothing():
    from ui import examples

    assert examples.lesson_pick("mountain:10") == ("mountain", 10)
    for bad in ("mountain", "nowhere:1", "mountain:-1", "mountain:x", "mountain:99999999", None, "../x:1"):
        assert examples.lesson_pick(bad) is None, bad
    steps = examples.lesson_steps()
    assert len(steps) >= 5 and all(title and x.say for title, x in steps)


def test_the_join_link_reaches_the_students_from_a_laptop(monkeypatch):
    """The teacher opens the app on the laptop that serves it (127.0.0.1): a join link there would be no use to a
    phone. Served on 0.0.0.0: the laptop's network address; served on 127.0.0.1 only: a sentence says how to fix it."""
    from ui import class_room, network

    real = network.lan_address()  # this machine's (no packet sent): never a loopback address
    assert real is None or (not real.startswith("127.") and real.count(".") == 3)
    monkeypatch.setattr(network, "lan_address", lambda: "192.168.1.23")
    monkeypatch.setitem(network.SERVED_ON, "host", "0.0.0.0")
    assert class_room.join_base("http://127.0.0.1:7860/") == ("http://192.168.1.23:7860/", "")
    assert class_room.join_base("http://localhost/x/") == ("http://192.168.1.23/x/", "")
    assert class_room.join_base("http://10.0.0.5:7860/") == ("http://10.0.0.5:7860/", "")  # a student could open it already
    monkeypatch.setitem(network.SERVED_ON, "host", "127.0.0.1")
    base, note = class_room.join_base("http://127.0.0.1:7860/")
    assert base == "http://127.0.0.1:7860/" and "--host 0.0.0.0" in note
    monkeypatch.setitem(network.SERVED_ON, "host", "0.0.0.0")
    monkeypatch.setattr(network, "lan_address", lambda: None)  # no network at all
    assert "--host 0.0.0.0" in class_room.join_base("http://127.0.0.1:7860/")[1]


def test_a_full_room_says_so_and_students_gone_free_their_places(setup, monkeypatch):
    client, store, room, clock = setup
    monkeypatch.setattr(rooms, "MAX_STUDENTS", 3)
    for sid in ("a", "b", "c"):
        assert client.get(f"/api/rooms/{room.code}", params={"student": sid}).status_code == 200
    r = client.get(f"/api/rooms/{room.code}", params={"student": "d"})
    assert r.status_code == 429 and "full" in r.json()["error"]
    assert client.get(f"/api/rooms/{room.code}", params={"student": "a"}).status_code == 200  # one present stays
    clock[0] += rooms.PRESENT_S + 1  # everyone gone a while (made-up ids too): their places free again
    for sid in ("d", "e", "f"):
        assert client.get(f"/api/rooms/{room.code}", params={"student": sid}).status_code == 200
    assert len(room.students) == 3


def test_a_refusal_the_page_shows_is_in_the_language_of_the_page_that_asked(setup):
    """The rooms' API runs outside Gradio's listeners: a refusal is written in the asking page's language (its address's
    ?lang=, else Accept-Language), a poll's too (found only when it is refused)."""
    from viz.text import t

    client, store, room, clock = setup
    fr = {"Referer": "http://x/?room=ABCDEF&lang=fr"}
    r = client.get("/api/rooms/NOPE42", headers=fr)
    assert r.status_code == 404 and r.json()["error"] == t("rooms.no_class", locale="fr") != t("rooms.no_class")
    g = f"/api/rooms/{room.code}/guesses"
    r = client.post(g, json={"student": "a", "text": "  "}, headers={"Accept-Language": "de-DE,de;q=0.9"})
    assert r.status_code == 400 and r.json()["error"] == t("error.guess_empty", locale="de")
    assert client.post(f"/api/rooms/{room.code}/reveal", headers=fr).json()["error"] == t("rooms.teacher_only", locale="fr")
    assert client.get("/api/rooms/NOPE42").json()["error"] == t("rooms.no_class")  # (English: no language asked)


def test_the_join_link_carries_the_teachers_language(setup, monkeypatch):
    from ui import class_room
    from viz.text import speaking

    client, store, room, _ = setup
    monkeypatch.setattr(class_room, "ROOMS", store)
    good = json.dumps({"code": room.code, "key": room.key})
    assert class_room.join_link("http://h/", "ABCDEF") == "http://h/?room=ABCDEF"
    with speaking("pt-BR"):  # (a hint: each student's browser's own language first)
        assert class_room.join_link("http://h/", "ABCDEF") == "http://h/?room=ABCDEF&hl=pt-BR"
        card = class_room.resume_class(good, "http://10.0.0.5:7860/")[1]
    assert f"?room={room.code}&amp;hl=pt-BR" in card


def test_a_student_reads_the_class_in_their_browsers_language_and_the_teachers_where_the_page_has_none():
    """A join link carries the teacher's language as a hint: a Portuguese phone in a German class speaks Portuguese,
    a Korean one (a language the page does not speak) German; an explicit ?lang= wins."""
    from types import SimpleNamespace as NS

    from viz.text import of

    def asked(url, accept):
        return of(NS(headers={"referer": url, "accept-language": accept}))

    assert asked("http://h/?room=ABCDEF&hl=de", "pt-BR,pt;q=0.9") == "pt-BR"
    assert asked("http://h/?room=ABCDEF&hl=de", "ko-KR,ko;q=0.9") == "de"
    assert asked("http://h/?room=ABCDEF&hl=de&lang=fr", "pt-BR") == "fr"
    assert asked("http://h/?room=ABCDEF", "ko-KR") == "en"


def _reveal(client, room, guesses):
    """Each (student, text, page language) guess sent from a page of that language; the revealed state's answers."""
    for sid, text, lang in guesses:
        r = client.post(f"/api/rooms/{room.code}/guesses", json={"student": sid, "text": text}, headers={"Accept-Language": lang})
        assert r.status_code == 200, r.text
    return client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key}).json()


def test_a_rude_word_is_masked_in_the_rooms_language_and_the_language_of_the_page_that_sent_it(lm, setup):
    """A German room: a German and a Portuguese swear word (typed on a Portuguese phone) are masked like the English
    ones; an English room of English pages keeps "bite", which is rude only in French, and masks it from a French page."""
    from viz.text import speaking

    client, store, room, clock = setup
    with speaking("de"):
        de = store.create(room.trace, 2)
    out = _reveal(client, de, [("a", "Arschloch", "de-DE"), ("b", "caralho", "pt-BR"), ("c", "shit", "en"), ("d", "Haus", "de")])
    texts = {r["text"] for r in out["room"]}
    assert texts == {room_filter.MASK, "Haus"} and not {"Arschloch", "caralho", "shit"} & set(json.dumps(out).split('"'))
    assert all("langs" not in r for r in out["room"])
    en = _reveal(client, room, [("a", "bite", "en")])
    assert [r["text"] for r in en["room"]] == ["bite"]
    clock[0] += 60
    store.move(room.code, room.key, 3)
    fr = _reveal(client, room, [("a", "bite", "fr-FR")])
    assert [r["text"] for r in fr["room"]] == [room_filter.MASK]


def test_spaces_around_a_guess_never_change_its_answer_and_other_capitals_are_right(lm, setup):
    client, store, room, clock = setup
    step = room.trace.steps[2]
    real = lm.tokens.piece(int(step.token_id)).strip()
    got = {}
    for sid, text in (("a", real), ("b", "  " + real), ("c", real + " "), ("d", real.swapcase())):
        got[sid] = client.post(f"/api/rooms/{room.code}/guesses", json={"student": sid, "text": text}).json()
        clock[0] += 1
    assert got["a"]["token_id"] == got["b"]["token_id"] == got["c"]["token_id"] and got["b"]["text"] == real
    assert int(step.token_id) in got["a"]["ids"]
    out = client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key}).json()
    assert real.swapcase() != real  # (the tiny model's token here has a letter)
    # the capitals differ: the real token is among the first tokens of the guess's other capitals, and right
    assert int(step.token_id) in got["d"]["case_ids"] and int(step.token_id) not in got["d"]["ids"]
    assert out["score"]["class_share_right"] == 1.0
    assert out["score"]["class_right"] is True and out["score"]["class_split"] is False
