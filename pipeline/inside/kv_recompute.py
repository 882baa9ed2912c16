"""The KV cache, recomputed: one step run again with the cache and without it, timed now on this
machine, to show that the cache changes the cost and not the answer.

    kvc = kv_compare(lm, trace, step_index)          # KVCompareRecord: the step with and without the cache
"""
from __future__ import annotations

import statistics

import numpy as np
import torch

from pipeline.inside.accounting import param_counts, pass_macs
from pipeline.capture import run_with_cache
from pipeline.loading import LoadedModel
from pipeline.trace.records import KVCompareRecord, StepRecord, Trace

KV_TOP = 20  # candidates compared by kv_compare


def _find_step(trace: Trace, step_index: int) -> StepRecord:
    for s in trace.steps:
        if s.index == step_index:
            return s
    raise ValueError(f"the trace has no step {step_index} (its steps are {trace.steps[0].index if trace.steps else '-'}"
                     f"..{trace.steps[-1].index if trace.steps else '-'})")


def _median_ms(fn, repeats: int = 3) -> tuple[float, torch.Tensor]:
    """Median of the passes' own times (each timed inside the model's lock), and the last logits."""
    times, out = [], None
    for _ in range(repeats):
        cap = fn()
        times.append(cap.ms)
        out = cap["logits"][0, -1]
    return statistics.median(times), out


def kv_compare(lm: LoadedModel, trace: Trace, step_index: int) -> KVCompareRecord:
    """Recompute step `step_index` (its StepRecord.index) twice: without a cache (one pass over
    the whole context up to the step's position) and with one (the context but its last token
    prefilled into a DynamicCache, untimed, then one timed pass of the last token; for a prefill
    step, the step's own single pass over the prompt with a fresh cache). Times are the median of
    3 runs, now, on this machine."""
    from transformers import DynamicCache

    step = _find_step(trace, step_index)
    ids = list(step.context_ids)[: step.position + 1]
    V = lm.info.vocab_size
    prefill = step.phase == "prefill"

    def without():
        return run_with_cache(lm, ids, hooks=False)

    if prefill:
        def with_cache():
            return run_with_cache(lm, ids, cache=DynamicCache(config=lm.model.config), hooks=False)
    else:
        cache = DynamicCache(config=lm.model.config)
        run_with_cache(lm, ids[:-1], cache=cache, hooks=False)  # the context but its last token, untimed

        def with_cache():
            cap = run_with_cache(lm, ids[-1:], cache=cache, hooks=False)
            cache.crop(-1)  # back to the prefilled context for the next repeat
            return cap

    ms_without, lo_without = _median_ms(without)
    ms_with, lo_with = _median_ms(with_cache)
    lw, lwo = lo_with[:V].float().cpu().numpy(), lo_without[:V].float().cpu().numpy()
    T = step.position + 1
    tokens_with = T if prefill else 1
    params = param_counts(lm)
    top = np.asarray(step.top_ids[:KV_TOP], np.int64)
    return KVCompareRecord(
        step=step.index,
        position=step.position,
        tokens_with=tokens_with,
        tokens_without=T,
        macs_with=pass_macs(params, lm.info, tokens_with, T),
        macs_without=pass_macs(params, lm.info, T, T),
        ms_with=float(ms_with),
        ms_without=float(ms_without),
        max_abs_diff=float(np.abs(lw.astype(np.float64) - lwo).max()),
        same_argmax=bool(int(lw.argmax()) == int(lwo.argmax())),
        top_ids=top,
        logits_with=lw[top].astype(np.float32),
        logits_without=lwo[top].astype(np.float32),
        argmax_id=int(lw.argmax()),
    )
