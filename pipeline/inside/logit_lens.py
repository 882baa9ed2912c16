"""The logit lens: the model's own read-out (final norm, LM head, any logit scaling) applied to the
residual stream after every layer, to see what each depth would predict.

    lens = logit_lens(lm, step)                      # LensRecord: the prediction after every layer
    lenses = logit_lens_many(lm, steps)              # the same for many steps, their read-outs in a few large products

It reads the model's weights only: the final norm's and LM head's own forwards are called directly, past any
wrapper a capture in progress has put on the modules (pipeline/capture.py), so it needs no model lock and never
stalls the decode loop (pipeline/batching.py).
"""
from __future__ import annotations

import functools

import math
from typing import Sequence

import numpy as np
import torch

from pipeline.loading import LoadedModel
from pipeline.model_thread import run_on
from pipeline.trace.records import LENS_TOP, LensRecord, StepRecord


def text_config(lm: LoadedModel):
    """The model's text config (a multimodal config holds it inside; a plain one is it)."""
    c = lm.model.config
    return c.get_text_config() if hasattr(c, "get_text_config") else c


def _own(module):
    """`module`'s own forward, as its class defines it: no wrapper a capture put on the instance, no torch hook."""
    return type(module).forward.__get__(module)


def final_logits(lm: LoadedModel, x: torch.Tensor) -> torch.Tensor:
    """The model's own read-out of residual rows x (..., d_model): final norm, LM head, then any
    scaling the model applies after the head (Gemma 2/3 soft-capping, Cohere's logit_scale,
    Granite's logits_scaling), cut to the vocabulary."""
    y = _own(lm.arch.lm_head)(_own(lm.arch.norm)(x))
    c = text_config(lm)
    scale = getattr(c, "logit_scale", None)  # Cohere multiplies
    if isinstance(scale, (int, float)) and scale not in (0, 1):
        y = y * scale
    div = getattr(c, "logits_scaling", None)  # Granite divides
    if isinstance(div, (int, float)) and div not in (0, 1):
        y = y / div
    cap = getattr(c, "final_logit_softcapping", None)
    if cap:
        y = torch.tanh(y / cap) * cap
    return y[..., : lm.info.vocab_size]


def _read_out(lm: LoadedModel, h: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return final_logits(lm, h)


CHUNK = 8  # steps read out in one product: (8 x (layers+1), d_model) rows; ~50 MB of float32 logits for SmolLM2


def logit_lens(lm: LoadedModel, step: StepRecord) -> LensRecord:
    """The final norm and LM head applied to the step's residual stream after every layer.

    Row 0 is the input to block 0 (the embedding), row i the output of block i; row L is the
    model's own prediction (equal to the step's logits)."""
    return logit_lens_many(lm, [step])[0]


def logit_lens_many(lm: LoadedModel, steps: Sequence[StepRecord]) -> list[LensRecord]:
    """`logit_lens` of each step; the LM head reads CHUNK steps' rows at once (one large matrix product runs about
    twice as fast a row as one per step on a CPU: docs/benchmarks.md, "A class generating at once")."""
    for st in steps:
        if st.hidden is None:
            raise ValueError(f"step {st.index} holds no hidden states (a trace exported without --full): the logit lens needs them")
    p = next(lm.model.parameters())
    out = []
    for i in range(0, len(steps), CHUNK):
        part = steps[i:i + CHUNK]
        h = torch.as_tensor(np.stack([np.asarray(st.hidden, np.float32) for st in part])).to(device=p.device, dtype=p.dtype)
        logits = run_on(lm, functools.partial(_read_out, lm, h))  # (steps, L+1, vocab): on the model's thread
        with torch.inference_mode():
            out += [_record(lm, st, logits[j].float()) for j, st in enumerate(part)]
    return out


def _record(lm: LoadedModel, step: StepRecord, logits: torch.Tensor) -> LensRecord:
    """One step's lens from its read-out logits (L+1, vocab), in float32 as the record stores it (the log-softmax
    subtracts each row's maximum first: probabilities within ~1e-7 of float64's, and half the time; tests hold them
    to an independent float64 computation)."""
    logp = torch.log_softmax(logits, dim=-1)
    probs = logp.exp()
    k = min(LENS_TOP, logits.shape[-1])
    top_p, top_i = probs.topk(k, dim=-1)  # descending
    chosen = logits[:, step.token_id]
    ranks = (logits > chosen[:, None]).sum(-1)
    entropy = -(probs * logp).nan_to_num().sum(-1) / math.log(2)
    top_ids = top_i.cpu().numpy().astype(np.int64)
    return LensRecord(
        step=step.index,
        position=step.position,
        token_id=int(step.token_id),
        piece=step.piece,
        top_ids=top_ids,
        top_pieces=tuple(tuple(lm.tokens.piece(int(i)) for i in row) for row in top_ids),
        top_probs=top_p.cpu().numpy().astype(np.float32),
        chosen_probs=probs[:, step.token_id].cpu().numpy().astype(np.float32),
        chosen_ranks=ranks.cpu().numpy().astype(np.int64),
        entropy=entropy.cpu().numpy().astype(np.float32),
    )
