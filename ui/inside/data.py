"""What the inside-the-model views need beyond the logit lens (ui/inside/lens_cache.py): from the trace when it holds
it, else from the model that made it; and the swap demo's default positions.

    recs, machine, params = accounting_for(lm, trace)   # the compute and memory of every step (None: unknown)
    pos = position_for(lm, trace)                       # the position scheme (None: unknown)
    i, j = default_swap(trace)                          # two word tokens of the prompt, for the swap demo
"""
from __future__ import annotations

from pipeline.errors import SettingsError
from pipeline.trace.records import Trace
from ui.model_match import same_model
from viz.text import t


def accounting_for(lm, trace: Trace):
    """(accounting records of every step, machine, params), or None when neither the trace nor the
    model that made it holds parameter counts."""
    from pipeline.inside import analyses as inside

    lm = same_model(lm, trace)
    params = trace.params or (inside.param_counts(lm) if lm else None)
    if params is None:
        return None
    machine = trace.machine or (inside.machine_of(lm) if lm else inside.measure_machine(None))
    return [inside.accounting(trace.model, params, st, machine) for st in trace.steps], machine, params


def position_for(lm, trace: Trace):
    """The trace's position scheme, or the model's when it made the trace; else None."""
    from pipeline.inside import analyses as inside

    lm = same_model(lm, trace)
    return trace.position or (inside.position_info(lm) if lm else None)


def default_swap(trace: Trace) -> tuple[int, int]:
    """Two word tokens of what the person typed (the first and the last), for the swap demo."""
    p = trace.prompt
    n, ids = len(p.text_ids), list(p.token_ids)
    start = next((a for a in range(len(ids) - n, -1, -1) if n and ids[a:a + n] == list(p.text_ids)), None)
    span = range(start, start + n) if start is not None else range(len(ids))
    words = [k for k in span if p.pieces[k].strip().isalpha()]
    if len(words) < 2:
        raise SettingsError(t("inside.swap_two_words"))
    return words[0], words[-1]
