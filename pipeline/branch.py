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
import torch

from .loading import LoadedModel
from .records import StepRecord
from .sampling import SettingsError
from .tokens import Detokenizer


def forced_step(lm: LoadedModel, before: Sequence[StepRecord], step: StepRecord, token_id: int, *, eos: set[int] | None = None) -> StepRecord:
    """`step` with `token_id` chosen instead of the model's own token."""
    token_id = int(token_id)
    if not 0 <= token_id < lm.info.vocab_size:
        raise SettingsError(f"token id {token_id} is outside the vocabulary (0 to {lm.info.vocab_size - 1})")
    detok = Detokenizer(lm.tokens)
    for s in before:
        detok.add(s.token_id)
    from .generate import eos_ids

    is_eos = token_id in (eos if eos is not None else eos_ids(lm))
    text = "" if is_eos else detok.add(token_id)
    hits = np.flatnonzero(np.asarray(step.top_ids) == token_id)
    if step.logits is not None:  # the full vocabulary: exact
        lg = step.logits.astype(np.float64)
        prob = float(np.exp(lg[token_id] - step.logsumexp))
    elif hits.size:
        prob = float(step.top_probs[hits[0]])
    else:
        raise SettingsError("that token is not among the candidates recorded for this step; pick one from the distribution")
    final = float(step.top_final_probs[hits[0]]) if hits.size else 0.0
    with torch.inference_mode():
        emb = lm.model.get_input_embeddings().weight[token_id].float().cpu().numpy()
    changes = dict(token_id=token_id, piece=lm.tokens.piece(token_id), text=text, chosen_prob=prob, chosen_final_prob=final,
                   embed_2d=lm.projection.apply(emb), embedding=emb, stop_reason="eos" if is_eos else None,
                   raw_piece=lm.tokens.raw_piece(token_id), piece_bytes=lm.tokens.piece_bytes(token_id), forced=True)
    return replace(step, **changes)
