"""The teacher's tools of a class room (issue 36) through the rooms' HTTP API, on a tiny model's trace: the results as
CSV (ui/rooms/results.py: one row per student and step, anonymous, the model's numbers against an independent forward
pass, no formula a spreadsheet would run), the projector's options (POST /options: the profanity filter applied on the
server, hide counts carried in the state; every bad value a 400 with one sentence)."""
from __future__ import annotations

import csv
import io

import pytest
import torch

from pipeline.sampling.stages import softmax
from ui.rooms import profanity as room_filter
from ui.rooms import results as room_results
from viz.style import visible
from viz.text import t

A, B, C = "browser-id-aaaa-1111", "browser-id-bbbb-2222", "browser-id-cccc-3333"


def guess(client, room, clock, sid, text):
    r = client.post(f"/api/rooms/{room.code}/guesses", json={"student": sid, "text": text})
    assert r.status_code == 200, r.text
    clock[0] += 1
    return r.json()


def teacher(client, room, path, body=None, key=True):
    return client.post(f"/api/rooms/{room.code}/{path}", json=body or {}, headers={"X-Room-Key": room.key} if key else {})


def probs_at(lm, step):
    with torch.inference_mode():
        return softmax(lm.model(torch.tensor([list(step.context_ids)])).logits[0, -1].float().numpy())


def read_csv(r):
    assert r.content.startswith("\ufeff".encode())  # (a spreadsheet reads it as UTF-8)
    return list(csv.reader(io.StringIO(r.content.decode("utf-8-sig"))))


def play(client, room, clock):
    """Two steps: step 2 guessed by A ("W", the real token), B (a formula), C (a rude word); step 3 by A and B."""
    s2, s3 = room.trace.steps[2], room.trace.steps[3]
    assert s2.piece == "W" and s3.piece == " He"  # (the tiny model's trace, as rooms_setup makes it)
    got = {"a2": guess(client, room, clock, A, "W"), "b2": guess(client, room, clock, B, '=HYPERLINK("http://x")'),
           "c2": guess(client, room, clock, C, "shit")}
    assert teacher(client, room, "reveal").status_code == 200
    assert teacher(client, room, "step", {"step": 3}).status_code == 200
    got |= {"a3": guess(client, room, clock, A, "He"), "b3": guess(client, room, clock, B, "-1")}
    assert teacher(client, room, "reveal").status_code == 200
    return got


def test_the_csv_has_a_row_per_student_and_step_with_the_models_numbers(lm, setup):
    client, store, room, clock = setup
    got = play(client, room, clock)
    assert client.get(f"/api/rooms/{room.code}/results.csv").status_code == 403  # a student cannot
    assert client.get(f"/api/rooms/{room.code}/results.csv", headers={"X-Room-Key": "nope"}).status_code == 403
    r = client.get(f"/api/rooms/{room.code}/results.csv", headers={"X-Room-Key": room.key})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert f'filename="class-{room.code}-results.csv"' in r.headers["content-disposition"]
    rows = read_csv(r)
    assert rows[0] == ["text", "student", "step", "guess", "right", "its first token, as the model writes it",
                       "the model's probability of that token", "its rank (1 = the model's most likely)", "the next token in the text"]
    assert {x[0] for x in rows[1:]} == {"1"}  # (the room's first text)
    body = [x[1:] for x in rows[1:]]
    assert [(x[0], x[1]) for x in body] == [("S1", "2"), ("S2", "2"), ("S3", "2"), ("S1", "3"), ("S2", "3")]
    assert all(sid not in r.text for sid in (A, B, C))  # never the browser's id
    assert [x[2] for x in body] == ["W", "'=HYPERLINK(\"http://x\")", "shit", "He", "'-1"]  # as typed; no formula runs
    for x, key in zip(body, ("a2", "b2", "c2", "a3", "b3")):
        step = room.trace.steps[int(x[1])]
        p = probs_at(lm, step)
        tid = got[key]["token_id"]
        assert x[7] == visible(step.piece)
        assert x[3] == ("yes" if int(step.token_id) in got[key]["ids"] else "no")
        if tid is None:
            assert x[4:7] == ["", "", ""]
            continue
        assert x[4] == room_results.safe(visible(got[key]["piece"]))
        assert float(x[5]) == pytest.approx(float(p[tid]), rel=1e-4)
        assert int(x[6]) == int((p > p[tid]).sum()) + 1
    assert body[0][3] == "yes" and body[3][3] == "yes"  # "W" and "He": the real tokens
    assert body[2][3] == "no"


def test_a_german_teachers_csv_has_semicolons_and_decimal_commas(lm, setup):
    """German Excel reads `;` between cells and a decimal comma: the file is written so in the teacher's language."""
    client, store, room, clock = setup
    got = play(client, room, clock)
    r = client.get(f"/api/rooms/{room.code}/results.csv", headers={"X-Room-Key": room.key, "Accept-Language": "de-DE,de;q=0.9"})
    text = r.content.decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text), delimiter=";"))
    assert rows[0][1] == t("room.csv_student", locale="de") and all(len(x) == 9 for x in rows)
    first = rows[1][1:]
    p = probs_at(lm, room.trace.steps[2])[got["a2"]["token_id"]]
    assert "," in first[5] and "." not in first[5] and float(first[5].replace(",", ".")) == pytest.approx(float(p), rel=1e-4)
    assert first[3] == t("room.csv_yes", locale="de")
    en = client.get(f"/api/rooms/{room.code}/results.csv", headers={"X-Room-Key": room.key}).content.decode("utf-8-sig")
    assert list(csv.reader(io.StringIO(en)))[1][6] == first[5].replace(",", ".")  # (English: commas between, a decimal point)


def test_a_cell_a_spreadsheet_would_run_is_written_as_text():
    for cell in ("=1+1", "+1", "-2", "@SUM(A1)", "\t=1", "\r=1", "  =1", "\n1"):
        assert room_results.safe(cell).startswith("'"), cell
    for cell in ("Paris", "1", "0.25", "·=", "a=b", "", None):
        assert room_results.safe(cell) == ("" if cell is None else cell)


def test_a_room_without_guesses_gives_the_header_alone(setup):
    client, store, room, _ = setup
    rows = read_csv(client.get(f"/api/rooms/{room.code}/results.csv", headers={"X-Room-Key": room.key}))
    assert len(rows) == 1 and rows[0][:2] == ["text", "student"]


def revealed_texts(client, room):
    return [r["text"] for r in client.get(f"/api/rooms/{room.code}").json()["room"]]


def test_the_profanity_filter_works_on_the_server_and_the_teacher_chooses_it(setup):
    client, store, room, clock = setup
    guess(client, room, clock, A, "W")
    guess(client, room, clock, B, "shit")
    guess(client, room, clock, C, "Sh1t happens")
    state = client.get(f"/api/rooms/{room.code}").json()
    assert state["options"] == {"profanity": "replace", "hide_counts": False}  # (the default, before the reveal too)
    teacher(client, room, "reveal")
    r = client.get(f"/api/rooms/{room.code}")
    assert "shit" not in r.text.lower() and "sh1t" not in r.text.lower()  # not a byte of it leaves the server
    texts = revealed_texts(client, room)
    assert "W" in texts and any("***" in x for x in texts) and not any(room_filter.rude(x) for x in texts), texts
    assert all("shit" not in f["text"].lower() for f in r.json()["favourites"])
    v = r.json()["version"]
    out = teacher(client, room, "options", {"profanity": "hide"})
    assert out.status_code == 200 and out.json()["options"]["profanity"] == "hide" and out.json()["version"] > v
    assert "***" not in "".join(revealed_texts(client, room)) and "W" in revealed_texts(client, room)
    teacher(client, room, "options", {"profanity": "off"})
    assert "shit" in revealed_texts(client, room)  # (the teacher's choice: as typed)


def test_hide_counts_is_carried_in_the_state(setup):
    client, store, room, _ = setup
    out = teacher(client, room, "options", {"hide_counts": True})
    assert out.status_code == 200 and out.json()["options"] == {"profanity": "replace", "hide_counts": True}
    assert client.get(f"/api/rooms/{room.code}", params={"student": "s9"}).json()["options"]["hide_counts"] is True


@pytest.mark.parametrize("body", [{"profanity": "mask"}, {"hide_counts": "yes"}, {"hide_counts": 1}, {"colour": "red"}, {},
                                  {"code": "X"}, {"key": "x"}])
def test_a_bad_option_is_a_400_with_one_sentence_and_changes_nothing(setup, body):
    client, store, room, _ = setup
    v = room.version
    r = teacher(client, room, "options", body)
    assert r.status_code == 400 and set(r.json()) == {"error"} and r.json()["error"].endswith(".")
    assert room.options == {"profanity": "replace", "hide_counts": False} and room.version == v


def test_only_the_teacher_sets_the_options(setup):
    client, store, room, _ = setup
    assert teacher(client, room, "options", {"profanity": "off"}, key=False).status_code == 403
    assert room.options["profanity"] == "replace"
