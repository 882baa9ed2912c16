"""Whether the loaded model made a trace (so its weights can answer for it), and what it vouches for then.

    lm = same_model(loaded, trace)       # the loaded model, if it made `trace`; else None
    info = known_weights(info, loaded)   # a trace's model info with how its weights are stored, where that is known
"""
from __future__ import annotations

from dataclasses import replace

from pipeline.trace.records import ModelInfo, Trace


def same_model(lm, trace: Trace | None):
    """`lm` when it is the model that made `trace` (so its weights can answer for it), else None."""
    return lm if lm is not None and trace is not None and lm.info.id == trace.model.id else None


def known_weights(info: ModelInfo, lm) -> ModelInfo:
    """`info` with how its weights are stored, where a trace made before that was recorded ("") is
    of the embedded model and the loaded model is the embedded one too: the package ships one
    file, so its storage is known. Otherwise `info` as it is (the page then says only the dtype
    the model computed in, never a precision it cannot vouch for)."""
    if info.weights or lm is None or info.source != "embedded":
        return info
    if lm.info.source != "embedded" or lm.info.id != info.id or not lm.info.weights:
        return info
    return replace(info, weights=lm.info.weights)
