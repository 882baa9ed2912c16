"""Real text against the model (pipeline/passages.py, ui/rooms/scores.py) on the embedded SmolLM2-135M-Instruct: every
number of a real-text round (the model's probability, rank and top-1 of the real token at each position, its bits, the
class's bits) equals an independent forward pass over the passage: the document-start token, then the text."""
import math

import numpy as np
import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient

from pipeline import passages
from ui.rooms import scores as room_scores
from ui.rooms import rooms
from ui.rooms import api as rooms_api

pytestmark = pytest.mark.integration


def _probs(smol, ids):
    """Row j: this file's own softmax of the model's logits after the first j + 1 of `ids` (one plain forward pass)."""
    with torch.inference_mode():
        logits = smol.model(torch.tensor([ids])).logits[0].double().numpy()
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_every_passage_reads_back_and_is_apart_from_the_gallery(smol):
    from pipeline import gallery

    names = passages.names()
    assert len(names) >= 6 and not set(names) & {e.name for e in gallery.entries()}
    for p in passages.entries():
        assert p.source and p.licence and p.title
        ids = passages.token_ids(smol, p)
        assert smol.tokens.tok.decode(ids) == p.text and 10 <= len(ids) <= passages.MAX_TOKENS


@pytest.mark.parametrize("name", ["text-tyger", "text-octopus"])
def test_a_passage_trace_is_the_model_reading_the_real_text(smol, name):
    p = passages.get(name)
    tr = passages.trace(smol, p)
    ids = passages.token_ids(smol, p)
    start = smol.tokens.tok.convert_tokens_to_ids("<|endoftext|>")
    assert list(tr.prompt.token_ids) == [start] and [s.token_id for s in tr.steps] == ids and tr.text == p.text
    probs = _probs(smol, [start] + ids)
    for n, step in enumerate(tr.steps):  # step n: the passage's token n after tokens 0..n-1
        row, real = probs[n], ids[n]
        assert list(step.context_ids) == [start] + ids[:n]
        assert step.chosen_prob == pytest.approx(row[real], rel=2e-3, abs=1e-7)
        assert int(step.top_ids[0]) == int(np.argmax(row)) or row[int(step.top_ids[0])] == pytest.approx(row.max(), rel=1e-4)
        m = room_scores.model_numbers(step)
        assert m["model_bits"] == pytest.approx(-math.log2(row[real]), rel=2e-3, abs=1e-3)
        assert m["model_right"] == (int(np.argmax(row)) == real)
        rank = int((row > row[real]).sum()) + 1
        top = [int(t) for t in step.top_ids]
        if real in top:  # the kept candidates rank it as the whole vocabulary does
            assert top.index(real) + 1 == pytest.approx(rank, abs=1)


def test_a_real_text_room_scores_the_class_and_the_model(smol, monkeypatch):
    from ui import examples

    monkeypatch.setattr(examples, "loaded", lambda: smol)
    store = rooms.Rooms(model_of=lambda t: smol)
    monkeypatch.setattr(rooms_api, "ROOMS", store)
    app = FastAPI()
    app.include_router(rooms_api.router)
    client = TestClient(app)
    assert client.post("/api/rooms", json={"passage": "no-such"}).status_code == 404
    made = client.post("/api/rooms", json={"passage": "text-tyger", "step": 2}).json()
    code, key = made["code"], made["key"]
    ids = passages.token_ids(smol, passages.get("text-tyger"))
    start = smol.tokens.tok.convert_tokens_to_ids("<|endoftext|>")
    probs = _probs(smol, [start] + ids)
    state = client.get(f"/api/rooms/{code}").json()
    assert state["real_text"] is True and state["passage"] == "text-tyger" and state["step"] == 2
    real = smol.tokens.tok.decode([ids[2]])  # step 2 asks the passage's token 2 after tokens 0, 1 ("Tyger Tyger" ...)
    guesses = {"a": real.strip(), "b": real.strip(), "c": "tiger", "d": "cat", "e": "cat"}
    for sid, text in guesses.items():
        r = client.post(f"/api/rooms/{code}/guesses", json={"student": sid, "text": text})
        assert r.status_code == 200, r.text
    out = client.post(f"/api/rooms/{code}/reveal", headers={"X-Room-Key": key}).json()
    sc = out["score"]
    assert out["sampled"]["token_id"] == ids[2]
    assert sc["model_prob"] == pytest.approx(probs[2][ids[2]], rel=2e-3)
    assert sc["model_bits"] == pytest.approx(-math.log2(probs[2][ids[2]]), rel=2e-3)
    assert sc["model_right"] == (int(np.argmax(probs[2])) == ids[2])
    right = [ids[2] in [smol.tokens.plain_ids(v)[0] for v in (t, " " + t)] for t in guesses.values()]
    assert sc["class_share_right"] == pytest.approx(sum(right) / 5)
    wrong = {t for t, ok in zip(guesses.values(), right) if not ok}
    assert sc["class_bits"] == pytest.approx(-math.log2((sum(right) + 1) / (5 + len(wrong) + 1)))
    summary = client.get(f"/api/rooms/{code}/summary").json()
    assert summary["real_text"] is True and summary["steps"][0]["real"]["token_id"] == ids[2]
