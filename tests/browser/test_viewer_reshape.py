"""assets/viewer_sampling.js reshapes a step's distribution exactly as pipeline.sampling does, for the page's
slider positions: temperature -> top-k -> top-p (after the trace's repetition penalty), every
candidate's probability, the rest-of-vocabulary bar, each stage's kept count and mass, the entropy."""
import dataclasses

import numpy as np
import pytest

from pipeline.trace.files import load
from tests.synthetic import make_trace
from viz.viewer.sampling import TEMPERATURES, TOP_K_MAX, TOP_PS, sampling_bundle

from .harness import ROOT
from .viewer_js import assert_same, js_page, js_reshape, reference

pytestmark = pytest.mark.browser
SOME_T = (0.05, 0.25, 0.5, 0.7, 1.0, 1.3, 1.5, 1.75, 2.0)


def cases_for(steps, *, every_p=True, n_random=400, seed=0):
    """Every temperature x every top-p (top-k off); every top-k at some temperatures (top-p off);
    then random positions of all three sliders, greedy included."""
    rng = np.random.default_rng(seed)
    out = []
    for s in steps:
        ps = TOP_PS if every_p else (0.01, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0)
        out += [(s, t, 0, p) for t in TEMPERATURES for p in ps]
        out += [(s, t, k, 1.0) for t in SOME_T for k in range(TOP_K_MAX + 1)]
        out += [(s, float(rng.choice(TEMPERATURES)), int(rng.integers(0, TOP_K_MAX + 1)), float(rng.choice(TOP_PS)))
                for _ in range(n_random)]
    return out


def check(browser, trace, cases, *, head=None, per_token=True):
    penalty = trace.settings.repetition_penalty
    S = sampling_bundle(trace.steps, penalty=penalty, **({"head": head} if head else {}))
    page = js_page(browser)
    got = js_reshape(page, S, cases)
    for (s, t, k, p), g in zip(cases, got):
        assert_same(g, reference(trace.steps[s], t, k, p, penalty), per_token=per_token, where=f"step {s} T={t} k={k} p={p}")
    assert not page.errors and not page.requests
    return S, got


@pytest.mark.parametrize("penalty", [1.0, 1.3])
def test_every_slider_position_matches_python_with_the_cut_beyond_the_head(browser, penalty, monkeypatch):
    # 3000 tokens and the smallest head (201, min-p's reach not added: min-p is off here): the nucleus often reaches
    # past it (the tail table)
    monkeypatch.setattr("viz.viewer.sampling.HEAD_MAX", 0)
    trace = make_trace(vocab=3000, n_steps=3, top_n=100, prompt_len=12, repetition_penalty=penalty, seed=4)
    S, got = check(browser, trace, cases_for(range(3)), head=1)
    heads = [d["M"] for d in S["steps"]]
    beyond = [g for g in got if g["stages"][-1]["name"] == "top_p" and g["stages"][-1]["kept"] > max(heads)]
    assert heads == [TOP_K_MAX + 1] * 3 and len(beyond) > 500  # the table, not only the head, was tested


def test_ties_top_k_keeps_them_all_and_greedy_takes_the_first(browser, monkeypatch):
    monkeypatch.setattr("viz.viewer.sampling.HEAD_MAX", 0)  # (the smallest head: min-p is off here)
    trace = make_trace(vocab=3000, n_steps=2, top_n=100, seed=7)
    # logits on a 0.5 grid: hundreds of exact ties, some across the k-th place and the head's end
    steps = tuple(dataclasses.replace(s, logits=(np.round(s.logits * 2) / 2).astype(np.float32)) for s in trace.steps)
    trace = dataclasses.replace(trace, steps=steps)
    cases = [(s, t, k, 1.0) for s in range(2) for t in TEMPERATURES for k in (0, 1, 2, 5, 17, 50, 100, 150, 199, 200)]
    check(browser, trace, cases, head=1)
    # top-p among tied probabilities keeps an arbitrary one of them in numpy: counts, masses, entropy only
    check(browser, trace, [(s, t, k, p) for s in range(2) for t in SOME_T for k in (0, 30) for p in (0.3, 0.9, 0.99)],
          head=1, per_token=False)


def test_the_example_trace_without_logits_matches_the_top_n_computation(browser):
    trace = load(ROOT / "assets" / "example_trace.json.gz")
    assert all(s.logits is None and s.rest is not None for s in trace.steps)  # a compact trace (tests/browser/test_flat_step.py)
    # without its summary of the rest and without the vocabulary's size, the top N alone: the panel says "approximate"
    trace = dataclasses.replace(trace, steps=tuple(dataclasses.replace(s, rest=None) for s in trace.steps))
    st = trace.settings
    steps = (0, 1, 17, len(trace.steps) - 1)
    own = (st.temperature, st.top_k, st.top_p)  # (there: the recorded numbers, as viz.distribution gives them)
    S, _ = check(browser, trace, [c for c in cases_for(steps, n_random=200) if c[1:] != own])
    assert not any(d["exact"] for d in S["steps"])
