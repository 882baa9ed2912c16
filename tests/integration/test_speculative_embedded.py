"""Speculative decoding on the embedded SmolLM2-135M-Instruct: its own first layers draft, the
full model checks; greedy text must be the plain greedy text, and the caches roll back."""
import pytest
import torch

from pipeline.generate import start
from pipeline.trace.records import Settings
from pipeline.speculative.decoding import start_speculative

pytestmark = pytest.mark.integration
PROMPT = "Explain in two sentences why the sky is blue."  # 24 greedy tokens without an end of sequence


@pytest.mark.parametrize("draft", ["layers:10", "layers:28"])
def test_self_speculative_greedy_text_equals_plain_greedy_text(smol, draft):
    """SmolLM2 was not trained to exit early: its first 10 layers almost never agree with all 30
    (every token then comes from the residual, i.e. the target), 28 layers often do. Either
    way the text is the plain greedy text, token for token."""
    s = Settings(temperature=0, max_new_tokens=24)
    plain = list(start(smol, PROMPT, s))
    gen = start_speculative(smol, PROMPT, s, k=4, draft=draft)
    for _ in gen:
        pass
    assert len(plain) == 24 and [x.token_id for x in gen.steps] == [x.token_id for x in plain]
    assert gen.trace().text == "".join(x.text for x in plain) and "Rayleigh" in gen.trace().text
    d, sm = gen.draft.info, gen.summary()
    assert d.shares_weights and d.n_params < smol.info.n_params
    assert sm["rounds"] == sum(r.target_passes for r in gen.rounds) and sm["tokens"] == 24
    if draft == "layers:28":
        assert sm["accepted"] > 0 and sm["tokens_per_target_pass"] > 1.2


def test_sampled_rounds_roll_the_caches_back_to_a_fresh_prefill(smol):
    from transformers import DynamicCache

    gen = start_speculative(smol, PROMPT, Settings(temperature=1.0, seed=3, max_new_tokens=12), k=4, draft="layers:10")
    rejected = 0
    for rnd, steps in gen:
        if steps[-1].stop_reason is not None:
            break
        rejected += rnd.residual is not None
        context = list(gen.prompt.token_ids) + [st.token_id for st in gen.steps]
        fresh = DynamicCache(config=smol.model.config)
        with torch.inference_mode():
            smol.model(input_ids=torch.tensor([context[:-1]]), past_key_values=fresh, use_cache=True)
        assert gen.target_cache.get_seq_length() == len(context) - 1
        for a, b in zip(gen.target_cache.layers, fresh.layers):
            for x, y in ((a.keys, b.keys), (a.values, b.values)):
                assert x.shape == y.shape
                # cached and uncached passes differ by float rounding only (different matrix shapes)
                assert (x - y).abs().max() <= 1e-4 * y.abs().max()
    assert rejected > 0


def test_prompt_lookup_copies_a_list_and_keeps_the_greedy_text(smol):
    """The default draft on a reply that repeats its input: the same greedy text, several tokens
    per target pass, proposals copied from the prompt."""
    prompt = "Repeat this list exactly: red, green, blue, yellow, purple, orange, black, white."
    s = Settings(temperature=0, max_new_tokens=24)
    plain = list(start(smol, prompt, s))
    gen = start_speculative(smol, prompt, s, k=4)
    for _ in gen:
        pass
    assert gen.draft.info.kind == "ngram"
    assert [x.token_id for x in gen.steps] == [x.token_id for x in plain]
    sm, n_prompt = gen.summary(), len(gen.prompt.token_ids)
    # measured 1.5 tokens per pass with the default ngram:3:2 (one target pass per token without a draft)
    assert sm["tokens_per_target_pass"] > 1.3 and sm["acceptance_rate"] > 0.5 and sm["draft_passes"] == 0
    assert any(p.source_position < n_prompt for r in gen.rounds for p in r.proposals if p.status == "accepted")
