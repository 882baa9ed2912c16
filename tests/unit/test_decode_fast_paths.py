"""The decode step's shortcuts (docs/decode_profile.md) give bit for bit what the plain arithmetic
gives: each is checked against the code it replaced, kept here verbatim as the reference, on
full-size vocabularies (the tiny models' 384 tokens never reach the shortcuts), with ties,
-inf and NaN."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pipeline.sampling import stages as sampling
from pipeline.capture import capture, captured_rows, hooks_installed
from pipeline.generate import _query_rows, top_n
from tests import tiny

VOCAB = 49152  # SmolLM2's


# -- the replaced code, verbatim -----------------------------------------------------------------
def ref_softmax(logits):
    x = np.asarray(logits, dtype=np.float64)
    m = np.max(x)
    e = np.exp(x - m)
    return e / e.sum()


def ref_logsumexp(logits):
    x = np.asarray(logits, dtype=np.float64)
    m = np.max(x)
    return float(m + np.log(np.exp(x - m).sum()))


def ref_entropy_bits(probs):
    p = probs[probs > 0]
    return float(-(p * np.log(p)).sum() * sampling.LOG2E)


def ref_top_n(logits, n):
    n = min(n, logits.size)
    idx = np.argpartition(-logits, n - 1)[:n]
    return idx[np.lexsort((idx, -logits[idx]))]


def ref_apply_stages(logits, stages):
    x = np.asarray(logits, dtype=np.float32)
    probs_in = ref_softmax(x)
    all_probs, kept, mass = [], [], []
    for st in stages:
        x = ref_stage(st, x)
        p = ref_softmax(x)
        alive = np.isfinite(x)
        all_probs.append(p)
        kept.append(int(alive.sum()))
        mass.append(float(probs_in[alive].sum()))
        probs_in = p
    final = all_probs[-1] if all_probs else ref_softmax(x)
    return x, final, all_probs, kept, mass


def ref_stage(st, x):
    if isinstance(st, sampling.TopK) and 0 < st.k < x.size:
        kth = np.partition(x, x.size - st.k)[x.size - st.k]
        return np.where(x < kth, np.float32(sampling.NEG_INF), x)
    return st(x)


# -- data ----------------------------------------------------------------------------------------
def logits_like(seed, n=VOCAB, *, ties=False, neg_inf=0, scale=3.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * scale).astype(np.float32)  # (n,)
    if ties:  # coarse values: many exact ties, some at every boundary
        x = np.round(x * 2) / 2
    if neg_inf:
        x[rng.choice(n, neg_inf, replace=False)] = -np.inf
    return x


CASES = [dict(seed=s, **kw) for s, kw in enumerate([{}, {"ties": True}, {"neg_inf": 40_000}, {"n": 49_999}, {"n": 50_257, "ties": True},
                                                       {"scale": 30.0}, {"n": 3_000}, {"neg_inf": VOCAB - 150}])]


def bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# -- sampling ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES)
def test_softmax_logsumexp_and_entropy_equal_the_plain_formulas(case):
    x = logits_like(**case)
    p, lse = sampling.softmax(x), sampling.logsumexp(x)
    assert bits_equal(p, ref_softmax(x)) and bits_equal(sampling.softmax(x.astype(np.float64)), ref_softmax(x))
    assert lse == ref_logsumexp(x)
    x64 = x.astype(np.float64)
    sampling.softmax(x64)
    assert bits_equal(x64, x.astype(np.float64))  # the caller's array is left alone
    for probs in (p, np.exp(x.astype(np.float64) - lse), np.eye(1, x.size, 7)[0]):
        assert bits_equal(sampling.entropy_bits(probs), ref_entropy_bits(probs))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("settings", [dict(temperature=0.0), dict(temperature=0.7), dict(temperature=1.0, top_k=40), dict(temperature=1.3, top_k=1),
                                      dict(temperature=0.8, top_p=0.9), dict(temperature=1.0, top_k=50, top_p=0.95, repetition_penalty=1.3),
                                      dict(temperature=1.0, top_k=1000), dict(temperature=2.0, top_p=1e-9)])
def test_apply_stages_equals_the_plain_arithmetic(case, settings):
    x = logits_like(**case)
    stages = sampling.build_stages(**settings, context_ids=list(range(0, 3000, 7)))
    res = sampling.apply_stages(x, stages)
    ref = ref_apply_stages(x, stages)
    assert bits_equal(res.final_logits, ref[0]) and bits_equal(res.final_probs, ref[1])
    assert all(bits_equal(a, b) for a, b in zip(res.stage_probs, ref[2], strict=True))
    assert res.stage_kept == tuple(ref[3]) and res.stage_mass == tuple(ref[4])
    assert res.logits is x and res.logsumexp == ref_logsumexp(x)


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_one_survivor_beside_nan_or_inf_keeps_the_plain_softmax():
    for bad in (np.nan, np.inf, -np.inf):
        x = np.full(VOCAB, -np.inf, np.float32)
        x[[5, 9]] = [1.0, bad]
        alive = np.isfinite(x)
        n = int(alive.sum())
        assert bits_equal(sampling._softmax_alive(x, alive, n), ref_softmax(x))
        raw = logits_like(5)
        probs_in = ref_softmax(raw)
        assert sampling._kept_mass(probs_in, alive, n) == float(probs_in[alive].sum())
        e, _ = sampling._shifted_exp(raw)
        assert sampling._raw_kept_mass(e, e.sum(), alive, n) == float(probs_in[alive].sum())


@pytest.mark.parametrize("case", CASES + [dict(seed=99, n=VOCAB, ties=True, scale=0.3)])
@pytest.mark.parametrize("k", [1, 2, 40, 100, 101, 500, 2000])
def test_kth_largest_equals_a_full_partition(case, k):
    x = logits_like(**case)
    assert bits_equal(sampling.kth_largest(x, k), np.partition(x, x.size - k)[x.size - k])


def test_nan_logits_take_the_plain_path():
    x = logits_like(3)
    x[[10, 20_000]] = np.nan
    assert sampling.top_candidates(x, 100) is None
    assert bits_equal(sampling.kth_largest(x, 40), np.partition(x, x.size - 40)[x.size - 40])
    assert bits_equal(top_n(x, 100), ref_top_n(x, 100))


# -- the step record -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES + [dict(seed=7, n=VOCAB, ties=True, scale=0.2)])
@pytest.mark.parametrize("n", [1, 100, 384])
def test_top_n_equals_a_full_partition(case, n):
    x = logits_like(**case)
    assert bits_equal(top_n(x, n), ref_top_n(x, n))


def test_top_n_with_a_tie_across_the_cut_asks_the_partition():
    x = logits_like(11)
    order = np.argsort(-x, kind="stable")
    x[order[99]] = x[order[100]] = x[order[98]] - 0.5  # the 100th and 101st share a value
    assert bits_equal(top_n(x, 100), ref_top_n(x, 100))


def ref_query_rows(pats, row, position):
    pats = [p[0] for p in pats]
    out = np.zeros((len(pats), pats[0].shape[0], position + 1), np.float32)
    for i, p in enumerate(pats):
        q, K = p.shape[1], p.shape[2]
        r = row % q
        first = position + (q - 1 - r) + 1 - K
        out[i, :, first:] = p[:, r, : position + 1 - first].float().cpu().numpy()
    return out


@pytest.mark.parametrize("shapes,row", [([(9, 1, 41)] * 30, -1), ([(9, 1, 41), (9, 1, 16)] * 3, -1), ([(4, 5, 41)] * 2, -1),
                                        ([(4, 5, 43), (4, 5, 16)], 2), ([(4, 1, 41)] * 3, 0)])
def test_attention_rows_equal_the_per_layer_copy(shapes, row):
    """Query at position 40; a pass of q queries ends at position 40 + (q - 1 - r) for its row r;
    a sliding-window layer (16 keys) holds only its window."""
    torch.manual_seed(0)
    pats = [torch.rand(1, *s).softmax(-1) for s in shapes]  # (1, H, q, K) as captured
    assert bits_equal(_query_rows(pats, row, 40), ref_query_rows(pats, row, 40))


@pytest.mark.parametrize("T", [1, 3])
def test_captured_rows_and_their_norms_equal_one_index_and_one_norm_per_block(T):
    torch.manual_seed(1)
    for d in (32, 576, 577, 960):
        cap = {f"b{i}": torch.randn(1, T, d) * 10.0 ** (i % 5 - 2) for i in range(30)}  # (1, T, d) as captured
        for rows in (-1, T - 1, slice(None)):
            ref = torch.stack([cap[n][0, rows] for n in cap])
            got = captured_rows(cap, tuple(cap), rows)
            assert torch.equal(got, ref) and got.shape == ref.shape and got.is_contiguous()
        ref = torch.stack([cap[n][0, -1].float().norm() for n in cap])
        assert torch.equal(captured_rows(cap, tuple(cap), -1).float().norm(dim=-1), ref)


def test_pieces_are_made_once_and_equal_fresh_ones():
    from pipeline.tokens import bytes_to_readable

    lm = tiny.loaded("llama")
    view = lm.tokens
    fresh = [view.raw_piece(i) if view.piece_bytes(i) is None else bytes_to_readable(view.piece_bytes(i)) for i in range(lm.info.vocab_size)]
    assert [view.piece(np.int64(i)) for i in range(lm.info.vocab_size)] == fresh
    assert [view.piece(i) for i in range(lm.info.vocab_size)] == fresh
    assert all(view.piece(i) is view.piece(i) for i in range(10))


# -- the capture's wrapped forwards ------------------------------------------------------------------
def test_capture_restores_a_forward_someone_else_set_and_nests():
    lm = tiny.loaded("llama")
    mlp = lm.arch.mlp[0]
    seen = []
    theirs = mlp.forward

    def their_forward(*a, **k):  # an instance-level forward, as accelerate installs one
        seen.append(1)
        return theirs(*a, **k)

    mlp.__dict__["forward"] = their_forward
    try:
        x = torch.tensor([[5, 6, 7]])
        with torch.inference_mode(), capture(lm.arch) as outer:
            with capture(lm.arch) as inner:
                assert hooks_installed(lm.arch) == 3 * lm.info.n_layers + 1  # one wrapper over the other per module
                lm.model(x)
            assert hooks_installed(lm.arch) == 3 * lm.info.n_layers + 1
        assert list(inner) == list(outer) and all(torch.equal(inner[k], outer[k]) for k in inner)
        assert mlp.__dict__["forward"] is their_forward and len(seen) == 1
    finally:
        mlp.__dict__.pop("forward", None)
    assert hooks_installed(lm.arch) == 0 and "forward" not in mlp.__dict__


def test_torch_hooks_of_others_still_run_during_a_capture():
    lm = tiny.loaded("llama")
    calls = []
    h = lm.arch.attn[1].register_forward_hook(lambda m, i, o: calls.append(o[1].shape))
    try:
        with torch.inference_mode(), capture(lm.arch) as cap:
            lm.model(torch.tensor([[5, 6, 7]]))
    finally:
        h.remove()
    assert calls == [cap["blocks.1.attn.pattern"].shape]


def test_ready_wrappers_serve_pass_after_pass_and_a_failed_pass_frees_them():
    lm = tiny.loaded("llama")
    x = torch.tensor([[5, 6, 7]])
    caps = []
    with torch.inference_mode():
        for bad in (False, True, False):
            store = {}
            try:
                with capture(lm.arch, store) as got:
                    assert got is store
                    lm.model(torch.tensor([[10_000]]) if bad else x)  # an id beyond the vocabulary raises
            except IndexError:
                assert bad
            assert hooks_installed(lm.arch) == 0 and all("forward" not in m.__dict__ for m in (*lm.arch.attn, *lm.arch.mlp, *lm.arch.layers))
            caps.append(store)
        ref = lm.model(x, output_hidden_states=True).hidden_states  # the model's own record of the residual stream
    first, last = caps[0], caps[2]
    assert list(first) == list(last) and all(torch.equal(first[k], last[k]) for k in first)
    assert torch.equal(first["blocks.0.resid_pre"], ref[0]) and torch.equal(first["blocks.0.resid_post"], ref[1])
