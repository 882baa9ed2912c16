"""A continuation opened as a branch with its full trace: known tokens recomputed with capture (teacher forcing).

    tr = open_sample(lm, trace, samples, i)                      # continuation i of pipeline.samples, as a trace
    tr = branch_trace(lm, trace, s, token_ids, settings)         # any tokens from step s on

Steps 0 .. s-1 are the trace's own; steps s .. are the given tokens, each a real StepRecord (attention, hidden states,
the distribution and its stages, ...) equal to what generation records when it draws those tokens. They come from ONE
captured forward pass over the known tokens (pipeline.capture.run_with_cache with `keep` = their number), each step's
record built from its own row of that pass (pipeline.generate.record_fields with `row`, as speculative verification
does). When s > 0 the context the trace already holds is first run plainly (no hooks: its steps are the trace's) into
the KV cache, so the captured pass covers only the new tokens; when s = 0 the one pass starts at position 0 and the
first step is the prefill, with the prompt's whole attention matrix, as in generation.

The random stream: each step records the state of the continuation's own stream after its draw (`seed` =
Sample.seed), so "+1 token" on the branch goes on with the stream that drew it.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

import numpy as np
import torch

from pipeline.sampling import stages as sampling
from pipeline.capture import run_with_cache
from pipeline.continuation import as_before_the_end
from pipeline.errors import SettingsError
from pipeline.generate import build_trace, eos_ids, kv_bytes, new_rng, record_fields, replay_detokenizer, rng_state, stop_reason
from pipeline.loading import LoadedModel
from pipeline.trace.records import Settings, StepRecord, Trace
from pipeline.trace.samples import Samples


def _pass(lm: LoadedModel, context: list[int], tokens: list[int], first: int):
    """The captured pass over the new tokens: (capture, cache, (m, vocab) logits, capture row of the first new step,
    seconds, wait seconds). `first`: the index of the first new step (0: the prefill)."""
    from transformers import DynamicCache

    m, cache, wait = len(tokens), DynamicCache(config=lm.model.config), 0.0
    t0 = time.perf_counter()
    if first == 0:
        feed, row0 = context + tokens[:-1], len(context) - 1
    else:  # the trace's own context: plainly into the cache; the captured pass starts at its last token
        wait += run_with_cache(lm, context[:-1], cache=cache, hooks=False).wait_ms / 1000.0
        feed, row0 = [context[-1]] + tokens[:-1], 0
    cap = run_with_cache(lm, feed, cache=cache, keep=m)
    wait += cap.wait_ms / 1000.0
    logits = cap["logits"][0, -m:, : lm.info.vocab_size].float().cpu().numpy()  # (m, vocab)
    return cap, cache, logits, row0, time.perf_counter() - t0 - wait, wait


@torch.inference_mode()
def forced_steps(lm: LoadedModel, prompt_ids: Sequence[int], prefix: Sequence[int], tokens: Sequence[int], settings: Settings, *,
                 seed: Sequence[int] | None = None, stop_ids: set[int] | None = None) -> list[StepRecord]:
    """StepRecords for `tokens` following `prompt_ids` + `prefix` (the steps before them), as generation with `settings`
    records them; they stop at an end-of-sequence token, at settings.max_new_tokens (counting the prefix) or at the
    context's limit, as generation stops. `seed`: the stream that drew them (default: generation's, from settings.seed)."""
    context, tokens, index0 = [int(i) for i in prompt_ids] + [int(i) for i in prefix], [int(t) for t in tokens], len(prefix)
    stop_ids = eos_ids(lm) if stop_ids is None else stop_ids
    cap, cache, logits, row0, secs, wait = _pass(lm, context, tokens, index0)
    rng = new_rng(settings.seed) if seed is None else np.random.default_rng([int(x) for x in seed])
    greedy = settings.temperature == 0
    detok = replay_detokenizer(lm, prefix)
    pieces = lm.tokens.pieces(context)
    c, out = len(context), []
    for j, tok in enumerate(tokens):
        position, ctx_j = c - 1 + j, context + tokens[:j]
        stages = settings.stages(ctx_j)
        res = sampling.apply_stages(logits[j], stages)
        stop = stop_reason(tok, index0 + j + 1, settings.max_new_tokens, position, lm.info.context_length, stop_ids)
        text = "" if stop == "eos" else detok.add(tok, final=stop is not None)
        f = record_fields(lm, cap, cache, logits[j], res, stages, tok, index0 + j, "prefill" if index0 + j == 0 else "decode", position,
                          ctx_j, pieces, text, row=row0 + j, kv_cache_bytes=kv_bytes(cache, upto=position + 1))
        if not greedy:
            rng.random()  # the one uniform the draw of this token took
        out.append(StepRecord(**f, stop_reason=stop, ms=secs * 1000.0 / len(tokens), wait_ms=wait * 1000.0 / len(tokens),
                              rng_state=rng_state(rng)))
        pieces.append(f["piece"])
        if stop is not None:
            break
    return out


def branch_trace(lm: LoadedModel, trace: Trace, start_step: int, token_ids: Sequence[int], settings: Settings, *,
                 seed: Sequence[int] | None = None) -> Trace:
    """The trace's steps 0 .. start_step-1, then `token_ids` recomputed with full capture as steps start_step.. (made
    with `settings`: the trace's prompt settings are kept, and a Segment says where other sampling settings begin)."""
    s = int(start_step)
    if not 0 <= s <= len(trace.steps):
        raise SettingsError(f"the step must be from 0 to {len(trace.steps)}, not {start_step}", key="error.step_range", high=len(trace.steps),
                            value=start_step)
    toks = [int(t) for t in token_ids]
    if not toks:
        raise SettingsError("the continuation has no tokens to open", key="error.open_empty")
    if any(not 0 <= t < lm.info.vocab_size for t in toks):
        raise SettingsError(f"a token id is outside the vocabulary (0 to {lm.info.vocab_size - 1})", key="error.token_ids", last=lm.info.vocab_size - 1)
    if trace.model.id != lm.info.id:
        raise SettingsError(f"the trace on screen was made by {trace.model.id}, not by the loaded model {lm.info.id}", key="error.other_model",
                            made_by=trace.model.id, loaded=lm.info.id)
    kept = as_before_the_end(lm, trace.steps[:s])
    ps = trace.settings
    settings = replace(settings, chat=ps.chat, system_prompt=ps.system_prompt, parse_special=ps.parse_special, max_new_tokens=s + len(toks))
    new = forced_steps(lm, trace.prompt.token_ids, [st.token_id for st in kept], toks, settings, seed=seed)
    extra = {}
    if trace.speculative is not None:  # the speculative rounds that made the kept steps (as Generation.trace)
        extra = dict(speculative=trace.speculative, rounds=tuple(r for r in trace.rounds if r.first_step + len(r.token_ids) <= s))
    return build_trace(lm, replace(settings, max_new_tokens=s + len(new)), trace.prompt, kept + tuple(new), base=trace, first_new=s, **extra)


def open_sample(lm: LoadedModel, trace: Trace, samples: Samples, index: int) -> Trace:
    """Continuation `index` of `samples` (drawn from `trace` by pipeline.samples.samples_from_trace) as a branch of it."""
    i = int(index)
    if not 0 <= i < samples.n:
        raise SettingsError(f"there is no continuation {index}: pick one from 0 to {samples.n - 1}", key="error.open_index", value=index,
                            high=samples.n - 1)
    s = samples.start_step
    if (samples.prompt_ids != tuple(trace.prompt.token_ids) or s > len(trace.steps)
            or samples.prefix != tuple(st.token_id for st in trace.steps[:s])):
        raise SettingsError("these continuations were drawn from another text than the one on screen: sample again", key="error.open_stale")
    x = samples.samples[i]
    return branch_trace(lm, trace, s, x.token_ids, samples.settings, seed=x.seed)


__all__ = ["branch_trace", "forced_steps", "open_sample"]
