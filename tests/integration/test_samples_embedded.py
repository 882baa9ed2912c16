"""Many continuations at once on the embedded SmolLM2-135M-Instruct, against independent computations: every
continuation's probabilities equal a plain forward pass over its own tokens (teacher forcing) with this file's own
softmax and stages; the first tokens of many draws follow the distribution (chi-square, with power); a continuation
opened as a branch has the steps generation records for the same tokens."""
import dataclasses

import numpy as np
import pytest
import torch

from pipeline.forced_run import branch_trace, open_sample
from pipeline.generate import run_trace, start
from pipeline.trace.records import Settings
from pipeline.samples import draw_samples, samples_from_prompt, samples_from_trace
from tests.stats import chi2_p_value

pytestmark = pytest.mark.integration
PROMPT = "Write one sentence about a cat who finds a key."
SETTINGS = Settings(temperature=0.8, top_k=60, top_p=0.92, min_p=0.03, repetition_penalty=1.2, seed=3)


# -- this file's own sampler: the textbook definitions, written out again (not pipeline.sampling) ----------------


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / e.sum()


def _final(logits: np.ndarray, context: list[int], s: Settings) -> np.ndarray:
    """repetition penalty -> temperature -> top-k -> top-p -> min-p, then softmax (float64)."""
    x = logits.astype(np.float64).copy()
    if s.repetition_penalty != 1.0:
        ids = np.unique(context)
        x[ids] = np.where(x[ids] < 0, x[ids] * s.repetition_penalty, x[ids] / s.repetition_penalty)
    x = x / s.temperature
    if s.top_k:
        x[x < np.sort(x)[-s.top_k]] = -np.inf
    if s.top_p < 1:
        p = _softmax(x)
        order = np.argsort(-p, kind="stable")
        n_keep = int(np.argmax(np.cumsum(p[order]) >= s.top_p - 1e-12)) + 1
        drop = np.ones(x.size, bool)
        drop[order[:n_keep]] = False
        x[drop] = -np.inf
    if s.min_p > 0:
        p = _softmax(x)
        x[p < s.min_p * p.max()] = -np.inf
    return _softmax(x)


def _forward(lm, ids: list[int]) -> np.ndarray:
    """(T, vocab) float64 logits of one plain, uncached forward pass (no hooks)."""
    with torch.inference_mode():
        out = lm.model(input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0, :, : lm.info.vocab_size].double().numpy()


def test_every_probability_equals_a_forward_pass_over_the_continuations_own_tokens(smol):
    s = samples_from_prompt(smol, PROMPT, SETTINGS, n=16, max_new_tokens=24)
    ctx = list(s.prompt_ids)
    c = len(ctx)
    checked = 0
    for x in s.samples:
        toks = list(x.token_ids)
        logits = _forward(smol, ctx + toks[:-1])[c - 1:]  # (len(toks), vocab): the query before each token
        for j, tok in enumerate(toks):
            t1 = _softmax(logits[j])
            assert x.prob_t1[j] == pytest.approx(t1[tok], abs=1e-4)
            assert x.entropy_t1[j] == pytest.approx(-(t1[t1 > 0] * np.log2(t1[t1 > 0])).sum(), abs=1e-3)
            assert x.prob[j] == pytest.approx(_final(logits[j], ctx + toks[:j], SETTINGS)[tok], abs=1e-4)
            checked += 1
    assert checked >= 16 * 5 and len({x.token_ids for x in s.samples}) >= 8  # real draws, mostly different
    d = _final(_forward(smol, ctx)[-1], ctx, SETTINGS)  # the first position's distribution, recorded once
    np.testing.assert_allclose(s.first.probs, d[list(s.first.ids)], atol=1e-4)
    assert s.first.kept == int(np.count_nonzero(d))


def test_the_first_tokens_follow_the_distribution_chi_square_with_power(smol):
    settings = Settings(temperature=1.6, top_k=8, seed=0)
    ids = list(start(smol, "Name a colour.", Settings(max_new_tokens=1)).prompt.token_ids)
    logits = _forward(smol, ids)[-1]
    p = _final(logits, ids, settings)
    cells = np.flatnonzero(p)
    assert cells.size == 8
    counts = np.zeros(cells.size)
    for seed in range(50):  # 50 batches of 32 continuations, one token each: 1,600 draws
        s = draw_samples(smol, ids, Settings(temperature=1.6, top_k=8, seed=seed), n=32, max_new_tokens=1)
        for x in s.samples:
            counts[np.flatnonzero(cells == x.token_ids[0])[0]] += 1  # (an IndexError: a filtered token was drawn)
    assert chi2_p_value(counts, p[cells]) > 0.001
    # the test has power: the same draws reject what a sampler that ignored the temperature would draw
    assert chi2_p_value(counts, _softmax(logits[cells])) < 0.001


# the time; the stream (a branch draws from its own); and the mean depth of each bin of the rest-of-vocabulary
# histogram (pipeline.sampling.rest), which jumps when float rounding moves one token across a bin's edge (its counts: by 1)
_SKIP = {"ms", "wait_ms", "rng_state", "depths"}
_INT_SLACK = {"counts": 1}


def _close(a, b, name=""):
    """Records equal: ints and text exactly, floats and arrays to 1e-4 of their scale (probabilities: 1e-4)."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b)
        for f in dataclasses.fields(a):
            if f.name not in _SKIP:
                _close(getattr(a, f.name), getattr(b, f.name), f.name)
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype, name
        if a.dtype.kind in "iub":
            assert np.abs(a.astype(np.int64) - b.astype(np.int64)).max(initial=0) <= _INT_SLACK.get(name, 0), name
        else:
            scale = max(1.0, float(np.abs(b[np.isfinite(b)]).max(initial=0)))
            assert np.allclose(a, b, rtol=0, atol=1e-4 * scale, equal_nan=True), name
    elif isinstance(a, float):
        assert a == pytest.approx(b, abs=1e-4 * max(1.0, abs(b))), name
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), name
        for u, v in zip(a, b):
            _close(u, v, name)
    else:
        assert a == b, name


@pytest.mark.parametrize("start_step", [0, 5])
def test_a_branch_has_the_steps_generation_records_for_its_tokens(smol, start_step):
    tr = run_trace(smol, PROMPT, Settings(temperature=0.8, top_p=0.95, repetition_penalty=1.1, seed=2, max_new_tokens=12))
    toks = [st.token_id for st in tr.steps[start_step:]]
    b = branch_trace(smol, tr, start_step, toks, tr.settings)
    assert len(b.steps) == len(tr.steps) and b.steps[:start_step] == tr.steps[:start_step]
    for got, want in zip(b.steps[start_step:], tr.steps[start_step:]):
        _close(got, want)


def test_a_greedy_continuation_opened_as_a_branch_is_the_greedy_trace(smol):
    tr = run_trace(smol, PROMPT, Settings(temperature=0, max_new_tokens=10))
    s = samples_from_trace(smol, tr, 4, Settings(temperature=0), n=2, max_new_tokens=6)
    assert s.samples[0].token_ids == tuple(st.token_id for st in tr.steps[4:])
    b = open_sample(smol, tr, s, 1)
    for got, want in zip(b.steps, tr.steps):
        _close(got, want)
    assert b.text == tr.text
