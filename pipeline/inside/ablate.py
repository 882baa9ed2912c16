"""Switching parts of the model off: the step on screen recomputed with one part's output set to zero at every
position, a causal test of this one step (not an explanation of the whole model).

    rec = ablate(lm, context_ids, token_id, layer=3, part="head", head=5)   # AblationRecord: before and after
    rec = ablate_step(lm, step, layer=3, part="mlp")                        # the same, for a StepRecord
    hm = head_map(lm, context_ids, token_id, layers=[3])                    # HeadMapRecord: each head of block 3 off in turn
    for hm in iter_head_map(lm, context_ids, token_id): ...                 # every block, one record per block done

The parts:
- one attention head: its slice of the attention output before the output projection (o_proj's input columns
  h*head_dim:(h+1)*head_dim), zeroed by a forward pre-hook on that projection;
- the attention block: its output (the projection's, bias included) before it joins the residual stream;
- the MLP block: its output before it joins the residual stream.

How it is fast. Switching off a part of block L leaves the residual stream that enters block L unchanged, so one
clean pass of the model (its own forward, the "before") records what enters each block (the hidden states and the
keywords the model gives its blocks: mask, positions); a switch-off then runs only blocks L.. again, then the final
norm and the LM head at the last position. Many switch-offs of one block run as one batch, each row zeroing its own
part (a per-row mask). Row 0 of every batch switches nothing off: it must reproduce the clean pass, and when it does
not (a family that does more than norm and LM head after its last block) the batch runs through the whole model
instead ("full"), with the same hooks.

Every pass holds the model's lock (`lm.lock`, as pipeline.capture.run_with_cache does), so it never runs at the same
time as a generation; the hooks are removed before the lock is let go. `iter_head_map` lets go of it between blocks.
"""
from __future__ import annotations

import functools

import time
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import numpy as np
import torch

from pipeline.errors import SettingsError
from pipeline.model_thread import run_on
from pipeline.trace.records import StepRecord
from pipeline.trace.ablated import PARTS, AblationRecord, HeadMapRecord, log_softmax

__all__ = ["PARTS", "AblationRecord", "HeadMapRecord", "ablate", "ablate_step", "head_map", "iter_head_map",
           "check_part", "out_proj"]

Row = tuple[str, int | None] | None  # what one row of a batch switches off: ("head", h), ("attn", None), ("mlp", None); None: nothing
CHECK_TOL = 1e-3  # row 0 (nothing off) against the clean pass, max |logit difference|: the fast path is sound
OUT_PROJ_NAMES = ("o_proj", "c_proj", "dense", "out_proj")  # Llama-like, GPT-2, Phi, others


def out_proj(attn: torch.nn.Module) -> torch.nn.Module:
    """The attention block's output projection (whose input is the heads' outputs side by side)."""
    for name in OUT_PROJ_NAMES:
        m = getattr(attn, name, None)
        if isinstance(m, torch.nn.Module):
            return m
    raise SettingsError(f"this model's attention ({type(attn).__name__}) has no output projection this tool knows: "
                        "switch off a whole block instead", key="error.ablate_no_projection", name=type(attn).__name__)


def check_part(n_layers: int, n_heads: int, layer, part: str, head=None) -> tuple[int, str, int | None]:
    """(layer, part, head) as ints, or a SettingsError that says what to pick instead."""
    if part not in PARTS:
        raise SettingsError(f"the part to switch off is one of {', '.join(PARTS)}, not {part!r}", key="error.ablate_part", parts=", ".join(PARTS),
                            value=part)
    if layer is None or int(layer) != layer or not 0 <= int(layer) < n_layers:
        raise SettingsError(f"block {layer} does not exist: pick a block from 0 to {n_layers - 1}", key="error.ablate_block", value=layer,
                            high=n_layers - 1)
    if part != "head":
        return int(layer), part, None
    if head is None or int(head) != head or not 0 <= int(head) < n_heads:
        raise SettingsError(f"head {head} does not exist: pick a head from 0 to {n_heads - 1}", key="error.ablate_head", value=head, high=n_heads - 1)
    return int(layer), part, int(head)


def _check_context(lm, context_ids: Sequence[int], token_id: int) -> list[int]:
    ids = [int(i) for i in context_ids]
    V = lm.info.vocab_size
    if not ids:
        raise SettingsError("switching a part off needs a context of at least one token", key="error.ablate_empty")
    if len(ids) > lm.info.context_length:
        raise SettingsError(f"the context is {len(ids)} tokens; the model reads at most {lm.info.context_length}", key="error.context_too_long",
                            n=len(ids), window=lm.info.context_length)
    if not all(0 <= i < V for i in ids) or not 0 <= int(token_id) < V:
        raise SettingsError("a token id is outside this model's vocabulary: is the trace from another model?", key="error.ablate_vocab")
    return ids


# --- the hooks: each row of a batch switches off its own part -------------------------------------------------------


def _row_mask(rows: Sequence[Row], part: str, like: torch.Tensor) -> torch.Tensor | None:
    """(B, 1, 1): 0 for the rows that switch `part` off, else 1; None when no row does."""
    off = [r is not None and r[0] == part for r in rows]
    return torch.tensor([0.0 if o else 1.0 for o in off], dtype=like.dtype).view(-1, 1, 1) if any(off) else None


@contextmanager
def _switched_off(lm, layer: int, rows: Sequence[Row]):
    """Hooks on block `layer` that zero, row by row, the part each row names; removed on the way out."""
    arch, info, handles = lm.arch, lm.info, []
    proto = torch.empty(0, dtype=next(lm.model.parameters()).dtype)
    heads = [r[1] for r in rows if r is not None and r[0] == "head"]
    try:
        if heads:
            width = info.n_heads * info.head_dim
            cols = torch.ones(len(rows), 1, width, dtype=proto.dtype)
            for b, r in enumerate(rows):
                if r is not None and r[0] == "head":
                    cols[b, 0, r[1] * info.head_dim:(r[1] + 1) * info.head_dim] = 0.0

            def pre(module, args, kwargs):
                x = args[0] if args else kwargs["input"]
                assert x.shape[-1] == width, f"the output projection reads {x.shape[-1]} values, not heads x head_dim = {width}"
                x = x * cols.to(x.device)
                return ((x, *args[1:]), kwargs) if args else (args, {**kwargs, "input": x})

            handles.append(out_proj(arch.attn[layer]).register_forward_pre_hook(pre, with_kwargs=True))
        for part, module in (("attn", arch.attn[layer]), ("mlp", arch.mlp[layer])):
            mask = _row_mask(rows, part, proto)
            if mask is not None:
                handles.append(module.register_forward_hook(_zero_output(mask)))
        yield
    finally:
        for h in handles:
            h.remove()


def _zero_output(mask: torch.Tensor):
    def hook(module, args, out):
        if isinstance(out, (tuple, list)):
            return (out[0] * mask.to(out[0].device), *out[1:])
        return out * mask.to(out.device)

    return hook


# --- the passes ----------------------------------------------------------------------------------------------------


class _Clean:
    """The model's own forward pass over the context: its last-position logits, and what entered each block asked for
    (the hidden states and the block's other arguments)."""

    def __init__(self, lm, ids: list[int], layers: Sequence[int]):
        self.ids, self.inputs, handles = ids, {}, []

        def keep(i):
            def pre(module, args, kwargs):
                self.inputs[i] = (args, dict(kwargs))
            return pre

        for i in sorted(set(layers)):
            handles.append(lm.arch.layers[i].register_forward_pre_hook(keep(i), with_kwargs=True))
        try:
            self.logits = _full(lm, ids, 1)[0]
        finally:
            for h in handles:
                h.remove()


def _full(lm, ids: list[int], batch: int) -> torch.Tensor:
    """(batch, vocab) float32: the whole model over `ids`, `batch` copies, last position."""
    x = torch.as_tensor([ids], dtype=torch.long, device=lm.model.device).expand(batch, -1)
    out = lm.model(input_ids=x, use_cache=False, logits_to_keep=1)
    return out.logits[:, -1, : lm.info.vocab_size].float()


def _upper(lm, clean: _Clean, layer: int, batch: int) -> torch.Tensor:
    """(batch, vocab) float32: blocks `layer`.. run again on what entered block `layer` in the clean pass, `batch`
    copies, then the final norm and the LM head at the last position (and the final soft-capping, where the model has one)."""
    args, kwargs = clean.inputs[layer]
    h = (args[0] if args else kwargs["hidden_states"]).expand(batch, -1, -1)
    for block in lm.arch.layers[layer:]:
        out = block(h, *args[1:], **kwargs) if args else block(**{**kwargs, "hidden_states": h})
        h = out[0] if isinstance(out, (tuple, list)) else out
    logits = lm.arch.lm_head(lm.arch.norm(h[:, -1:]))[:, -1, : lm.info.vocab_size].float()
    cap = getattr(lm.model.config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits


def _rows(lm, clean: _Clean, layer: int, rows: Sequence[Row]) -> tuple[torch.Tensor, str]:
    """(len(rows), vocab) logits with each row's part of block `layer` switched off (rows[0] must be None), and the
    path taken. Call with the model's lock held."""
    assert rows[0] is None, "row 0 switches nothing off: it checks the fast path against the clean pass"
    with _switched_off(lm, layer, rows):
        if layer in clean.inputs:
            out = _upper(lm, clean, layer, len(rows))
            if float((out[0] - clean.logits).abs().max()) <= CHECK_TOL:
                return out, "upper"
        return _full(lm, clean.ids, len(rows)), "full"


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float32)


# --- what callers use ----------------------------------------------------------------------------------------------


def _locked(lm, fn, *args):
    """fn(*args) under the model's lock, in inference mode."""
    with lm.lock, torch.inference_mode():
        return fn(*args)


def ablate(lm, context_ids: Sequence[int], token_id: int, *, layer: int, part: str, head: int | None = None) -> AblationRecord:
    """The next-token distribution after `context_ids` (its last position), before and after switching off `part` of
    block `layer` (a head: `head`) at every position; `token_id` is the token whose probability is followed."""
    layer, part, head = check_part(lm.info.n_layers, lm.info.n_heads, layer, part, head)
    ids = _check_context(lm, context_ids, token_id)
    def passes():  # on the model's thread (pipeline.model_thread)
        with lm.lock:
            t0 = time.perf_counter()
            with torch.inference_mode():
                clean = _Clean(lm, ids, [layer])
                out, path = _rows(lm, clean, layer, [None, (part, head)])
            return clean, out, path, (time.perf_counter() - t0) * 1000.0

    clean, out, path, ms = run_on(lm, passes)
    return AblationRecord(layer=layer, part=part, head=head, token_id=int(token_id), context_ids=tuple(ids),
                          logits_before=_np(clean.logits), logits_after=_np(out[1]), ms=ms, path=path)


def ablate_step(lm, step: StepRecord, *, layer: int, part: str, head: int | None = None) -> AblationRecord:
    """`ablate` for the step on screen: its context (StepRecord.context_ids) and the token it chose."""
    return ablate(lm, step.context_ids, step.token_id, layer=layer, part=part, head=head)


def iter_head_map(lm, context_ids: Sequence[int], token_id: int, layers: Sequence[int] | None = None) -> Iterator[HeadMapRecord]:
    """Each head of each block in `layers` (default: every block, last first: the cheapest first) switched off in turn;
    one HeadMapRecord per block done, each holding every block done so far. One batch per block (a row per head and
    row 0 with nothing off); the model's lock is held for the clean pass and for each block, never across a yield."""
    L, H = lm.info.n_layers, lm.info.n_heads
    layers = list(range(L - 1, -1, -1)) if layers is None else [check_part(L, H, i, "attn")[0] for i in layers]
    if not layers:
        raise SettingsError("pick at least one block to switch its heads off", key="error.ablate_no_block")
    ids = _check_context(lm, context_ids, token_id)
    t0 = time.perf_counter()
    clean = run_on(lm, lambda: _locked(lm, _Clean, lm, ids, layers))
    before = float(log_softmax(_np(clean.logits))[token_id])
    after = np.full((L, H), np.nan)
    done: list[int] = []
    paths = set()
    rows: list[Row] = [None] + [("head", h) for h in range(H)]
    for layer in dict.fromkeys(layers):
        out, path = run_on(lm, functools.partial(_locked, lm, _rows, lm, clean, layer, rows))
        lp = out[1:].double()
        after[layer] = (lp[:, token_id] - torch.logsumexp(lp, dim=-1)).cpu().numpy()
        done.append(layer)
        paths.add(path)
        yield HeadMapRecord(token_id=int(token_id), context_len=len(ids), n_layers=L, n_heads=H, logprob_before=before,
                            logprob_after=after.copy(), layers=tuple(done), seconds=time.perf_counter() - t0,
                            path="full" if "full" in paths else "upper")


def head_map(lm, context_ids: Sequence[int], token_id: int, layers: Sequence[int] | None = None,
             progress: Callable[[int, int, HeadMapRecord], None] | None = None) -> HeadMapRecord:
    """`iter_head_map` run to the end; `progress(done, total, record so far)` after each block."""
    total = lm.info.n_layers if layers is None else len(dict.fromkeys(layers))
    rec = None
    for rec in iter_head_map(lm, context_ids, token_id, layers):
        if progress is not None:
            progress(len(rec.layers), total, rec)
    assert rec is not None
    return rec


# --- the command line's step and file ------------------------------------------------------------------------------

FORMAT = "llm-pipeline-ablation/1"


def greedy_step(lm, prompt: str, *, step: int = 0, chat: bool = True, system_prompt: str | None = None):
    """(the prompt's token ids, the StepRecord of step `step`) of a greedy generation from `prompt`: step 0 is the next
    token after the prompt; step S comes after S greedy tokens. A SettingsError when the model stops before it."""
    from pipeline.generate import start
    from pipeline.trace.records import Settings

    if int(step) != step or step < 0:
        raise SettingsError(f"--step is a whole number of greedy tokens before the step, 0 or more, not {step}")
    if not prompt.strip():
        raise SettingsError("the prompt is empty: type some text for the model to continue")
    gen = start(lm, prompt, Settings(temperature=0.0, max_new_tokens=int(step) + 1, chat=chat, system_prompt=system_prompt))
    for rec in gen:
        if rec.index == step:
            return tuple(int(i) for i in gen.prompt.token_ids), rec
    raise SettingsError(f"the model ended its answer after {len(gen.steps)} token(s): pick a --step below {len(gen.steps)}")


def to_json(rec: AblationRecord, prompt_ids: Sequence[int], *, step: int = 0, top: int = 100) -> dict:
    """The ablation file (docs/ablation.md): the prompt, the part switched off, the step's token, and both
    distributions' `top` likeliest tokens at temperature 1, likeliest first."""
    def dist(which: str) -> dict:
        ids, probs = rec.top(which, top)
        return {"ids": [int(i) for i in ids], "probs": [float(p) for p in probs]}

    movers, b, a = rec.movers(10)
    return {
        "format": FORMAT,
        "prompt": {"token_ids": [int(i) for i in prompt_ids]},
        "step": int(step),
        "context_ids": [int(i) for i in rec.context_ids],
        "layer": rec.layer, "part": rec.part, "head": rec.head,
        "token": {"id": rec.token_id, "before": rec.chosen_before, "after": rec.chosen_after,
                  "logprob_change": rec.logprob_change},
        "before": dist("before"),
        "after": dist("after"),
        "changed_most": [{"id": int(i), "before": float(x), "after": float(y)} for i, x, y in zip(movers, b, a)],
    }
