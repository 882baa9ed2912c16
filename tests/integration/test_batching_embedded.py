"""A class generating at once on the embedded SmolLM2-135M-Instruct: nine generations started on threads of their
own run as rows of one decode loop (pipeline.batching), and each trace is what it is alone: the same tokens,
probabilities within 1e-4, attention over its own positions only (rows summing to 1), the same cache bytes; and each
step's probabilities equal an independent uncached forward pass over the step's context, with this file's own softmax."""
import threading
import time

import numpy as np
import pytest
import torch

from pipeline import batching
from pipeline.generate import start
from pipeline.trace.records import Settings

pytestmark = pytest.mark.integration

# (prompt, settings): greedy and seeded sampling, chat and raw, prompts of different lengths, one stopping early
RUNS = [
    ("Why is the sky blue?", Settings(temperature=0.0, max_new_tokens=14)),
    ("Write a very short poem about the sea and the wind over it.", Settings(temperature=0.9, top_p=0.9, seed=4, max_new_tokens=14)),
    ("The capital of France is", Settings(temperature=0.0, chat=False, max_new_tokens=12)),
    ("Once upon a time, in a small village by a river, there lived", Settings(temperature=0.8, top_k=40, seed=7, chat=False,
                                                                            max_new_tokens=16)),
    ("Name a fruit.", Settings(temperature=0.0, max_new_tokens=3)),  # stops early: its row leaves while others run
    ("def add(a, b):", Settings(temperature=0.7, min_p=0.05, repetition_penalty=1.2, seed=1, chat=False, max_new_tokens=12)),
    ("What is 7 times 8?", Settings(temperature=0.0, max_new_tokens=10)),
    ("Tell me one fact about owls.", Settings(temperature=1.0, seed=11, max_new_tokens=12)),
]
LATE = ("Describe a rainy morning in one sentence.", Settings(temperature=0.0, max_new_tokens=10))  # joins mid-way


def _alone(lm, prompt, settings):
    return list(start(lm, prompt, settings))


@pytest.fixture(scope="module")
def together(smol):
    """Every run of RUNS started at once, and LATE started when the first has made 4 steps."""
    out, errors, fourth = {}, [], threading.Event()

    def run(i, prompt, settings):
        try:
            steps = []
            for st in start(smol, prompt, settings):
                steps.append(st)
                if i == 0 and len(steps) == 4:
                    fourth.set()
            out[i] = steps
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i, p, s), daemon=True) for i, (p, s) in enumerate(RUNS)]
    for th in threads:
        th.start()
    assert fourth.wait(120)
    late = threading.Thread(target=run, args=(len(RUNS), *LATE), daemon=True)
    late.start()
    end = time.monotonic() + 300  # (in all: a row the loop lost fails here, it does not hang the suite)
    for th in threads + [late]:
        th.join(max(0.0, end - time.monotonic()))
    assert not errors, errors
    assert sorted(out) == list(range(len(RUNS) + 1)), f"generations that never ended: {sorted(set(range(len(RUNS) + 1)) - set(out))}"
    assert batching.wait_idle(smol, 30)
    return out


def test_a_generation_among_others_is_what_it_is_alone(smol, together):
    for i, (prompt, settings) in enumerate(RUNS + [LATE]):
        alone, batched = _alone(smol, prompt, settings), together[i]
        assert [s.token_id for s in batched] == [s.token_id for s in alone], (i, prompt)
        for a, b in zip(alone, batched):
            # the whole distribution over the vocabulary (every token, not only the top candidates in their order)
            np.testing.assert_allclose(np.exp(b.logits.astype(np.float64) - b.logsumexp), np.exp(a.logits.astype(np.float64) - a.logsumexp),
                                       atol=1e-4)
            np.testing.assert_allclose(b.top_probs, a.top_probs, atol=1e-4)
            np.testing.assert_allclose(b.top_final_probs, a.top_final_probs, atol=1e-4)
            assert abs(b.chosen_prob - a.chosen_prob) < 1e-4
            assert b.attention.shape == a.attention.shape == (smol.info.n_layers, smol.info.n_heads, b.position + 1)
            np.testing.assert_allclose(b.attention, a.attention, atol=1e-4)
            np.testing.assert_allclose(b.hidden, a.hidden, rtol=1e-3, atol=1e-3)
            assert b.kv_cache_bytes == a.kv_cache_bytes and b.text == a.text and b.stop_reason == a.stop_reason
        if alone[0].attention_matrix is not None:  # the prefill's whole matrix: its own positions only, in a padded pass
            np.testing.assert_allclose(batched[0].attention_matrix, alone[0].attention_matrix, atol=1e-4)


def test_steps_really_ran_together_and_say_so(together):
    rows = [s.batch_rows for steps in together.values() for s in steps if s.phase == "decode"]
    assert max(rows) >= 6, rows  # (the loop ran most rows in one pass)
    prefills = [steps[0].batch_rows for steps in together.values()]
    assert max(prefills) >= 3, prefills  # (the prompts that came together were prefilled in one pass)
    late = together[len(RUNS)]
    assert any(s.batch_rows > 1 for s in late[1:]), "the late visitor joined the running batch"


def test_attention_of_a_batched_row_sums_to_one_over_its_own_positions(together):
    for steps in together.values():
        for s in steps:
            assert s.attention.shape[-1] == s.position + 1
            np.testing.assert_allclose(s.attention.sum(-1), 1.0, atol=1e-5)


def test_batched_probabilities_equal_an_independent_uncached_pass(smol, together):
    """Each decode step of two batched runs against model(context) with no cache, no hooks, no padding."""
    for i in (1, 3):
        steps = together[i]
        for s in steps[1::3]:
            with torch.inference_mode():
                logits = smol.model(input_ids=torch.as_tensor([list(s.context_ids)])).logits[0, -1, : smol.info.vocab_size].double()
            p = torch.softmax(logits, -1).numpy()
            np.testing.assert_allclose(s.top_probs, p[s.top_ids], atol=1e-4)


def test_prompts_encoded_at_once_keep_their_own_special_tokens(smol):
    """A raw prompt (its special-looking text split) and a chat prompt (its template's tokens special) encoded on two
    threads at once: each is what it is alone (a fast tokenizer's split flag is state shared by every call)."""
    chat = smol.tokens.encode_prompt("Name a fruit.", chat=True, system_prompt=None).ids
    raw = smol.tokens.encode_prompt("a <|im_start|> b", chat=False, system_prompt=None).ids
    seen, stop = {"chat": set(), "raw": set()}, threading.Event()

    def encode(kind, chat_mode, text):
        while not stop.is_set():
            seen[kind].add(tuple(smol.tokens.encode_prompt(text, chat=chat_mode, system_prompt=None).ids))

    threads = [threading.Thread(target=encode, args=("chat", True, "Name a fruit."), daemon=True) for _ in range(3)]
    threads += [threading.Thread(target=encode, args=("raw", False, "a <|im_start|> b"), daemon=True) for _ in range(3)]
    for th in threads:
        th.start()
    threading.Event().wait(1.5)
    stop.set()
    for th in threads:
        th.join(10)
    assert seen["chat"] == {tuple(chat)} and seen["raw"] == {tuple(raw)}
