"""Every gallery trace keeps only its top candidates per step, yet its distribution panel is the model's own:
the model run again over each trace's tokens (a KV-cached pass of its own, in this test) gives every step's full
logits, numpy gives the distributions the sampling stages define, and the panel's numbers
(viz.distribution.reshape, from the trace file alone) must lie within 1e-3 of them at every temperature,
top-k and top-p tried (every bar, the rest of the vocabulary), and be the recorded numbers at the trace's
own settings. The browser's reshape is tested equal to viz.distribution's in tests/browser/test_flat_step.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline import gallery
from viz.distribution import reshape

pytestmark = pytest.mark.integration
TOL = 1e-3
N_SHOWN = 20  # the panel's bars; the rest of the vocabulary is 1 minus their sum
TEMPERATURES = (0.3, 0.6, 1.0, 1.5)
# (top-k, top-p): off; top-k within the kept candidates and past them (100 kept); top-p in the head and past it
FILTERS = ((0, 1.0), (5, 1.0), (50, 1.0), (150, 1.0), (200, 1.0), (0, 0.3), (0, 0.5), (0, 0.9), (0, 0.95), (0, 0.99),
           (40, 0.9), (200, 0.95))


def full_logits(lm, trace) -> np.ndarray:
    """(steps, vocab) float32: the model's logits at every step of `trace`, from its prompt and tokens alone
    (prefill, then one token at a time with a KV cache, as a generation runs)."""
    from transformers import DynamicCache

    cache, out = DynamicCache(config=lm.model.config), []
    feed = list(trace.prompt.token_ids)
    with torch.inference_mode():
        for s in trace.steps:
            logits = lm.model(input_ids=torch.tensor([feed]), past_key_values=cache, use_cache=True, logits_to_keep=1).logits
            out.append(logits[0, -1, : lm.info.vocab_size].float().numpy())
            feed = [s.token_id]
    return np.stack(out)


def stages(logits: np.ndarray, t: float, k: int, p: float) -> tuple[np.ndarray, float, list[int]]:
    """numpy's own reading of the stages (temperature as a float32 division, top-k keeping ties, then top-p's
    smallest prefix of the most likely reaching p): (the distribution sampled from, its entropy in bits, the
    tokens kept after each stage)."""
    q = (logits.astype(np.float32) / np.float32(t)).astype(np.float64)
    keep, kept = np.ones(q.size, bool), [q.size]
    if k:
        keep &= q >= np.sort(q)[::-1][k - 1]
        kept.append(int(keep.sum()))
    if p < 1:
        w = np.where(keep, np.exp(q - q.max()), 0.0)
        order = np.argsort(-w, kind="stable")
        n = int(np.searchsorted(np.cumsum(w[order] / w.sum()), p - 1e-12)) + 1
        keep = np.zeros(q.size, bool)
        keep[order[:n]] = True
        kept.append(n)
    w = np.where(keep, np.exp(q - q.max()), 0.0)
    final = w / w.sum()
    nz = final[final > 0]
    return final, float(-(nz * np.log2(nz)).sum()), kept


@pytest.fixture(scope="module")
def gallery_logits(smol):
    return {e.name: (gallery.load(e.name), full_logits(smol, gallery.load(e.name))) for e in gallery.entries()}


def test_the_pass_here_is_the_one_the_trace_recorded(gallery_logits):
    for name, (trace, logits) in gallery_logits.items():
        assert all(s.logits is None and s.rest is not None for s in trace.steps), f"{name}: regenerate it (scripts/make_gallery.py)"
        for s, lg in zip(trace.steps, logits):
            assert np.max(np.abs(lg[s.top_ids] - s.top_logits)) <= 1e-4, name
            assert lg[s.top_ids].min() >= np.sort(lg)[::-1][len(s.top_ids) - 1] - 1e-4, name  # they are the top candidates


def test_every_bar_and_the_rest_within_1e_3_of_the_model_for_every_gallery_trace(gallery_logits):
    worst = {t: 0.0 for t in TEMPERATURES}
    for name, (trace, logits) in gallery_logits.items():
        V = trace.model.vocab_size
        for s, lg in zip(trace.steps, logits):
            for t in TEMPERATURES:
                for k, p in FILTERS:
                    final, _, kept = stages(lg, t, k, p)
                    want = final[s.top_ids]
                    r = reshape(s, temperature=t, top_k=k, top_p=p, vocab_size=V, use_recorded=False)
                    assert r.source == "rest"
                    err = max(np.max(np.abs(r.final_probs - want)), abs(np.sum(r.final_probs[:N_SHOWN]) - np.sum(want[:N_SHOWN])))
                    worst[t] = max(worst[t], err)
                    assert err <= TOL, (name, s.index, t, k, p, err)
                    # the counts: exact in the head (past it, the histogram's estimate, marked so, within 1%)
                    for n_got, n_want, est in zip(r.stage_kept, kept, r.stage_estimated):
                        assert n_got == n_want or (est and abs(n_got - n_want) <= 0.01 * n_want), (name, s.index, t, k, p, n_got, n_want)
    print("largest difference from the model per temperature:", {t: f"{v:.1e}" for t, v in worst.items()})


def test_the_entropy_is_the_models_where_it_is_not_marked_an_estimate(gallery_logits):
    for name, (trace, logits) in gallery_logits.items():
        for s, lg in zip(trace.steps, logits):
            for t in TEMPERATURES:
                for k, p in FILTERS:
                    _, H, _ = stages(lg, t, k, p)
                    r = reshape(s, temperature=t, top_k=k, top_p=p, vocab_size=trace.model.vocab_size, use_recorded=False)
                    assert abs(r.final_entropy - H) <= (0.01 if r.entropy_estimated else 1e-4), (name, s.index, t, k, p, r.final_entropy, H)


def test_at_the_traces_own_settings_the_numbers_are_the_recorded_ones(gallery_logits):
    for name, (trace, logits) in gallery_logits.items():
        st = trace.settings
        for s, lg in zip(trace.steps, logits):
            r = reshape(s, temperature=st.temperature, top_k=st.top_k, top_p=st.top_p, vocab_size=trace.model.vocab_size)
            assert r.source == "recorded" and np.array_equal(r.final_probs, s.top_final_probs.astype(np.float64)), name
            if st.temperature > 0:  # and those are the model's
                final, H, _ = stages(lg, st.temperature, st.top_k, st.top_p)
                assert np.max(np.abs(r.final_probs - final[s.top_ids])) <= 1e-5 and abs(r.final_entropy - H) <= 1e-4, name
