"""pipeline.inside on tiny random models: every number checked against an independent
computation (a plain forward pass without hooks, and arithmetic written out in the test)."""
import dataclasses

import numpy as np
import pytest
import torch

from pipeline.inside import analyses as inside
from pipeline.generate import start
from pipeline.loading import CALIBRATION_TEXT, prepare, residual_states, rms_rows
from pipeline.trace.records import (
    LENS_TOP,
    MachineInfo,
    ParamCounts,
    Settings,
)
from pipeline.trace.files import dumps, loads, trace_from_json, trace_to_json
from tests import tiny
from tests.helpers import records_equal

PROMPT = "The quick brown fox"
CTX = 128


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(family):
        if family not in cache:
            cache[family] = tiny.loaded(family, ctx=CTX)
        return cache[family]

    return get


def run(lm, n=3, **kw):
    gen = start(lm, PROMPT, Settings(**{"max_new_tokens": n, "temperature": 0.0, **kw}))
    steps = list(gen)
    return gen, steps


def gemma2(softcap=2.0):
    from transformers import AutoConfig, AutoModelForCausalLM

    tok = tiny.tokenizer()
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    c = AutoConfig.for_model(
        "gemma2", vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=CTX, final_logit_softcapping=softcap,
        eos_token_id=eos, bos_token_id=eos, pad_token_id=0, tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(c, attn_implementation="eager", dtype=torch.float32).eval()
    with torch.no_grad():
        m.get_output_embeddings().weight.mul_(8.0)
    return prepare(m, tok, model_id="tiny-gemma2", source="config")


# ---------------------------------------------------------------------------------------
# the logit lens


def own_norm(lm, x: np.ndarray) -> np.ndarray:
    """The final norm written out (not the module): RMSNorm, Gemma's (1 + w) RMSNorm, or LayerNorm."""
    c, norm = lm.model.config, lm.arch.norm
    w = norm.weight.detach().double().numpy()
    x = x.astype(np.float64)
    if isinstance(norm, torch.nn.LayerNorm):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + norm.eps) * w + norm.bias.detach().double().numpy()
    eps = c.rms_norm_eps
    y = x / np.sqrt((x**2).mean(-1, keepdims=True) + eps)
    return y * (1.0 + w) if c.model_type.startswith("gemma") else y * w


def own_head(lm, x: np.ndarray) -> np.ndarray:
    head = lm.arch.lm_head
    y = own_norm(lm, x) @ head.weight.detach().double().numpy().T
    if getattr(head, "bias", None) is not None:
        y = y + head.bias.detach().double().numpy()
    cap = getattr(lm.model.config, "final_logit_softcapping", None)
    return np.tanh(y / cap) * cap if cap else y


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("family", ["llama", "gemma", "gpt2", "phi"])
def test_logit_lens_equals_an_independent_computation(models, family):
    lm = models(family)
    _, steps = run(lm, temperature=0.8, seed=2)
    s = steps[-1]
    L = lm.info.n_layers
    with torch.inference_mode():
        out = lm.model(torch.tensor([list(s.context_ids)]), output_hidden_states=True, use_cache=False)  # no hooks
    hs = np.stack([h[0, s.position].numpy() for h in out.hidden_states[:L]])  # rows 0..L-1 (the last is normed)
    # the step's residual rows are the model's: row 0 includes GPT-2's learned position
    np.testing.assert_allclose(s.hidden[:L], hs, atol=1e-4, rtol=1e-4)
    logits = own_head(lm, np.concatenate([hs, s.hidden[L:]]))  # (L+1, vocab)
    np.testing.assert_allclose(logits[L], out.logits[0, s.position].numpy(), atol=1e-4)  # own math = the model
    p = softmax(logits)
    lens = inside.logit_lens(lm, s)
    assert lens.step == s.index and lens.position == s.position and lens.token_id == s.token_id
    assert lens.top_ids.shape == (L + 1, LENS_TOP) and lens.top_ids.dtype == np.int64
    for r in range(L + 1):
        np.testing.assert_allclose(lens.top_probs[r], np.sort(p[r])[::-1][:LENS_TOP], atol=1e-5)  # the 5 largest, descending
        np.testing.assert_allclose(lens.top_probs[r], p[r][lens.top_ids[r]], atol=1e-5)  # at the ids named
        assert lens.top_pieces[r] == tuple(lm.tokens.piece(int(i)) for i in lens.top_ids[r])
        assert lens.chosen_ranks[r] == int((p[r] > p[r][s.token_id]).sum())
    np.testing.assert_allclose(lens.chosen_probs, p[:, s.token_id], atol=1e-5)
    ent = -(p * np.log2(np.where(p > 0, p, 1))).sum(-1)
    np.testing.assert_allclose(lens.entropy, ent, atol=1e-4)
    # row L is the model's own prediction: the step's distribution
    np.testing.assert_allclose(lens.top_probs[L], softmax(s.logits.astype(np.float64))[lens.top_ids[L]], atol=1e-6)
    np.testing.assert_allclose(lens.top_probs[L], s.top_probs[:LENS_TOP], atol=1e-6)
    assert lens.chosen_ranks[L] == int((s.logits > s.logits[s.token_id]).sum())


def test_the_lens_of_many_steps_is_each_steps_and_leaves_a_capture_in_progress_alone(models):
    """logit_lens_many reads several steps in one product (more than a CHUNK: two products) and equals each step's own
    lens; run while a capture's wrappers are on the model (another visitor's pass: the lens takes no lock), it writes
    nothing into that capture."""
    from pipeline.capture import capture
    from pipeline.inside.logit_lens import CHUNK, logit_lens_many

    lm = models("llama")
    _, steps = run(lm, CHUNK + 3, temperature=0.8, seed=2)
    assert len(steps) > CHUNK
    store = {}
    with capture(lm.arch, store):
        many = logit_lens_many(lm, steps)
    assert store == {}
    for st, rec in zip(steps, many):
        one = inside.logit_lens(lm, st)
        assert rec.step == st.index and np.array_equal(rec.top_ids, one.top_ids)
        np.testing.assert_allclose(rec.top_probs, one.top_probs, atol=1e-6)
        np.testing.assert_allclose(rec.entropy, one.entropy, atol=1e-5)


def test_logit_lens_applies_gemma2_softcapping():
    lm = gemma2(softcap=2.0)
    _, steps = run(lm, temperature=0.8, seed=1)
    s = steps[-1]
    with torch.inference_mode():
        ref = lm.model(torch.tensor([list(s.context_ids)]), use_cache=False).logits[0, s.position].numpy()
    assert np.abs(ref).max() < 2.0  # the cap is in force
    np.testing.assert_allclose(s.logits, ref, atol=1e-5)  # the step records the capped logits the model outputs
    lens = inside.logit_lens(lm, s)
    np.testing.assert_allclose(lens.top_probs[-1], softmax(ref.astype(np.float64))[lens.top_ids[-1]], atol=1e-6)
    np.testing.assert_allclose(softmax(own_head(lm, s.hidden[-1:]).ravel())[lens.top_ids[-1]], lens.top_probs[-1], atol=1e-6)
    # without the cap the read-out would be another distribution: the cap matters here
    raw = own_norm(lm, s.hidden[-1:]) @ lm.arch.lm_head.weight.detach().double().numpy().T
    assert np.abs(softmax(raw.ravel())[lens.top_ids[-1]] - lens.top_probs[-1]).max() > 1e-3


def test_logit_lens_needs_hidden_states(models):
    lm = models("llama")
    _, steps = run(lm, n=1)
    with pytest.raises(ValueError, match="hidden"):
        inside.logit_lens(lm, dataclasses.replace(steps[0], hidden=None))


# ---------------------------------------------------------------------------------------
# with and without the KV cache


def counted_macs(lm, tokens_fed: int, context_len: int) -> int:
    """Multiply-adds of a real forward pass, counted as it runs (no formula from the pipeline):
    every module that holds weights (not a lookup table) does one multiply-add per weight per
    input row it is given; attention does n_heads x head_dim per (query, key) pair it scores, and
    as many again to weigh the values, counted from the shapes of the patterns it returns."""
    from transformers import DynamicCache

    total = 0

    def weights(module, inp, out):
        nonlocal total
        x = inp[0] if inp else None
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            total += (x.numel() // x.shape[-1]) * sum(p.numel() for p in module.parameters(recurse=False))

    def attention(module, inp, out):
        nonlocal total
        pattern = out[1]  # (1, heads, q, k), causal: zero above the diagonal
        total += int((pattern[0, 0] != 0).sum()) * lm.info.n_heads * lm.info.head_dim * 2

    leaves = [m for m in lm.model.modules() if not isinstance(m, torch.nn.Embedding) and any(True for _ in m.parameters(recurse=False))]
    hooks = [m.register_forward_hook(weights) for m in leaves] + [a.register_forward_hook(attention) for a in lm.arch.attn]
    ids = [(7 * i) % 50 + 3 for i in range(context_len)]
    try:
        with torch.inference_mode():
            cache = DynamicCache(config=lm.model.config)
            if context_len > tokens_fed:  # the earlier positions come from a cache, not counted
                for h in hooks:
                    h.remove()
                lm.model(input_ids=torch.tensor([ids[:-tokens_fed]]), past_key_values=cache, use_cache=True, logits_to_keep=1)
                hooks = [m.register_forward_hook(weights) for m in leaves] + [a.register_forward_hook(attention) for a in lm.arch.attn]
            lm.model(input_ids=torch.tensor([ids[-tokens_fed:]]), past_key_values=cache, use_cache=True, logits_to_keep=1)
    finally:
        for h in hooks:
            h.remove()
    return total


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_pass_macs_equal_a_count_of_the_real_pass(models, family):
    lm = models(family)
    params, info = inside.param_counts(lm), lm.info
    for n, c in ((1, 1), (1, 40), (7, 7), (3, 20)):
        assert inside.pass_macs(params, info, n, c) == counted_macs(lm, n, c), (n, c)
    # the LM head runs once per row of logits kept: once here, whatever the tokens fed
    assert inside.pass_macs(params, info, 7, 7) - inside.pass_macs(params, info, 7, 7, logits_rows=7) == -6 * params.lm_head_rows


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_kv_compare_decode_and_prefill(models, family):
    lm = models(family)
    gen, steps = run(lm, n=4)
    trace = gen.trace()
    for s in (steps[0], steps[2]):
        r = inside.kv_compare(lm, trace, s.index)
        T = s.position + 1
        assert r.step == s.index and r.position == s.position
        assert r.tokens_without == T and r.tokens_with == (T if s.phase == "prefill" else 1)
        assert r.max_abs_diff < 1e-4 and r.same_argmax and r.argmax_id == int(np.argmax(s.logits))
        assert r.macs_without == counted_macs(lm, T, T)  # counted while the passes run, not from the formula
        assert r.macs_with == counted_macs(lm, r.tokens_with, T)
        assert (r.macs_with < r.macs_without) == (s.phase == "decode")
        assert r.ms_with > 0 and r.ms_without > 0
        np.testing.assert_array_equal(r.top_ids, s.top_ids[: inside.KV_TOP])
        # both recomputations give the step's own logits
        np.testing.assert_allclose(r.logits_without, s.top_logits[: inside.KV_TOP], atol=1e-4)
        np.testing.assert_allclose(r.logits_with, s.top_logits[: inside.KV_TOP], atol=1e-4)
    with pytest.raises(ValueError, match="no step"):
        inside.kv_compare(lm, trace, 99)


# ---------------------------------------------------------------------------------------
# parameters, the machine, accounting


def unique_numel(model):
    seen, n = set(), 0
    for p in model.parameters():
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            n += p.numel()
    return n


def add_up(pc: ParamCounts) -> int:
    return (pc.embedding + pc.lm_head + pc.positions + pc.n_layers * (pc.per_layer_attn + pc.per_layer_mlp + pc.per_layer_norm)
            + pc.final_norm + pc.other)


@pytest.mark.parametrize("family", tiny.FAMILIES)
def test_param_counts_add_up(models, family):
    lm = models(family)
    pc = inside.param_counts(lm)
    total = unique_numel(lm.model)
    assert pc.total == total == lm.info.n_params
    assert add_up(pc) == total and pc.other == 0
    assert not pc.tied and pc.lm_head == lm.model.get_output_embeddings().weight.numel() + (
        lm.model.get_output_embeddings().bias.numel() if getattr(lm.model.get_output_embeddings(), "bias", None) is not None else 0)
    assert pc.embedding == lm.info.vocab_size * lm.info.d_model and pc.n_layers == lm.info.n_layers and pc.bytes_per_param == 4
    named = dict(lm.model.named_parameters())
    attn0 = sum(p.numel() for n, p in named.items() if any(k in n for k in (".layers.0.self_attn.", ".h.0.attn.")))
    mlp0 = sum(p.numel() for n, p in named.items() if any(k in n for k in (".layers.0.mlp.", ".h.0.mlp.")))
    assert pc.per_layer_attn == attn0 and pc.per_layer_mlp == mlp0
    assert pc.positions == (CTX * lm.info.d_model if family == "gpt2" else 0)
    assert pc.read_per_pass == total - pc.embedding - pc.positions + pc.lm_head_rows - pc.lm_head


def test_param_counts_count_a_tied_head_once():
    from transformers import AutoModelForCausalLM

    c = tiny.config("llama", ctx=CTX)
    c.tie_word_embeddings = True
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(c, attn_implementation="eager", dtype=torch.float32).eval()
    lm = prepare(m, tiny.tokenizer(), model_id="tied", source="config")
    pc = inside.param_counts(lm)
    assert m.get_output_embeddings().weight.data_ptr() == m.get_input_embeddings().weight.data_ptr()
    assert pc.tied and pc.lm_head == 0 and pc.total == unique_numel(m) and add_up(pc) == pc.total
    assert pc.lm_head_rows == pc.embedding and pc.read_per_pass == pc.total - pc.embedding + pc.embedding


def test_measure_machine_is_positive_and_cached():
    inside._measure.cache_clear()
    m = inside.measure_machine()
    assert 0.1 < m.memory_gb_s < 10_000 and 0.1 < m.matmul_gflop_s < 1_000_000
    assert m.threads == torch.get_num_threads()
    assert inside.measure_machine() is m


def test_measure_machine_waits_for_a_forward_pass_to_end():
    import threading

    inside._measure.cache_clear()
    lock = threading.Lock()
    lock.acquire()  # a forward pass is running
    done = threading.Event()
    t = threading.Thread(target=lambda: (inside.measure_machine(lock), done.set()), daemon=True)
    t.start()
    assert not done.wait(0.5)  # it does not measure while the pass holds the lock
    assert inside._measure.cache_info().currsize == 0
    lock.release()
    assert done.wait(60)
    t.join()


def test_accounting_is_the_arithmetic(models):
    lm = models("llama")
    gen, steps = run(lm, n=3)
    info, pc = lm.info, inside.param_counts(lm)
    machine = MachineInfo(memory_gb_s=20.0, matmul_gflop_s=100.0, threads=2)
    for s in steps:
        a = inside.accounting(info, pc, s, machine)
        T = s.position + 1
        n = T if s.index == 0 else 1
        attn_keys = T * (T + 1) // 2 if s.index == 0 else T
        # every weight once per token fed, but the LM head once: only the last position's logits are computed
        macs = (pc.read_per_pass - pc.lm_head_rows) * n + pc.lm_head_rows + info.n_layers * info.n_heads * info.head_dim * attn_keys * 2
        w = pc.read_per_pass * 4
        kv = 0 if s.index == 0 else 2 * info.n_layers * info.n_kv_heads * info.head_dim * s.position * 4
        assert (a.step, a.phase, a.tokens, a.params_read) == (s.index, s.phase, n, pc.read_per_pass)
        assert a.macs == macs and a.weight_bytes == w and a.kv_bytes_read == kv
        assert a.arithmetic_intensity == pytest.approx(2 * macs / (w + kv), rel=1e-12)
        assert a.memory_bound_ms == pytest.approx((w + kv) / 20e9 * 1e3, rel=1e-12)
        assert a.compute_bound_ms == pytest.approx(2 * macs / 100e9 * 1e3, rel=1e-12)
        assert a.machine_balance == pytest.approx(5.0) and a.ms == s.ms
        assert a.bound == ("compute" if 2 * macs / (w + kv) > 5.0 else "memory")
    # the same decode step on a machine with far more bandwidth than compute is compute-bound
    fast_memory = MachineInfo(memory_gb_s=1e6, matmul_gflop_s=1.0, threads=1)
    assert inside.accounting(info, pc, steps[1], fast_memory).bound == "compute"
    assert inside.accounting(info, pc, steps[1], machine).bound == "memory"


# ---------------------------------------------------------------------------------------
# positions


@pytest.mark.parametrize("family,rotary_dim", [("llama", 8), ("gemma", 8), ("phi", 4)])
def test_position_info_rope(models, family, rotary_dim):
    lm = models(family)
    pos = inside.position_info(lm)
    buf = lm.model.model.rotary_emb.inv_freq.numpy()
    theta = lm.model.config.rope_parameters["rope_theta"]
    formula = 1.0 / theta ** (np.arange(0, rotary_dim, 2) / rotary_dim)
    assert pos.kind == "rope" and pos.rotary_dim == rotary_dim and pos.rope_theta == theta and pos.learned_2d is None
    np.testing.assert_array_equal(pos.inv_freq, buf)
    np.testing.assert_allclose(pos.inv_freq, formula, rtol=1e-6)


def test_position_info_learned_gpt2(models):
    lm = models("gpt2")
    pos = inside.position_info(lm)
    wpe = lm.model.transformer.wpe.weight.detach().numpy()
    assert pos.kind == "learned" and pos.inv_freq is None and pos.rotary_dim is None
    assert pos.learned_2d.shape == (min(CTX, 256), 2)
    np.testing.assert_allclose(pos.learned_2d, (wpe[: min(CTX, 256)] - lm.projection.mean) @ lm.projection.components.T, atol=1e-5)


# ---------------------------------------------------------------------------------------
# swapping two tokens


def test_swap_of_equal_tokens_changes_nothing(models):
    lm = models("llama")
    ids = lm.tokens.plain_ids("The cat sat on the mat and the dog")
    pairs = [(a, b) for a in range(len(ids)) for b in range(a + 1, len(ids) - 1) if ids[a] == ids[b]]
    assert pairs, "the prompt must repeat a token"
    i, j = pairs[0]
    r = inside.swap_demo(lm, ids, i, j)
    assert r.max_abs_diff == 0.0 and np.array_equal(r.attention, r.attention_swapped)
    assert r.pieces == r.swapped_pieces and r.top_piece == r.top_piece_swapped
    assert r.attention.shape == (lm.info.n_layers, len(ids))
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-5)


def test_swap_keys_are_put_back_in_order():
    """A one-layer GPT-2 without positions is blind to order: with the swapped run's keys
    re-ordered, the last query's attention is the original's; without re-ordering it is not."""
    m = tiny.model("gpt2", layers=1, ctx=CTX)
    with torch.no_grad():
        m.transformer.wpe.weight.zero_()
    lm = prepare(m, tiny.tokenizer(), model_id="nopos", source="config")
    ids = lm.tokens.plain_ids("Attention is all you need. The cat")
    i, j = 1, 4
    assert ids[i] != ids[j]
    r = inside.swap_demo(lm, ids, i, j)
    np.testing.assert_allclose(r.attention_swapped, r.attention, atol=1e-6)
    assert r.max_abs_diff < 1e-6 and r.top_piece == r.top_piece_swapped
    # the raw swapped-run attention (independent pass) differs at i and j: the re-ordering matters
    sw = list(ids)
    sw[i], sw[j] = ids[j], ids[i]
    with torch.inference_mode():
        raw = m(torch.tensor([sw]), output_attentions=True, use_cache=False).attentions[0][0, :, -1].mean(0).numpy()
    np.testing.assert_allclose(r.attention_swapped[0, i], raw[j], atol=1e-6)
    np.testing.assert_allclose(r.attention_swapped[0, j], raw[i], atol=1e-6)
    assert abs(raw[i] - r.attention[0, i]) > 1e-4
    assert r.swapped_pieces[i] == r.pieces[j] and r.swapped_pieces[j] == r.pieces[i]


def test_swap_changes_attention_under_rope(models):
    lm = models("llama")
    ids = lm.tokens.plain_ids("The quick brown fox jumps over the lazy dog")
    r = inside.swap_demo(lm, ids, 1, 3)
    assert ids[1] != ids[3] and r.max_abs_diff > 1e-4


def test_swap_rejects_bad_positions(models):
    lm = models("llama")
    ids = lm.tokens.plain_ids("The quick brown fox")
    for i, j, msg in ((1, 1, "different"), (0, len(ids), "outside"), (-1, 2, "outside"), (0.5, 2, "outside")):
        with pytest.raises(ValueError, match=msg):
            inside.swap_demo(lm, ids, i, j)
    with pytest.raises(ValueError, match="at least 2"):
        inside.swap_demo(lm, ids[:1], 0, 1)


# ---------------------------------------------------------------------------------------
# the new step fields and the trace format


def test_step_fields_raw_pieces_and_residual(models):
    lm = models("gpt2")
    gen, steps = run(lm, n=3)
    tok = lm.tokenizer
    p = gen.prompt
    assert p.raw_pieces == tuple(tok.convert_ids_to_tokens(list(p.token_ids)))
    assert len(p.piece_bytes) == len(p.token_ids)
    specials = set(tok.all_special_ids)
    for t, b in zip(p.token_ids, p.piece_bytes):
        assert (b is None) == (t in specials)
    # the ordinary tokens' bytes are the rendered prompt without its special tokens
    assert b"".join(b for b in p.piece_bytes if b is not None).decode("utf-8") == p.rendered.replace("<|im_start|>", "").replace("<|im_end|>", "")
    plain = [b for t, b in zip(p.token_ids, p.piece_bytes) if b is not None]
    assert all(isinstance(b, bytes) for b in plain) and any(b.startswith(b" ") for b in plain)
    proj = lm.resid_projection
    assert proj is not None and proj.components.shape == (2, lm.info.d_model)
    # GPT-2's byte-level alphabet, written out: printable bytes stand for themselves, the others for chr(256 + n)
    shown = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    extra = [b for b in range(256) if b not in shown]
    byte_of = {chr(b): b for b in shown} | {chr(256 + n): b for n, b in enumerate(extra)}  # every token, split bytes too
    for s in steps:
        assert s.raw_piece == tok.convert_ids_to_tokens(s.token_id)
        if s.token_id in specials:
            assert s.piece_bytes is None
        else:
            assert s.piece_bytes == bytes(byte_of[c] for c in s.raw_piece)
        h = s.hidden.astype(np.float64)
        np.testing.assert_allclose(s.resid_norm, np.linalg.norm(h, axis=1), rtol=1e-5)
        np.testing.assert_allclose(s.update_norm, np.linalg.norm(h[1:] - h[:-1], axis=1), rtol=1e-5)
        rms = np.sqrt((h**2).mean(1, keepdims=True))
        np.testing.assert_allclose(s.resid_2d, (h / rms - proj.mean) @ proj.components.T.astype(np.float64), atol=1e-3)
        assert s.resid_2d.shape == (lm.info.n_layers + 1, 2) and s.update_norm.shape == (lm.info.n_layers,)


def test_resid_projection_is_centred_on_the_calibration_states(models):
    lm = models("llama")
    proj = lm.resid_projection
    # applied to RMS-normalised rows; the calibration states project to a centred cloud
    ids = list(lm.tokenizer(CALIBRATION_TEXT, add_special_tokens=False)["input_ids"])[:CTX]
    H = residual_states(lm, ids)[:, 1:].reshape(-1, lm.info.d_model).numpy()
    xy = proj.apply(rms_rows(H))
    np.testing.assert_allclose(xy.mean(0), 0, atol=1e-3)
    assert xy.std(0)[0] >= xy.std(0)[1] * 0.999  # first component first


def test_trace_round_trip_with_every_new_field(models):
    lm = models("gpt2")
    gen, steps = run(lm, n=3)
    trace = gen.trace()
    assert trace.params == inside.param_counts(lm) and trace.position.kind == "learned" and trace.resid_projection is lm.resid_projection
    assert trace.lens == () and trace.machine is None
    full = inside.with_inside(lm, trace)
    assert [r.step for r in full.lens] == [s.index for s in steps] and full.machine == inside.measure_machine()
    assert records_equal(loads(dumps(full, full=True)), full)
    # without --full the small new fields still travel; the lens too
    small = loads(dumps(full))
    assert records_equal(small.lens, full.lens) and records_equal(small.position, full.position)
    for a, b in zip(small.steps, full.steps):
        assert a.hidden is None and records_equal(a.resid_2d, b.resid_2d) and a.piece_bytes == b.piece_bytes and a.raw_piece == b.raw_piece
    # a RoPE model's position record round-trips too; a lens for one chosen step only
    ll = models("llama")
    t2 = inside.with_inside(ll, run(ll, n=3)[0].trace(), steps=[1])
    assert [r.step for r in t2.lens] == [1] and t2.position.kind == "rope"
    assert records_equal(loads(dumps(t2, full=True)), t2)
    with pytest.raises(ValueError):
        inside.with_inside(ll, t2, steps=[42])


def test_old_trace_without_the_new_keys_still_loads(models):
    lm = models("llama")
    trace = inside.with_inside(lm, run(lm, n=2)[0].trace())
    d = trace_to_json(trace, full=True)
    for k in ("resid_projection", "lens", "params", "machine", "position"):
        assert k in d
        del d[k]
    for k in ("raw_pieces", "piece_bytes"):
        del d["prompt"][k]
    for s in d["steps"]:
        for k in ("raw_piece", "piece_bytes", "resid_2d", "resid_norm", "update_norm"):
            del s[k]
    old = trace_from_json(d)
    expected = dataclasses.replace(
        trace, resid_projection=None, lens=(), params=None, machine=None, position=None,
        prompt=dataclasses.replace(trace.prompt, raw_pieces=(), piece_bytes=()),
        steps=tuple(dataclasses.replace(s, raw_piece="", piece_bytes=None, resid_2d=None, resid_norm=None, update_norm=None) for s in trace.steps),
    )
    assert records_equal(old, expected)
    assert not records_equal(old, trace)
