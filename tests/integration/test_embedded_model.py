"""The embedded SmolLM2-135M-Instruct: what the records say is what the model computes."""
import numpy as np
import pytest
import torch

from pipeline.bench import alone as bench
from pipeline.sampling import stages as sampling
from pipeline.generate import start
from pipeline.trace.records import Settings

pytestmark = pytest.mark.integration
PROMPT = "What is the capital of France? Answer in one sentence."


def test_it_is_the_embedded_model(smol):
    i = smol.info
    assert (i.source, i.family, i.n_layers, i.n_heads, i.n_kv_heads, i.d_model, i.vocab_size) == ("embedded", "llama", 30, 9, 3, 576, 49152)
    assert i.dtype == "float32" and smol.model.config._attn_implementation == "llm_viz"  # eager but for a long prefill (pipeline/attention.py)


def test_the_4_bit_weights_are_named_from_the_gguf_file(smol):
    from pipeline.loading import embedded_gguf_path

    i = smol.info
    assert i.weights.startswith("GGUF: matrix weights Q4_1, embedding Q8_0, norms F32")
    assert "dequantised" in i.weights and "float32" in i.weights
    # Q4_1 stores 20 bytes per 32 weights (5 bits), Q8_0 34 per 32: between 4 and 8 bits a weight overall
    assert 4 < 8 * i.weight_bytes / i.n_params < 8
    assert i.weight_bytes < embedded_gguf_path().stat().st_size  # tensors only: the file also holds the vocabulary


def test_chat_template_and_its_system_prompt_are_in_the_context(smol):
    gen = start(smol, "Hi there", Settings())
    assert gen.prompt.rendered.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert gen.prompt.rendered.endswith("<|im_start|>assistant\n")
    assert smol.tokens.decode(gen.prompt.token_ids) == gen.prompt.rendered
    own = start(smol, "Hi there", Settings(system_prompt="You are a pirate."))
    assert "You are a pirate." in own.prompt.rendered and "SmolLM" not in own.prompt.rendered


def test_greedy_equals_model_generate(smol):
    gen = start(smol, PROMPT, Settings(temperature=0, max_new_tokens=24))
    steps = list(gen)
    ids = torch.tensor([list(gen.prompt.token_ids)])
    with torch.inference_mode():
        ref = smol.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=False)
    assert [s.token_id for s in steps] == ref[0, ids.shape[1]:].tolist()
    assert "Paris" in "".join(s.text for s in steps)


def test_logits_and_attention_equal_an_uncached_forward_pass_without_hooks(smol):
    gen = start(smol, PROMPT, Settings(temperature=0.7, top_p=0.9, seed=5, max_new_tokens=8))
    steps = list(gen)
    with torch.inference_mode():
        out = smol.model(torch.tensor([list(steps[-1].context_ids)]), output_attentions=True, use_cache=False)
    for s in steps:
        ref = out.logits[0, s.position].numpy()
        # cached vs uncached differ by float rounding only: compare to the logit scale
        assert np.abs(s.logits - ref).max() / np.abs(ref).max() < 1e-4
        np.testing.assert_allclose(s.top_probs, sampling.softmax(ref)[s.top_ids], atol=1e-4)
        for layer in (0, 14, 29):
            np.testing.assert_allclose(s.attention[layer], out.attentions[layer][0, :, s.position, : s.position + 1].numpy(), atol=1e-3)
    T = len(gen.prompt.token_ids)
    np.testing.assert_allclose(steps[0].attention_matrix[7], out.attentions[7][0, :, :T, :T].numpy(), atol=1e-3)


def test_hooks_change_nothing_on_the_same_cached_path(smol):
    """Same KV-cached loop with and without hooks: the logits agree exactly."""
    from transformers import DynamicCache

    steps = list(start(smol, PROMPT, Settings(temperature=0, max_new_tokens=5)))
    cache = DynamicCache(config=smol.model.config)
    feed = list(steps[0].context_ids)
    with torch.inference_mode():
        for s in steps:
            logits = smol.model(torch.tensor([feed]), past_key_values=cache, use_cache=True, logits_to_keep=1).logits[0, -1].numpy()
            assert np.array_equal(logits, s.logits)
            feed = [s.token_id]


def test_kv_cache_bytes(smol):
    steps = list(start(smol, PROMPT, Settings(temperature=0, max_new_tokens=4)))
    for s in steps:
        assert s.kv_cache_bytes == s.kv_cache_bytes_formula == 2 * 30 * 3 * 64 * (s.position + 1) * 4


def test_bench_reports_side_by_side_numbers(smol):
    r = bench.run(smol, new_tokens=6, repeats=1)
    assert r["plain_tokens_per_s"] > 0 and r["traced_tokens_per_s"] > 0
    assert r["ratio"] == pytest.approx(r["traced_tokens_per_s"] / r["plain_tokens_per_s"])
    assert "ratio traced/plain" in bench.report(r)


def test_a_prompt_longer_than_the_kept_matrix_equals_an_eager_pass(smol):
    """Over 512 tokens the prefill's output comes from the fused kernel and its last query's weights from eager's
    formula (pipeline/attention.py): every step's logits, distribution and attention row are an eager pass's."""
    import copy

    from pipeline import attention

    prompt = " ".join(f"Line {i}: the river runs past the old mill and the bridge." for i in range(48))
    steps = list(start(smol, prompt, Settings(temperature=0, max_new_tokens=3, chat=False)))
    assert len(steps[0].context_ids) > attention.MAX_MATRIX_TOKENS and steps[0].attention_matrix is None
    eager = copy.deepcopy(smol.model)
    eager.set_attn_implementation("eager")
    with torch.inference_mode():
        out = eager(torch.tensor([list(steps[-1].context_ids)]), output_attentions=True, use_cache=False)
    for s in steps:
        ref = out.logits[0, s.position].numpy()
        assert np.abs(s.logits - ref).max() / np.abs(ref).max() < 1e-4
        np.testing.assert_allclose(s.top_probs, sampling.softmax(ref)[s.top_ids], atol=1e-4)
        rows = np.stack([a[0, :, s.position, : s.position + 1].numpy() for a in out.attentions])
        np.testing.assert_allclose(s.attention, rows, atol=1e-4)
