"""Side-by-side benchmark: plain `model.generate` against the traced generator, one run, one machine.

Both decode greedily the same number of new tokens from the same prompt with the same model
object; runs alternate (plain, traced, plain, traced, ...) so drift on a noisy machine hits
both alike, and the median of each is reported.
"""
from __future__ import annotations

import statistics
import time

import torch

from .generate import start
from .loading import LoadedModel
from .records import Settings

DEFAULT_PROMPT = "Explain in two sentences why the sky is blue."


def _plain(lm: LoadedModel, ids: list[int], n: int) -> tuple[float, int]:
    x = torch.as_tensor([ids], dtype=torch.long)
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = lm.model.generate(
            x, attention_mask=torch.ones_like(x), max_new_tokens=n, min_new_tokens=n, do_sample=False,
            pad_token_id=lm.tokenizer.eos_token_id,
        )
    return time.perf_counter() - t0, out.shape[1] - x.shape[1]


def _traced(lm: LoadedModel, prompt: str, n: int) -> tuple[float, int, float, list[float]]:
    # greedy, but never stopping at end-of-sequence, to match `min_new_tokens=n` above
    gen = start(lm, prompt, Settings(temperature=0.0, max_new_tokens=n), ignore_eos=True)
    t0 = time.perf_counter()
    steps = list(gen)
    dt = time.perf_counter() - t0
    return dt, len(steps), steps[0].ms, [s.ms for s in steps[1:]]


def run(lm: LoadedModel, *, prompt: str = DEFAULT_PROMPT, new_tokens: int = 48, repeats: int = 3) -> dict:
    ids = list(start(lm, prompt, Settings(max_new_tokens=1)).prompt.token_ids)
    _plain(lm, ids, 4)  # warm-up of both paths
    _traced(lm, prompt, 4)
    plain, traced, prefill, decode = [], [], [], []
    for _ in range(repeats):
        dt, n = _plain(lm, ids, new_tokens)
        plain.append(n / dt)
        dt, n, pre_ms, dec_ms = _traced(lm, prompt, new_tokens)
        traced.append(n / dt)
        prefill.append(pre_ms)
        decode.append(statistics.median(dec_ms))
    p, t = statistics.median(plain), statistics.median(traced)
    return {
        "model": lm.info.id,
        "prompt_tokens": len(ids),
        "new_tokens": new_tokens,
        "repeats": repeats,
        "plain_tokens_per_s": p,
        "traced_tokens_per_s": t,
        "ratio": t / p,
        "prefill_ms": statistics.median(prefill),
        "decode_ms_per_token": statistics.median(decode),
        "torch_threads": torch.get_num_threads(),
    }


def report(r: dict) -> str:
    return "\n".join(
        [
            f"model {r['model']}, prompt {r['prompt_tokens']} tokens, {r['new_tokens']} new tokens, median of {r['repeats']} alternating runs, {r['torch_threads']} torch threads",
            f"plain model.generate : {r['plain_tokens_per_s']:7.2f} tokens/s",
            f"traced generator     : {r['traced_tokens_per_s']:7.2f} tokens/s",
            f"ratio traced/plain   : {r['ratio']:7.3f}",
            f"prefill              : {r['prefill_ms']:7.1f} ms",
            f"decode               : {r['decode_ms_per_token']:7.1f} ms/token",
        ]
    )
