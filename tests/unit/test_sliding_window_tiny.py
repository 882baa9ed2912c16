"""Sliding-window attention (Mistral's window, Gemma 2's alternating layers): the cache holds each
layer's window only, and a query's attention row covers the whole context with weight 0 outside
the window, as an independent uncached pass computes it."""
import numpy as np
import pytest
import torch

from pipeline.formulas import kv_positions
from pipeline.capture import run_with_cache
from pipeline.generate import start
from pipeline.inside.analyses import accounting, param_counts
from pipeline.loading import prepare
from pipeline.trace.records import MachineInfo, Settings
from tests import tiny

WINDOW = 4


def _model(family):
    from transformers import AutoConfig, AutoModelForCausalLM

    if family == "mistral":
        cfg = tiny.config("mistral", ctx=128)
        cfg.sliding_window = WINDOW
    else:  # gemma2: every other layer slides
        base = tiny.config("gemma", ctx=128)
        cfg = AutoConfig.for_model("gemma2", vocab_size=base.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
                                   sliding_window=WINDOW, eos_token_id=base.eos_token_id, bos_token_id=base.bos_token_id, pad_token_id=0)
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", dtype=torch.float32).eval()
    return prepare(m, tiny.tokenizer(), model_id=f"tiny-{family}-window", source="config")


@pytest.fixture(scope="module", params=["mistral", "gemma2"])
def lm(request):
    return _model(request.param)


def test_the_windows_are_read_from_the_models_own_cache(lm):
    w = lm.info.sliding_windows
    assert len(w) == 2 and WINDOW in w
    if lm.info.family == "gemma2":
        assert 0 in w  # a full-attention layer beside the sliding one
    assert kv_positions(lm.info, 50) == [WINDOW - 1 if x else 50 for x in w]


def test_cache_bytes_formula_equals_the_measured_cache(lm):
    steps = list(start(lm, "The quick brown fox", Settings(temperature=0, max_new_tokens=6, chat=False)))
    assert len(steps) > 2
    for s in steps:
        assert s.kv_cache_bytes == s.kv_cache_bytes_formula, s.index


def test_attention_rows_equal_an_uncached_pass(lm):
    steps = list(start(lm, "The quick brown fox", Settings(temperature=0, max_new_tokens=5, chat=False)))
    last = steps[-1]
    ids = list(last.context_ids)
    cap = run_with_cache(lm, ids)  # one pass over the whole context, no cache
    for s in steps[1:]:  # decode steps: the cached pass saw only the window of a sliding layer
        T = s.position + 1
        assert s.attention.shape[-1] == T
        for layer in range(lm.info.n_layers):
            ref = cap[f"blocks.{layer}.attn.pattern"][0, :, s.position, :T].numpy()
            np.testing.assert_allclose(s.attention[layer], ref, atol=2e-5)
            if lm.info.sliding_windows[layer]:
                assert np.all(s.attention[layer][:, : T - WINDOW] == 0)


def test_accounting_reads_only_the_window(lm):
    steps = list(start(lm, "The quick brown fox", Settings(temperature=0, max_new_tokens=3, chat=False)))
    machine = MachineInfo(memory_gb_s=10.0, matmul_gflop_s=100.0, threads=1)
    acc = accounting(lm.info, param_counts(lm), steps[-1], machine)
    held = kv_positions(lm.info, steps[-1].position)
    assert acc.kv_bytes_read == 2 * lm.info.n_kv_heads * lm.info.head_dim * 4 * sum(held)
    assert sum(held) < lm.info.n_layers * steps[-1].position  # less than a full cache would read
