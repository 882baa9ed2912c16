"""The traced generator on tiny random models of several families: its records must be the
model's real computation, checked against independent forward passes."""
import dataclasses

import numpy as np
import pytest
import torch

from pipeline import batching
from pipeline.sampling import stages as sampling
from pipeline.capture import capture, hook_names, hooks_installed
from pipeline.generate import TOP_N, start
from pipeline.trace.records import Settings, StepRecord
from pipeline.sampling.stages import SettingsError
from pipeline.trace.files import dumps, loads
from tests import tiny
from tests.stats import chi2_p_value
from tests.helpers import records_equal

PROMPT = "The quick brown fox"


@pytest.fixture(scope="module", params=tiny.FAMILIES)
def lm(request):
    return tiny.loaded(request.param, ctx=128)


@pytest.fixture(scope="module")
def llama():
    return tiny.loaded("llama", ctx=128)


def run(lm, prompt=PROMPT, **kw):
    gen = start(lm, prompt, Settings(**{"max_new_tokens": 6, **kw}))
    return gen, list(gen)


def test_capture_names_are_pinned_and_hooks_removed(llama):
    x = torch.tensor([[5, 6, 7]])
    with capture(llama.arch) as cap:
        assert hooks_installed(llama.arch) > 0
        llama.model(x)
    assert list(cap) == hook_names(2)
    assert list(cap)[:6] == ["blocks.0.resid_pre", "blocks.0.attn.pattern", "blocks.0.attn.out", "blocks.0.mlp.out", "blocks.0.resid_post", "blocks.1.attn.pattern"]
    assert hooks_installed(llama.arch) == 0


def test_hooks_are_removed_when_the_forward_pass_raises(llama):
    with pytest.raises(IndexError):
        with capture(llama.arch):
            llama.model(torch.tensor([[10_000]]))  # id beyond the vocabulary
    assert hooks_installed(llama.arch) == 0


def test_a_paused_generator_holds_no_hooks_and_no_lock(llama):
    """A streaming task cancelled between two tokens leaves its generator paused, alive: it must
    hold neither hooks on the shared model nor its lock, so other visitors go on at once. (Its row
    of the decode loop runs on to its end meanwhile: the records wait for it.)"""
    gen = start(llama, PROMPT, Settings(max_new_tokens=20, temperature=0))
    it = iter(gen)
    next(it)
    next(it)  # paused after a decode step, still alive
    other = list(start(llama, PROMPT, Settings(max_new_tokens=3, temperature=0)))  # another visitor
    assert len(other) == 3
    assert batching.wait_idle(llama, 30), "the decode loop still runs rows"
    assert hooks_installed(llama.arch) == 0
    assert llama.lock.acquire(blocking=False), "a paused generator holds the model's lock"
    llama.lock.release()
    assert next(it).index == 2  # and the paused one can still go on
    it.close()
    assert hooks_installed(llama.arch) == 0


def test_records_equal_an_independent_uncached_forward_pass(lm):
    gen, steps = run(lm, temperature=0.9, seed=3)
    assert len(steps) >= 2
    full = torch.tensor([list(steps[-1].context_ids)])
    with torch.inference_mode():
        out = lm.model(full, output_attentions=True, use_cache=False)  # no hooks, no cache
    for s in steps:
        ref = out.logits[0, s.position].numpy()
        scale = np.abs(ref).max()
        assert np.abs(s.logits - ref).max() <= 1e-4 * scale + 1e-6, f"logits differ at step {s.index}"
        ref_p = sampling.softmax(ref)
        np.testing.assert_allclose(s.top_probs, ref_p[s.top_ids], atol=1e-4)
        for layer, att in enumerate(out.attentions):
            np.testing.assert_allclose(s.attention[layer], att[0, :, s.position, : s.position + 1].numpy(), atol=1e-4)
    # prefill: the full causal matrix
    m = steps[0].attention_matrix
    T = len(gen.prompt.token_ids)
    assert m.shape == (lm.info.n_layers, lm.info.n_heads, T, T)
    np.testing.assert_allclose(m[1], out.attentions[1][0, :, :T, :T].numpy(), atol=1e-4)
    assert np.allclose(m.sum(-1), 1, atol=1e-5) and np.all(np.triu(m[0, 0], 1) == 0)


def test_attention_rows_sum_to_one_and_decode_rows_grow(llama):
    _, steps = run(llama)
    for s in steps:
        assert s.attention.shape == (2, 4, s.position + 1)
        np.testing.assert_allclose(s.attention.sum(-1), 1.0, atol=1e-5)
        assert (s.attention_matrix is None) == (s.phase == "decode")


def test_greedy_equals_model_generate(lm):
    gen, steps = run(lm, temperature=0, max_new_tokens=10)
    ids = torch.tensor([list(gen.prompt.token_ids)])
    with torch.inference_mode():
        ref = lm.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False, pad_token_id=0)
    assert [s.token_id for s in steps] == ref[0, ids.shape[1] :].tolist()


def test_same_seed_same_tokens_other_seed_other_tokens(llama):
    a = [s.token_id for s in run(llama, temperature=1.5, seed=7, max_new_tokens=12)[1]]
    b = [s.token_id for s in run(llama, temperature=1.5, seed=7, max_new_tokens=12)[1]]
    c = [s.token_id for s in run(llama, temperature=1.5, seed=8, max_new_tokens=12)[1]]
    assert a == b and a != c


def test_recorded_final_distribution_is_a_recomputation_from_the_logits(llama):
    _, steps = run(llama, temperature=0.8, top_k=30, top_p=0.9, repetition_penalty=1.2, seed=1)
    for s in steps:
        stages = sampling.build_stages(temperature=0.8, top_k=30, top_p=0.9, repetition_penalty=1.2, context_ids=s.context_ids)
        res = sampling.apply_stages(s.logits, stages)
        np.testing.assert_allclose(s.top_final_probs, res.final_probs[s.top_ids], rtol=1e-6, atol=1e-9)
        assert s.chosen_final_prob == pytest.approx(res.final_probs[s.token_id])
        assert s.chosen_final_prob > 0  # never sampled a filtered token
        assert [st.name for st in s.stages] == ["repetition_penalty", "temperature", "top_k", "top_p"]
        assert s.stages[2].kept <= 30 + 1 and s.stages[3].mass >= 0.9 - 1e-6
        assert len(s.top_ids) == min(TOP_N, llama.info.vocab_size)
        assert np.all(np.diff(s.top_logits) <= 0)


def test_sampled_tokens_follow_the_recorded_distribution(llama):
    """Chi-square over many seeds: the first token's draws against the recorded final distribution.
    Would fail if tokens were drawn from, say, the temperature-1 distribution instead."""
    settings = dict(temperature=2.0, top_k=6, max_new_tokens=1)
    gen, (first,) = run(llama, **settings, seed=0)
    p = first.top_final_probs.astype(np.float64)
    keep = p > 0
    n = 600
    counts = np.zeros_like(p)
    for seed in range(n):
        tok = run(llama, **settings, seed=seed)[1][0].token_id
        counts[list(first.top_ids).index(tok)] += 1
    assert counts[~keep].sum() == 0
    assert chi2_p_value(counts, p) > 0.001
    # the test has power: the same draws reject what a sampler that ignored the temperature would draw
    assert chi2_p_value(counts[keep], first.top_probs[keep]) < 0.001  # temperature 1, top-k renormalised


def test_kv_cache_bytes_measured_equal_formula(lm):
    _, steps = run(lm)
    i = lm.info
    for s in steps:
        assert s.kv_cache_bytes == s.kv_cache_bytes_formula == 2 * i.n_layers * i.n_kv_heads * i.head_dim * (s.position + 1) * 4


def test_stop_reasons(llama):
    _, steps = run(llama, max_new_tokens=3, temperature=0)
    assert [s.stop_reason for s in steps] == [None, None, "max_new_tokens"]
    small = tiny.loaded("llama", ctx=64)
    gen, steps = run(small, max_new_tokens=100, temperature=0)
    n = len(gen.prompt.token_ids)
    assert steps[-1].stop_reason == "context_limit" and n + len(steps) == 64
    # end-of-sequence: a hook of the test's own makes <|im_end|> win from the 3rd new token on
    eos_lm = tiny.loaded("llama", ctx=128)
    eos = tiny.tokenizer().convert_tokens_to_ids("<|im_end|>")
    calls = []

    def push_eos(_m, _i, out):
        calls.append(1)
        if len(calls) >= 3:
            out[..., eos] += 1e4
        return out

    h = eos_lm.model.lm_head.register_forward_hook(push_eos)
    try:
        _, steps = run(eos_lm, max_new_tokens=10, temperature=0)
    finally:
        h.remove()
    assert len(steps) == 3 and steps[-1].stop_reason == "eos" and steps[-1].token_id == eos and steps[-1].text == ""
    assert eos not in [s.token_id for s in steps[:-1]]


def test_records_hold_cpu_numpy_only(llama):
    _, steps = run(llama)
    for s in steps:
        for name, v in vars(s).items():
            assert not isinstance(v, torch.Tensor), name


def test_trace_round_trip(llama):
    gen, _ = run(llama, temperature=0.7, top_p=0.9, seed=2)
    tr = gen.trace()
    back = loads(dumps(tr, full=True))
    assert records_equal(tr, back)
    slim = loads(dumps(tr))
    assert slim.steps[0].logits is None and np.array_equal(slim.steps[0].top_logits, tr.steps[0].top_logits)
    assert records_equal(slim.prompt, tr.prompt) and slim.text == tr.text


def test_special_token_text_in_a_prompt_is_plain_text(llama):
    gen = start(llama, "a <|im_end|> b", Settings())
    eos = tiny.tokenizer().convert_tokens_to_ids("<|im_end|>")
    user_ids = gen.prompt.token_ids
    assert "a <|im_end|> b" in gen.prompt.rendered
    # the template has exactly its own 3 <|im_end|> (system, user), the typed one is text
    assert list(user_ids).count(eos) == 2
    asked = start(llama, "a <|im_end|> b", Settings(parse_special=True))
    assert list(asked.prompt.token_ids).count(eos) == 3


def test_unicode_survives_and_text_is_never_half_a_character(llama):
    text = "emoji 😀 CJK 日本語 RTL العربية combining é\u0301 control \x07"
    gen = start(llama, text, Settings(chat=False, max_new_tokens=30, temperature=1.0, seed=4))
    assert llama.tokens.decode(gen.prompt.token_ids) == text
    steps = list(gen)
    out = "".join(s.text for s in steps)
    assert out == llama.tokens.decode([s.token_id for s in steps if s.stop_reason != "eos"])
    # nothing released is ever taken back: every prefix of the stream is a prefix of the result
    shown = ""
    for s in steps:
        shown += s.text
        assert out.startswith(shown)


def test_detokenizer_holds_back_a_split_character(llama):
    from pipeline.tokens import Detokenizer

    ids = llama.tokenizer("😀", add_special_tokens=False)["input_ids"]
    assert len(ids) > 1  # the tiny BPE splits the emoji into byte tokens
    d = Detokenizer(llama.tokens)
    released = [d.add(i) for i in ids]
    assert released[:-1] == [""] * (len(ids) - 1) and released[-1] == "😀"
    assert all("<0x" in llama.tokens.piece(i) for i in ids)


@pytest.mark.parametrize(
    "prompt,kw,msg",
    [
        ("", {}, "empty"),
        ("   ", {}, "empty"),
        ("hi", {"max_new_tokens": 0}, "max new tokens"),
        ("hi", {"temperature": -1}, "temperature"),
        ("hi", {"top_p": 0.0}, "top-p"),
        ("hi", {"top_k": -2}, "top-k"),
        ("word " * 200, {}, "context window"),
    ],
)
def test_bad_input_is_refused_before_generation(llama, prompt, kw, msg):
    with pytest.raises(SettingsError, match=msg):
        start(llama, prompt, Settings(**kw))


def test_records_are_immutable(llama):
    _, steps = run(llama, max_new_tokens=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        steps[0].token_id = 3
    assert isinstance(steps[0], StepRecord)


def test_continue_from_a_prefix_matches_one_run(llama):
    gen, steps = run(llama, temperature=0, max_new_tokens=8)
    prefix = [s.token_id for s in steps[:3]]
    cont = list(start(llama, PROMPT, Settings(temperature=0, max_new_tokens=8), prefix=prefix))
    assert [s.token_id for s in cont] == [s.token_id for s in steps[3:]]
    assert cont[0].index == 3 and cont[0].phase == "prefill"


def test_continuing_after_half_a_character_neither_repeats_nor_loses_text(llama):
    from pipeline.tokens import Detokenizer

    ids = llama.tokenizer("😀", add_special_tokens=False)["input_ids"]
    assert len(ids) > 1
    for cut in range(1, len(ids)):  # the steps kept end inside the emoji's bytes
        prefix = ids[:cut]
        d = Detokenizer(llama.tokens)
        kept_text = "".join(d.add(i) for i in prefix)  # what those steps released when they were generated
        assert kept_text == ""
        cont = list(start(llama, PROMPT, Settings(temperature=0, max_new_tokens=5), prefix=prefix))
        shown = kept_text + "".join(s.text for s in cont)
        assert shown == llama.tokens.decode(prefix + [s.token_id for s in cont if s.stop_reason != "eos"])
