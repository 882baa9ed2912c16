"""The class-against-model score (ui/rooms/scores.py): each formula on hand-worked numbers, and a room on a tiny model
whose revealed state and summary carry them (the model's numbers against an independent forward pass)."""
import math
from types import SimpleNamespace as NS

import numpy as np
import pytest
import torch

from pipeline.sampling.stages import softmax
from tests.rooms_setup import room_setup
from ui.rooms import scores as S
from ui.rooms.rooms import Guess

REAL = 7


def g(text, tid, ids=None, piece="x"):
    return Guess(text, tid, piece, tuple(ids if ids is not None else (tid,)))


def ten():
    """10 guesses: 4 right (3 spelled "mat" -> 7, 1 " mat" -> 7 via its other spelling), 3 "cat", 2 "dog", 1 "rug"."""
    return ([g("mat", 7), g("mat", 7), g("mat", 7), g(" Mat", 9, ids=(9, 7))] + [g("cat", 3)] * 3 + [g("dog", 4)] * 2
            + [g("rug", 5)])


def test_a_guess_is_right_when_the_real_token_is_the_first_token_of_one_of_its_spellings():
    assert S.is_right(g("mat", 7), REAL) and S.is_right(g(" Mat", 9, ids=(9, 7)), REAL)
    assert not S.is_right(g("cat", 3), REAL) and not S.is_right(Guess("zz", None, "zz"), REAL)
    assert S.is_right(Guess("mat", 7, "mat"), REAL)  # (a guess kept before `ids` existed: its token)


def test_the_share_right_is_the_mean_of_individual_top1():
    assert S.class_share_right(ten(), REAL) == pytest.approx(0.4)
    assert S.class_share_right([], REAL) is None


def test_the_plurality_answer_is_right_only_when_unique_and_right():
    # "mat" (3 as token 7) and " Mat" (token 9, right by its other spelling) name the real token: 4, beside "cat" (3)
    assert S.class_right(ten(), REAL) is True and S.class_split(ten(), REAL) is False
    assert S.class_split(ten()) is True  # (counted by first token alone, "mat" and "cat" tie)
    # right in other capitals is the real token's answer too: "bright" and "Bright" one answer beside "luz"
    caps = [g("bright", 7), Guess("Bright", 8, "x", (8,), case_ids=(7,)), g("luz", 5)]
    assert S.class_right(caps, REAL) is True and S.class_split(caps, REAL) is False
    assert S.class_right([g("cat", 3)] * 3 + [g("mat", 7)] * 2, REAL) is False
    assert S.class_right([g("cat", 3)] * 2 + [g("mat", 7)] * 2, REAL) is False  # a tie with the real token in it: no one answer
    # four students, four answers, one of them right: the class has no answer, and one student in four was right
    four = [g("mat", 7), g("cat", 3), g("dog", 4), g("rug", 5)]
    assert S.class_right(four, REAL) is False and S.class_split(four, REAL) is True and S.class_share_right(four, REAL) == 0.25
    assert S.step_score(NS(token_id=REAL, top_ids=[3], chosen_prob=0.1, logits=None), four)["class_split"] is True
    assert S.class_right([], REAL) is None and S.class_split([]) is None


def test_a_guess_in_other_capitals_is_right_and_says_so():
    burning = Guess("BURNING", 11, "B", (11,), case_ids=(REAL,))
    assert S.is_right(burning, REAL) and S.capitals_differ(burning, REAL)
    assert S.is_right(g("burning", 7), REAL) and not S.capitals_differ(g("burning", 7), REAL)
    assert not S.is_right(Guess("BURN", 12, "B", (12,), case_ids=(13,)), REAL)
    assert S.case_forms("burning") == ["Burning", "BURNING"] and S.case_forms("BURNING") == ["burning", "Burning"]


def test_class_bits_are_add_one_smoothed_over_the_answers_given():
    # 10 guesses, r = 4 right, wrong answers {cat, dog, rug}: w = 3 -> p = (4 + 1) / (10 + 3 + 1) = 5/14
    assert S.class_prob(ten(), REAL) == pytest.approx(5 / 14)
    assert S.bits(S.class_prob(ten(), REAL)) == pytest.approx(math.log2(14 / 5))  # 1.485 bits
    # nobody right: 3 "cat", 1 "dog" -> p = 1 / (4 + 2 + 1) = 1/7: 2.807 bits
    assert S.bits(S.class_prob([g("cat", 3)] * 3 + [g("dog", 4)], REAL)) == pytest.approx(math.log2(7))
    # everybody right: 5 of 5, no wrong answer -> 6/6: 0 bits
    assert S.class_prob([g("mat", 7)] * 5, REAL) == 1.0 and S.bits(1.0) == 0.0
    assert S.class_prob([], REAL) is None and S.bits(None) is None


def test_the_models_side_from_its_logits_and_without_them():
    logits = np.array([0.0, 2.0, 1.0, -1.0], np.float32)
    lse = float(np.log(np.exp(logits).sum()))
    p = softmax(logits)
    step = NS(token_id=2, top_ids=np.array([1, 2, 0, 3]), chosen_prob=float(p[2]), logits=logits, logsumexp=lse)
    m = S.model_numbers(step)
    assert m["model_right"] is False and m["model_prob"] == pytest.approx(float(p[2]), rel=1e-6)
    assert m["model_bits"] == pytest.approx(-math.log2(float(p[2])), rel=1e-6)  # (2.0 - 1.0 + log(1 + e^-2 + ...)) / ln 2
    step2 = NS(token_id=1, top_ids=np.array([1, 2]), chosen_prob=0.5, logits=None, logsumexp=0.0)
    assert S.model_numbers(step2) == {"model_right": True, "model_prob": 0.5, "model_bits": 1.0}
    assert S.bits(0.0) == pytest.approx(-math.log2(S.TINY))  # never infinite: JSON has no inf


def test_a_rounds_totals():
    steps = [dict(class_right=True, class_share_right=0.5, model_right=True, model_bits=1.0, class_bits=2.0),
             dict(class_right=False, class_share_right=0.25, model_right=False, model_bits=3.0, class_bits=4.0),
             dict(class_right=None, class_share_right=None, model_right=True, model_bits=2.0, class_bits=None)]
    t = S.totals(steps)
    assert (t["steps"], t["steps_guessed"], t["class_right"], t["model_right"], t["model_right_guessed"]) == (3, 2, 1, 2, 1)
    assert t["class_share_right"] == pytest.approx(0.375) and t["model_bits"] == pytest.approx(2.0)
    assert t["class_bits"] == pytest.approx(3.0) and t["model_bits_guessed"] == pytest.approx(2.0)


def test_a_revealed_step_and_the_summary_carry_the_score(lm, monkeypatch):
    client, store, room, clock = room_setup(lm, monkeypatch)
    step = room.trace.steps[2]
    real_piece = lm.tokens.tok.decode([step.token_id])
    sent = {"a": real_piece, "b": real_piece, "c": "zz", "d": "qq"}
    for sid, text in sent.items():
        r = client.post(f"/api/rooms/{room.code}/guesses", json={"student": sid, "text": text})
        assert r.status_code == 200 and isinstance(r.json()["ids"], list)
        clock[0] += 1
    out = client.post(f"/api/rooms/{room.code}/reveal", headers={"X-Room-Key": room.key}).json()
    with torch.inference_mode():
        probs = softmax(lm.model(torch.tensor([list(step.context_ids)])).logits[0, -1].float().numpy())
    sc = out["score"]
    assert client.post(f"/api/rooms/{room.code}/guesses", json={"student": "z", "text": "x"}).status_code == 409  # (after the reveal)
    assert sc["model_prob"] == pytest.approx(float(probs[step.token_id]), rel=1e-4)
    assert sc["model_bits"] == pytest.approx(-math.log2(float(probs[step.token_id])), rel=1e-4)
    assert sc["model_right"] == (int(np.argmax(probs)) == step.token_id)
    assert sc["class_share_right"] == pytest.approx(0.5) and sc["class_right"] is True
    assert sc["class_bits"] == pytest.approx(math.log2((4 + 2 + 1) / 3))  # r = 2 of 4, wrong {zz, qq}: 3/7
    assert out["sampled"]["token_id"] == step.token_id and out["real_text"] is False
    summary = client.get(f"/api/rooms/{room.code}/summary").json()
    assert [s["step"] for s in summary["steps"]] == [2] and summary["steps"][0]["guesses"] == 4
    assert summary["totals"]["class_right"] == 1 and summary["totals"]["steps"] == 1
    assert summary["study"]["people"] == 0.29 and summary["study"]["model"] == 0.38
    assert set(store.rooms[room.code].names.values()) == {"S1", "S2", "S3", "S4"}
