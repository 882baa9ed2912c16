"""Side-by-side benchmark: plain `model.generate` against the traced generator, one run, one machine.

Both decode greedily the same number of new tokens from the same prompt with the same model
object; runs alternate (plain, traced, plain, traced, ...) so drift on a noisy machine hits
both alike, and the median of each is reported. `run_speculative` does the same for the
traced generator against the speculative one (pipeline/speculative.py).
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


# ---------------------------------------------------------------------------------------
# Speculative decoding against the plain traced generator


def _speculative(lm: LoadedModel, prompt: str, n: int, k: int, draft) -> tuple[float, int, dict]:
    from .speculative import start_speculative

    gen = start_speculative(lm, prompt, Settings(temperature=0.0, max_new_tokens=n), k=k, draft=draft, ignore_eos=True)
    t0 = time.perf_counter()
    for _ in gen:
        pass
    return time.perf_counter() - t0, len(gen.steps), gen.summary()


def run_speculative(lm: LoadedModel, *, prompt: str = DEFAULT_PROMPT, new_tokens: int = 48, repeats: int = 3, k: int = 4, draft=None) -> dict:
    """Plain traced generator vs speculative generator (both greedy, both recording every
    step): same prompt, same number of tokens, alternating runs, medians. Greedy makes the
    two texts identical, so only the cost differs."""
    from .draft import make_draft
    from .speculative import validate_k

    k = validate_k(k)
    d = make_draft(lm, draft)
    ids = list(start(lm, prompt, Settings(max_new_tokens=1)).prompt.token_ids)
    _traced(lm, prompt, 4)  # warm-up of both paths
    _speculative(lm, prompt, 4, k, d)
    plain, spec, summary = [], [], {}
    for _ in range(repeats):
        dt, n, _, _ = _traced(lm, prompt, new_tokens)
        plain.append(n / dt)
        dt, n, summary = _speculative(lm, prompt, new_tokens, k, d)
        spec.append(n / dt)
    p, s = statistics.median(plain), statistics.median(spec)
    return {
        "model": lm.info.id,
        "draft": d.info.id,
        "draft_spec": d.info.spec,
        "draft_layers": d.info.n_layers,
        "draft_params": d.info.n_params,
        "target_params": lm.info.n_params,
        "k": k,
        "prompt_tokens": len(ids),
        "new_tokens": new_tokens,
        "repeats": repeats,
        "plain_tokens_per_s": p,
        "speculative_tokens_per_s": s,
        "ratio": s / p,
        "acceptance_rate": summary["acceptance_rate"],
        "tokens_per_target_pass": summary["tokens_per_target_pass"],
        "rounds": summary["rounds"],
        "torch_threads": torch.get_num_threads(),
    }


def report_speculative(r: dict) -> str:
    acc = r["acceptance_rate"]
    return "\n".join(
        [
            f"model {r['model']}, prompt {r['prompt_tokens']} tokens, {r['new_tokens']} new tokens (greedy), median of {r['repeats']} alternating runs, {r['torch_threads']} torch threads",
            f"draft {r['draft']} ({r['draft_params'] / 1e6:.1f}M of the target's {r['target_params'] / 1e6:.1f}M parameters per pass), k = {r['k']}",
            f"plain traced generator : {r['plain_tokens_per_s']:7.2f} tokens/s",
            f"speculative generator  : {r['speculative_tokens_per_s']:7.2f} tokens/s",
            f"ratio speculative/plain: {r['ratio']:7.3f}",
            f"acceptance rate        : {'n/a' if acc is None else f'{acc:7.1%}'} of proposals",
            f"tokens per target pass : {r['tokens_per_target_pass']:7.2f}  ({r['rounds']} target passes)",
        ]
    )
