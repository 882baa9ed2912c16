"""A student's guess in a class room is rated once (ui/rooms/ratings.py): after the reveal the student's page shows the
room's rating of it (GET /api/rooms/{code}/rating), the page's own rating of the same text (pipeline.guess.rate) with
the room's verdict, made once per text at a step from the logits the room computed when the step opened: no forward
pass for the step again, none per student."""
import re

import pytest

from pipeline import guess as guessing
from ui.rooms import ratings as room_ratings
from ui.rooms import scores as room_scores
from viz import guess as guess_viz
from viz.text import speaking


def _attrs(html: str) -> dict:
    return dict(re.findall(r"data-(\w+)='([^']*)'", html))


def _rating(client, room, sid, lang=None):
    headers = {"Referer": f"http://page/?room={room.code}&lang={lang}"} if lang else {}
    return client.get(f"/api/rooms/{room.code}/rating", params={"student": sid}, headers=headers)


def test_after_the_reveal_a_students_rating_is_the_pages_made_once_per_text(lm, setup, monkeypatch):
    client, store, room, clock = setup
    sent = {}
    for sid, text in (("a", "fox"), ("b", "fox"), ("c", " the dog"), ("d", "Zq!")):
        r = client.post(f"/api/rooms/{room.code}/guesses", json={"student": sid, "text": text})
        assert r.status_code == 200, r.text
        sent[sid] = r.json()
        clock[0] += 1
    # before the reveal: refused, in the page's language (the rating says the answer)
    r = _rating(client, room, "a")
    assert r.status_code == 409 and "not revealed" in r.json()["error"]
    assert _rating(client, room, "a", lang="fr").json()["error"] != r.json()["error"]
    client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key})

    made, passes = [], []
    real_rating, real_rows = room_ratings.page_rating, guessing._rows
    monkeypatch.setattr(room_ratings, "page_rating", lambda *a: made.append(a[3].text) or real_rating(*a))
    monkeypatch.setattr(guessing, "_rows", lambda lm_, context, more: passes.append(len(more)) or real_rows(lm_, context, more))
    got = {sid: _rating(client, room, sid) for sid in ("a", "b", "c", "d", "nobody")}
    assert all(r.status_code == 200 for r in got.values())
    assert got["nobody"].json() == {"step": 2, "html": None}
    assert sorted(made) == ["Zq!", "fox", "the dog"]  # once per text: "a" and "b" share theirs
    assert 0 not in passes  # the step's own logits were the room's: no forward pass for them again

    step = room.trace.steps[2]
    for sid, text in (("a", "fox"), ("c", " the dog"), ("d", "Zq!")):
        body = got[sid].json()
        assert body["step"] == 2
        own = guessing.rate(lm, room.trace, 2, text)  # the page's rating, its own forward pass
        want = _attrs(guess_viz.rating_html(own, 2, step))
        seen = _attrs(body["html"])
        assert seen["rank"] == want["rank"] and float(seen["prob"]) == pytest.approx(float(want["prob"]), rel=1e-5)
        g = room_ratings.Guess(text, sent[sid]["token_id"], sent[sid]["piece"], tuple(sent[sid]["ids"]), case_ids=tuple(sent[sid]["case_ids"]))
        assert seen["chosen"] == str(int(room_scores.is_right(g, step.token_id)))  # the room's verdict, the one shown everywhere
    assert got["a"].json() == got["b"].json()


def test_the_rating_is_in_the_language_of_the_page_that_asks(lm, setup):
    client, store, room, clock = setup
    client.post(f"/api/rooms/{room.code}/guesses", json={"student": "a", "text": "fox"})
    client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key})
    en, fr = _rating(client, room, "a").json()["html"], _rating(client, room, "a", lang="fr").json()["html"]
    with speaking("fr"):
        want = guess_viz.rating_html(guessing.rate(lm, room.trace, 2, "fox"), 2, room.trace.steps[2])
    assert fr != en and re.sub(r"data-chosen='\d'", "", fr) == re.sub(r"data-chosen='\d'", "", want)


def test_a_new_step_asks_for_a_new_guess_before_any_rating(lm, setup):
    client, store, room, clock = setup
    client.post(f"/api/rooms/{room.code}/guesses", json={"student": "a", "text": "fox"})
    client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key})
    assert _rating(client, room, "a").json()["html"]
    store.move(room.code, room.key, 3)
    assert _rating(client, room, "a").status_code == 409  # the next step, not revealed
    client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key})
    assert _rating(client, room, "a").json() == {"step": 3, "html": None}  # no guess of theirs at step 3


def test_a_rating_whose_pass_failed_is_made_again_when_asked(lm, setup, monkeypatch):
    client, store, room, clock = setup
    client.post(f"/api/rooms/{room.code}/guesses", json={"student": "a", "text": "fox"})
    client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key})
    real, calls = room_ratings.page_rating, []

    def once_broken(*a):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the forward pass failed")
        return real(*a)

    monkeypatch.setattr(room_ratings, "page_rating", once_broken)
    with pytest.raises(RuntimeError):
        _rating(client, room, "a")
    assert _rating(client, room, "a").json()["html"] and len(calls) == 2  # not the failed one kept for good
