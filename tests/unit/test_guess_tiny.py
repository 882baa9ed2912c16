"""Guess first: a guess rated by the model, checked against an independent forward pass for every number
(the first token's probability and rank over the whole vocabulary, its probability in the distribution the
step was sampled from, the whole guess by the chain rule), and the honest bound without the model."""
import dataclasses
import re

import numpy as np
import pytest
import torch

from pipeline.generate import run_trace
from pipeline.guess import GuessError, rate, variants
from pipeline.trace.records import Settings
from pipeline.sampling.stages import apply_stages, softmax
from tests import tiny

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module")
def lm():
    return tiny.loaded("llama", ctx=128)


@pytest.fixture(scope="module")
def trace(lm):
    return run_trace(lm, PROMPT, Settings(temperature=0.8, top_k=5, top_p=1.0, seed=3, max_new_tokens=5))


def forward(lm, ids):  # one plain pass, no cache, no hooks: the last position's temperature-1 distribution
    with torch.inference_mode():
        return softmax(lm.model(torch.tensor([ids])).logits[0, -1].float().numpy())


@pytest.mark.parametrize("rank_of", [0, 3, 40, 200])
def test_a_one_token_guess_has_the_forward_pass_numbers(lm, trace, rank_of):
    s = 2
    step = trace.steps[s]
    probs = forward(lm, list(step.context_ids))
    def other(text):  # the guess's other spelling (pipeline.guess.variants): without its space, or with one
        return text[1:] if text[:1] == " " else " " + text

    # the first from there that reads back as itself, and that its other spelling does not beat
    order = np.argsort(-probs, kind="stable")[rank_of:]
    tid = next(int(t) for t in order if lm.tokens.plain_ids(text := lm.tokens.decode([int(t)])) == [int(t)] and text.strip()
               and probs[lm.tokens.plain_ids(other(text))[0]] <= probs[int(t)])
    r = rate(lm, trace, s, text)
    assert r.token_id == tid and r.pieces[0] == lm.tokens.piece(tid)
    assert r.prob == pytest.approx(float(probs[tid]), rel=1e-4)
    assert r.rank == int((probs > probs[tid]).sum()) + 1
    final = apply_stages(np.log(probs), Settings(temperature=0.8, top_k=5).stages(step.context_ids)).final_probs
    assert r.final_prob == pytest.approx(float(final[tid]), rel=1e-3, abs=1e-7)
    assert (r.final_prob == 0) == (r.rank > 5)  # top-k 5: outside the five most likely, never sampled
    assert r.chosen == (tid == step.token_id) and r.seq_prob is None


def test_a_guess_of_several_tokens_gets_the_chain_rule(lm, trace):
    s = 1
    step = trace.steps[s]
    probs = forward(lm, list(step.context_ids))
    # of the two spellings, with and without the space, the one whose first token the model rates higher
    ids = max((lm.tokens.plain_ids(v) for v in ("brown fox jumps", " brown fox jumps")), key=lambda ids: probs[ids[0]])
    assert len(ids) > 1
    r = rate(lm, trace, s, " brown fox jumps")
    assert r.token_id == ids[0] and list(r.pieces) == lm.tokens.pieces(ids)
    ctx, want = list(step.context_ids), 1.0
    for t in ids:  # each factor from its own pass over the context and the guess so far
        want *= float(forward(lm, ctx)[t])
        ctx.append(t)
    assert r.seq_prob == pytest.approx(want, rel=1e-3)
    assert r.seq_prob < r.prob


def test_the_space_before_a_word_is_the_one_the_model_rates_higher(lm, trace):
    step = trace.steps[0]
    assert variants(step, "fox") == ["fox", " fox"] or step.context_pieces[-1][-1:].isspace()
    r = rate(lm, trace, 0, "fox")
    rated = [forward(lm, list(step.context_ids))[lm.tokens.plain_ids(v)[0]] for v in variants(step, "fox")]
    assert r.prob == pytest.approx(float(max(rated)), rel=1e-4)


def test_without_the_model_a_guess_outside_the_candidates_gets_the_bound(lm, trace):
    kept = dataclasses.replace(trace, steps=tuple(dataclasses.replace(st, logits=None) for st in trace.steps))
    step = kept.steps[2]
    inside = str(step.top_pieces[1])
    r = rate(None, kept, 2, inside)
    assert r.token_id == int(step.top_ids[1]) and r.rank == 2 and r.prob == pytest.approx(float(step.top_probs[1]))
    outside = rate(None, kept, 2, "\u2603\u2603")
    assert outside.prob is None and outside.rank is None and outside.below == pytest.approx(float(step.top_probs[-1]))
    # with the trace's full logits (a fresh run's) the candidates' pieces still name the token: exact numbers
    full = rate(None, trace, 2, inside)
    assert full.prob == pytest.approx(r.prob, rel=1e-5) and full.final_prob is not None


@pytest.mark.parametrize("bad", ["", "   ", "x" * 41, None, 5])
def test_a_guess_that_cannot_be_rated_says_why(lm, trace, bad):
    with pytest.raises(GuessError):
        rate(lm, trace, 0, bad)


def test_without_a_tokenizer_the_page_says_only_the_first_token_was_rated(trace):
    """No model (so no tokenizer), the trace's logits kept: a guess longer than the candidate it starts with is rated
    by that first token, and the page says so; it never shows the whole guess as if it were the model's tokens."""
    from viz.guess import rating_html

    step = trace.steps[2]
    piece = next(str(x) for x in step.top_pieces if str(x).strip())
    r = rate(None, trace, 2, piece + "zzzz and more")
    assert r.pieces == (piece,) and not r.tokenized and r.token_id is not None
    page = rating_html(r, 2, step)
    assert "Its first token" in page and "no tokenizer here to rate the rest" in page and "As this model's tokens" not in page
    alone = rate(None, trace, 2, piece)  # the guess is that token: said as the model's tokens
    assert "As this model's tokens" in rating_html(alone, 2, step)


def test_kept_candidates_of_equal_probability_share_the_better_rank(trace):
    """As over the whole vocabulary ((probs > p).sum() + 1): a tie among the kept candidates is one rank."""
    st = trace.steps[2]
    probs = np.asarray(st.top_probs).copy()
    probs[2] = probs[1]  # the third candidate as likely as the second
    tied = dataclasses.replace(st, top_probs=probs, logits=None)
    kept = dataclasses.replace(trace, steps=tuple(tied if i == 2 else dataclasses.replace(s, logits=None) for i, s in enumerate(trace.steps)))
    third = str(st.top_pieces[2])
    assert not any(str(x) != third and third.startswith(str(x)) and str(x) for x in st.top_pieces)  # (it matches itself alone)
    assert rate(None, kept, 2, third).rank == 2


def test_a_guess_of_a_character_cut_across_tokens_reads_as_its_parts(lm, trace):
    """天 is three byte tokens for the tiny tokenizer: the rating names it by its parts, never '<0xE5>' markers."""
    from viz.guess import rating_html
    from viz.text import catalogue

    r = rate(lm, trace, 2, "天")
    assert len(r.pieces) > 1 and any("<0x" in p for p in r.pieces)
    page = rating_html(r, 2, trace.steps[2])
    shown = re.sub(r"<[^>]+>", "", re.sub(r'title="[^"]*"', "", page))
    lead = catalogue("en")["guess.tokens"].split("{pieces}")[0]
    tokens = shown[shown.index(lead):].split(".")[0]  # (what the model wrote, a byte of its own, is data: not here)
    assert "<0x" not in tokens.replace("&lt;", "<") and f"天1/{len(r.pieces)}" in tokens
