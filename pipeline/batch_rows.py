"""A row's own part of a batched forward pass (pipeline.batching), and the newcomers' prefills run as one pass.

A batched pass runs rows of different lengths left-padded to one width, with a 2D attention mask and each row's
own positions. Here: the inputs of such a pass for a group of prompts (`prefill_inputs`), which prompts make a
group (`take`), and, from the pass, each row's capture as a pass of that row alone shapes it (`row_view`) and its
own KV cache (`own_cache`). A group of one runs the very pass a prompt alone runs (no pads, no mask).

Why prefills together: a prefill is compute-bound, and one pass for 16 prompts of ~45 tokens takes ~55 ms a
prompt against ~100 ms each alone on the 2-core machine (docs/benchmarks.md, "A class generating at once").
"""
from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch

from pipeline.capture import Captured, kv_bytes, run_with_cache

# a group's bound: padded tokens (a long group holds every decoding row still), and captured attention cells
# (rows x width^2 per layer and head: 150,000 cells are ~160 MB of float32 for SmolLM2's 30 x 9 heads)
MAX_TOKENS, MAX_CELLS, MAX_ROWS = 1024, 150_000, 32


@dataclass(eq=False)
class _Slot:
    """One row of the batch, as the loop sees it."""

    own: int  # positions of its own in the batch's cache
    token: int  # the token its next pass feeds
    step: Callable  # step(capture) -> (record, next token or None), run on the loop's thread
    cache: object = None  # its prefill's cache until the loop merges it
    out: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)  # (record, last?) or an exception, for its generator
    ready: float = field(default_factory=time.perf_counter)  # when its token was ready (its wait starts)
    leaving: bool = False
    state: str = "run"  # "run" | "park" (leaves the batch at the next tick: its reader is behind) | "parked" (holds `cache`)


@dataclass(eq=False)
class Prefill:
    """A prompt waiting for its prefill in the loop; `out` gets (capture, cache) or an exception."""

    ids: list[int]
    asked: float = field(default_factory=time.perf_counter)
    out: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)


def take(pending: list[Prefill]) -> list[Prefill]:
    """(Removes and returns) the next group: the oldest prompt, and those after it while the group stays in bounds."""
    group: list[Prefill] = []
    for p in list(pending):
        rows, width = len(group) + 1, max([len(p.ids)] + [len(q.ids) for q in group])
        if group and (rows > MAX_ROWS or rows * width > MAX_TOKENS or rows * width * width > MAX_CELLS):
            break
        group.append(p)
        pending.remove(p)
    return group


def prefill_inputs(group: list[Prefill]):
    """(ids, attention_mask, position_ids) of one pass for the group's prompts, left-padded; one prompt: its ids only."""
    if len(group) == 1:
        return list(group[0].ids), None, None
    width = max(len(p.ids) for p in group)
    ids = [[0] * (width - len(p.ids)) + list(p.ids) for p in group]  # (a pad's id is never seen: the mask hides it)
    mask = torch.zeros(len(group), width, dtype=torch.long)
    for b, p in enumerate(group):
        mask[b, width - len(p.ids):] = 1
    pos = (torch.arange(width)[None, :] - (width - mask.sum(1, keepdim=True))).clamp(min=0)
    return ids, mask, pos


def row_view(cap: Captured, b: int, first: int | None, waited_ms: float, *, queries: bool = False) -> Captured:
    """Row `b` of a batched capture as a pass of that row alone would have shaped it (see `row_views`)."""
    firsts = [None] * (cap.rows if cap.rows else b + 1)
    firsts[b] = first
    return row_views(cap, firsts, [waited_ms] * len(firsts), queries=queries, only=b)[0]


def row_views(cap: Captured, firsts: list, waited_ms: list, *, queries: bool = False, only: int | None = None) -> list[Captured]:
    """Each row of a batched capture as a pass of that row alone would have shaped it: (1, ...) tensors (views);
    attention over the row's own positions only. A row's own positions are the batch's columns from `firsts[b]` on
    (its pads, left of them; None or 0: none): the loop only ever pads on the left. `queries`: a prefill's pass,
    whose positions (the residual stream's, the attention's queries) are cut to the row's own as well. The logits
    are one copy for every row (a record keeps its row's logits, not the pass's buffers). `only`: that row alone."""
    rows = range(len(firsts)) if only is None else [only]
    views = [Captured() for _ in rows]
    for name, t in cap.items():
        parts = (t[only:only + 1].clone() if only is not None else t.clone()).split(1) if name == "logits" else None
        pattern = name.endswith(".attn.pattern")
        split = t.split(1) if only is None else None
        for i, b in enumerate(rows):
            r = parts[0 if only is not None else b] if parts is not None else (split[b] if split is not None else t[b:b + 1])
            f = firsts[b]
            if f and parts is None:
                if pattern:  # (1, heads, q, own positions); a long prefill's pass keeps only its last query (pipeline/attention.py)
                    r = r[:, :, f:, f:] if queries and r.shape[2] > 1 else r[:, :, :, f:]
                elif queries:  # (1, own positions, d_model)
                    r = r[:, f:]
            views[i][name] = r
    for v, b in zip(views, rows):
        v.ms, v.wait_ms, v.rows, v.looped = cap.ms, max(0.0, waited_ms[b]), cap.rows, True
    return views


def own_cache(cache, b: int, first: int, config):
    """Row `b`'s own positions (the columns from `first` on) of a batched cache, as a cache of its own (1, heads, own, dim)."""
    from transformers import DynamicCache

    mine = DynamicCache(config=config)
    for n, layer in enumerate(cache.layers):
        mine.update(layer.keys[b:b + 1, :, first:].clone(), layer.values[b:b + 1, :, first:].clone(), n)
    return mine


class Row:
    """A generation's place in the loop: `prefill` with the other newcomers, then `decode` in the batch (or both
    alone, where the model cannot be batched). `kv_bytes`: its own cache's bytes, as a pass alone would hold them.
    `loop(lm)`: the model's decode loop (pipeline.batching's, which opens rows)."""

    def __init__(self, lm, batched: bool, loop: Callable):
        from transformers import DynamicCache

        self.lm, self.batched, self.loop = lm, batched, loop
        self.cache = DynamicCache(config=lm.model.config)
        self.positions = 0
        self.per_position = 0
        self.slot: _Slot | None = None

    @property
    def full_attention(self) -> bool:
        """Whether its cache can be padded into the batch's (no sliding-window layer)."""
        return self.cache is not None and _full_attention(self.cache)

    @property
    def kv_bytes(self) -> int:
        return kv_bytes(self.cache) if self.cache is not None else self.per_position * self.positions

    def prefill(self, ids) -> Captured:
        """The prompt's pass: in the loop, together with the other newcomers' (or alone, where it cannot be batched)."""
        if self.batched and self.full_attention:
            p = Prefill(list(ids))
            self.loop(self.lm).prefill(p)
            got = p.out.get()
            if isinstance(got, BaseException):
                raise got
            cap, self.cache = got
        else:
            cap = run_with_cache(self.lm, list(ids), cache=self.cache)
        self.positions += len(ids)
        return cap

    def decode(self, token: int, step: Callable) -> Iterator:
        """The records `step` makes, one a pass, from feeding `token` on (each pass's capture: the row's own)."""
        if not (self.batched and self.full_attention):
            while token is not None:
                t0 = time.perf_counter()
                cap = run_with_cache(self.lm, [token], cache=self.cache)
                self.positions += 1
                rec, token = step(cap, t0)
                yield rec
            return
        self.per_position = self.kv_bytes // max(1, self.positions)

        def counted(cap):
            self.positions += 1
            return step(cap)

        self.slot = _Slot(self.positions, int(token), counted, self.cache)
        self.cache = None  # the loop holds it now
        self.loop(self.lm).join(self.slot)
        while True:
            got = self.slot.out.get()
            if isinstance(got, BaseException):
                raise got
            yield got[0]
            if got[1]:
                return
            self.loop(self.lm).resume(self.slot)

    def close(self):
        if self.slot is not None:
            self.loop(self.lm).leave(self.slot)


def _full_attention(cache) -> bool:
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in cache.layers)


__all__ = ["Row", "Prefill", "take", "prefill_inputs", "row_view", "row_views", "own_cache", "MAX_TOKENS", "MAX_CELLS", "MAX_ROWS"]
