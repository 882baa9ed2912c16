"""A read trace checked against itself before anything draws it.

The reader (pipeline.trace.files) makes sure each value has its field's type; this module makes sure
the values agree with each other as a real generation's do: every array has the shape the model's
sizes give it, every token id is in the vocabulary, steps are numbered in order, settings are ones
the sampler accepts. A file that passes cannot make a panel index out of range; one that does not
is refused with a TraceFormatError naming the first field that disagrees.
"""
from __future__ import annotations

import math

import numpy as np

from pipeline.errors import TRACE_HINT, SettingsError, TraceFormatError
from pipeline.trace.records import STOP_REASONS, LensRecord, PromptRecord, RoundRecord, Settings, StepRecord, Trace

MAX_SIZE = 1 << 22  # layers, heads, vocabulary, context: far above any model this app loads

# Array shapes by field, in sizes named by letters: L layers, H heads, D d_model, V vocabulary,
# N a step's candidates, P the step's context (position + 1), T the prompt's tokens, K lens depth
# (L + 1), C lens candidates; "L+1" one more than L. None: any length.
SHAPES: dict[type, dict[str, tuple]] = {
    PromptRecord: {"embed_2d": ("T", 2)},
    StepRecord: {
        "top_ids": ("N",), "top_logits": ("N",), "top_probs": ("N",), "top_final_probs": ("N",),
        "attention": ("L", "H", "P"), "attention_matrix": ("L", "H", "P", "P"), "embed_2d": (2,),
        "attn_out_norm": ("L",), "mlp_out_norm": ("L",), "logits": ("V",), "embedding": ("D",),
        "hidden": ("L+1", "D"), "resid_2d": ("L+1", 2), "resid_norm": ("L+1",), "update_norm": ("L",),
    },
    LensRecord: {"top_ids": ("L+1", "C"), "top_probs": ("L+1", "C"), "chosen_probs": ("L+1",),
                 "chosen_ranks": ("L+1",), "entropy": ("L+1",)},
}
IDS = {PromptRecord: ("token_ids", "text_ids"), StepRecord: ("token_id", "top_ids", "context_ids"),
       LensRecord: ("token_id", "top_ids"), RoundRecord: ("token_ids",)}


def _bad(where: str, what: str) -> TraceFormatError:
    return TraceFormatError(f"the trace file contradicts itself ({where}: {what}); {TRACE_HINT}", key="error.trace_contradicts",
                            detail=f"{where}: {what}")


def check(trace: Trace) -> Trace:
    """`trace` if it is self-consistent; TraceFormatError naming the first disagreement."""
    m = trace.model
    for name in ("n_layers", "n_heads", "n_kv_heads", "head_dim", "d_model", "vocab_size", "context_length"):
        if not 1 <= getattr(m, name) <= MAX_SIZE:
            raise _bad(f"model.{name}", f"{getattr(m, name)} is not a size a model has")
    if m.n_heads % m.n_kv_heads:
        raise _bad("model.n_kv_heads", f"{m.n_kv_heads} does not divide {m.n_heads} heads")
    sizes = {"L": m.n_layers, "H": m.n_heads, "D": m.d_model, "V": m.vocab_size, "L+1": m.n_layers + 1}
    _settings(trace.settings, "settings")
    _prompt(trace.prompt, sizes)
    for i, s in enumerate(trace.steps):
        _step(s, i, sizes, f"steps[{i}]")
    _projections(trace, m.d_model)
    for i, r in enumerate(trace.lens):
        _record(r, {**sizes, "C": r.top_ids.shape[-1] if r.top_ids.ndim == 2 else -1}, f"lens[{i}]")
        if not 0 <= r.step < len(trace.steps):
            raise _bad(f"lens[{i}].step", f"no step {r.step}")
    _rounds(trace, sizes)
    for i, sg in enumerate(trace.segments):
        if not 0 <= sg.first_step < max(len(trace.steps), 1):
            raise _bad(f"segments[{i}].first_step", f"no step {sg.first_step}")
        _settings(sg.settings, f"segments[{i}].settings")
    return trace


def _settings(s: Settings, where: str) -> None:
    try:
        s.stages()
    except (SettingsError, OverflowError, ValueError) as e:
        raise _bad(where, str(e)) from e
    if not (math.isfinite(s.temperature) and 0 <= s.seed < 2**128 and 0 <= s.max_new_tokens <= MAX_SIZE):
        raise _bad(where, "a temperature, seed or token count out of range")


def _prompt(p: PromptRecord, sizes: dict) -> None:
    T = len(p.token_ids)
    if len(p.pieces) != T or len(p.text_pieces) != len(p.text_ids):
        raise _bad("prompt", "tokens and pieces differ in number")
    for name in ("raw_pieces", "piece_bytes"):
        if getattr(p, name) and len(getattr(p, name)) != T:
            raise _bad(f"prompt.{name}", f"{len(getattr(p, name))} entries for {T} tokens")
    _record(p, {**sizes, "T": T}, "prompt")


def _step(s: StepRecord, i: int, sizes: dict, where: str) -> None:
    if s.index != i or s.phase not in ("prefill", "decode") or s.position != len(s.context_ids) - 1:
        raise _bad(where, f"step {s.index} ({s.phase!r:.12}) at position {s.position} is out of order")
    n = s.top_ids.shape[0] if s.top_ids.ndim == 1 else -1  # (a file may say any shape: a single number has no length)
    if len(s.context_pieces) != len(s.context_ids) or len(s.top_pieces) != n:
        raise _bad(where, "tokens and pieces differ in number")
    if s.stop_reason is not None and s.stop_reason not in STOP_REASONS:
        raise _bad(f"{where}.stop_reason", f"{s.stop_reason!r:.30} is not a reason to stop")
    _record(s, {**sizes, "N": n, "P": s.position + 1}, where)
    for j, st in enumerate(s.stages):
        if st.probs.shape != (n,):
            raise _bad(f"{where}.stages[{j}].probs", f"shape {st.probs.shape}, not ({n},)")
    if s.rest is not None and not (np.isfinite(s.rest.penalty) and s.rest.penalty > 0):
        raise _bad(f"{where}.rest.penalty", f"{s.rest.penalty!r:.20} is not a repetition penalty (a positive number; 1.0: none)")
    if not (isinstance(s.batch_rows, int) and s.batch_rows >= 1):
        raise _bad(f"{where}.batch_rows", f"{s.batch_rows!r:.20} is not a number of visitors (a whole number, 1 or more)")


def _record(rec, sizes: dict, where: str) -> None:
    """Every array field of `rec` in SHAPES has its shape; every id field is in the vocabulary."""
    for name, spec in SHAPES.get(type(rec), {}).items():
        a = getattr(rec, name)
        want = tuple(d if isinstance(d, int) else sizes[d] for d in spec)
        if a is not None and a.shape != want:
            raise _bad(f"{where}.{name}", f"shape {a.shape}, not {want}")
    for name in IDS.get(type(rec), ()):
        ids = np.asarray(getattr(rec, name))  # (a huge int or a bool makes an object or bool array: refused)
        if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0 or ids.max() >= sizes["V"]):
            raise _bad(f"{where}.{name}", f"a token id outside the vocabulary of {sizes['V']}")


def _projections(trace: Trace, d_model: int) -> None:
    for name in ("projection", "resid_projection"):
        p = getattr(trace, name)
        if p is not None and (p.mean.shape != (d_model,) or p.components.shape != (2, d_model)):
            raise _bad(name, f"shapes {p.mean.shape} and {p.components.shape} for d_model {d_model}")
    c = trace.vocab_cloud
    if c is not None and (c.ids.ndim != 1 or c.xy.shape != (c.ids.shape[0], 2) or len(c.pieces) != c.ids.shape[0]):
        raise _bad("vocab_cloud", "ids, pieces and points differ in number")


def _rounds(trace: Trace, sizes: dict) -> None:
    n = len(trace.steps)
    for i, r in enumerate(trace.rounds):
        if not (0 <= r.first_step < max(n, 1) and r.first_step + len(r.token_ids) <= n) or r.n_accepted > len(r.proposals):
            raise _bad(f"rounds[{i}]", f"steps {r.first_step}..{r.first_step + len(r.token_ids) - 1} of {n}")
        _record(r, sizes, f"rounds[{i}]")
        for j, p in enumerate(r.proposals):
            k = p.top_ids.shape[0] if p.top_ids.ndim == 1 else -1
            if p.top_draft_probs.shape != (k,) or p.top_target_probs.shape != (k,) or len(p.top_pieces) != k:
                raise _bad(f"rounds[{i}].proposals[{j}]", "candidates and their probabilities differ in number")
    if trace.speculative is not None and trace.speculative.k < 0:
        raise _bad("speculative.k", f"{trace.speculative.k} proposals a round")
