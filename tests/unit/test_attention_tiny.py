"""pipeline/attention.py: a prefill longer than the kept matrix runs the fused kernel for its output and eager's formula
for the last query's weights, and every number a step records is what an eager pass of the same model gives."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from pipeline import attention
from pipeline.generate import start
from pipeline.trace.records import Settings
from tests import tiny

LIMIT = 8  # MAX_MATRIX_TOKENS for these tests: the tiny model's context is 64 positions
PROMPTS = ["hello there, this is a longer prompt", "a b c d e f g h i j k l m n o p q r"]


@pytest.fixture()
def llama(monkeypatch):
    monkeypatch.setattr(attention, "MAX_MATRIX_TOKENS", LIMIT)
    return tiny.loaded("llama", seed=3)


@pytest.fixture()
def fused(monkeypatch):
    """How many attention calls took the fused path."""
    calls = []
    real = attention._fused_ok

    def spy(*a):
        ok = real(*a)
        calls.append(ok)
        return ok

    monkeypatch.setattr(attention, "_fused_ok", spy)
    return calls


def _eager(lm):
    ref = copy.deepcopy(lm.model)
    ref.set_attn_implementation("eager")
    return ref


def _check_against_eager(ref, steps):
    """Each step's attention row (every layer and head), logits' top and log-normaliser, as one eager pass over its context."""
    for rec in steps:
        with torch.no_grad():
            out = ref(torch.tensor([rec.context_ids]), output_attentions=True)
        rows = np.stack([a[0, :, -1, :].numpy() for a in out.attentions])  # (L, H, T)
        np.testing.assert_allclose(rec.attention, rows, atol=1e-5)
        logits = out.logits[0, -1].double()
        np.testing.assert_allclose(rec.top_logits, logits[rec.top_ids].numpy(), atol=1e-4)
        assert rec.logsumexp == pytest.approx(float(torch.logsumexp(logits, 0)), abs=1e-4)


def test_a_long_prefill_records_what_an_eager_pass_gives(llama, fused):
    steps = list(start(llama, PROMPTS[1], Settings(temperature=0.0, max_new_tokens=4, chat=False)))
    assert len(steps[0].context_ids) > LIMIT and steps[0].attention_matrix is None
    assert any(fused), "the prefill took the fused path"
    assert sum(fused) == llama.info.n_layers  # one pass's layers: the decode steps are eager
    _check_against_eager(_eager(llama), steps)


def test_a_prompt_within_the_limit_is_eager_and_keeps_its_matrix(llama, fused):
    steps = list(start(llama, "a b c", Settings(temperature=0.0, max_new_tokens=2, chat=False)))
    assert len(steps[0].context_ids) <= LIMIT and steps[0].attention_matrix is not None and not any(fused)
    _check_against_eager(_eager(llama), steps)


def test_long_prompts_prefilled_in_one_padded_pass_match_an_eager_pass(llama, fused):
    """Two prompts of different lengths, both over the limit, queued while the model is busy: one left-padded prefill,
    fused, and each row's records are what an eager pass over its own context gives (no weight on the other's pads)."""
    runs = [(p, Settings(temperature=0.0, max_new_tokens=3, chat=False)) for p in PROMPTS]
    out = tiny.prefilled_together(llama, runs)
    assert set(out) == {0, 1} and all(out[i][0].batch_rows == 2 for i in out)
    assert len({len(out[i][0].context_ids) for i in out}) == 2 and any(fused)
    ref = _eager(llama)
    for i in out:
        _check_against_eager(ref, out[i])


def test_only_the_plain_families_leave_eager():
    assert tiny.loaded("llama").model.config._attn_implementation == attention.NAME
    assert tiny.loaded("gpt2").model.config._attn_implementation == "eager"


def test_only_a_captured_pass_that_keeps_one_row_skips_the_other_queries(llama, fused):
    """A forced run (pipeline/forced_run.py) reads every row of its pass, and a pass outside the capture may ask for its
    weights: both stay eager, with every query's weights."""
    from pipeline.capture import run_with_cache

    ids = list(range(5, 5 + 3 * LIMIT))
    assert run_with_cache(llama, ids)["blocks.0.attn.pattern"].shape[2] == 1 and all(fused)
    fused.clear()
    assert run_with_cache(llama, ids, keep=4)["blocks.0.attn.pattern"].shape[2] == len(ids) and not any(fused)
    with torch.no_grad():
        out = llama.model(torch.tensor([ids]), output_attentions=True)
    assert out.attentions[0].shape[2] == len(ids) and not any(fused)
