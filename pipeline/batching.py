"""One decode loop for the process: every running generation's next token in one forward pass.

    row = open_row(lm)                     # a generation's place in the loop (pipeline.generate._run opens one)
    cap = row.prefill(context)             # its prefill: alone, on the caller's thread, as without the loop
    for rec in row.decode(token, step):    # then one pass a token, together with every other running row;
        ...                                # step(capture) -> (record, next token or None) makes each record
    row.close()                            # leaves the batch (the generator's `finally`: a closed tab frees its row)

Why: a decode step reads every weight of the model for one token; on a 2-core machine that read is the
step's cost, so a pass for 16 rows costs about twice a pass for one (docs/benchmarks.md, "A class
generating at once"). One thread per model (the Decoder) runs the loop (continuous batching, as
llama.cpp's server slots and vLLM do):
  1. a newcomer prefills alone, on its own thread, under the model's lock (between two ticks), then
     hands its KV cache and its first token to the loop, which merges it into the batch at the next tick;
  2. each tick runs ONE hooked forward pass for every row. The batch's cache is one DynamicCache whose
     rows are left-padded to one length; a 2D attention mask marks each row's own positions and
     `position_ids` give each row its own positions, so a row sees only its own tokens (a padded key gets
     exactly 0 weight after the softmax);
  3. then, on the loop's thread, each row's own `step` reads its slice of the capture (its logits, its
     residual rows, its attention over its own positions only, shaped as a pass alone makes them),
     draws its token and builds its record, which goes to the row's queue; the generator on the page's
     thread yields the records from there. (On the loop's thread, not the pages': Python runs one thread
     at a time, and 16 threads recording at once slowed the pass itself by half.);
  4. rows that stop, fail or whose generator is closed leave at the next tick; columns no row uses any
     more are cut away. A row whose generator has AHEAD records unread (its page stopped reading: Stop,
     a closed tab) is parked: its own positions leave the batch as a cache of their own, and come back
     when the generator reads again.
A row alone in the batch, with no pads, runs exactly the pass it would run without the loop, so one
visitor's trace is bit-for-bit what it was. Rows together differ from alone only by the rounding of a
wider matrix product (tests: tokens equal, probabilities within 1e-4). Models with sliding-window
layers run alone (their caches cannot be padded the same way), and so does everything with
LLM_VIZ_BATCH=0.
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch

from .capture import Captured, kv_bytes, run_with_cache

STOPPED = "the model's decode loop has stopped (the app is shutting down)"
AHEAD = 8  # records a row's generator has not read yet, past which the row is parked (out of the batch) until it reads


def enabled() -> bool:
    return os.environ.get("LLM_VIZ_BATCH", "1") not in ("0", "false", "off")


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


class Decoder:
    """The loop of one model (see the module's docstring). Rows talk to it through `Row`."""

    def __init__(self, lm):
        self.lm = lm
        self.cond = threading.Condition()
        self.slots: list[_Slot] = []  # batch order: slot i is row i of the cache
        self.joining: list[_Slot] = []
        self.cache = None
        self.valid: torch.Tensor | None = None  # (rows, columns) bool: a row's own positions
        # since the start (the benchmark's): passes, the rows in them, the passes' time, the rows' records' time after them
        self.ticks = self.rows_run = 0
        self.pass_s = self.work_s = 0.0
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, name="decode-loop", daemon=True)
        self.thread.start()
        atexit.register(self.stop)  # (a daemon thread that ran torch, left running at exit, aborts the process)

    def stop(self, timeout: float = 10.0):
        """End the loop (at exit): the rows still running get an error."""
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.thread.join(timeout)

    def join(self, s: _Slot):
        with self.cond:
            if self.stopping:
                s.out.put(RuntimeError(STOPPED))
            self.joining.append(s)
            self.cond.notify_all()

    def leave(self, s: _Slot):
        with self.cond:
            s.leaving = True
            self.cond.notify_all()

    def resume(self, s: _Slot):
        """A parked row's reader has caught up: back into the batch (its cache merged at the next tick)."""
        with self.cond:
            if self.stopping and s.state == "parked" and s.out.empty():
                s.out.put(RuntimeError(STOPPED))
            elif s.state == "park":
                s.state = "run"
            elif s.state == "parked" and not s.leaving and s.out.empty():
                s.state, s.ready = "run", time.perf_counter()
                self.joining.append(s)
                self.cond.notify_all()

    def status(self) -> dict:
        with self.cond:
            return {"rows": len(self.slots), "joining": len(self.joining)}

    def wait_idle(self, timeout: float) -> bool:
        """Block until no row is left (True), or `timeout` seconds (False)."""
        with self.cond:
            return self.cond.wait_for(lambda: not self.slots and not self.joining, timeout)

    # -- the loop (its own thread) -------------------------------------------------------------
    def _loop(self):
        while True:
            with self.cond:
                while not self._leaves_and_joins() and not self.stopping:
                    self.cond.notify_all()  # (wait_idle)
                    self.cond.wait()
                if self.stopping:
                    return self._stopped()
                slots, (ids, mask, pos) = list(self.slots), self._prepare()
            try:
                with torch.inference_mode():
                    cap = run_with_cache(self.lm, ids, cache=self.cache, attention_mask=mask, position_ids=pos)
            except Exception as e:  # noqa: BLE001  (every row's generator raises it; the loop goes on)
                with self.cond:
                    for s in slots + self.joining:
                        s.out.put(e)
                    self.slots, self.joining, self.cache, self.valid = [], [], None, None
                continue
            self.valid = torch.cat([self.valid, torch.ones(len(slots), 1, dtype=torch.bool)], 1)
            t1 = time.perf_counter()
            started = t1 - cap.ms / 1000.0
            with torch.inference_mode():
                for b, s in enumerate(slots):
                    self._step(s, cap, b, None if mask is None else self.valid[b].nonzero().squeeze(1), started)
            self.ticks, self.rows_run = self.ticks + 1, self.rows_run + len(slots)
            self.pass_s, self.work_s = self.pass_s + cap.ms / 1000.0, self.work_s + time.perf_counter() - t1
            del cap

    def _stopped(self):
        """(under cond) The loop's end: every row in the batch or joining gets an error (a parked one when it asks)."""
        for s in self.slots + self.joining:
            s.out.put(RuntimeError(STOPPED))

    def _step(self, s: _Slot, cap: Captured, b: int, cols, started: float):
        """Row `b`'s record from its slice of the pass, and its next token (or its leaving)."""
        s.own += 1
        if s.leaving:
            return
        try:
            rec, nxt = s.step(row_view(cap, b, cols, (started - s.ready) * 1000.0))
        except Exception as e:  # noqa: BLE001  (its generator raises it)
            s.out.put(e)
            s.leaving = True
            return
        s.out.put((rec, nxt is None))
        if nxt is None:
            s.leaving = True
        else:
            s.token, s.ready = int(nxt), time.perf_counter()
            if s.out.qsize() >= AHEAD:  # its page has stopped reading (Stop, a closed tab not yet collected): no more passes for it
                s.state = "park"

    def _leaves_and_joins(self) -> bool:
        """(under cond) Rows that left go, newcomers come in; whether there is a batch to run."""
        for i, s in enumerate(self.slots):
            if s.state == "park" and not s.leaving:
                s.cache, s.state = self._extract(i), "parked"
        keep = [i for i, s in enumerate(self.slots) if not s.leaving and s.state == "run"]
        if len(keep) < len(self.slots):
            self.slots = [self.slots[i] for i in keep]
            if keep:
                idx = torch.as_tensor(keep, dtype=torch.long)
                self.cache.batch_select_indices(idx)
                self.valid = self.valid[idx]
                self._trim()
            else:
                self.cache, self.valid = None, None
        for s in self.joining:
            if not s.leaving:
                self._merge(s)
        self.joining = []
        return bool(self.slots)

    def _extract(self, i: int):
        """Row `i`'s own positions as a cache of its own (1, heads, own, dim), to park it out of the batch."""
        from transformers import DynamicCache

        cols = self.valid[i].nonzero().squeeze(1)
        cache = DynamicCache(config=self.lm.model.config)
        for n, layer in enumerate(self.cache.layers):
            cache.update(layer.keys[i:i + 1].index_select(2, cols).clone(), layer.values[i:i + 1].index_select(2, cols).clone(), n)
        return cache

    def _merge(self, s: _Slot):
        """Put a newcomer's cache (1, heads, own, dim) into the batch's, both left-padded to one length."""
        cache, s.cache = s.cache, None
        if self.cache is None:
            self.cache, self.valid, self.slots = cache, torch.ones(1, s.own, dtype=torch.bool), [s]
            return
        width = self.valid.shape[1]
        grow = max(0, s.own - width)
        for mine, theirs in zip(self.cache.layers, cache.layers):
            for name in ("keys", "values"):
                a, b = getattr(mine, name), getattr(theirs, name)  # (rows, heads, width, dim), (1, heads, own, dim)
                a = torch.nn.functional.pad(a, (0, 0, grow, 0))
                b = torch.nn.functional.pad(b, (0, 0, a.shape[2] - b.shape[2], 0))
                setattr(mine, name, torch.cat([a, b]))
        width += grow
        row = torch.zeros(1, width, dtype=torch.bool)
        row[0, width - s.own:] = True
        self.valid = torch.cat([torch.nn.functional.pad(self.valid, (grow, 0)), row])
        self.slots.append(s)

    def _trim(self):
        """Cut the leading columns no row uses any more (the pads of a long row that left)."""
        used = self.valid.any(0)
        first = int(used.nonzero()[0]) if bool(used.any()) else 0
        if first:
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, first:], layer.values[:, :, first:]
            self.valid = self.valid[:, first:]

    def _prepare(self):
        """(under cond) The tick's inputs: a token per row, the mask and the positions (None for one row, unpadded)."""
        ids = [[s.token] for s in self.slots]
        if len(self.slots) == 1 and bool(self.valid.all()):
            return ids, None, None
        mask = torch.cat([self.valid, torch.ones(len(self.slots), 1, dtype=torch.bool)], 1).long()  # (rows, columns + 1)
        pos = torch.as_tensor([[s.own] for s in self.slots], dtype=torch.long)  # (rows, 1): each row's own next position
        return ids, mask, pos


_MAKE = threading.Lock()


def _decoder(lm) -> Decoder:
    d = lm.__dict__.get("_decoder")
    if d is None:
        with _MAKE:
            d = lm.__dict__.get("_decoder")
            if d is None:
                d = lm.__dict__["_decoder"] = Decoder(lm)  # lives as long as the model
    return d


def row_view(cap: Captured, b: int, cols, waited_ms: float) -> Captured:
    """Row `b` of a batched capture as a pass of that row alone would have shaped it: (1, ...)
    tensors; attention over the row's own positions only (`cols`; None: every column is its own)."""
    view = Captured()
    for name, t in cap.items():
        if cols is not None and name.endswith(".attn.pattern"):
            view[name] = t[b:b + 1].index_select(3, cols)  # (1, heads, 1, own positions)
        elif name == "logits":
            view[name] = t[b:b + 1].clone()  # (1, 1, vocab): a record keeps its row's logits, not the batch's
        else:
            view[name] = t[b:b + 1]
    view.ms, view.wait_ms, view.rows, view.looped = cap.ms, max(0.0, waited_ms), cap.rows, True
    return view


class Row:
    """A generation's place in the loop: `prefill` alone, then `decode` in the batch (or alone, where the
    model cannot be batched). `kv_bytes`: its own cache's bytes, as a pass alone would hold them."""

    def __init__(self, lm, batched: bool):
        from transformers import DynamicCache

        self.lm, self.batched = lm, batched
        self.cache = DynamicCache(config=lm.model.config)
        self.positions = 0
        self.per_position = 0
        self.slot: _Slot | None = None

    @property
    def kv_bytes(self) -> int:
        return kv_bytes(self.cache) if self.cache is not None else self.per_position * self.positions

    def prefill(self, ids) -> Captured:
        cap = run_with_cache(self.lm, list(ids), cache=self.cache)
        self.positions += len(ids)
        return cap

    def decode(self, token: int, step: Callable) -> Iterator:
        """The records `step` makes, one a pass, from feeding `token` on (each pass's capture: the row's own)."""
        if not (self.batched and _full_attention(self.cache)):
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
        _decoder(self.lm).join(self.slot)
        while True:
            got = self.slot.out.get()
            if isinstance(got, BaseException):
                raise got
            yield got[0]
            if got[1]:
                return
            _decoder(self.lm).resume(self.slot)

    def close(self):
        if self.slot is not None:
            _decoder(self.lm).leave(self.slot)


def _full_attention(cache) -> bool:
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in cache.layers)


def open_row(lm) -> Row:
    """A new generation's row: batched with every other, or alone where it cannot be."""
    return Row(lm, enabled() and hasattr(lm, "arch"))


def wait_idle(lm, timeout: float = 30.0) -> bool:
    """Block until the model's loop runs no row (True), or `timeout` seconds (False)."""
    d = lm.__dict__.get("_decoder")
    return d is None or d.wait_idle(timeout)


def status(lm) -> dict:
    """How many rows the model's loop is running now (0 when it has none)."""
    d = lm.__dict__.get("_decoder")
    return d.status() if d is not None else {"rows": 0, "joining": 0}


__all__ = ["Decoder", "Row", "open_row", "row_view", "status", "enabled", "wait_idle"]
