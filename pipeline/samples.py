"""Many continuations at once: N draws of up to M new tokens from one context, decoded together as one batch.

    s = samples_from_trace(lm, trace, step, settings, n=16, max_new_tokens=24)   # from the step on screen
    s = samples_from_prompt(lm, "Why is the sky blue?", settings, n=16)          # the command line's
    for x in s.samples: print(x.text, x.prob)

How (the cost of a batch is the lesson: a decode step reads every weight once for all N):
  1. the context is prefilled once, batch 1, and its KV cache repeated N times (`Cache.batch_repeat_interleave`;
     transformers' `generate(num_return_sequences=N)` repeats the prompt before the prefill instead: N times the work);
  2. then one forward pass per position for every continuation still going (rows that stopped leave the batch and the
     cache, `Cache.batch_select_indices`; every row has the same length, so no padding and no mask);
  3. the model is called plainly, under its lock, with no hooks: only the logits of the last position are kept.
Each continuation draws with its own random stream, np.random.default_rng((seed, index)), through the stages of
pipeline.sampling (the repetition penalty over the context and the continuation's own tokens so far), so the same seed
and settings give the same N continuations, and temperature 0 gives N copies of the greedy one. The first position's
distribution is the same for all N (one context): it is computed once and recorded (FirstDistribution).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import torch

from pipeline.sampling import stages as sampling
from pipeline.errors import SettingsError
from pipeline.model_thread import run_on
from pipeline.generate import eos_ids, replay_detokenizer, start, stop_reason, top_n
from pipeline.loading import LoadedModel
from pipeline.trace.records import Settings, Trace
from pipeline.trace.samples import FirstDistribution, Sample, Samples
from pipeline.tokens import Detokenizer

DEFAULT_N, MAX_N = 16, 32
DEFAULT_M, MAX_M = 24, 256
FIRST_TOP = 20  # candidates of the first position's distribution kept (plus every first token drawn)
LN2 = math.log(2.0)


def validate_counts(n, max_new_tokens) -> tuple[int, int]:
    """(n, max_new_tokens) as ints; SettingsError (one sentence) unless whole numbers in 1..MAX_N and 1..MAX_M."""
    def whole(x) -> bool:
        return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and np.isfinite(x) and float(x).is_integer()

    if not whole(n) or not 1 <= n <= MAX_N:
        raise SettingsError(f"the number of continuations must be a whole number from 1 to {MAX_N}, not {n}", key="error.samples_n",
                            high=MAX_N, value=n)
    if not whole(max_new_tokens) or not 1 <= max_new_tokens <= MAX_M:
        raise SettingsError(f"the new tokens per continuation must be a whole number from 1 to {MAX_M}, not {max_new_tokens}",
                            key="error.samples_m", high=MAX_M, value=max_new_tokens)
    return int(n), int(max_new_tokens)


def sample_rng(seed: int, index: int) -> np.random.Generator:
    """Continuation `index`'s own random stream: derived from the seed and its index (recorded as Sample.seed)."""
    return np.random.default_rng([int(seed), int(index)])


def pick(logits: np.ndarray, stages: Sequence, rng: np.random.Generator) -> tuple[int, float]:
    """(token, its probability in the distribution drawn from): pipeline.sampling's stages and draw, as
    `apply_stages` + `greedy_or_draw` choose, without recording each stage's distribution (a continuation needs only
    its token). The same arrays: the final softmax of the same final logits (one-hot where one token survives)."""
    x = np.asarray(logits, dtype=np.float32)
    for st in stages:
        x = st(x)
    if any(isinstance(st, sampling.Temperature) and st.temperature == 0 for st in stages):
        return int(np.argmax(x)), 1.0
    p = sampling.softmax(x)
    token = sampling.draw(p, rng)
    return token, float(p[token])


@dataclass
class _Row:
    """One continuation while it is being decoded."""

    index: int
    rng: np.random.Generator
    detok: Detokenizer
    tokens: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    prob: list[float] = field(default_factory=list)
    prob_t1: list[float] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    stop: str | None = None


@dataclass
class _Clock:
    wait: float = 0.0
    passes: int = 0


def _forward(lm: LoadedModel, ids: list[list[int]], cache, clock: _Clock) -> torch.Tensor:
    """(rows, vocab) float32 logits of the last position of each row: one plain pass (no hooks) under the model's lock."""
    x = torch.as_tensor(ids, dtype=torch.long, device=lm.model.device)  # (rows, T)
    t0 = time.perf_counter()

    def forward():  # on the model's thread (pipeline.model_thread), between two ticks of the decode loop
        with lm.lock, torch.inference_mode():
            clock.wait += time.perf_counter() - t0
            return lm.model(input_ids=x, past_key_values=cache, use_cache=True, logits_to_keep=1)

    out = run_on(lm, forward)
    clock.passes += 1
    return out.logits[:, -1, : lm.info.vocab_size].float()


def _t1(logits: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per row: log-sum-exp of the raw logits and the temperature-1 entropy in bits, in float64."""
    lg = logits.double()  # (rows, vocab)
    lse = torch.logsumexp(lg, dim=-1)  # (rows,)
    p = torch.softmax(lg, dim=-1)
    h = (lse - (p * lg).sum(-1)) / LN2  # H = lse - E_p[x], in nats, then bits
    return lse.numpy(), h.numpy()


def _record(row: _Row, token: int, prob: float, raw: float, lse: float, h: float, *, c: int, m: int, ctx: int, stop_ids: set[int]):
    """Append the token a continuation drew (query position c - 1 + its length) and decide whether it stops there."""
    row.tokens.append(int(token))
    row.prob.append(prob)
    row.prob_t1.append(float(np.exp(np.float64(raw) - lse)))
    row.entropy.append(float(h))
    row.stop = stop_reason(int(token), len(row.tokens), m, c - 2 + len(row.tokens), ctx, stop_ids)
    row.texts.append("" if row.stop == "eos" else row.detok.add(int(token), final=row.stop is not None))


def _first(lm: LoadedModel, logits: np.ndarray, res: sampling.SampleResult, drawn: list[int], lse: float) -> FirstDistribution:
    top = top_n(res.final_probs, FIRST_TOP)
    ids = [int(i) for i in top if res.final_probs[i] > 0]
    ids += sorted({t for t in drawn} - set(ids))
    ids.sort(key=lambda i: (-res.final_probs[i], -logits[i], i))
    return FirstDistribution(tuple(ids), tuple(lm.tokens.pieces(ids)), tuple(float(res.final_probs[i]) for i in ids),
                             tuple(float(np.exp(np.float64(logits[i]) - lse)) for i in ids), int(np.count_nonzero(res.final_probs)))


@torch.inference_mode()
def _decode(lm: LoadedModel, context: list[int], prefix: Sequence[int], settings: Settings, n: int, m: int, stop_ids: set[int]):
    """The batch: (rows, first distribution, prefill seconds, clock)."""
    from transformers import DynamicCache

    c, ctx = len(context), lm.info.context_length
    base = replay_detokenizer(lm, prefix)  # an unfinished character before the step stays held back, as in generation
    rows = [_Row(i, sample_rng(settings.seed, i), base.copy()) for i in range(n)]
    clock, cache = _Clock(), DynamicCache(config=lm.model.config)
    t0 = time.perf_counter()
    lg = _forward(lm, [context], cache, clock)  # 1. prefill, batch 1
    prefill = time.perf_counter() - t0 - clock.wait
    first = lg[0].numpy()  # (vocab,)
    lse, h = _t1(lg)
    stages = settings.stages(context)
    res = sampling.apply_stages(first, stages)  # the one distribution every first token is drawn from
    for r in rows:
        tok = sampling.greedy_or_draw(res, stages, r.rng)
        _record(r, tok, float(res.final_probs[tok]), first[tok], lse[0], h[0], c=c, m=m, ctx=ctx, stop_ids=stop_ids)
    dist = _first(lm, first, res, [r.tokens[0] for r in rows], float(lse[0]))
    cache.batch_repeat_interleave(n)  # 2. the context's keys and values, once per continuation
    live = list(range(n))
    while True:
        going = [i for i in live if rows[i].stop is None]
        if not going:
            break
        if len(going) < len(live):  # the finished leave the batch
            cache.batch_select_indices(torch.as_tensor([live.index(i) for i in going], dtype=torch.long))
            live = going
        lg = _forward(lm, [[rows[i].tokens[-1]] for i in live], cache, clock)  # 3. one pass for every row still going
        lse, h = _t1(lg)
        x = lg.numpy()  # (rows, vocab)
        for j, i in enumerate(live):
            r = rows[i]
            tok, p = pick(x[j], settings.stages(context + r.tokens), r.rng)
            _record(r, tok, p, x[j, tok], lse[j], h[j], c=c, m=m, ctx=ctx, stop_ids=stop_ids)
    return rows, dist, prefill, clock


def draw_samples(lm: LoadedModel, prompt_ids: Sequence[int], settings: Settings, *, n: int = DEFAULT_N, max_new_tokens: int = DEFAULT_M,
                 prefix: Sequence[int] = (), start_step: int | None = None, ignore_eos: bool = False) -> Samples:
    """N continuations of `prompt_ids` + `prefix` (generated tokens before the step; their unfinished characters are
    held back as generation held them). `settings` give the stages and the seed; `max_new_tokens` is M (the result's
    settings carry it). `ignore_eos`: the benchmark's, every continuation runs to M."""
    n, m = validate_counts(n, max_new_tokens)
    settings = replace(settings, max_new_tokens=m)
    settings.stages()  # the sampler's own checks, before any pass
    if int(settings.seed) != settings.seed or settings.seed < 0:
        raise SettingsError(f"the seed must be a whole number, 0 or more, not {settings.seed}", key="error.seed", value=settings.seed)
    context = [int(i) for i in prompt_ids] + [int(i) for i in prefix]
    if not context:
        raise SettingsError("the prompt is empty: type some text for the model to continue", key="error.prompt_empty")
    if len(context) >= lm.info.context_length:
        raise SettingsError(f"the context is {len(context)} tokens and the model's window holds {lm.info.context_length}: "
                            "there is no room for a continuation", key="error.samples_no_room", n=len(context), window=lm.info.context_length)
    t0 = time.perf_counter()
    rows, first, prefill, clock = _decode(lm, context, prefix, settings, n, m, set() if ignore_eos else eos_ids(lm))
    seconds = time.perf_counter() - t0 - clock.wait
    samples = tuple(Sample(r.index, (int(settings.seed), r.index), tuple(r.tokens), tuple(lm.tokens.pieces(r.tokens)), "".join(r.texts),
                           tuple(r.prob), tuple(r.prob_t1), tuple(r.entropy), r.stop or "max_new_tokens") for r in rows)
    return Samples(lm.info.id, tuple(int(i) for i in prompt_ids), tuple(int(i) for i in prefix),
                   len(prefix) if start_step is None else int(start_step), settings, samples, first, seconds, prefill, clock.wait,
                   clock.passes)


def samples_from_prompt(lm: LoadedModel, text: str, settings: Settings, *, n: int = DEFAULT_N, max_new_tokens: int = DEFAULT_M,
                        ignore_eos: bool = False) -> Samples:
    """N continuations of a prompt (encoded as generation encodes it: settings.chat, system_prompt, parse_special)."""
    validate_counts(n, max_new_tokens)
    gen = start(lm, text, replace(settings, max_new_tokens=1))  # the prompt's and the settings' checks
    return draw_samples(lm, gen.prompt.token_ids, settings, n=n, max_new_tokens=max_new_tokens, ignore_eos=ignore_eos)


def samples_from_trace(lm: LoadedModel, trace: Trace | None, step: int, settings: Settings, *, n: int = DEFAULT_N,
                       max_new_tokens: int = DEFAULT_M) -> Samples:
    """N continuations from step `step` of a trace (0 .. len(trace.steps)): its context is the prompt and the tokens of
    the steps before it; the continuations replace step `step` and what follows. The trace's prompt settings (chat,
    system prompt) are kept; the sampling settings and the seed are `settings`'."""
    if trace is None or not trace.steps:
        raise SettingsError("there is no generation on screen to sample from: press Generate first", key="error.samples_nothing")
    if trace.model.id != lm.info.id or trace.model.vocab_size != lm.info.vocab_size:
        raise SettingsError(f"the trace on screen was made by {trace.model.id}, not by the loaded model {lm.info.id}: "
                            "press Generate to make one with this model", key="error.samples_other_model", made_by=trace.model.id,
                            loaded=lm.info.id)
    s = int(step)
    if not 0 <= s <= len(trace.steps):
        raise SettingsError(f"the step must be from 0 to {len(trace.steps)}, not {step}", key="error.step_range", high=len(trace.steps), value=step)
    if s == len(trace.steps) and trace.steps[-1].stop_reason == "eos":
        raise SettingsError("the model ended its answer here (end of sequence), so nothing follows it: sample from an earlier step",
                            key="error.samples_ended")
    ps = trace.settings
    settings = replace(settings, chat=ps.chat, system_prompt=ps.system_prompt, parse_special=ps.parse_special)
    prefix = [st.token_id for st in trace.steps[:s]]
    return draw_samples(lm, trace.prompt.token_ids, settings, n=n, max_new_tokens=max_new_tokens, prefix=prefix, start_step=s)


def measure_cost(lm: LoadedModel, prompt_ids: Sequence[int], settings: Settings, *, n: int = DEFAULT_N, max_new_tokens: int = DEFAULT_M,
                 repeats: int = 3, warm: bool = True) -> dict:
    """One continuation alone against N together, the same context, settings and M (end of sequence ignored: every
    continuation runs M tokens), measured in alternating runs (1 then N, N then 1, ...); times are the generations'
    own (`Samples.seconds`). The ratio is the median of the pairs' ratios N/1."""
    if warm:
        draw_samples(lm, prompt_ids, settings, n=n, max_new_tokens=2, ignore_eos=True)
    one, many = [], []
    for i in range(repeats):
        for k in ((1, n) if i % 2 == 0 else (n, 1)):
            t = draw_samples(lm, prompt_ids, settings, n=k, max_new_tokens=max_new_tokens, ignore_eos=True).seconds
            (one if k == 1 else many).append(t)
    ratios = [b / a for a, b in zip(one, many)]
    return {"model": lm.info.id, "prompt_tokens": len(prompt_ids), "n": n, "new_tokens": max_new_tokens, "repeats": repeats,
            "one_seconds": statistics.median(one), "n_seconds": statistics.median(many), "ratio": statistics.median(ratios),
            "ratios": ratios, "one_runs": one, "n_runs": many, "torch_threads": torch.get_num_threads()}


__all__ = ["DEFAULT_M", "DEFAULT_N", "FIRST_TOP", "MAX_M", "MAX_N", "draw_samples", "measure_cost", "pick", "sample_rng",
           "samples_from_prompt", "samples_from_trace", "validate_counts"]
