"""What a click asks for, read from the page's fields: the sampling settings, and how many tokens to make.

    settings = settings_from_inputs(...)      # the page's fields as Settings (SettingsError if not numbers)
    n = tokens_to_make(trace, cont, max_new)  # how many tokens Generate, re-sample or a branch makes
"""
from __future__ import annotations

import math

from pipeline.errors import SettingsError
from pipeline.indices import clamp_index
from pipeline.trace.records import Settings, Trace
from viz.text import t


def tokens_to_make(prev: Trace | None, cont: dict | None, max_new: int) -> int:
    """Generate: `max_new`. A re-sample or a branch from step s of `prev` (`cont`, the keywords of
    pipeline.continuation.continue_generation): what brings the answer to `max_new` tokens in all,
    at least one after the fork. SettingsError when the step is not a number."""
    if cont is None or cont.get("start_step") is None or prev is None:
        return max_new
    try:
        s, n = int(cont["start_step"]), len(prev.steps)
    except (TypeError, ValueError) as e:
        raise SettingsError(t("run_inputs.pick_step")) from e
    # as pipeline.continuation keeps them: a re-sample the steps before s, a branch those and the forced one
    kept = clamp_index(s, n + 1) if cont.get("force_rank") is None else clamp_index(s, n) + 1
    return max(1, max_new - kept)


def settings_from_inputs(mode, system, temperature, top_k, top_p, seed, max_new, *, min_p=0.0, repetition_penalty=1.0) -> Settings:
    """The sampling fields of the page as Settings ("Raw text" mode: no chat template, no system
    prompt; an empty system prompt: the template's own). SettingsError if one is not a number."""
    chat = mode != "Raw text"
    try:
        min_p, repetition_penalty = 0.0 if min_p is None else min_p, 1.0 if repetition_penalty is None else repetition_penalty
        if not all(math.isfinite(float(x)) for x in (temperature, top_k, top_p, min_p, repetition_penalty, seed, max_new)):
            raise SettingsError(t("run_inputs.not_finite"))
        return Settings(
            temperature=float(temperature), top_k=int(top_k) if float(top_k).is_integer() else float(top_k),
            top_p=float(top_p), min_p=float(min_p), repetition_penalty=float(repetition_penalty), seed=int(seed),
            max_new_tokens=int(max_new), chat=chat,
            system_prompt=(system if system and system.strip() else None) if chat else None,
        )
    except SettingsError:
        raise
    except (TypeError, ValueError, OverflowError) as e:
        raise SettingsError(t("run_inputs.not_number")) from e
