"""How the model rated a person's guess of what comes next at a step ("Guess first").

The guess is written as this model's tokens. Its first token is rated in the step's own distribution: the
temperature-1 probability and rank (1 = most likely) over the whole vocabulary, and its probability in the
distribution the step was sampled from (the trace's settings). A guess of several tokens also gets the
probability of the whole sequence, by the chain rule, from one forward pass of the model over the context and
the guess. Without the model's numbers for the whole vocabulary (a trace that kept only its top candidates,
and no model that made it), a guess outside those candidates gets the honest bound, never a made-up number.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pipeline.errors import GuessError
from pipeline.trace.records import StepRecord, Trace
from pipeline.sampling.stages import apply_stages, softmax

MAX_GUESS_CHARS = 40
BYTE_END = re.compile(r"<0x[0-9A-F]{2}>$")  # a readable piece's last byte of an unfinished character (pipeline.tokens)
__all__ = ["GuessError", "GuessRating", "MAX_GUESS_CHARS", "clean", "ends_in_bytes", "first_token", "rate", "space_before", "step_dist",
           "variants", "written_ahead"]


@dataclass(frozen=True)
class GuessRating:
    text: str  # the guess as rated (with the space before it when the model writes the word so)
    pieces: tuple[str, ...]  # its tokens; without a tokenizer only the first, matched among the kept candidates
    tokenized: bool  # the tokenizer wrote `pieces` (False: the first token was matched among the kept candidates)
    token_id: int | None  # its first token (None: not among the trace's candidates, and no tokenizer)
    prob: float | None  # temperature-1 probability of the first token (None: not known, see `below`)
    rank: int | None  # 1-based rank of the first token in the temperature-1 distribution
    final_prob: float | None  # its probability in the distribution the step was sampled from
    seq_prob: float | None  # the whole guess's probability (chain rule); None for one token or no model
    below: float | None  # when prob is None: the first token is below this (the last kept candidate's)
    chosen: bool  # the first token is the one the model sampled at this step
    above_chosen: bool  # the model rated it higher than the token it sampled


def space_before(step: StepRecord) -> bool:
    """The context ends inside a line of words (its last piece is not empty and ends in no whitespace)."""
    last = step.context_pieces[-1] if step.context_pieces else ""
    return bool(last) and not last[-1].isspace()


def variants(step: StepRecord, text: str) -> list[str]:
    """The guess as typed and in its other spelling, for every kind of text (words, digits, signs, emoji): typed
    with a space before it, also without; else with one, when the context ends inside a line of words (a person
    types "mat" or "🌪", the model writes " mat" or " 🌪")."""
    if text[:1] == " " and text[1:].strip():
        return [text, text[1:]]
    return [text, " " + text] if not text[:1].isspace() and space_before(step) else [text]


def _kind(c: str) -> str:
    return "letter" if c.isalpha() else "digit" if c.isnumeric() else "space" if c.isspace() else "sign"


def _whole_start(text: str, piece: str) -> bool:
    """`text` is `piece`, or starts with it and goes on with another kind of character (a word after a sign, a sign
    after a word, a space), where every tokenizer starts a new token: "Paris is" starts with " Paris"; "banana"
    does not start a token " b" (the model may write " banana" whole), nor "🌪" a piece of its bytes."""
    if not piece or not text.startswith(piece):
        return False
    if len(text) == len(piece):
        return True
    a, b = _kind(piece[-1]), _kind(text[len(piece)])
    return a != b and a != "space" and not BYTE_END.search(piece)


def ends_in_bytes(piece: str) -> bool:
    """The token (its readable piece, pipeline.tokens) ends inside a character: only some of that character's bytes,
    "<0xF0><0x9F>" (every emoji whose first token that is shares it)."""
    return bool(BYTE_END.search(piece))


def _full_logits(lm, trace: Trace, step: StepRecord) -> np.ndarray | None:
    """The step's raw logits over the whole vocabulary: kept in the trace, or computed by the model that made it."""
    if step.logits is not None:
        return np.asarray(step.logits, dtype=np.float32)
    if lm is None:
        return None
    return _rows(lm, list(step.context_ids), [])[0]


def _rows(lm, context: list[int], more: list[int]) -> np.ndarray:
    """The model's raw logits after the context and after each of `more` but the last: one plain forward pass."""
    import torch

    from pipeline.model_thread import run_on  # (not at the top: viz reads this module without torch)

    ids = context + more[:-1] if more else context

    def forward():  # on the model's thread (pipeline.model_thread)
        with lm.lock, torch.inference_mode():
            return lm.model(torch.tensor([ids])).logits[0].float().numpy()

    out = run_on(lm, forward)
    return out[len(context) - 1:]


def step_dist(lm, trace: Trace, step: StepRecord) -> tuple[np.ndarray, np.ndarray] | None:
    """The step's raw logits over the whole vocabulary and their temperature-1 distribution (None: neither kept nor
    computable). A class room keeps both for its step: every guess a lookup in the one, its rating (`rate`) the other."""
    logits = _full_logits(lm, trace, step)
    return None if logits is None else (logits, softmax(logits))


def first_token(lm, step: StepRecord, guess, probs: np.ndarray | None) -> tuple[int | None, str]:
    """The first token of `guess` as the model would write it (of its spellings, the likelier) and its piece; a
    room's guesses are grouped by it. `probs`: the step's temperature-1 distribution (step_dist's second). Without a tokenizer: the kept candidate the
    guess is or starts a word with (_rate_candidates; None: none)."""
    text = clean(guess)
    if lm is None or probs is None:
        r = _best_candidate(step, text)
        return r.token_id, (r.pieces[0] if r.pieces else text)
    firsts = [ids[0] for v in variants(step, text) if (ids := lm.tokens.plain_ids(v))]
    tid = max(firsts, key=lambda t: probs[t])
    return int(tid), lm.tokens.piece(int(tid))


def _rated(lm, trace: Trace, step: StepRecord, text: str, ids: list[int], logits: np.ndarray, probs: np.ndarray,
           matched: tuple[str, ...] = ()) -> GuessRating:
    """The spelling `text` (tokens `ids`) rated in the step's logits and their temperature-1 `probs`. Without a
    tokenizer (`lm` None): `ids` is the first token alone, the kept candidate `matched` names."""
    first = ids[0]
    p = float(probs[first])
    final = apply_stages(logits, trace.settings_at(step.index).stages(step.context_ids)).final_probs
    seq = None
    if len(ids) > 1 and lm is not None:
        rows = _rows(lm, list(step.context_ids), ids)
        seq = p * float(np.prod([softmax(rows[i])[ids[i]] for i in range(1, len(ids))]))
    return GuessRating(text, tuple(lm.tokens.pieces(ids)) if lm is not None else matched, lm is not None, first, p, int((probs > p).sum()) + 1,
                       float(final[first]), seq, None, first == step.token_id, p > float(probs[step.token_id]))


def written_ahead(trace: Trace, index: int) -> tuple[str, ...]:
    """The pieces the text has after step `index`'s own, as many as a guess can be long (it is at most
    MAX_GUESS_CHARS, and one space before it): a word the model wrote as several tokens, typed whole at its first
    step, is that step's token (`_rate_candidates`)."""
    out, n = [], len(str(trace.steps[index].piece))
    for s in trace.steps[index + 1:]:
        if n > MAX_GUESS_CHARS:
            break
        out.append(str(s.piece))
        n += len(out[-1])
    return tuple(out)


def _written(step: StepRecord, text: str, ahead) -> tuple[str, ...]:
    """The pieces (two or more, the step's own first) the text goes on with from this step when `text` is exactly
    them; () when it is not."""
    pieces, done = [str(step.piece)], str(step.piece)
    for piece in ahead:
        if not text.startswith(done + piece):
            break
        pieces.append(piece)
        done += piece
        if done == text:
            return tuple(pieces)
    return ()


def _rate_candidates(step: StepRecord, text: str, ahead=()) -> GuessRating:
    """No tokenizer: the guess matched against the step's kept candidates (the longest piece it is, or starts with
    before another kind of character: _whole_start); else, when it is exactly what the text goes on with from this
    step over several tokens (`ahead`: written_ahead), the step's own token ("Rapunzel" where the model wrote " Rap" +
    "unzel"); outside them, the bound, never the number of a candidate it merely starts with ("banana" is not " b")."""
    pieces = [str(x) for x in step.top_pieces]
    hits = [k for k, piece in enumerate(pieces) if _whole_start(text, piece)]
    k = max(hits, key=lambda k: (len(pieces[k]), -k)) if hits else None
    matched = (pieces[k],) if k is not None else ()
    if k is None or len(pieces[k]) < len(text):
        wrote = _written(step, text, ahead)
        ids = [int(i) for i in step.top_ids]
        if wrote and int(step.token_id) in ids:
            k, matched = ids.index(int(step.token_id)), wrote
    if k is None:
        return GuessRating(text, (), False, None, None, None, None, None, float(step.top_probs[-1]), False, False)
    tid, p = int(step.top_ids[k]), float(step.top_probs[k])
    rank = int((np.asarray(step.top_probs) > step.top_probs[k]).sum()) + 1  # (ties share the better rank, as over the vocabulary)
    return GuessRating(text, matched, False, tid, p, rank, float(step.top_final_probs[k]), None, None,
                       tid == step.token_id, p > step.chosen_prob)


def _best_candidate(step: StepRecord, text: str, ahead=()) -> GuessRating:
    """Of the guess's spellings, the one whose kept candidate the model rates higher (_rate_candidates)."""
    return max((_rate_candidates(step, v, ahead) for v in variants(step, text)), key=lambda r: r.prob or 0.0)


def rate(lm, trace: Trace, step_index: int, guess: str, logits: np.ndarray | None = None) -> GuessRating:
    """`guess` at step `step_index` of `trace`, rated by `lm` (the model that made the trace, or None). Of the
    guess's spellings (`variants`), the one whose first token the model rates higher; the step's logits computed
    once (a forward pass when the trace did not keep them; `logits`: already computed, as a class room has them),
    the whole guess's chain only for that spelling."""
    text = clean(guess)
    step = trace.steps[step_index]
    logits = _full_logits(lm, trace, step) if logits is None else logits
    if logits is None or lm is None:  # no tokenizer: the candidates' pieces name the token (exact with the logits)
        r = _best_candidate(step, text, written_ahead(trace, step_index))
        return r if logits is None or r.token_id is None else _rated(None, trace, step, r.text, [r.token_id], logits, softmax(logits), r.pieces)
    probs = softmax(logits)
    text, ids = max(((v, ids) for v in variants(step, text) if (ids := lm.tokens.plain_ids(v))), key=lambda s: probs[s[1][0]])
    return _rated(lm, trace, step, text, ids, logits, probs)


def clean(guess) -> str:
    """The guess as rated: the spaces around it are not part of it (a phone's keyboard adds one after a word, a thumb
    two before it; `variants` puts the space before a word where the model writes one), and never change its verdict."""
    if not isinstance(guess, str):
        raise GuessError("a guess is text: type a word or a few", key="error.guess_not_text")
    text = guess.strip()
    if not text.strip():
        raise GuessError("type a guess first: a word, or a piece of one", key="error.guess_empty")
    if len(text) > MAX_GUESS_CHARS:
        raise GuessError(f"a guess is at most {MAX_GUESS_CHARS} characters", key="error.guess_too_long", n=MAX_GUESS_CHARS)
    return text
