"""Tiny randomly initialised models of several families, with a real byte-level BPE tokenizer
trained in memory: the pipeline's code paths in seconds, no download."""
from __future__ import annotations

import time
from functools import lru_cache

import torch

CHATML = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a tiny test model.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "The quick brown fox jumps over the lazy dog. Hello world! héllo wörld, naïve café.",
    "Attention is all you need. The cat sat on the mat; the dog sat on the log.",
    "def f(x):\n    return x * 2\n\nprint(f(21))  # 42",
    "日本語のテキスト, emoji 😀🚀, العربية, combining é, tabs\tand newlines\n",
] * 4
VOCAB = 384


@lru_cache(maxsize=1)
def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tk.train_from_iterator(CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", bos_token="<|im_start|>", pad_token="<|endoftext|>", unk_token=None)
    fast.chat_template = CHATML
    return fast


def config(family: str, *, vocab: int | None = None, layers: int = 2, ctx: int = 64):
    from transformers import AutoConfig

    v = vocab or len(tokenizer())
    eos = tokenizer().convert_tokens_to_ids("<|im_end|>")
    common = dict(vocab_size=v, eos_token_id=eos, bos_token_id=eos, pad_token_id=0, tie_word_embeddings=False)
    if family == "gpt2":
        return AutoConfig.for_model("gpt2", n_embd=32, n_layer=layers, n_head=4, n_positions=ctx, **common)
    kw = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4, max_position_embeddings=ctx, **common)
    if family in ("llama", "mistral", "qwen2", "gemma"):
        kw["num_key_value_heads"] = 2  # grouped-query attention
    if family == "gemma":
        kw["head_dim"] = 8
    if family == "phi":
        kw["num_key_value_heads"] = 4
    return AutoConfig.for_model(family, **kw)


FAMILIES = ("llama", "mistral", "qwen2", "gemma", "phi", "gpt2")


def model(family: str = "llama", seed: int = 0, **kw):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    m = AutoModelForCausalLM.from_config(config(family, **kw), attn_implementation="eager", dtype=torch.float32)
    # Sharpen the output a little so greedy decoding is not decided by ties.
    with torch.no_grad():
        m.get_output_embeddings().weight.mul_(8.0)
    return m.eval()


def loaded(family: str = "llama", seed: int = 0, **kw):
    from pipeline.loading import prepare

    return prepare(model(family, seed, **kw), tokenizer(), model_id=f"tiny-{family}", source="config")


def prefilled_together(lm, runs) -> dict:
    """Each (prompt, settings) of `runs` generated on a thread of its own, all queued while the loop's first pass (a
    one-token run) waits for the model's lock, so that their prompts are prefilled in ONE left-padded pass: {i: steps}."""
    import threading

    from pipeline import batching
    from pipeline.generate import start
    from pipeline.trace.records import Settings

    d = batching._decoder(lm)
    gens, out = [iter(start(lm, p, s)) for p, s in runs], {}
    busy = threading.Thread(target=lambda: list(start(lm, "z", Settings(temperature=0.0, max_new_tokens=1, chat=False))), daemon=True)
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, list(gens[i])), daemon=True) for i in range(len(gens))]
    taken = d.prefill_passes
    with lm.lock:  # the loop's first pass (the busy prompt's) waits for it: the others queue up behind it
        busy.start()
        with d.cond:
            assert d.cond.wait_for(lambda: d.prefill_passes > taken, 10)
        for th in threads:
            th.start()
        with d.cond:
            assert d.cond.wait_for(lambda: len(d.prefills) == len(runs), 10)
    end = time.monotonic() + 60  # (every thread within 60 s in all: a row the loop lost fails here, it does not hang)
    for th in threads + [busy]:
        th.join(max(0.0, end - time.monotonic()))
    assert not [th for th in threads + [busy] if th.is_alive()], "generations that never ended"
    assert batching.wait_idle(lm, 10)
    return out
