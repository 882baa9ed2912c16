"""Branching: a forced token at one step, then generation on from it, on a tiny model; the
continuation is checked against an independent forward pass of the branched context."""
import numpy as np
import pytest
import torch

from pipeline.branch import forced_step
from pipeline.generate import start
from pipeline.trace.records import Settings
from pipeline.sampling.stages import SettingsError
from tests import tiny

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module")
def lm():
    return tiny.loaded("llama", ctx=128)


def test_forced_token_then_greedy_continuation_matches_a_plain_forward_pass(lm):
    settings = Settings(temperature=0, max_new_tokens=6)
    steps = list(start(lm, PROMPT, settings))
    s = 2
    alt = int(steps[s].top_ids[3])  # the 4th most likely candidate, not the model's choice
    assert alt != steps[s].token_id
    f = forced_step(lm, steps[:s], steps[s], alt)
    assert f.token_id == alt and f.piece == lm.tokens.piece(alt)
    assert f.forced and not any(st.forced for st in steps)  # marked, so no view says the model drew it
    assert f.raw_piece == lm.tokens.raw_piece(alt) and f.piece_bytes == lm.tokens.piece_bytes(alt)
    # what the model computed at that position is kept; the chosen token's numbers follow the new token
    np.testing.assert_array_equal(f.top_logits, steps[s].top_logits)
    np.testing.assert_array_equal(f.attention, steps[s].attention)
    assert f.chosen_prob == pytest.approx(float(steps[s].top_probs[3]), rel=1e-5)
    assert f.chosen_prob != pytest.approx(steps[s].chosen_prob)
    prefix = [st.token_id for st in steps[:s]] + [alt]
    branch = list(start(lm, PROMPT, settings, prefix=prefix))
    assert branch[0].index == s + 1 and branch[0].context_ids[-1] == alt
    # independent: one plain forward pass over the branched context, no cache, no hooks
    ids = list(steps[0].context_ids) + prefix
    with torch.inference_mode():
        logits = lm.model(torch.tensor([ids])).logits[0, -1].numpy()
    assert branch[0].token_id == int(np.argmax(logits))
    np.testing.assert_allclose(branch[0].logits, logits, atol=1e-4)
    # the branched text differs from the original from the forced step on
    assert [st.token_id for st in branch] != [st.token_id for st in steps[s + 1:]]


def test_forced_text_is_released_like_a_generated_token(lm):
    steps = list(start(lm, PROMPT, Settings(temperature=0, max_new_tokens=3)))
    space = lm.tokens.tok(" fox", add_special_tokens=False)["input_ids"][0]
    f = forced_step(lm, steps[:1], steps[1], space)
    assert f.text == lm.tokens.decode([space])


def test_forcing_the_end_of_sequence_marks_the_stop(lm):
    steps = list(start(lm, PROMPT, Settings(temperature=0, max_new_tokens=3)))
    eos = lm.tokenizer.eos_token_id
    f = forced_step(lm, steps[:1], steps[1], eos)
    assert f.stop_reason == "eos" and f.text == ""


def test_a_token_outside_the_vocabulary_is_refused(lm):
    steps = list(start(lm, PROMPT, Settings(temperature=0, max_new_tokens=2)))
    with pytest.raises(SettingsError, match="outside the vocabulary"):
        forced_step(lm, [], steps[0], lm.info.vocab_size + 5)


def test_the_forced_mark_survives_a_download_and_reload(lm):
    from dataclasses import replace

    from pipeline.trace.files import dumps, loads
    from tests.helpers import records_equal

    gen = start(lm, PROMPT, Settings(temperature=0, max_new_tokens=3))
    steps = list(gen)
    f = forced_step(lm, steps[:1], steps[1], int(steps[1].top_ids[2]))
    trace = replace(gen.trace(), steps=(steps[0], f))
    back = loads(dumps(trace, full=True))
    assert [st.forced for st in back.steps] == [False, True]
    assert records_equal(back, trace)
    assert '"forced"' not in dumps(replace(trace, steps=(steps[0],)))  # plain steps do not carry it
