"""Branching: force a token the model did not choose at one step, then generate on from there.

    step = forced_step(lm, trace.steps[:s], trace.steps[s], token_id)   # the step, with another token
    gen = start(lm, trace.prompt.text, settings, prefix=[t.token_id for t in (*trace.steps[:s], step)])

The forced step keeps everything the model computed at that position (its logits, attention,
hidden states: they depend only on the context before it); only the chosen token and what
follows from it (piece, text, its probabilities, its embedding) change.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from pipeline.generate import eos_ids, token_fields
from pipeline.loading import LoadedModel
from pipeline.trace.records import StepRecord
from pipeline.errors import SettingsError
from pipeline.tokens import Detokenizer


def forced_step(lm: LoadedModel, before: Sequence[StepRecord], step: StepRecord, token_id: int, *, eos: set[int] | None = None) -> StepRecord:
    """`step` with `token_id` chosen instead of the model's own token."""
    token_id = int(token_id)
    if not 0 <= token_id < lm.info.vocab_size:
        raise SettingsError(f"token id {token_id} is outside the vocabulary (0 to {lm.info.vocab_size - 1})", key="error.token_id",
                            id=token_id, last=lm.info.vocab_size - 1)
    detok = Detokenizer(lm.tokens)
    for s in before:
        detok.add(s.token_id)
    is_eos = token_id in (eos if eos is not None else eos_ids(lm))
    text = "" if is_eos else detok.add(token_id)
    hits = np.flatnonzero(np.asarray(step.top_ids) == token_id)
    if step.logits is not None:  # the full vocabulary: exact
        lg = step.logits.astype(np.float64)
        prob = float(np.exp(lg[token_id] - step.logsumexp))
    elif hits.size:
        prob = float(step.top_probs[hits[0]])
    else:
        raise SettingsError("that token is not among the candidates recorded for this step; pick one from the distribution",
                            key="error.branch_unknown")
    final = float(step.top_final_probs[hits[0]]) if hits.size else 0.0
    return replace(step, **token_fields(lm, token_id), text=text, chosen_prob=prob, chosen_final_prob=final,
                   stop_reason="eos" if is_eos else None, forced=True)
