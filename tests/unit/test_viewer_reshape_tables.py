"""The sampling tables of viz.viewer.sampling carry enough to reshape a step for every position of the five sampling
sliders (temperature, top-k, top-p, min-p, repetition penalty) as pipeline.sampling does: checked through
tests/unit/sampling_mirror.py, a line-by-line Python mirror of assets/viewer_sampling.js (the browser's own numbers:
tests/browser/test_reshape_minp_penalty.py), against apply_stages over the full logits. The tables themselves are
checked against direct computations; and a step saved without its logits reshapes min-p within 1e-3 (pipeline.sampling.rest)
or within ranges that hold the truth (pipeline.sampling.rest_bounds)."""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from pipeline.sampling import rest
from pipeline.sampling import rest_bounds
from pipeline.sampling import stages as sampling
from tests.synthetic import make_trace
from viz.distribution import reshape as dist_reshape
from viz.viewer.grid import unpacked
from viz.viewer.sampling import MIN_PS, PENALTIES, TEMPERATURES, penalties, sampling_bundle

from tests.unit import sampling_mirror as mirror
from tests.unit.test_rest_exact import shapes, step_from

TS, KS, PS, MPS, PENS = (0.0, 0.05, 0.7, 1.0, 2.0), (0, 1, 50, 200), (0.01, 0.5, 0.9, 0.99, 1.0), (0.0, 0.01, 0.05, 0.2, 0.5), (1.0, 1.05, 1.3, 2.0)


def _reference(step, t, k, p, mp, pen):
    stages = sampling.build_stages(temperature=t, top_k=k, top_p=p, min_p=mp, repetition_penalty=pen, context_ids=step.context_ids)
    return sampling.apply_stages(step.logits, stages), [s.name for s in stages]


@pytest.mark.parametrize("vocab, penalty, seed", [(3000, 1.3, 4), (700, 1.0, 2), (3000, 2.0, 9)])
def test_every_position_of_the_five_sliders_is_the_pipelines(vocab, penalty, seed):
    trace = make_trace(vocab=vocab, n_steps=2, top_n=100, prompt_len=40, repetition_penalty=penalty, seed=seed)
    S = sampling_bundle(trace.steps, penalty=penalty)
    exact = corner = 0
    for s, (t, k, p, mp, pen) in itertools.product(range(2), itertools.product(TS, KS, PS, MPS, PENS)):
        step, got = trace.steps[s], mirror.reshape(S, s, t, k, p, mp, pen)
        res, names = _reference(step, t, k, p, mp, pen)
        assert [x[0] for x in got["stages"]] == names
        where = (s, t, k, p, mp, pen)
        final = res.final_probs[np.asarray(step.top_ids)]
        if any(x[4] for x in got["stages"]):  # the one corner said to be approximate
            corner += 1
            assert t > 0 and k == 0 and pen != penalty and got["stages"][names.index("top_p")][4], where
            assert np.max(np.abs(got["final"] - final)) <= 1e-3 and abs(got["entropy"] - sampling.entropy_bits(res.final_probs)) <= 0.05, where
            continue
        exact += 1
        assert [x[2] for x in got["stages"]] == list(res.stage_kept), where
        assert np.allclose([x[3] for x in got["stages"]], res.stage_mass, rtol=0, atol=1e-6), where
        assert np.max(np.abs(got["final"] - final)) <= 1e-6, where
        assert abs(got["entropy"] - sampling.entropy_bits(res.final_probs)) <= 1e-6, where
    assert exact > 0.9 * (exact + corner), (exact, corner)


def test_the_tables_hold_the_context_apart_and_the_sums_over_the_rest():
    trace = make_trace(vocab=2000, n_steps=1, top_n=100, prompt_len=30, repetition_penalty=1.3, seed=5)
    step = trace.steps[0]
    d = sampling_bundle(trace.steps, penalty=1.3)["steps"][0]
    x = np.asarray(step.logits, np.float32)
    ctx = np.unique(step.context_ids)
    r = np.setdiff1d(np.arange(x.size), ctx)
    assert np.array_equal(unpacked(d["ctx"]), np.sort(x[ctx])[::-1]) and d["pen"] == 1.3 and d["V"] == x.size
    head = unpacked(d["head"])
    assert np.array_equal(head, np.sort(x[r])[::-1][: d["M"]])
    for i, t in enumerate(TEMPERATURES):
        if not t:
            continue
        q = (x[r] / np.float32(t)).astype(np.float64)
        e = np.exp(q - q.max())
        assert unpacked(d["z"])[i] == pytest.approx(e.sum(), rel=1e-12)
        assert unpacked(d["ed"])[i] == pytest.approx((e * (q - q.max())).sum(), rel=1e-10, abs=1e-10)
    pens = penalties(1.3)
    assert pens == sorted(PENALTIES) and len(unpacked(d["greedy"])) == len(pens)
    for pen, win in zip(pens, unpacked(d["greedy"])):
        x_pen = sampling.RepetitionPenalty(pen, tuple(step.context_ids))(x) if pen != 1 else x
        pick = int(np.argmax(x_pen))
        assert win == (list(step.top_ids).index(pick) if pick in step.top_ids else -1)


def test_a_trace_off_the_penalty_grid_has_its_own_penalty_too():
    trace = make_trace(vocab=500, n_steps=1, top_n=50, prompt_len=20, repetition_penalty=1.13, seed=1)
    S = sampling_bundle(trace.steps, penalty=1.13, min_p=0.02)
    assert 1.13 in S["penalties"] and S["penalty"] == 1.13 and S["min_p"] == 0.02 and S["min_ps"] == list(MIN_PS)
    got = mirror.reshape(S, 0, 0.9, 0, 0.8, 0.0, 1.13)
    res, _ = _reference(trace.steps[0], 0.9, 0, 0.8, 0.0, 1.13)
    assert np.max(np.abs(got["final"] - res.final_probs[np.asarray(trace.steps[0].top_ids)])) <= 1e-6


@pytest.mark.parametrize("name", ["normal", "flat", "peaked"])
def test_min_p_from_the_summarised_rest_is_within_1e_3(name):
    logits = dict(shapes())[name]
    s, _ = step_from(logits)
    compact = dataclasses.replace(s, logits=None)
    for t, p, mp in itertools.product((0.3, 0.7, 1.0, 1.5, 2.0), (0.9, 1.0), (0.01, 0.05, 0.2, 0.5)):
        want = dist_reshape(s, temperature=t, top_p=p, min_p=mp, use_recorded=False)
        got = dist_reshape(compact, temperature=t, top_p=p, min_p=mp, use_recorded=False)
        assert got.source == "rest" and got.stage_names[-1] == "min_p"
        assert np.max(np.abs(got.final_probs - want.final_probs)) <= 1e-3, (t, p, mp)
        n_true, n_got = want.stage_kept[-1], got.stage_kept[-1]
        # a count within the head is exact; past it (marked ≈) the histogram's estimate, and the mass kept with it
        if got.stage_estimated[-1]:
            assert abs(n_got - n_true) <= max(3, 0.05 * n_true) and abs(got.stage_mass[-1] - want.stage_mass[-1]) <= 2e-3, (t, p, mp)
        else:
            assert n_got == n_true and abs(got.stage_mass[-1] - want.stage_mass[-1]) <= 1e-3, (t, p, mp, n_got, n_true)


@pytest.mark.parametrize("name", ["normal", "flat", "peaked", "small"])
def test_min_p_ranges_of_an_older_step_hold_the_truth(name):
    logits = dict(shapes())[name]
    s, _ = step_from(logits)
    old = dataclasses.replace(s, logits=None, rest=None)
    for t, k, p, mp in itertools.product((0.5, 1.0, 2.0), (0, 50), (0.5, 0.95, 1.0), (0.01, 0.1, 0.5)):
        truth, _ = _reference(s, t, k, p, mp, 1.0)
        rg = rest_bounds.ranged(old, logits.size, temperature=t, top_k=k, top_p=p, min_p=mp)
        fin = truth.final_probs[np.asarray(s.top_ids)]
        assert np.all(rg.lo <= fin + 1e-9) and np.all(fin <= rg.hi + 1e-9), (t, k, p, mp)
        lo, hi = rg.stages[-1][2]
        assert rg.stages[-1][0] == "min_p" and lo <= truth.stage_kept[-1] <= hi, (t, k, p, mp, rg.stages[-1], truth.stage_kept[-1])
        mlo, mhi = rg.stages[-1][3]
        assert mlo - 1e-9 <= truth.stage_mass[-1] <= mhi + 1e-9, (t, k, p, mp)
        if rg.entropy is not None:
            assert rg.entropy[0] - 1e-9 <= sampling.entropy_bits(truth.final_probs) <= rg.entropy[1] + 1e-9


def test_the_min_p_count_past_the_head_is_the_bins_share_over_the_threshold():
    logits = dict(shapes())["flat"]
    s, _ = step_from(logits)
    xs, ranks = rest.head(s, s.rest)
    S = rest.at(xs, s.rest, 2.0)
    q = (logits / np.float32(2.0)).astype(np.float64)
    for mp in (0.01, 0.05):
        true = int(np.count_nonzero(q - q.max() >= math.log(mp)))
        assert true > S.q.size  # past the head
        assert abs(rest.min_p_count(S, mp) - true) <= max(3, 0.05 * true)


@pytest.mark.parametrize("flat, start", [(0.2, 0), (3.0, 0), (3.0, 20_000), (8.0, 50_000)])
def test_a_longer_prefix_goes_on_with_the_very_sums_of_one_cumsum(flat, start):
    """viz.viewer.sampling._prefix grows its prefix (4 times, from `start`) as far as the largest nucleus reaches and
    goes on from its last sum: every cumulative value is the one a single cumsum over the whole order gives, bit for bit
    (TopP's own additions), and the prefix reaches the nucleus of 0.999 or the end of the vocabulary."""
    from viz.viewer import sampling as tables

    rng = np.random.default_rng(7)
    x = rng.normal(0, flat, 49_152)
    e = np.exp(x - x.max())
    order, z = np.argsort(-x, kind="stable"), e.sum()
    es, cum = tables._prefix(e, order, z, 300, start)
    whole = np.cumsum(e[order] / z)
    assert np.array_equal(es, e[order[:es.size]]) and np.array_equal(cum, whole[:cum.size])
    assert es.size >= max(tables.PREFIX, start) or es.size == x.size
    assert cum[-1] >= tables.TAIL_PS[-1] - tables.TOP_P_EPS or es.size == x.size
