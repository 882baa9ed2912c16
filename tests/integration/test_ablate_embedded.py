"""Switching parts off on the embedded SmolLM2-135M: every switched-off distribution equals a plain forward pass of
the model with the same part zeroed by an independent hook written here (to 1e-5, the full vocabulary), and the
batched head map equals those hooks one head at a time. Times are printed, never asserted."""
from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np
import pytest
import torch

from pipeline.inside import ablate
from pipeline.capture import hooks_installed
from pipeline.generate import start
from pipeline.trace.records import Settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def step(smol):
    """The third step of a greedy answer: a context of the chat template, the prompt and two generated tokens."""
    gen = start(smol, "Why is the sky blue?", Settings(max_new_tokens=3, temperature=0.0))
    return list(gen)[2]


@contextmanager
def independent_hook(lm, layer: int, part: str, head: int | None = None):
    """The part switched off another way than pipeline/inside/ablate.py does it. A head: a forward hook on the output
    projection subtracting that head's own contribution (its slice of the input times its columns of the weight).
    A block: a forward hook replacing the attention's or the MLP's output with zeros."""
    block = lm.model.model.layers[layer]
    if part == "head":
        proj, hd = block.self_attn.o_proj, lm.info.head_dim
        cols = slice(head * hd, (head + 1) * hd)

        def hook(module, args, out):
            return out - args[0][..., cols] @ module.weight[:, cols].T

        handle = proj.register_forward_hook(hook)
    elif part == "attn":
        handle = block.self_attn.register_forward_hook(lambda m, a, out: (torch.zeros_like(out[0]), *out[1:]))
    else:
        handle = block.mlp.register_forward_hook(lambda m, a, out: torch.zeros_like(out))
    try:
        yield
    finally:
        handle.remove()


def probs_of(lm, ids) -> np.ndarray:
    with torch.inference_mode():
        logits = lm.model(input_ids=torch.tensor([list(ids)]), use_cache=False).logits[0, -1, : lm.info.vocab_size]
    return torch.softmax(logits.double(), -1).numpy()


@pytest.mark.parametrize("layer, part, head", [(0, "head", 3), (14, "head", 8), (29, "head", 0), (5, "attn", None),
                                               (0, "mlp", None), (29, "mlp", None)])
def test_switched_off_equals_an_independent_hook(smol, step, layer, part, head):
    rec = ablate.ablate_step(smol, step, layer=layer, part=part, head=head)
    before = probs_of(smol, step.context_ids)
    with independent_hook(smol, layer, part, head):
        after = probs_of(smol, step.context_ids)
    np.testing.assert_allclose(rec.probs("before"), before, atol=1e-5)
    np.testing.assert_allclose(rec.probs("after"), after, atol=1e-5)
    assert np.abs(after - before).max() > 1e-4  # the part did something: the comparison tests the switch-off
    assert rec.chosen_before == pytest.approx(step.chosen_prob, abs=1e-5)  # the step on screen, recomputed
    assert rec.path == "upper" and hooks_installed(smol.arch) == 0
    ids, p = rec.top("after", 100)
    assert np.allclose(p, after[ids], atol=1e-5) and set(ids[:5]) == set(np.argsort(-after)[:5])


def test_the_head_map_of_one_block_equals_the_hooks_one_at_a_time(smol, step):
    t0 = time.perf_counter()
    hm = ablate.head_map(smol, step.context_ids, step.token_id, layers=[3])
    print(f"\none block's head map ({len(step.context_ids)} tokens): {time.perf_counter() - t0:.2f} s")
    before = np.log(probs_of(smol, step.context_ids)[step.token_id])
    for h in range(smol.info.n_heads):
        with independent_hook(smol, 3, "head", h):
            want = np.log(probs_of(smol, step.context_ids)[step.token_id]) - before
        assert hm.delta[3, h] == pytest.approx(want, abs=1e-5), h
    assert hm.layers == (3,) and np.isnan(np.delete(hm.delta, 3, axis=0)).all()


def test_every_block_reports_its_progress(smol, step):
    seen = []
    t0 = time.perf_counter()
    hm = ablate.head_map(smol, step.context_ids, step.token_id, progress=lambda done, total, rec: seen.append((done, total)))
    print(f"\nevery block's head map: {time.perf_counter() - t0:.2f} s; largest effects {hm.largest(3)}")
    assert seen == [(k, smol.info.n_layers) for k in range(1, smol.info.n_layers + 1)] and hm.done
    assert np.isfinite(hm.delta).all() and hm.delta.shape == (30, 9)
    l, h, d = hm.largest(1)[0]  # the largest effect, checked by the independent hook
    before = np.log(probs_of(smol, step.context_ids)[step.token_id])
    with independent_hook(smol, l, "head", h):
        after = np.log(probs_of(smol, step.context_ids)[step.token_id])
    assert d == pytest.approx(after - before, abs=1e-5) and abs(d) == np.nanmax(np.abs(hm.delta))
