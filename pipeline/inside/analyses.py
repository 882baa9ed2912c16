"""Inside the model: analyses of one step that need the model itself (its final norm, LM head,
weights, or a second forward pass), as immutable records the viz/ functions draw.

    lens = logit_lens(lm, step)                      # LensRecord: the prediction after every layer
    kvc = kv_compare(lm, trace, step_index)          # KVCompareRecord: the step with and without the cache
    params = param_counts(lm)                        # ParamCounts: parameters by where a pass reads them
    machine = measure_machine()                      # MachineInfo: measured bandwidth and matmul speed (cached)
    acc = accounting(info, params, step, machine)    # AccountingRecord: pure arithmetic
    pos = position_info(lm)                          # PositionRecord: RoPE frequencies or learned positions
    swap = swap_demo(lm, token_ids, i, j)            # SwapRecord: two prompt tokens swapped, attention compared
    trace = with_inside(lm, trace)                   # the trace with lens, params, position and machine

One module per analysis (logit_lens, accounting, kv_recompute, positions); this one gathers them
under one name, as callers use them, and makes a trace ready for export. Records hold plain Python
/ numpy data only, like pipeline.trace.records (they are defined there, so traces serialise them).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from pipeline.inside.accounting import _measure, accounting, measure_machine, param_counts, pass_macs  # noqa: F401  (_measure: its cache, for tests)
from pipeline.inside.kv_recompute import KV_TOP, kv_compare
from pipeline.loading import LoadedModel
from pipeline.model_thread import run_on
from pipeline.inside.logit_lens import final_logits, logit_lens, logit_lens_many
from pipeline.inside.positions import LEARNED_POSITIONS_SHOWN, position_info, swap_demo  # noqa: F401
from pipeline.trace.records import (
    LENS_TOP,
    AccountingRecord,
    KVCompareRecord,
    LensRecord,
    MachineInfo,
    ParamCounts,
    PositionRecord,
    SwapRecord,
    Trace,
)

__all__ = [
    "LENS_TOP", "KV_TOP", "LensRecord", "KVCompareRecord", "ParamCounts", "MachineInfo", "AccountingRecord",
    "PositionRecord", "SwapRecord", "final_logits", "logit_lens", "logit_lens_many", "kv_compare", "pass_macs", "param_counts",
    "measure_machine", "machine_of", "accounting", "position_info", "swap_demo", "with_inside",
]


# ---------------------------------------------------------------------------------------
# A trace for export


def machine_of(lm) -> MachineInfo:
    """This machine's limits, measured (once) where the model's passes run: on its thread."""
    return run_on(lm, lambda: measure_machine(lm.lock))


def trace_extras(lm: LoadedModel) -> dict:
    """What every trace of this model carries besides its steps (cheap: no forward pass): parameter
    counts, position scheme, residual projection."""
    return dict(params=param_counts(lm), position=position_info(lm), resid_projection=lm.resid_projection)


def with_inside(lm: LoadedModel, trace: Trace, steps: Sequence[int] | None = None) -> Trace:
    """The trace with the logit lens of `steps` (StepRecord.index values; default: every step
    that holds hidden states), the model's parameter counts and position scheme, this machine's
    measured limits, and the residual projection. Lens records of other steps already in the
    trace are kept."""
    by_index = {s.index: s for s in trace.steps}
    wanted = [s.index for s in trace.steps if s.hidden is not None] if steps is None else [int(k) for k in steps]
    for k in wanted:
        if k not in by_index:
            raise ValueError(f"the trace has no step {k}")
    fresh = {r.step: r for r in logit_lens_many(lm, [by_index[k] for k in wanted])}
    kept = {r.step: r for r in trace.lens if r.step not in fresh}
    lens = tuple(sorted({**kept, **fresh}.values(), key=lambda r: r.step))
    extras = trace_extras(lm)
    if trace.resid_projection is not None:  # the map its steps' paths were drawn in
        extras["resid_projection"] = trace.resid_projection
    return dataclasses.replace(trace, lens=lens, machine=machine_of(lm), **extras)
