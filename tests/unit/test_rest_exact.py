"""A step saved without its full logits keeps a summary of the rest of the vocabulary (pipeline.sampling.rest); from it
the distribution reshapes within 1e-3 of the full logits at every slider position, exactly at the step's own
settings, and a count it can only estimate says so ("≈"). An older step with no summary shows the range each
number lies in (pipeline.sampling.rest_bounds), and the ranges hold the truth."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.sampling import rest
from pipeline.sampling import rest_bounds
from pipeline.sampling import stages as sampling
from pipeline.trace import files as trace_io
from pipeline.trace.records import StageRecord
from tests.synthetic import make_trace
from viz.distribution import distribution_figure_dict, reshape
from viz.viewer.sampling import TEMPERATURES, TOP_PS

TOL = 1e-3
GRID_T = [t for t in TEMPERATURES if t]
SOME_P = (0.01, 0.1, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0)
SOME_K = (0, 1, 7, 50, 99, 100, 101, 150, 200)


def step_from(logits: np.ndarray, *, n: int = 100, temperature=1.0, top_k=0, top_p=1.0, penalty=1.0, context=(), seed=0):
    """A synthetic trace's step holding `logits` (its top n, their numbers at these settings, the rest summarised)."""
    V = logits.size
    t = make_trace(vocab=V, top_n=n, n_steps=1, temperature=temperature, top_k=top_k, top_p=top_p, repetition_penalty=penalty, seed=seed)
    s = t.steps[0]
    ctx = tuple(context) or s.context_ids
    stages = sampling.build_stages(temperature=temperature, top_k=top_k, top_p=top_p, repetition_penalty=penalty, context_ids=ctx)
    res = sampling.apply_stages(logits, stages)
    top = np.lexsort((np.arange(V), -logits.astype(np.float64)))[:n]
    probs = sampling.softmax(logits)
    s = dataclasses.replace(
        s, context_ids=ctx, context_pieces=tuple("x" for _ in ctx), top_ids=top.astype(np.int64), top_pieces=tuple(f"t{i}" for i in top),
        top_logits=logits[top], top_probs=probs[top].astype(np.float32), top_final_probs=res.final_probs[top].astype(np.float32),
        logsumexp=sampling.logsumexp(logits), entropy=sampling.entropy_bits(probs), final_entropy=sampling.entropy_bits(res.final_probs),
        stages=tuple(StageRecord(st.name, float(st.param), k, m, p[top].astype(np.float32))
                     for st, k, m, p in zip(stages, res.stage_kept, res.stage_mass, res.stage_probs)),
        logits=logits, rest=rest.summarise(logits, top, penalty=penalty, context_ids=ctx if penalty != 1.0 else ()))
    return s, dataclasses.replace(t, steps=(s,))


def shapes():
    """Logits a model may give: spread out, flat, one candidate far ahead, many exact ties, a small vocabulary."""
    rng = np.random.default_rng(3)
    yield "normal", (rng.standard_normal(20000) * 3).astype(np.float32)
    yield "flat", (rng.standard_normal(20000) * 0.6).astype(np.float32)
    peaked = (rng.standard_normal(20000) * 2).astype(np.float32)
    peaked[17] = 25.0
    yield "peaked", peaked
    yield "ties", (np.round(rng.standard_normal(20000) * 4) / 2).astype(np.float32)
    yield "small", (rng.standard_normal(230) * 3).astype(np.float32)


@pytest.mark.parametrize("name, logits", list(shapes()))
def test_the_summary_holds_the_rest_exactly_where_it_says_so(name, logits):
    s, _ = step_from(logits)
    r = s.rest
    others = np.delete(logits, s.top_ids)
    assert r.size == others.size and rest.usable(r, 1.0)
    assert np.array_equal(r.top, np.sort(others)[::-1][: r.top.size])  # the largest, one by one
    below = others[others < r.top.min()] if r.top.size else others
    assert int(r.counts.sum()) == below.size
    for g, t in enumerate(r.temperatures):
        q = below.astype(np.float64) / rest.GRID[g]  # (the record holds the grid as float32)
        assert t == np.float32(rest.GRID[g])
        if not q.size:
            assert r.lse[g] == -np.inf
            continue
        lse = q.max() + np.log(np.exp(q - q.max()).sum())
        assert r.lse[g] == pytest.approx(lse, rel=1e-9, abs=1e-9)  # the softmax's sum: the trace's own, not a histogram's


@pytest.mark.parametrize("name, logits", list(shapes()))
def test_every_slider_position_is_within_1e_3_of_the_full_logits(name, logits):
    s, _ = step_from(logits)
    compact = dataclasses.replace(s, logits=None)
    worst = 0.0
    for t in GRID_T[::3] + [0.05, 0.3, 0.6, 1.0, 1.5, 2.0]:
        for k in SOME_K:
            for p in SOME_P if k in (0, 50) else (1.0,):
                want = reshape(s, temperature=t, top_k=k, top_p=p, use_recorded=False)
                got = reshape(compact, temperature=t, top_k=k, top_p=p, use_recorded=False)
                assert want.source == "logits" and got.source == "rest"
                err = max(np.abs(got.final_probs - want.final_probs).max(),
                          abs(got.final_probs[:20].sum() - want.final_probs[:20].sum()))
                if name == "ties" and p < 1:  # top-p among tied probabilities keeps an arbitrary one of them in numpy
                    err = abs(got.stage_mass[-1] - want.stage_mass[-1])
                worst = max(worst, err)
                assert err <= TOL, (name, t, k, p, err)
                for a, b, est in zip(got.stage_kept, want.stage_kept, got.stage_estimated):
                    assert a == b or (est and abs(a - b) <= 0.02 * b), (name, t, k, p, got.stage_kept, want.stage_kept)
                assert abs(got.final_entropy - want.final_entropy) <= (0.01 if got.entropy_estimated else 1e-6), (name, t, k, p)
                assert got.exact == (not got.entropy_estimated)  # exact unless a count was estimated
    assert worst > 0 or name == "small"  # (the test compared something)


def test_between_the_grids_temperatures_too():
    _, logits = next(shapes())
    s, _ = step_from(logits)
    compact = dataclasses.replace(s, logits=None)
    for t in (0.33, 0.71, 1.234, 1.99, 2.5):
        for p in (1.0, 0.9):
            want, got = (reshape(x, temperature=t, top_p=p, use_recorded=False) for x in (s, compact))
            assert np.abs(got.final_probs - want.final_probs).max() <= TOL and not got.exact


def test_at_the_steps_own_settings_the_recorded_numbers_and_no_approximate():
    _, logits = next(shapes())
    s, trace = step_from(logits, temperature=0.8, top_p=0.9)
    compact = dataclasses.replace(s, logits=None)
    r = reshape(compact, temperature=0.8, top_p=0.9, vocab_size=logits.size)
    assert r.source == "recorded" and np.array_equal(r.final_probs, s.top_final_probs.astype(np.float64))
    for t, p in ((0.8, 0.9), (0.3, 1.0), (1.5, 0.95)):
        fig = distribution_figure_dict(compact, temperature=t, top_p=p, vocab_size=logits.size)
        assert "approximate" not in fig["layout"]["title"]["text"] and "range" not in str(fig["layout"]["annotations"])


def test_a_count_past_the_kept_logits_says_it_is_an_estimate():
    _, logits = list(shapes())[1]  # flat: at temperature 2 the nucleus of 0.9 holds thousands of tokens
    s, _ = step_from(logits)
    fig = distribution_figure_dict(dataclasses.replace(s, logits=None), temperature=2.0, top_p=0.9, vocab_size=logits.size)
    title = fig["layout"]["title"]["text"]
    assert "top-p 0.9 keeps ≈" in title and "→ ≈" in title
    fig = distribution_figure_dict(dataclasses.replace(s, logits=None), temperature=2.0, top_k=50, vocab_size=logits.size)
    assert "≈" not in fig["layout"]["title"]["text"]  # within the kept logits: exact


def test_a_repetition_penalty_is_summarised_after_and_a_different_one_not_used():
    _, logits = next(shapes())
    ctx = tuple(int(i) for i in np.argsort(-logits)[:300:3])  # some of the top candidates, some of the rest
    s, _ = step_from(logits, penalty=1.3, context=ctx)
    compact = dataclasses.replace(s, logits=None)
    for t, k, p in ((0.7, 0, 1.0), (1.2, 0, 0.9), (0.5, 40, 0.8)):
        want = reshape(s, temperature=t, top_k=k, top_p=p, repetition_penalty=1.3, use_recorded=False)
        got = reshape(compact, temperature=t, top_k=k, top_p=p, repetition_penalty=1.3, use_recorded=False)
        assert got.source == "rest" and np.abs(got.final_probs - want.final_probs).max() <= TOL
    assert reshape(compact, temperature=0.7, repetition_penalty=1.0, use_recorded=False).source != "rest"


def test_the_summary_travels_in_a_compact_file():
    _, logits = next(shapes())
    _, trace = step_from(logits, temperature=0.7)
    back = trace_io.loads(trace_io.dumps(trace))
    a, b = trace.steps[0], back.steps[0]
    assert b.logits is None and b.rest is not None
    for f in dataclasses.fields(a.rest):
        x, y = getattr(a.rest, f.name), getattr(b.rest, f.name)
        assert (np.array_equal(x, y) and x.dtype == y.dtype) if isinstance(x, np.ndarray) else x == y, f.name
    assert len(trace_io.dumps(trace)) - len(trace_io.dumps(dataclasses.replace(trace, steps=(dataclasses.replace(a, rest=None),)))) < 6000


def test_a_damaged_summary_is_not_read():
    _, logits = next(shapes())
    s, _ = step_from(logits)
    bad = [dataclasses.replace(s.rest, counts=s.rest.counts[:-1]), dataclasses.replace(s.rest, lse=s.rest.lse * np.nan),
           dataclasses.replace(s.rest, temperatures=-s.rest.temperatures), dataclasses.replace(s.rest, depths=s.rest.depths.astype(np.float32))]
    for r in bad:
        assert not rest.usable(r, 1.0)
        got = reshape(dataclasses.replace(s, logits=None, rest=r), temperature=0.7, vocab_size=logits.size, use_recorded=False)
        assert got.source == "range"


@pytest.mark.parametrize("name, logits", [x for x in shapes() if x[0] != "ties"])  # (numpy's top-p keeps any one of a tie)
def test_an_older_step_shows_ranges_that_hold_the_model(name, logits):
    s, _ = step_from(logits)
    old = dataclasses.replace(s, logits=None, rest=None)
    V = logits.size
    for t in (0.05, 0.3, 0.6, 1.0, 1.5, 2.0):
        for k, p in ((0, 1.0), (0, 0.5), (0, 0.9), (30, 1.0), (30, 0.8), (150, 1.0), (150, 0.95)):
            want = reshape(s, temperature=t, top_k=k, top_p=p, use_recorded=False)
            rg = rest_bounds.ranged(old, V, temperature=t, top_k=k, top_p=p)
            f = want.final_probs
            assert np.all(rg.lo <= f + 1e-12) and np.all(f <= rg.hi + 1e-12), (name, t, k, p)
            assert 1 - rg.hi[:20].sum() <= 1 - f[:20].sum() + 1e-12 <= 1 - rg.lo[:20].sum() + 2e-12
            for (_, _, (klo, khi), (mlo, mhi)), kk, mm in zip(rg.stages, want.stage_kept, want.stage_mass):
                assert klo <= kk <= khi and mlo - 1e-12 <= mm <= mhi + 1e-12, (name, t, k, p)
            if rg.entropy:
                assert rg.entropy[0] == pytest.approx(want.final_entropy, abs=1e-6)
    r = reshape(old, temperature=1.0, vocab_size=V, use_recorded=False)  # the raw distribution: exact
    assert np.allclose(r.finals[0], r.finals[1], rtol=1e-6) and r.entropy_known


def test_an_older_steps_figure_writes_each_range_beside_its_number():
    _, logits = list(shapes())[1]
    s, _ = step_from(logits)
    old = dataclasses.replace(s, logits=None, rest=None)
    fig = distribution_figure_dict(old, temperature=0.6, top_p=0.9, vocab_size=logits.size)
    title, bars = fig["layout"]["title"]["text"], fig["data"][1]
    assert "approximate" not in title and "→ ? bits" in title and " to " in title  # the count kept: a range
    assert any("–" in x for x in bars["text"]) and any(" to " in h for h in bars["hovertext"])
    assert any("the range it lies in" in a["text"] for a in fig["layout"]["annotations"])
    fig = distribution_figure_dict(old, temperature=1.0, vocab_size=logits.size)  # exact there: no range shown
    assert not any("–" in x for x in fig["data"][1]["text"]) and "→ ?" not in fig["layout"]["title"]["text"]


def test_summarising_is_cheap_beside_a_decode_step():
    import timeit

    rng = np.random.default_rng(0)
    logits = (rng.standard_normal(49152) * 3).astype(np.float32)
    top = np.argsort(-logits)[:100]
    best = min(timeit.repeat(lambda: rest.summarise(logits, top), number=1, repeat=15))  # (the best: a busy machine's pauses aside)
    assert best < 0.01  # about 1 ms a step (the embedded model's vocabulary), beside its ~60 ms decode step


def test_the_grid_is_the_pages_slider():
    assert rest.GRID == tuple(t for t in TEMPERATURES if t) and TOP_PS[-1] == 1.0


def test_a_generated_steps_summary_is_made_as_it_is_written_after_its_own_penalty():
    """A generation keeps its logits and leaves the summary to the writer (rest.of_step); the file's summary then
    reshapes each step at its own penalty, over its own context, within 1e-3 of the model's logits."""
    from pipeline.generate import start
    from pipeline.trace.records import Settings
    from tests import tiny

    gen = start(tiny.loaded("llama", ctx=128), "the cat the cat the", Settings(temperature=0.9, seed=5, max_new_tokens=6, repetition_penalty=1.3))
    for _ in gen:
        pass
    trace = gen.trace()
    assert all(s.rest is None and s.logits is not None for s in trace.steps)
    back = trace_io.loads(trace_io.dumps(trace))
    for s, b in zip(trace.steps, back.steps):
        assert b.logits is None and rest.usable(b.rest, 1.3) and b.rest.penalty == 1.3
        x = s.logits.copy()  # the penalty by hand, over the whole context
        ids = np.unique(np.asarray(s.context_ids))
        x[ids] = np.where(x[ids] < 0, x[ids] * np.float32(1.3), x[ids] / np.float32(1.3))
        others = np.sort(np.delete(x, s.top_ids))[::-1]
        assert np.array_equal(b.rest.top, others[: b.rest.top.size]) and int(b.rest.counts.sum()) == others.size - b.rest.top.size
        for t, k, p in ((0.7, 0, 1.0), (1.2, 0, 0.9), (0.5, 40, 0.8)):
            want = reshape(s, temperature=t, top_k=k, top_p=p, repetition_penalty=1.3, use_recorded=False)
            got = reshape(b, temperature=t, top_k=k, top_p=p, repetition_penalty=1.3, use_recorded=False)
            assert got.source == "rest" and np.abs(got.final_probs - want.final_probs).max() <= TOL, (s.index, t, k, p)
