"""Sampling transforms against transformers' own logits processors, and their bookkeeping."""
import numpy as np
import pytest
import torch
from transformers.generation.logits_process import (
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from pipeline.sampling import stages as sampling
from pipeline.sampling.stages import RepetitionPenalty, SettingsError, Temperature, TopK, TopP


def _logits(seed=0, n=500, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(n) * scale).astype(np.float32)


def _hf(proc, x, ids=None):
    ids = torch.as_tensor([ids or [0]])
    return proc(ids, torch.as_tensor(x)[None].clone())[0].numpy()


@pytest.mark.parametrize("p", [0.05, 0.3, 0.9, 0.999])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_p_keeps_same_tokens_as_transformers(p, seed):
    x = _logits(seed)
    ours = np.isfinite(TopP(p)(x))
    theirs = np.isfinite(_hf(TopPLogitsWarper(p), x))
    assert (ours == theirs).all()
    # definition: smallest set of most likely tokens whose cumulative probability reaches p
    probs = sampling.softmax(x)
    kept = np.sort(probs[ours])[::-1]
    assert kept.sum() >= p - 1e-9
    assert kept[:-1].sum() < p


def test_top_p_needs_the_full_sort_when_the_head_is_flat():
    x = np.zeros(3000, np.float32)  # uniform: 1024 tokens hold only 34 % of the mass
    assert np.isfinite(TopP(0.5)(x)).sum() == 1500


@pytest.mark.parametrize("k", [1, 5, 50, 499, 500, 1000])
def test_top_k_matches_transformers(k):
    x = _logits(3)
    assert (np.isfinite(TopK(k)(x)) == np.isfinite(_hf(TopKLogitsWarper(min(k, x.size)), x))).all()


@pytest.mark.parametrize("t", [0.3, 1.0, 1.7])
def test_temperature_matches_transformers(t):
    x = _logits(4)
    np.testing.assert_allclose(Temperature(t)(x), _hf(TemperatureLogitsWarper(t), x), rtol=1e-6)


def test_repetition_penalty_matches_transformers():
    x = _logits(5)
    ids = [3, 7, 7, 100, 499]
    np.testing.assert_allclose(RepetitionPenalty(1.3, tuple(ids))(x), _hf(RepetitionPenaltyLogitsProcessor(1.3), x, ids), rtol=1e-6)


def test_transforms_do_not_modify_their_input():
    x = _logits(6)
    before = x.copy()
    for st in (Temperature(0.5), Temperature(0), TopK(3), TopP(0.5), RepetitionPenalty(2.0, (1, 2))):
        st(x)
    assert np.array_equal(x, before)


def test_greedy_keeps_only_the_argmax():
    x = _logits(7)
    res = sampling.apply_stages(x, sampling.build_stages(temperature=0))
    assert res.final_probs[np.argmax(x)] == 1.0 and res.stage_kept == (1,)
    assert sampling.greedy_or_draw(res, sampling.build_stages(temperature=0), np.random.default_rng(0)) == int(np.argmax(x))


def test_n_draws_are_n_single_draws_in_a_row():
    p = sampling.softmax(_logits(9))
    many = sampling.draw(p, np.random.default_rng(4), 500)
    rng = np.random.default_rng(4)
    assert many.shape == (500,) and many.tolist() == [sampling.draw(p, rng) for _ in range(500)]


def test_stage_bookkeeping():
    x = _logits(8)
    stages = sampling.build_stages(temperature=0.7, top_k=40, top_p=0.8)
    assert [s.name for s in stages] == ["temperature", "top_k", "top_p"]
    res = sampling.apply_stages(x, stages)
    assert res.stage_kept[0] == x.size and res.stage_kept[1] == 40 and res.stage_kept[2] < 40
    assert res.stage_mass[0] == pytest.approx(1.0)
    # mass kept by top-k is the top-40 mass of the temperature-scaled distribution
    p_t = sampling.softmax(x / np.float32(0.7))
    assert res.stage_mass[1] == pytest.approx(np.sort(p_t)[::-1][:40].sum())
    assert res.stage_mass[2] >= 0.8 - 1e-9
    for p in res.stage_probs:
        assert p.sum() == pytest.approx(1.0)
    assert (res.final_probs[~np.isfinite(res.final_logits)] == 0).all()


@pytest.mark.parametrize(
    "kw,msg",
    [
        (dict(temperature=-0.1), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(temperature=1, top_p=0), "top-p"),
        (dict(temperature=1, top_p=1.01), "top-p"),
        (dict(temperature=1, top_k=-1), "top-k"),
        (dict(temperature=1, top_k=2.5), "top-k"),
        (dict(temperature=1, repetition_penalty=0), "repetition penalty"),
    ],
)
def test_bad_settings_say_what_is_wrong(kw, msg):
    with pytest.raises(SettingsError, match=msg):
        sampling.build_stages(**kw)


def test_draws_follow_the_distribution():
    p = np.array([0.5, 0.0, 0.3, 0.2])
    rng = np.random.default_rng(0)
    counts = np.bincount([sampling.draw(p, rng) for _ in range(20000)], minlength=4)
    assert counts[1] == 0
    np.testing.assert_allclose(counts / counts.sum(), p, atol=0.015)
