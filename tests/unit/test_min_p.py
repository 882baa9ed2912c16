"""Min-p, and the whole chain of stages, against transformers' own logits processors."""
import numpy as np
import pytest
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from pipeline.sampling import stages as sampling
from pipeline.trace.records import Settings
from pipeline.sampling.stages import MinP, SettingsError


def _logits(seed=0, n=800, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(n) * scale).astype(np.float32)


def _hf(proc, x, ids=(0,)):
    return proc(torch.as_tensor([list(ids)]), torch.as_tensor(x)[None].clone())[0].numpy()


@pytest.mark.parametrize("p", [0.001, 0.01, 0.05, 0.2, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_min_p_keeps_the_tokens_transformers_keeps(p, seed):
    x = _logits(seed)
    ours = np.isfinite(MinP(p)(x))
    theirs = np.isfinite(_hf(MinPLogitsWarper(p), x))
    assert (ours == theirs).all() and ours.sum() >= 1
    probs = sampling.softmax(x)  # the definition: at least p times the most likely token's probability
    assert (probs[ours] >= p * probs.max() * (1 - 1e-6)).all() and (probs[~ours] < p * probs.max()).all()


def test_min_p_zero_is_off_and_out_of_range_is_refused():
    x = _logits(3)
    assert np.isfinite(MinP(0)(x)).all()
    assert [s.name for s in Settings(temperature=1, min_p=0).stages()] == ["temperature"]
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(SettingsError, match="min-p must be in"):
            MinP(bad)


@pytest.mark.parametrize("t, k, p, mp, rp", [(0.7, 0, 0.9, 0.05, 1.3), (1.5, 50, 1.0, 0.1, 1.0), (1.0, 0, 0.95, 0.02, 2.0),
                                             (2.0, 200, 0.5, 0.3, 1.05)])
def test_the_chain_equals_transformers_in_its_order(t, k, p, mp, rp):
    """repetition penalty -> temperature -> top-k -> top-p -> min-p, as transformers' generate builds its list."""
    x, ctx = _logits(7), [3, 9, 9, 40, 41, 500]
    stages = Settings(temperature=t, top_k=k, top_p=p, min_p=mp, repetition_penalty=rp).stages(ctx)
    assert [s.name for s in stages] == [n for n, on in (("repetition_penalty", rp != 1), ("temperature", True), ("top_k", k > 0),
                                                        ("top_p", p < 1), ("min_p", mp > 0)) if on]
    ours = sampling.apply_stages(x, stages).final_probs
    procs = [RepetitionPenaltyLogitsProcessor(rp)] if rp != 1 else []
    procs += [TemperatureLogitsWarper(t)] + ([TopKLogitsWarper(k)] if k else []) + ([TopPLogitsWarper(p)] if p < 1 else [])
    procs += [MinPLogitsWarper(mp)]
    theirs = torch.softmax(torch.as_tensor(_hf(LogitsProcessorList(procs), x, ctx)).double(), -1).numpy()
    assert ((ours > 0) == (theirs > 0)).all()
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_min_p_is_recorded_as_a_stage_with_what_it_kept():
    x = _logits(8)
    res = sampling.apply_stages(x, Settings(temperature=1.0, min_p=0.1).stages())
    probs = sampling.softmax(x)
    keep = probs >= 0.1 * probs.max()
    assert res.stage_kept[-1] == int(keep.sum())
    assert res.stage_mass[-1] == pytest.approx(float(probs[keep].sum()), rel=1e-9)
