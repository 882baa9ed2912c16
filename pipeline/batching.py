"""One decode loop for the process: every running generation's next token in one forward pass.

    row = open_row(lm)                     # a generation's place in the loop (pipeline.generate._run opens one)
    cap = row.prefill(context)             # its prefill: in the loop, in one pass with the other newcomers' prompts
    for rec in row.decode(token, step):    # then one pass a token, together with every other running row;
        ...                                # step(capture) -> (record, next token or None) makes each record
    row.close()                            # leaves the batch (the generator's `finally`: a closed tab frees its row)

Why: a decode step reads every weight of the model for one token; on a 2-core machine that read is the
step's cost, so a pass for 16 rows costs about twice a pass for one (docs/benchmarks.md, "A class
generating at once"). One thread per model (the Decoder) runs the loop (continuous batching, as
llama.cpp's server slots and vLLM do):
  1. newcomers' prompts are prefilled together, between two ticks: one left-padded pass for every prompt
     waiting (pipeline.batch_rows: a group is bounded in tokens and attention cells; one prompt alone runs
     the very pass it runs without the loop). Each gets its own capture and cache back, makes its first
     record on its own thread, and hands its first token to the loop, which merges its cache into the
     batch at the next tick;
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
from typing import Callable

import torch

from pipeline import batch_rows
from pipeline.batch_rows import Prefill, Row, _Slot, row_view, row_views
from pipeline.capture import Captured, run_with_cache
from pipeline.model_thread import claim

STOPPED = "the model's decode loop has stopped (the app is shutting down)"
AHEAD = 8  # records a row's generator has not read yet, past which the row is parked (out of the batch) until it reads


def enabled() -> bool:
    return os.environ.get("LLM_VIZ_BATCH", "1") not in ("0", "false", "off")


class Decoder:
    """The loop of one model (see the module's docstring). Rows talk to it through `Row`."""

    def __init__(self, lm):
        self.lm = lm
        self.cond = threading.Condition()
        self.slots: list[_Slot] = []  # batch order: slot i is row i of the cache
        self.joining: list[_Slot] = []
        self.prefills: list[Prefill] = []  # prompts waiting for their prefill (run together, between two ticks)
        self.calls: list[tuple[Callable, queue.SimpleQueue]] = []  # other threads' work with the model (model_thread.run_on)
        self.cache = None
        self.valid: torch.Tensor | None = None  # (rows, columns) bool: a row's own positions
        # since the start (the benchmark's): passes, the rows in them, the passes' time, the rows' records' time after them
        self.ticks = self.rows_run = self.prefill_passes = self.prefill_rows = 0
        self.pass_s = self.work_s = self.prefill_s = 0.0
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

    def _queue(self, name: str, item):
        """`item` (a Prefill or a _Slot) into the loop's queue `name`; after the loop's end, its error at once. (The
        list is looked up under the lock: the loop replaces `joining` with a new one, and a row appended to the old
        list after that was never seen again: its page waited forever.)"""
        with self.cond:
            if self.stopping:
                item.out.put(RuntimeError(STOPPED))
                return
            getattr(self, name).append(item)
            self.cond.notify_all()

    def prefill(self, p: Prefill):
        """Queue a prompt's prefill for the loop's next prefill pass (`p.out` gets its capture and cache)."""
        self._queue("prefills", p)

    def call(self, fn: Callable):
        """fn() on the loop's thread, between two ticks: its result here, or its exception raised here."""
        out: queue.SimpleQueue = queue.SimpleQueue()
        with self.cond:
            if self.stopping:
                raise RuntimeError(STOPPED)
            self.calls.append((fn, out))
            self.cond.notify_all()
        ok, got = out.get()
        if not ok:
            raise got
        return got

    def join(self, s: _Slot):
        self._queue("joining", s)

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
        claim()  # this thread's kernels get every core; other threads' one (pipeline.model_thread)
        while True:
            with self.cond:
                while not self._leaves_and_joins() and not self.prefills and not self.calls and not self.stopping:
                    self.cond.notify_all()  # (wait_idle)
                    self.cond.wait()
                if self.stopping:
                    return self._stopped()
                calls, self.calls = self.calls, []
                group = batch_rows.take(self.prefills)
                if group:
                    self.prefill_passes, self.prefill_rows = self.prefill_passes + 1, self.prefill_rows + len(group)
                    self.cond.notify_all()  # (a test waits for a group to be taken)
            for fn, out in calls:
                try:
                    out.put((True, fn()))
                except BaseException as e:  # noqa: BLE001  (raised on the caller's thread)
                    out.put((False, e))
            if group:
                self._prefill(group)  # the newcomers' prefills, one pass for all; then the running rows' tick
            with self.cond:
                if not self._leaves_and_joins():
                    continue
                slots, (ids, mask, pos) = list(self.slots), self._prepare()
            self._tick(slots, ids, mask, pos)

    def _tick(self, slots, ids, mask, pos):
        """One pass for every running row, then each row's record and next token."""
        try:
            with torch.inference_mode():
                cap = run_with_cache(self.lm, ids, cache=self.cache, attention_mask=mask, position_ids=pos)
        except Exception as e:  # noqa: BLE001  (every row's generator raises it; the loop goes on)
            with self.cond:
                for s in slots + self.joining:
                    s.out.put(e)
                self.slots, self.joining, self.cache, self.valid = [], [], None, None
            return
        self.valid = torch.cat([self.valid, torch.ones(len(slots), 1, dtype=torch.bool)], 1)
        t1 = time.perf_counter()
        started = t1 - cap.ms / 1000.0
        with torch.inference_mode():
            firsts = [None if mask is None else self.valid.shape[1] - s.own - 1 for s in slots]  # (before _step counts the new one)
            views = row_views(cap, firsts, [(started - s.ready) * 1000.0 for s in slots])
            for s, view in zip(slots, views):
                self._step(s, view)
        self.ticks, self.rows_run = self.ticks + 1, self.rows_run + len(slots)
        self.pass_s, self.work_s = self.pass_s + cap.ms / 1000.0, self.work_s + time.perf_counter() - t1

    def _prefill(self, group: list[Prefill]):
        """One pass for the group's prompts (left-padded); each gets its own capture and cache, as alone."""
        from transformers import DynamicCache

        ids, mask, pos = batch_rows.prefill_inputs(group)
        try:
            with torch.inference_mode():
                cache = DynamicCache(config=self.lm.model.config)
                cap = run_with_cache(self.lm, ids, cache=cache, attention_mask=mask, position_ids=pos)
                started = time.perf_counter() - cap.ms / 1000.0
                waited = [(started - p.asked) * 1000.0 for p in group]
                if mask is None:
                    group[0].out.put((row_view(cap, 0, None, waited[0]), cache))
                else:
                    firsts = [len(ids[b]) - len(p.ids) for b, p in enumerate(group)]  # (left of it: the row's pads)
                    for b, (p, view) in enumerate(zip(group, row_views(cap, firsts, waited, queries=True))):
                        p.out.put((view, batch_rows.own_cache(cache, b, firsts[b], self.lm.model.config)))
        except Exception as e:  # noqa: BLE001  (each prompt's generator raises it)
            for p in group:
                p.out.put(e)
            return
        self.prefill_s += cap.ms / 1000.0

    def _stopped(self):
        """(under cond) The loop's end: every row in the batch or joining gets an error (a parked one when it asks)."""
        for s in self.slots + self.joining + self.prefills:
            s.out.put(RuntimeError(STOPPED))
        for _, out in self.calls:
            out.put((False, RuntimeError(STOPPED)))

    def _step(self, s: _Slot, view: Captured):
        """A row's record from its view of the pass, and its next token (or its leaving)."""
        s.own += 1
        if s.leaving:
            return
        try:
            rec, nxt = s.step(view)
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
        return batch_rows.own_cache(self.cache, i, self.valid.shape[1] - self.slots[i].own, self.lm.model.config)

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


def open_row(lm) -> Row:
    """A new generation's row: batched with every other, or alone where it cannot be."""
    return Row(lm, enabled() and hasattr(lm, "arch"), _decoder)


def start(lm):
    """The model's loop, started now (not at the first generation) where the model can be batched: called on the
    thread that loaded the model, so that its machine measurement is made before any visitor comes."""
    row = open_row(lm)
    if row.batched and row.full_attention:
        from pipeline.inside.accounting import measure_machine

        d = _decoder(lm)
        # the machine's limits, measured now on the loop's thread, once: asked later, by a visitor's
        # compute panel, the measurement (~1 s) would hold every running generation still
        d.call(lambda: measure_machine(lm.lock))


def wait_idle(lm, timeout: float = 30.0) -> bool:
    """Block until the model's loop runs no row (True), or `timeout` seconds (False)."""
    d = lm.__dict__.get("_decoder")
    return d is None or d.wait_idle(timeout)


def status(lm) -> dict:
    """How many rows the model's loop is running now (0 when it has none)."""
    d = lm.__dict__.get("_decoder")
    return d.status() if d is not None else {"rows": 0, "joining": 0}


__all__ = ["Decoder", "Row", "open_row", "row_view", "start", "status", "enabled", "wait_idle"]
