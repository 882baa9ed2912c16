"""pipeline.inside on the embedded SmolLM2-135M: the logit lens, the KV-cache comparison,
parameter counts, positions and the residual projection on a real model."""
import numpy as np
import pytest
import torch

from pipeline.inside import analyses as inside
from pipeline.generate import start
from pipeline.trace.records import MachineInfo, Settings
from pipeline.trace.files import dumps, loads
from tests.helpers import records_equal

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def run(smol):
    gen = start(smol, "Why is the sky blue?", Settings(max_new_tokens=4, temperature=0.0))
    steps = list(gen)
    return gen, steps


def test_logit_lens_on_the_real_model(smol, run):
    _, steps = run
    s = steps[1]
    lens = inside.logit_lens(smol, s)
    L = smol.info.n_layers
    p = torch.softmax(torch.as_tensor(s.logits, dtype=torch.float64), -1).numpy()
    np.testing.assert_allclose(lens.top_probs[L], p[lens.top_ids[L]], atol=1e-5)  # row L is the model's prediction
    assert lens.top_ids[L, 0] == s.token_id and lens.chosen_ranks[L] == 0  # greedy
    assert lens.chosen_ranks[0] > 100  # the embedding alone does not predict the next token
    # an independent read-out of one middle layer: the model's own hidden state, norm and head
    with torch.inference_mode():
        out = smol.model(torch.tensor([list(s.context_ids)]), output_hidden_states=True, use_cache=False)
        h = out.hidden_states[L // 2][0, s.position]
        ref = smol.model.lm_head(smol.model.model.norm(h)).double().softmax(-1).numpy()
    np.testing.assert_allclose(lens.top_probs[L // 2], ref[lens.top_ids[L // 2]], atol=1e-4)
    assert lens.top_ids[L // 2, 0] == int(ref.argmax())


def test_kv_compare_on_the_real_model(smol, run):
    gen, steps = run
    trace = gen.trace()
    r = inside.kv_compare(smol, trace, steps[2].index)
    assert r.max_abs_diff < 1e-3 and r.same_argmax
    assert r.tokens_with == 1 and r.tokens_without == steps[2].position + 1
    assert r.macs_without > 10 * r.macs_with > 0
    np.testing.assert_allclose(r.logits_with, steps[2].top_logits[: inside.KV_TOP], atol=1e-3)


def test_param_counts_position_and_accounting(smol, run):
    _, steps = run
    pc = inside.param_counts(smol)
    assert pc.total == smol.info.n_params and pc.tied and pc.lm_head == 0 and pc.other == 0
    assert pc.embedding == smol.info.vocab_size * smol.info.d_model
    pos = inside.position_info(smol)
    np.testing.assert_array_equal(pos.inv_freq, smol.model.model.rotary_emb.inv_freq.numpy())
    assert pos.kind == "rope" and pos.rotary_dim == smol.info.head_dim and pos.rope_theta == 100000.0
    m = MachineInfo(memory_gb_s=30.0, matmul_gflop_s=150.0, threads=2)  # a typical CPU's balance (5 flops per byte), fixed
    decode = inside.accounting(smol.info, pc, steps[2], m)
    assert decode.bound == "memory" and decode.weight_bytes == pc.read_per_pass * 4  # one token: weights dominate
    assert inside.accounting(smol.info, pc, steps[0], m).arithmetic_intensity > 10 * decode.arithmetic_intensity


def test_the_residual_path_spreads_over_the_layers(smol, run):
    _, steps = run
    for s in steps[:3]:
        xy = s.resid_2d
        seg = np.linalg.norm(np.diff(xy, axis=0), axis=1)
        span = np.ptp(xy, axis=0).max()
        # RMS-normalised PCA alone gives ~0.03 here (layers 2-22 in one spot); standardised ~0.08
        assert np.median(seg) / span > 0.05, (np.median(seg), span)


def test_with_inside_round_trips(smol, run):
    gen, steps = run
    t = inside.with_inside(smol, gen.trace(), steps=[steps[1].index])
    assert len(t.lens) == 1 and t.machine is not None and t.params.tied
    back = loads(dumps(t))
    assert records_equal(back.lens, t.lens) and records_equal(back.resid_projection, t.resid_projection)
    assert records_equal(back.position, t.position) and back.params == t.params and back.machine == t.machine
    assert back.steps[1].raw_piece == steps[1].raw_piece and back.steps[1].piece_bytes == steps[1].piece_bytes


def test_swap_on_the_real_model(smol, run):
    gen, _ = run
    ids = list(gen.prompt.token_ids)
    r = inside.swap_demo(smol, ids, len(ids) - 8, len(ids) - 9)
    assert r.max_abs_diff > 1e-3 and r.attention.shape == (smol.info.n_layers, len(ids))
