"""A class against the model: the score of a revealed step and of a round (docs/rooms.md, docs/teaching.md).

At a step the class's guesses meet the real next token (a passage's: pipeline/passages.py; a generated trace's, the
token the model drew). Four numbers, each for the step and summed or averaged over the round:

- class_right: the class's most common answer is the real token; a split class (two or more answers tied for most
  common) has no one answer, and is not right (class_split says so);
- class_share_right: the share of the students whose own guess was right (the mean of individual top-1);
- model_right: the model's most likely token (temperature 1) is the real token;
- model_bits = -log2 p(real) in the model's temperature-1 distribution, and class_bits = -log2 of the probability the
  class's pooled answers give the real token, add-one smoothed over the answers given: with n guesses of which r are
  right and w distinct wrong answers, p = (r + 1) / (n + w + 1) (every answer given, the real one included, counted
  once more, so a class that never named the real token still gives it some probability).

A guess is right when the real token is the first token of one of its spellings (Guess.ids: "mat" or " mat"): a
person types words, the model writes tokens, so a guess "Rapunzel" is right where the real token is " Rapunzel" and
wrong where the text goes " Rap" + "unzel" (docs/teaching.md says what this changes against studies that score words).
Spaces around a guess are not part of it (pipeline.guess.clean), and a guess that differs from the real token only in
its capitals is right too ("BURNING" where the text goes " burning": Guess.case_ids; the rating still names the
token the guess itself is, and `capitals_differ` lets the page say so): a phone capitalises a first letter unasked.
"""
from __future__ import annotations

import math
from collections import Counter

from viz.fmt import pct
from viz.style import visible
from viz.text import t

from pipeline import guess as guessing

# Published numbers a class compares itself with (docs/teaching.md says what differs: words vs tokens, practised
# adults, web text). Redwood Research's next-token game (Shlegeris, Roger, Chan & McLean, "Language models are better
# than humans at next-token prediction", TMLR 2024): about 60 people, top-1 29%; GPT-Neo-125M on the same tokens 38%.
STUDY = {"people": 0.29, "model": 0.38, "model_name": "GPT-Neo-125M",
         "name": "Shlegeris et al., Language models are better than humans at next-token prediction (TMLR 2024)",
         "url": "https://arxiv.org/abs/2212.11281"}


def is_right(g, real_id: int) -> bool:
    """The guess `g` (a ui.rooms.Guess) names the real token: it is the first token of one of the guess's spellings,
    as typed or in other capitals."""
    ids = tuple(g.ids) or ((g.token_id,) if g.token_id is not None else ())
    return int(real_id) in ids or int(real_id) in tuple(getattr(g, "case_ids", ()) or ())


def capitals_differ(g, real_id: int) -> bool:
    """The guess is right only in other capitals than the real token's."""
    return is_right(g, real_id) and int(real_id) not in (tuple(g.ids) or ((g.token_id,) if g.token_id is not None else ()))


def answer_key(g):
    """The answer a guess counts as (ui.rooms groups the room's chart the same way): its first token, or what was typed
    when that token is only bytes of a character or unknown."""
    if g.token_id is None or guessing.ends_in_bytes(g.piece):
        return ("text", g.text.strip())
    return g.token_id


def _class_answers(guesses, real_id) -> Counter:
    """The class's answers counted: every right guess names the real token, whatever its spelling or capitals ("bright"
    and "Bright" one answer when the text has " bright"); a wrong one is its own answer (answer_key)."""
    return Counter(RIGHT if real_id is not None and is_right(g, real_id) else answer_key(g) for g in guesses)


RIGHT = ("right",)  # (the key of the real token's answer among the class's)


def class_split(guesses, real_id: int | None = None) -> bool | None:
    """Two or more answers are tied for the class's most common: the class has no one answer. None: nobody guessed."""
    if not guesses:
        return None
    counts = _class_answers(guesses, real_id).most_common(2)
    return len(counts) == 2 and counts[0][1] == counts[1][1]


def class_right(guesses, real_id: int) -> bool | None:
    """The class's most common answer is unique and the real token; None when nobody guessed."""
    if not guesses:
        return None
    if class_split(guesses, real_id):
        return False
    return _class_answers(guesses, real_id).most_common(1)[0][0] == RIGHT


def class_share_right(guesses, real_id: int) -> float | None:
    return sum(is_right(g, real_id) for g in guesses) / len(guesses) if guesses else None


def class_prob(guesses, real_id: int) -> float | None:
    """The probability the class's pooled answers give the real token, add-one smoothed over the answers given:
    (r + 1) / (n + w + 1), r right of n guesses, w distinct wrong answers."""
    if not guesses:
        return None
    r = sum(is_right(g, real_id) for g in guesses)
    wrong = {answer_key(g) for g in guesses if not is_right(g, real_id)}
    return (r + 1) / (len(guesses) + len(wrong) + 1)


TINY = 1.4e-45  # the smallest probability a float32 holds: a probability stored as 0 is below it (149 bits, never infinite)


def bits(p: float | None) -> float | None:
    return None if p is None else -math.log2(max(float(p), TINY))


def model_numbers(step) -> dict:
    """The model's side of a step (a StepRecord): its temperature-1 probability of the real token (the step's `token_id`),
    in bits (from the raw logits when the step kept them: exact however small), and whether its most likely token is
    the real one."""
    if step.logits is not None:
        b = (float(step.logsumexp) - float(step.logits[int(step.token_id)])) / math.log(2)
        p = 2.0 ** -b
    else:
        p = float(step.chosen_prob)
        b = bits(p)
    return {"model_right": int(step.top_ids[0]) == int(step.token_id), "model_prob": p, "model_bits": b}


def step_score(step, guesses) -> dict:
    """The score of one revealed step: the real token is `step.token_id`; `guesses` the students' (one each)."""
    real = int(step.token_id)
    p = class_prob(guesses, real)
    return {"class_right": class_right(guesses, real), "class_split": class_split(guesses, real), "class_share_right": class_share_right(guesses, real),
            **model_numbers(step), "class_prob": p, "class_bits": bits(p)}


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def totals(scores: list[dict]) -> dict:
    """A round's totals over its revealed steps: counts of steps right (the class's answer, the model's top pick), the
    mean share of students right over the steps anyone guessed, and mean bits per step (the class's over the steps
    anyone guessed; the model's over every step)."""
    guessed = [s for s in scores if s["class_right"] is not None]
    return {"steps": len(scores), "steps_guessed": len(guessed), "class_right": sum(bool(s["class_right"]) for s in guessed),
            "class_share_right": _mean(s["class_share_right"] for s in guessed),
            "model_right": sum(s["model_right"] for s in scores), "model_right_guessed": sum(s["model_right"] for s in guessed),
            "model_bits": _mean(s["model_bits"] for s in scores), "class_bits": _mean(s["class_bits"] for s in guessed),
            "model_bits_guessed": _mean(s["model_bits"] for s in guessed)}


def answers(guesses, hidden: set) -> list[dict]:
    """The room's answers, most guessed first: guesses grouped by the model's first token ("mat" and " mat" one
    answer when the model writes " mat"), or by what was typed when that token is only bytes of a character (🌪 and
    💩 both begin with the bytes "·<0xF0><0x9F>": two answers), or had no token (no tokenizer, not a kept candidate).
    The most common spelling names an answer; a guess the teacher hid (its token, or its text) is left out."""
    texts = {str(h).strip() for h in hidden if isinstance(h, str)}
    groups: dict = {}
    for g in guesses:
        k = answer_key(g)
        if g.text.strip() in texts or (not isinstance(k, tuple) and k in hidden):
            continue
        groups.setdefault(k, []).append(g)
    rows = [{"text": Counter(g.text for g in gs).most_common(1)[0][0], "token_id": gs[0].token_id, "piece": gs[0].piece,
             "label": visible(gs[0].piece), "by_text": isinstance(k, tuple), "count": len(gs),
             "langs": tuple(sorted({g.lang for g in gs if getattr(g, "lang", None)}))}  # (for ui/rooms/profanity.py, which drops it)
            for k, gs in groups.items()]
    return sorted(rows, key=lambda r: -r["count"])


def _firsts(lm, step, text: str) -> tuple:
    """The first token of each spelling of `text` (without a tokenizer: the kept candidate it names, if any)."""
    if lm is None:
        tid = guessing.first_token(None, step, text, None)[0]
        return () if tid is None else (int(tid),)
    return tuple(dict.fromkeys(int(i[0]) for v in guessing.variants(step, text) if (i := lm.tokens.plain_ids(v))))


def case_forms(text: str) -> list[str]:
    """The guess in the other capitals a person means by it ("burning": "Burning", "BURNING"; "Burning": "burning", ...)."""
    return [f for f in dict.fromkeys((text.lower(), text[:1].upper() + text[1:].lower(), text.upper(), text.title())) if f != text]


def guess_numbers(lm, step, text: str, tid, dist) -> tuple:
    """(the first token of each spelling of the guess, the model's temperature-1 probability of `tid` and its rank,
    the first tokens of its spellings in other capitals only): over the whole vocabulary `dist`; without it, among the
    step's kept candidates (outside them: None)."""
    ids = (_firsts(lm, step, text) if lm is not None else ()) or ((int(tid),) if tid is not None else ())
    case_ids = tuple(dict.fromkeys(i for f in case_forms(text) for i in _firsts(lm, step, f) if i not in ids))
    if tid is None:
        return ids, None, None, case_ids
    if dist is not None:
        p = float(dist[tid])
        return ids, p, int((dist > dist[tid]).sum()) + 1, case_ids
    top = [float(q) for t, q in zip(step.top_ids, step.top_probs) if int(t) == tid]
    return ids, (top[0] if top else None), (int((step.top_probs > top[0]).sum()) + 1 if top else None), case_ids


def summary(room) -> dict:
    """A room's (ui.rooms.Room) every revealed step of its trace with its score, and the round's totals; its text's
    number and the totals of the room's earlier texts (`earlier`: Room.past)."""
    st = room.trace.steps
    steps = [{"step": k, "real": {"token_id": int(st[k].token_id), "label": visible(st[k].piece)}, "guesses": len(room.guesses.get(k, {})), **sc}
             for k, sc in sorted(room.scores.items())]
    earlier = [{k: p[k] for k in ("text", "passage", "real_text", "totals")} for p in getattr(room, "past", [])]
    return {"code": room.code, "real_text": room.passage is not None, "passage": room.passage, "model": room.trace.model.id,
            "steps": steps, "totals": totals(steps), "study": dict(STUDY), "text": len(earlier) + 1, "earlier": earlier}


SCORE_FIELDS = ("class_right", "class_split", "class_share_right", "model_right", "model_prob", "model_bits", "class_bits")  # a step's, in the state


def revealed(room, top: int) -> dict:
    """What every page sees of a room's revealed step (ui.rooms.Room, under the rooms' lock): the room's answers (the
    profanity filter's: a rude answer never leaves the server), the model's `top` candidates, the real token (with its
    own probability: outside the top the projector gives it a row, assets/room.js), the score, the class's favourites."""
    from ui.rooms import profanity as room_filter

    step = room.trace.steps[room.step]
    room_rows = room_filter.apply(answers(room.guesses.get(room.step, {}).values(), room.hidden.get(room.step, set())),
                                  room.options.get("profanity"), room.lang)
    model = [{"token_id": int(step.top_ids[k]), "piece": str(step.top_pieces[k]), "label": visible(str(step.top_pieces[k])),
              "prob": float(step.top_probs[k]), "pct": pct(step.top_probs[k])} for k in range(min(top, len(step.top_ids)))]
    n = sum(r["count"] for r in room_rows)
    top_share = sum(r["count"] for r in room_rows if r["token_id"] == model[0]["token_id"]) / n if n else 0.0
    got = room.probs.get((room.trace_n, room.step))
    probs = (got[1].result() or (None, None))[1] if got and got[1].done() and not got[1].exception() else None
    favourites = [dict(r, **model_prob(step, probs, r["token_id"])) for r in room_rows if r["count"] == room_rows[0]["count"]]
    score = room.scores.get(room.step) or step_score(step, list(room.guesses.get(room.step, {}).values()))
    sampled = {"token_id": step.token_id, "piece": step.piece, "label": visible(step.piece), "prob": score["model_prob"],
               "pct": pct(score["model_prob"])}
    return {"room": room_rows, "model": model, "sampled": sampled, "score": {k: score.get(k) for k in SCORE_FIELDS},
            "top_share": top_share, "favourites": favourites, "favourite_prob": favourites[0]["prob"] if favourites else None}


def model_prob(step, probs, tid) -> dict:
    """The model's temperature-1 probability of a token (over the whole vocabulary; without it, the kept candidates':
    outside them, only the bound, said so, with the bound as a number, `below`: assets/room.js writes it in the page's
    language) and as the page writes it."""
    if tid is not None and probs is not None:
        p = float(probs[tid])
    else:
        p = next((float(q) for t, q in zip(step.top_ids, step.top_probs) if int(t) == tid), None)
    if p is None:
        return {"prob": None, "pct": t("room.less_than", pct=pct(step.top_probs[-1])), "below": float(step.top_probs[-1])}
    return {"prob": p, "pct": pct(p)}


__all__ = ["STUDY", "is_right", "capitals_differ", "case_forms", "answer_key", "class_split", "class_right", "class_share_right", "class_prob", "bits", "model_numbers",
           "step_score", "totals", "answers", "guess_numbers", "summary", "model_prob", "revealed", "SCORE_FIELDS"]
